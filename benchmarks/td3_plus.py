"""TD3+ (``--preset plus``) against plain TD3 (``--preset zoo``): the table and curves of two ``rlkit-td3 compare``
sweeps.

The two sweeps run the same seeds and evaluation (10 deterministic episodes every 5,000 steps)::

    rlkit-td3 compare --algos td3 --envs HalfCheetahBulletEnv-v0 --seeds 0 1 2 --timesteps 100000 \\
        --preset zoo --workers 1 --threads 1 --out sweeps/hc_zoo
    rlkit-td3 compare --algos td3 --envs HalfCheetahBulletEnv-v0 --seeds 0 1 2 --timesteps 100000 \\
        --preset plus --workers 1 --threads 1 --out sweeps/hc_plus
    python benchmarks/td3_plus.py --zoo sweeps/hc_zoo --plus sweeps/hc_plus --out benchmarks/results/td3_plus

This script reads their run directories (finished or not), labels the runs ``TD3`` and ``TD3+`` and writes
``<out>/results.csv`` (every evaluation), ``<out>/summary.md`` (per label: runs, steps reached, IQM of each run's
last 5 evaluations pooled over seeds with a 95 % stratified-bootstrap CI over runs, the per-seed means, and the per-seed
differences TD3+ − TD3) and ``<out>/learning_curve_<env>.png`` (mean over seeds with a bootstrap band). The
summary's method is the one of ``benchmarks/sb3_compare.py``, so the two tables read the same way. ``--results``
re-summarizes a ``results.csv`` written before, when the sweep directories are gone.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from rlkit_td3.experiments import load_results
from rlkit_td3.experiments.plots import plot_learning_curves
from rlkit_td3.experiments.stats import iqm, run_scores, stratified_bootstrap_ci
from rlkit_td3.fileio.serialization import atomic_write

LAST_EVALS = 5
LABELS = {"zoo": "TD3", "plus": "TD3+"}


def read_sweep(sweep: Path, label: str) -> pd.DataFrame:
    """Every evaluation of the sweep's run directories, with ``algo`` set to ``label``."""
    runs = sorted(p for p in (sweep / "runs").iterdir() if (p / "evaluations.npz").is_file())
    table = load_results(runs)
    table["algo"] = label
    return table


def summary(table: pd.DataFrame) -> str:
    """The markdown table: IQM of the last evaluations per label, with CIs, per-seed means and differences."""
    lines = [
        f"| preset | runs | steps reached | IQM of the last {LAST_EVALS} evaluations | 95 % CI | per-seed mean of "
        f"the last {LAST_EVALS} |",
        "|---|---|---|---|---|---|",
    ]
    per_seed: dict[str, dict[int, float]] = {}
    for label, group in table.groupby("algo", sort=False):
        scores = run_scores(group, LAST_EVALS)  # (runs, evaluations), runs in seed order
        means = {int(seed): float(row.mean()) for seed, row in zip(sorted(group["seed"].unique()), scores)}
        low, high = stratified_bootstrap_ci([scores])  # runs resampled as units
        reached = ", ".join(f"s{s}: {int(r.timestep.max()):,}" for s, r in group.groupby("seed"))
        seeds = ", ".join(f"s{s}: {m:.0f}" for s, m in means.items())
        value = float(iqm(scores.ravel()))
        lines.append(f"| {label} | {len(scores)} | {reached} | {value:.1f} | [{low:.1f}, {high:.1f}] | {seeds} |")
        per_seed[str(label)] = means
    if len(per_seed) == 2:
        (a, first), (b, second) = per_seed.items()
        common = sorted(set(first) & set(second))
        diffs = ", ".join(f"s{s}: {second[s] - first[s]:+.0f}" for s in common)
        lines += ["", f"Per-seed difference {b} − {a} (mean of the last {LAST_EVALS} evaluations): {diffs}."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--zoo", type=Path, help="the sweep directory of --preset zoo")
    parser.add_argument("--plus", type=Path, help="the sweep directory of --preset plus")
    parser.add_argument("--results", type=Path, help="instead of the sweeps: a results.csv this script wrote before")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.results is not None:
        table = pd.read_csv(args.results)
    elif args.zoo is not None and args.plus is not None:
        table = pd.concat(
            [read_sweep(args.zoo, LABELS["zoo"]), read_sweep(args.plus, LABELS["plus"])], ignore_index=True
        )
    else:
        parser.error("give --zoo and --plus (the sweep directories), or --results (a results.csv written before)")
    args.out.mkdir(parents=True, exist_ok=True)
    with atomic_write(args.out / "results.csv") as fh:
        fh.write(table.to_csv(index=False).encode())
    text = summary(table)
    with atomic_write(args.out / "summary.md") as fh:
        fh.write(text.encode())
    plot_learning_curves(table, args.out)
    print(text)


if __name__ == "__main__":
    main()

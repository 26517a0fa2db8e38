"""TD3+ (``--preset plus``) against plain TD3 (``--preset zoo``): the table and curves of two ``rlkit-td3 compare``
sweeps.

The two sweeps run the same seeds and evaluation (10 deterministic episodes every 5,000 steps)::

    rlkit-td3 compare --algos td3 --envs HalfCheetahBulletEnv-v0 --seeds 0 1 2 --timesteps 100000 \\
        --preset zoo --workers 1 --threads 1 --out sweeps/hc_zoo
    rlkit-td3 compare --algos td3 --envs HalfCheetahBulletEnv-v0 --seeds 0 1 2 --timesteps 100000 \\
        --preset plus --workers 1 --threads 1 --out sweeps/hc_plus
    python benchmarks/td3_plus.py --zoo sweeps/hc_zoo --plus sweeps/hc_plus --out benchmarks/results/td3_plus

This script reads their run directories (finished or not), labels the runs ``TD3`` and ``TD3+`` and writes
``<out>/results.csv`` (every evaluation), ``<out>/summary.md`` (per label: each run's score, the mean of its last
5 evaluations; their IQM and spread; the per-seed differences TD3+ − TD3 and the probability of improvement, by
rliable's definitions, as in ``benchmarks/sb3_compare.py``) and ``<out>/learning_curve_<env>.png`` (mean over
seeds; the band: the range with fewer than 5 seeds). ``--results`` re-summarizes a ``results.csv`` written
before, when the sweep directories are gone.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from rlkit_td3.experiments import load_results
from rlkit_td3.experiments.plots import plot_learning_curves
from rlkit_td3.experiments.stats import format_improvement, format_spread, improvements, run_scores, summarize
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
    """The markdown table: per label, the run scores, their IQM and spread; the per-seed differences; P(TD3+ > TD3)."""
    steps = sorted(table.groupby(["algo", "seed"])["timestep"].max().unique())
    lines = [
        f"Runs of {' / '.join(f'{t:,}' for t in steps)} steps. Score: the mean of a run's last {LAST_EVALS} "
        "evaluations; IQM of the scores; spread: their range below 5 runs, a 95 % stratified-bootstrap interval "
        "from 5 (rliable's definitions).",
        "",
        "| preset | runs | IQM | spread | run scores |",
        "|---|---:|---:|---|---|",
    ]
    order = list(dict.fromkeys(table["algo"]))
    summarized = summarize(table, last=LAST_EVALS).set_index("algo").loc[order]
    for label, row in summarized.iterrows():
        runs = ", ".join(f"s{s}: {v:.1f}" for s, v in row["scores"])
        spread = format_spread(row["low"], row["high"], row["spread"])
        lines.append(f"| {label} | {row['runs']} | {row['iqm']:.1f} | {spread} | {runs} |")
    if len(order) == 2:
        scores = run_scores(table, LAST_EVALS).set_index(["algo", "seed"])["score"]
        a, b = order
        common = sorted(set(scores[a].index) & set(scores[b].index))
        diffs = ", ".join(f"s{s}: {scores[b][s] - scores[a][s]:+.1f}" for s in common)
        lines += ["", f"Per-seed difference {b} − {a} (score against score): {diffs}."]
        lines += [f"{format_improvement(row)}." for _, row in improvements(table, last=LAST_EVALS).iterrows()]
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

"""Cross-check of ``rlkit_td3.experiments.stats`` against the ``rliable`` package on the committed results.

For every group of runs in ``benchmarks/results/*/results.csv`` (the scores the summaries report: each run's
mean of its last 5 evaluations; the early-learning runs' mean of their 15k and 20k evaluations), it computes with
rliable (``metrics.aggregate_iqm``, ``metrics.probability_of_improvement`` and ``library.get_interval_estimates``,
after ``np.random.seed(0)``, 50,000 resamples: rliable's default) and with this project's module (seed 0, its
default 50,000 resamples), and prints both, side by side, with the largest difference.

rliable is not a dependency of the package. Run this where it is installed; its ``arch`` dependency needs
pandas < 3, so a scratch environment::

    python3 -m venv /tmp/rliable_venv && /tmp/rliable_venv/bin/pip install rliable "pandas<3"
    /tmp/rliable_venv/bin/python benchmarks/rliable_crosscheck.py

The project's module is loaded from its file, so that environment needs neither torch nor the package.
"""

from __future__ import annotations

import importlib.util
import sys
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
from rliable import library as rly
from rliable import metrics

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SEED = 0
REPS = 50_000


def _load_stats():
    spec = importlib.util.spec_from_file_location("stats", ROOT / "rlkit_td3" / "experiments" / "stats.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _scores(table: pd.DataFrame, group: list[str], steps: tuple[int, ...] | None = None) -> dict[str, np.ndarray]:
    """Per group: the (runs, 1) matrix of run scores, written out here with pandas (not with the module's code)."""
    if steps is not None:
        table = table[table["timesteps"].isin(steps)]
    else:
        table = table.sort_values("timesteps").groupby([*group, "seed"]).tail(5)
    per_run = table.groupby([*group, "seed"])["mean_return"].mean()
    return {
        " ".join(map(str, key if isinstance(key, tuple) else (key,))): per_run[key].sort_index().to_numpy()[:, None]
        for key in per_run.index.droplevel("seed").unique()
    }


def groups() -> list[tuple[str, dict[str, np.ndarray]]]:
    """(name, {group: (runs, 1) scores}) for every committed experiment."""
    out = []
    for name in ("walker_500k", "ant_500k", "halfcheetah_100k_v2", "sb3_compare_halfcheetah_100k", "walker_td3_ddpg"):
        table = pd.read_csv(RESULTS / name / "results.csv")
        out.append((name, _scores(table[table["finished"]], ["algo", "lib"])))
    plus = pd.read_csv(RESULTS / "td3_plus_halfcheetah_100k" / "results.csv").rename(columns={"timestep": "timesteps"})
    out.append(("td3_plus_halfcheetah_100k", _scores(plus, ["algo"])))
    early = pd.concat(
        [pd.read_csv(RESULTS / "sb3_compare_halfcheetah_100k" / "results.csv"),
         pd.read_csv(RESULTS / "early_learning" / "results.csv")]
    ).drop_duplicates(["lib", "seed", "timesteps"], keep="last")  # fmt: skip
    out.append(("early_learning (15k and 20k)", _scores(early, ["lib"], steps=(15_000, 20_000))))
    return out


def main() -> int:
    stats = _load_stats()
    worst = 0.0
    print(f"rliable: seed {SEED}, {REPS:,} resamples, percentile intervals; rlkit_td3: the same\n")
    for name, scored in groups():
        print(f"## {name}")
        for group, matrix in scored.items():
            np.random.seed(SEED)  # noqa: NPY002 (rliable draws from the global generator)
            point, interval = rly.get_interval_estimates({"g": matrix}, metrics.aggregate_iqm, reps=REPS)
            theirs = (float(point["g"]), *map(float, np.ravel(interval["g"])))
            ours = (float(stats.iqm(matrix)), *stats.stratified_bootstrap_ci(matrix, seed=SEED, reps=REPS))
            worst = max(worst, *(abs(a - b) for a, b in zip(theirs, ours)))
            print(
                f"IQM {group} ({len(matrix)} runs): rliable {theirs[0]:.4f} [{theirs[1]:.4f}, {theirs[2]:.4f}]"
                f"  rlkit_td3 {ours[0]:.4f} [{ours[1]:.4f}, {ours[2]:.4f}]"
            )
        for x, y in combinations(scored, 2):
            np.random.seed(SEED)  # noqa: NPY002 (rliable draws from the global generator)
            point, interval = rly.get_interval_estimates(
                {"p": (scored[x], scored[y])}, metrics.probability_of_improvement, reps=REPS
            )
            theirs = (float(point["p"]), *map(float, np.ravel(interval["p"])))
            ours = stats.probability_of_improvement_ci(scored[x], scored[y], seed=SEED, reps=REPS)
            worst = max(worst, *(abs(a - b) for a, b in zip(theirs, ours)))
            print(
                f"P({x} > {y}): rliable {theirs[0]:.4f} [{theirs[1]:.4f}, {theirs[2]:.4f}]"
                f"  rlkit_td3 {ours[0]:.4f} [{ours[1]:.4f}, {ours[2]:.4f}]"
            )
        print()
    print(f"largest difference between the two, over every figure above: {worst:.3g}")
    return 0 if worst < 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())

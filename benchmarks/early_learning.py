"""Early learning on HalfCheetahBulletEnv-v0: rlkit_td3, SB3 and rlkit_td3 with SB3's warm-up actions.

The 100k sweep (``benchmarks/sb3_compare.py``) found SB3 ahead of rlkit_td3 at 15k and 20k steps on every seed,
while at 10k (before the first update) the two libraries' evaluations are identical seed by seed (same initial
actor). The one loop difference between them is the warm-up: SB3 adds the exploration noise to its uniform
random actions (and clips), rlkit_td3 does not. This script reads sweep folders written by ``sb3_compare.py``
(``--libs rlkit sb3 rlkit_sb3warmup``, any ``--steps`` of at least 20k), scores each run by the mean of its
evaluations at 15k and 20k steps (the first two after learning starts at 10k) and prints, per library, the
run scores, their IQM with its 95 % stratified-bootstrap interval, and the probability of improvement between
the libraries with its interval (`rlkit_td3.experiments.stats`, rliable's definitions)::

    python benchmarks/early_learning.py /work/sweeps/halfcheetah_100k /work/sweeps/early_20k

``--results`` reads results.csv files instead of sweep folders; the committed report is
``--results benchmarks/results/sb3_compare_halfcheetah_100k/results.csv benchmarks/results/early_learning/results.csv``
(seeds 0-4 of rlkit_td3 and SB3 come from the first, the rest from the second).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np
import pandas as pd

from rlkit_td3.experiments.stats import format_improvement, format_spread, improvements, summarize

STEPS = (15_000, 20_000)
NAMES = {"rlkit": "rlkit_td3", "sb3": "SB3", "rlkit_sb3warmup": "rlkit_td3 + SB3 warm-up"}


def scores_of_rows(rows: list[dict[str, str]]) -> dict[str, dict[int, np.ndarray]]:
    """Per library, per seed: the evaluations at ``STEPS`` of every run (rows as in results.csv) that reached them;
    a later row of the same library, seed and step wins."""
    runs: dict[tuple[str, int], dict[int, float]] = {}
    for r in rows:
        runs.setdefault((r["lib"], int(r["seed"])), {})[int(r["timesteps"])] = float(r["mean_return"])
    scores: dict[str, dict[int, np.ndarray]] = {}
    for (lib, seed), values in sorted(runs.items()):
        if all(step in values for step in STEPS):
            scores.setdefault(lib, {})[seed] = np.array([values[step] for step in STEPS])
    return scores


def read_scores(sweeps: list[Path]) -> dict[str, dict[int, np.ndarray]]:
    """`scores_of_rows` of the run files of sweep folders (later folders win)."""
    rows = []
    for sweep in sweeps:
        for path in sorted((sweep / "runs").glob("*.csv")):
            with open(path, newline="") as f:
                rows += list(csv.DictReader(f))
    return scores_of_rows(rows)


def report(scores: dict[str, dict[int, np.ndarray]]) -> str:
    """The table (run scores, IQM and its interval per library) and the probabilities of improvement."""
    table = pd.DataFrame(
        [
            (NAMES.get(lib, lib), "HalfCheetahBulletEnv-v0", seed, step, value)
            for lib, runs in scores.items()
            for seed, values in runs.items()
            for step, value in zip(STEPS, values)
        ],
        columns=["algo", "env", "seed", "timestep", "mean_return"],
    )
    lines = [
        "Score of a run: the mean of its 15k and 20k evaluations. IQM: the interquartile mean of the run scores; "
        "95 % CI: stratified bootstrap over runs; P(X > Y): the probability that a run of X scores higher than a "
        "run of Y (rliable's definitions).",
        "",
        "| library | runs | IQM | spread | run scores |",
        "|---|---:|---:|---|---|",
    ]
    for row in summarize(table, last=len(STEPS)).itertuples():
        runs = ", ".join(f"s{s}: {v:.1f}" for s, v in row.scores)
        spread = format_spread(row.low, row.high, row.spread)
        lines.append(f"| {row.algo} | {row.runs} | {row.iqm:.1f} | {spread} | {runs} |")
    lines.append("")
    lines += [f"- {format_improvement(row)}" for _, row in improvements(table, last=len(STEPS)).iterrows()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sweeps", type=Path, nargs="*", help="sweep folders written by sb3_compare.py")
    parser.add_argument(
        "--results", type=Path, nargs="+", help="instead of sweep folders: results.csv files of their rows (later win)"
    )
    parser.add_argument("--out", type=Path, help="also write the report here")
    args = parser.parse_args()
    if args.results is not None:
        rows = []
        for path in args.results:
            with open(path, newline="") as f:
                rows += list(csv.DictReader(f))
        text = report(scores_of_rows(rows))
    elif args.sweeps:
        text = report(read_scores(args.sweeps))
    else:
        parser.error("give sweep folders, or --results")
    if args.out is not None:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()

"""Early learning on HalfCheetahBulletEnv-v0: rlkit_td3, SB3 and rlkit_td3 with SB3's warm-up actions.

The 100k sweep (``benchmarks/sb3_compare.py``) found SB3 ahead of rlkit_td3 at 15k and 20k steps on every seed,
while at 10k (before the first update) the two libraries' evaluations are identical seed by seed (same initial
actor). The one loop difference between them is the warm-up: SB3 adds the exploration noise to its uniform
random actions (and clips), rlkit_td3 does not. This script reads sweep folders written by ``sb3_compare.py``
(``--libs rlkit sb3 rlkit_sb3warmup``, any ``--steps`` of at least 20k), scores each run by the mean of its
evaluations at 15k and 20k steps (the first two after learning starts at 10k) and prints, per library, the
per-seed scores and their mean, and the IQM differences between the libraries with bootstrap CIs over runs
(`rlkit_td3.experiments.stats.iqm_difference_ci`)::

    python benchmarks/early_learning.py /work/sweeps/halfcheetah_100k /work/sweeps/early_20k
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from rlkit_td3.experiments.stats import iqm, iqm_difference_ci

STEPS = (15_000, 20_000)
NAMES = {"rlkit": "rlkit_td3", "sb3": "SB3", "rlkit_sb3warmup": "rlkit_td3 + SB3 warm-up"}


def read_scores(sweeps: list[Path]) -> dict[str, dict[int, np.ndarray]]:
    """Per library, per seed: the evaluations at ``STEPS`` of every run that reached them (later folders win)."""
    scores: dict[str, dict[int, np.ndarray]] = {}
    for sweep in sweeps:
        for path in sorted((sweep / "runs").glob("*.csv")):
            with open(path, newline="") as f:
                rows = {int(r["timesteps"]): float(r["mean_return"]) for r in csv.DictReader(f)}
            if all(step in rows for step in STEPS):
                lib, seed = path.stem.rsplit("_", 2)[0], int(path.stem.rsplit("_s", 1)[1])
                scores.setdefault(lib, {})[seed] = np.array([rows[step] for step in STEPS])
    return scores


def report(scores: dict[str, dict[int, np.ndarray]]) -> str:
    lines = ["| library | runs | per-seed mean of the 15k and 20k evaluations | mean | IQM |", "|---|---|---|---|---|"]
    for lib, runs in sorted(scores.items()):
        per_seed = ", ".join(f"s{s}: {v.mean():.0f}" for s, v in sorted(runs.items()))
        values = np.array([v for _, v in sorted(runs.items())])
        lines.append(
            f"| {NAMES.get(lib, lib)} | {len(runs)} | {per_seed} | {values.mean():.0f} | {iqm(values.ravel()):.0f} |"
        )
    lines.append("")
    libs = sorted(scores)
    for i, first in enumerate(libs):
        for second in libs[i + 1 :]:
            a = np.array([v for _, v in sorted(scores[first].items())])
            b = np.array([v for _, v in sorted(scores[second].items())])
            diff, low, high = iqm_difference_ci(a, b)
            lines.append(
                f"- IQM {NAMES.get(first, first)} − {NAMES.get(second, second)}: {diff:.0f} [{low:.0f}, {high:.0f}]"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sweeps", type=Path, nargs="+", help="sweep folders written by sb3_compare.py")
    parser.add_argument("--out", type=Path, help="also write the report here")
    args = parser.parse_args()
    text = report(read_scores(args.sweeps))
    if args.out is not None:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()

"""Rewrite every committed summary under ``benchmarks/results/`` from its raw ``results.csv``.

The sweeps themselves (their run folders) are not committed; their ``results.csv`` holds every evaluation, which
is all a summary needs. This script recomputes, by the statistics of ``rlkit_td3.experiments.stats`` (rliable's
definitions):

- the ``summary.md`` of each ``benchmarks/sb3_compare.py`` sweep (``sb3_compare.summary_text``); the CPU line is
  carried over from the summary the sweep wrote, since ``results.csv`` does not record the machine;
- ``td3_plus_halfcheetah_100k/summary.md`` (``td3_plus.summary``);
- ``early_learning/report.md`` (``early_learning.report``; seeds 0-4 of rlkit_td3 and SB3 are the 15k and 20k
  evaluations of ``sb3_compare_halfcheetah_100k``).

A sweep without ``curves.png`` gets one (the one the page shows: ``docs/img/<sweep>.png`` is a copy of it);
``--plots`` redraws them all. Usage::

    python benchmarks/resummarize.py           # then: git diff benchmarks/results docs/img
"""

from __future__ import annotations

import argparse
import csv
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import early_learning  # noqa: E402
import sb3_compare  # noqa: E402
import td3_plus  # noqa: E402

from rlkit_td3.experiments.plots import plot_learning_curves  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SB3_COMPARE_SWEEPS = (
    "walker_500k",
    "ant_500k",
    "halfcheetah_100k_v2",
    "sb3_compare_halfcheetah_100k",
    "walker_td3_ddpg",
)
_CPU = re.compile(r"CPU of the finished runs: (.*?)\.\s*$", re.M)


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def summaries() -> dict[Path, str]:
    """Every committed summary's path and the text the raw results give it now."""
    texts = {}
    for name in SB3_COMPARE_SWEEPS:
        sweep = RESULTS / name
        old = (sweep / "summary.md").read_text() if (sweep / "summary.md").is_file() else ""
        found = _CPU.search(old)
        cpus = found.group(1).split("; ") if found else []
        texts[sweep / "summary.md"] = sb3_compare.summary_text(_rows(sweep / "results.csv"), cpus)
    plus = RESULTS / "td3_plus_halfcheetah_100k"
    texts[plus / "summary.md"] = td3_plus.summary(pd.read_csv(plus / "results.csv"))
    early = RESULTS / "early_learning"
    rows = _rows(RESULTS / "sb3_compare_halfcheetah_100k" / "results.csv") + _rows(early / "results.csv")
    texts[early / "report.md"] = early_learning.report(early_learning.scores_of_rows(rows))
    return texts


def resummarize(plots: bool = False) -> list[Path]:
    """Rewrite the summaries (and missing curves); returns the files written."""
    written = []
    for path, text in summaries().items():
        path.write_text(text)
        written.append(path)
    for name in SB3_COMPARE_SWEEPS:
        sweep = RESULTS / name
        if plots or not (sweep / "curves.png").is_file():
            sb3_compare.plot_rows(_rows(sweep / "results.csv"), sweep / "curves.png")
            shutil.copyfile(sweep / "curves.png", ROOT / "docs" / "img" / f"{name}.png")
            written += [sweep / "curves.png", ROOT / "docs" / "img" / f"{name}.png"]
    plus = RESULTS / "td3_plus_halfcheetah_100k"
    if plots or not (plus / "curves.png").is_file():
        with tempfile.TemporaryDirectory() as tmp:
            (png,) = plot_learning_curves(pd.read_csv(plus / "results.csv"), tmp)
            shutil.copyfile(png, plus / "curves.png")
        shutil.copyfile(plus / "curves.png", ROOT / "docs" / "img" / f"{plus.name}.png")
        written += [plus / "curves.png", ROOT / "docs" / "img" / f"{plus.name}.png"]
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plots", action="store_true", help="redraw every curves.png too")
    args = parser.parse_args()
    for path in resummarize(args.plots):
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

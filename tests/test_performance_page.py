"""docs/performance.md (and the speed table now in its measurement log): each figure against SB3 is in the
benchmark file, at the commit, that its column cites."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "performance.md").read_text()
LOG = (ROOT / "docs" / "performance_log.md").read_text()  # the dated speed table moved here
SOURCE = re.compile(r"`(?:benchmarks/results/)?(\w+\.txt)` at `([0-9a-f]{7})`")


def cited_file(name: str, commit: str) -> str:
    path = f"benchmarks/results/{name}"
    return subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{path}"], capture_output=True, text=True).stdout


def comparison_columns() -> dict[tuple[str, str], list[str]]:
    """``{(file, commit): [cell, ...]}`` for each machine column of the table of ratios against SB3."""
    page = PAGE.splitlines()
    (start,) = [i for i, line in enumerate(page) if line.startswith("| measurement |")]
    end = next(i for i in range(start, len(page)) if not page[i].startswith("|"))  # the table ends
    header, lines = page[start], page[start + 1 : end]
    sources = [SOURCE.search(cell).groups() for cell in header.strip("|").split("|")[1:]]
    rows = [line.strip("|").split("|")[1:] for line in lines if "×" in line]
    return {source: [row[i] for row in rows] for i, source in enumerate(sources)}


def test_each_ratio_and_its_range_are_in_the_cited_benchmark_file():
    columns = comparison_columns()
    assert len(columns) == 2 and all(len(cells) == 4 for cells in columns.values())
    for (name, commit), cells in columns.items():
        text = cited_file(name, commit)
        assert text, f"{name} does not exist at {commit}"
        for cell in cells:
            ratio, low, high = re.findall(r"\d+\.\d+", cell)
            assert f"x{ratio} (min {low}, max {high}" in text, f"{cell!r} not in {name} at {commit}"


def test_the_speed_table_figures_are_in_the_cited_files():
    checked = 0
    for line in (PAGE + "\n" + LOG).splitlines():
        match = SOURCE.search(line)
        if line.startswith("| 2-core") and match:
            text = cited_file(*match.groups())
            measured = [round(float(x)) for x in re.findall(r"rlkit_td3\s+(\d+\.\d+)\s+SB3", text)]
            shown = [int(x) for x in re.findall(r"(\d+) env steps/s", line)]
            assert shown and shown == measured, f"{line!r}: the file {match.groups()} says {measured}"
            checked += 1
    assert checked == 2

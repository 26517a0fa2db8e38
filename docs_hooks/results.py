"""mkdocs hook: ``<!-- results: benchmarks/results/DIR/summary.md -->`` becomes that committed results file.

The summary a sweep script writes (a Markdown table and the lines under it) is inserted where the marker stands,
so a results table on a page is the file itself and cannot drift from it. A missing file fails the build (mkdocs
``--strict``) with its path.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"<!--\s*results:\s*(\S+)\s*-->")


def results_markdown(relative: str) -> str:
    """The text of the results file ``relative`` (to the repository root), without a leading title."""
    path = (ROOT / relative).resolve()
    if ROOT / "benchmarks" / "results" not in path.parents:
        raise ValueError(f"results marker {relative!r}: only files under benchmarks/results/ can be included")
    if not path.is_file():
        raise FileNotFoundError(f"results marker: {relative} does not exist")
    lines = path.read_text(encoding="utf-8").strip().splitlines()
    while lines and lines[0].startswith("#"):
        lines = lines[1:]
    return "\n".join(lines).strip() + "\n"


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return MARKER.sub(lambda m: results_markdown(m.group(1)), markdown)

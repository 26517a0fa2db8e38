"""Every ```python block of README.md and docs/*.md runs as written, each in a fresh namespace.

Markers, on the line directly before a block:

- ``<!-- no-test -->`` skips the block (for examples that need hours);
- ``<!-- continue -->`` runs the block in the namespace of the block before it (a page that builds one example
  over several blocks says so, and the reader sees where to start copying).

A block that only includes a file (``--8<-- "docs/examples/x.py"``, the examples gallery) is not run here: the
gallery's scripts run as scripts, in tests/test_examples_gallery.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SNIPPET = re.compile(r'--8<-- "[^"]+"')
BLOCK = re.compile(r"(?:<!-- (?P<mark>no-test|continue) -->\s*\n)?```python\n(?P<code>.*?)```", re.S)


def _blocks(page: Path) -> list[tuple[str, bool]]:
    """``(code, continues)`` for each block to run: whether it runs in the previous block's namespace."""
    return [
        (m["code"], m["mark"] == "continue")
        for m in BLOCK.finditer(page.read_text())
        if m["mark"] != "no-test" and not SNIPPET.fullmatch(m["code"].strip())
    ]


def run_blocks(blocks: list[tuple[str, bool]], name: str) -> None:
    namespace: dict = {}
    for i, (code, continues) in enumerate(blocks):
        if not continues:
            namespace = {"__name__": "__docs__"}
        exec(compile(code, f"{name}[block {i}]", "exec"), namespace)


@pytest.mark.parametrize("page", [p for p in PAGES if _blocks(p)], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_page_code_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_blocks(_blocks(page), page.name)


def test_a_block_that_uses_an_earlier_one_needs_the_continue_marker(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    page = tmp_path / "page.md"
    first, second = "```python\nx = 41\n```\n\n", "```python\nassert x + 1 == 42\n```\n"
    page.write_text(first + second)
    with pytest.raises(NameError, match="'x'"):
        run_blocks(_blocks(page), "page.md")
    page.write_text(first + "<!-- continue -->\n" + second)
    run_blocks(_blocks(page), "page.md")
    page.write_text(first + "<!-- no-test -->\n" + second)
    assert len(_blocks(page)) == 1

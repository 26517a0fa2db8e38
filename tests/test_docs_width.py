"""Every line of code the docs site shows fits its column: nothing is cut at the right edge.

Measured in headless Chromium at 1280 px (mkdocs-material, ``content.code.copy``): a code block's text area is
656 px wide and a character of the code font (13.6 px, advance 0.6 em) is 8.18 px, so 80 characters fit. The copy
button sits over the first line from about character 79 on, so a block's first line stops at 78.

Checked: every fenced block in ``docs/**/*.md``, the files those blocks include (``--8<-- "path"``), and the
fenced blocks of the package's docstrings (the API reference renders them as code).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 80
FIRST_LINE_WIDTH = 78
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)")
SNIPPET = re.compile(r'^\s*--8<-- "(?P<path>[^"]+)"\s*$')
# Pages other developers are rewriting right now; their code blocks are reflowed there (remove when done).
NOT_YET: set[str] = set()


def code_blocks(text: str) -> list[tuple[int, list[str]]]:
    """``(line number of the opening fence, lines of the block)`` for each fenced block of ``text``.

    A block's lines are dedented by the fence's indentation, and a snippet line is replaced by the included file.
    """
    blocks: list[tuple[int, list[str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][indent:] if lines[j][:indent].isspace() else lines[j])
            j += 1
        expanded: list[str] = []
        for line in body:
            snippet = SNIPPET.match(line)
            expanded += (ROOT / snippet["path"]).read_text().splitlines() if snippet else [line]
        blocks.append((i + 1, expanded))
        i = j + 1
    return blocks


def too_wide(blocks: list[tuple[int, list[str]]]) -> list[str]:
    """``"block at line N, line K: W characters"`` for every line wider than its limit."""
    found = []
    for start, lines in blocks:
        for k, line in enumerate(lines):
            limit = FIRST_LINE_WIDTH if k == 0 else WIDTH
            if len(line) > limit:
                found.append(f"block at line {start}, line {k + 1}: {len(line)} > {limit}: {line.strip()[:60]}")
    return found


def docstring_blocks(path: Path) -> list[tuple[int, list[str]]]:
    """The fenced blocks of a module's text, dedented: docstrings are the only place a fence appears in code."""
    blocks = []
    for start, lines in code_blocks(path.read_text()):
        blocks.append((start, textwrap.dedent("\n".join(lines)).splitlines()))
    return blocks


PAGES = [p for p in sorted((ROOT / "docs").rglob("*.md")) if p.relative_to(ROOT).as_posix() not in NOT_YET]
MODULES = [path for path in sorted((ROOT / "rlkit_td3").rglob("*.py")) if "```" in path.read_text()]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_page_code_fits_the_column(page):
    assert too_wide(code_blocks(page.read_text())) == []


def test_the_pages_not_yet_checked_still_need_it():
    # Once a page in NOT_YET fits, it leaves the set and is checked like the others.
    for name in NOT_YET:
        assert too_wide(code_blocks((ROOT / name).read_text())), f"{name} fits now: remove it from NOT_YET"


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_docstring_code_fits_the_column(module):
    assert too_wide(docstring_blocks(module)) == []


def test_a_wide_line_is_caught_in_a_block_a_snippet_and_an_indented_block(tmp_path):
    snippet = tmp_path / "wide.py"
    snippet.write_text("x = 1\n" + "y" * 81 + "\n")
    text = (
        "```python\nshort\n" + "z" * 80 + "\n```\n\n"
        f'```python\n--8<-- "{snippet}"\n```\n\n'
        "!!! note\n    ```bash\n    " + "w" * 79 + "\n    ```\n"
        "outside a block: " + "v" * 100 + "\n"
    )
    found = too_wide(code_blocks(text))
    assert len(found) == 2, found
    assert found[0].startswith("block at line 6, line 2: 81 > 80")
    assert found[1].startswith("block at line 11, line 1: 79 > 78")  # under the copy button

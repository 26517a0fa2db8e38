"""Every ```python block of README.md and docs/*.md runs as written (blocks of a page share a namespace).

A block directly preceded by the line ``<!-- no-test -->`` is skipped (for examples that need hours).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"(?P<skip><!-- no-test -->\s*\n)?```python\n(?P<code>.*?)```", re.S)


def _blocks(page: Path) -> list[str]:
    return [m["code"] for m in BLOCK.finditer(page.read_text()) if not m["skip"]]


@pytest.mark.parametrize("page", [p for p in PAGES if _blocks(p)], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_page_code_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    for i, code in enumerate(_blocks(page)):
        exec(compile(code, f"{page.name}[block {i}]", "exec"), namespace)

"""mkdocs hook: replace ``<!-- doors -->`` with the table of every door into a model and what it checks.

The table is built from ``DOORS`` in ``rlkit_td3/fileio/file_reader.py`` (parsed, not imported: the docs build needs no
torch for this), so the Security page cannot drift from the registry the code and its tests use.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

READER = Path(__file__).resolve().parents[1] / "rlkit_td3" / "fileio" / "file_reader.py"
MARKER = "<!-- doors -->"


def read_doors(path: str | Path = READER) -> dict[str, tuple[str, str]]:
    """The ``DOORS`` dict literal of ``path``; ``ValueError`` if there is none."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "DOORS" and node.value is not None:
            return ast.literal_eval(node.value)
    raise ValueError(f"no DOORS literal in {path}")


def doors_table(doors: dict[str, tuple[str, str]]) -> str:
    """A Markdown table: door, the function that implements it, what it checks."""
    rows = ["| door | read by | what it checks |", "|---|---|---|"]
    for door, (function, checks) in doors.items():
        rows.append(f"| {door} | `{function}` | {checks.replace('|', '/')} |")
    return "\n".join(rows)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """Fill the marker with the table of doors."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, doors_table(read_doors()))

"""mkdocs hook: replace ``<!-- parameters: module.Class -->`` with the class's constructor parameters as a table.

The defaults come from ``inspect.signature`` of the class itself and the descriptions from the ``Args:`` section
of the first docstring in its method resolution order that documents the parameter, so the table on the
TD3 and DDPG pages cannot drift from the code.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

MARKER = re.compile(r"<!--\s*parameters:\s*([\w.]+)\s*-->")
_ARG = re.compile(r"^(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


def docstring_args(docstring: str | None) -> dict[str, str]:
    """The ``Args:`` section of a Google-style docstring, as ``{name: description}`` on one line each."""
    if not docstring:
        return {}
    lines = inspect.cleandoc(docstring).splitlines()
    args: dict[str, str] = {}
    inside, indent, current = False, None, None
    for line in lines:
        if not inside:
            inside = line.strip() == "Args:"
            continue
        if line.strip() and not line.startswith(" "):
            break  # the next section
        stripped = line.strip()
        if not stripped:
            continue
        depth = len(line) - len(line.lstrip())
        if indent is None:
            indent = depth
        match = _ARG.match(stripped)
        if depth == indent and match:
            current = match.group(1)
            args[current] = match.group(2)
        elif current is not None:
            args[current] += " " + stripped
    return args


def _format_default(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10_000:
        return f"{value:_}"
    return repr(value)


def parameter_rows(cls: type) -> list[tuple[str, str, str]]:
    """``(name, default, description)`` for every constructor parameter of ``cls`` but ``self`` and private ones."""
    descriptions: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        descriptions.update(docstring_args(klass.__doc__))
        descriptions.update(docstring_args(getattr(klass.__init__, "__doc__", None)))
    rows = []
    for name, parameter in inspect.signature(cls.__init__).parameters.items():
        variadic = parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
        if name == "self" or name.startswith("_") or variadic:
            continue
        default = "required" if parameter.default is parameter.empty else f"`{_format_default(parameter.default)}`"
        rows.append((name, default, descriptions.get(name, "")))
    return rows


def parameter_table(path: str) -> str:
    """The Markdown table for the class at dotted ``path``."""
    module_name, _, class_name = path.rpartition(".")
    cls = getattr(importlib.import_module(module_name), class_name)
    lines = ["| parameter | default | meaning |", "|---|---|---|"]
    for name, default, description in parameter_rows(cls):
        lines.append(f"| `{name}` | {default} | {description.replace('|', '&#124;')} |")
    return "\n".join(lines)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """mkdocs event: expand every parameters marker of the page."""
    return MARKER.sub(lambda match: parameter_table(match.group(1)), markdown)

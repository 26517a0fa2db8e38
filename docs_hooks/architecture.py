"""mkdocs hook: the Architecture page's floor table and diagram, generated from the package's imports.

``<!-- architecture: floors -->`` on a page becomes a table of the package's top-level parts (each top-level
module, and each folder taken whole) by floor, with the layer each belongs to and the first line of its
docstring; ``<!-- architecture: diagram -->`` becomes an SVG drawing of the same floors. Both are computed here
from the source, so the page cannot drift from the code; ``tests/test_architecture.py`` checks the rules on the
same computation:

- the import graph is read from the AST (every ``import`` anywhere in a module, lazy ones included);
- a *part* is a top-level module or a top-level folder; a part's floor is one above the highest floor of the parts
  it imports (a part that imports no other part stands on floor 1), which exists only while the parts form no
  circle;
- each part belongs to one of the `LAYERS` below, and no part imports a part of a higher layer.
"""

from __future__ import annotations

import ast
import html
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rlkit_td3"
FACE = "rlkit_td3"
"""The package's own ``__init__`` (the face: what ``from rlkit_td3 import TD3`` reads)."""

LAYERS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "ground",
        "the bytes wing, the homes of the checks, helpers with SB3's names; no component",
        (
            "checks",
            "fileio",
            "preprocessing",
            "running_mean_std",
            "version",
            "sb2_compat",
            "utils",
            "schedules",
            "save_util",
            "export",
            "video",
            "envs",
            "env_checker",
        ),
    ),
    (
        "components",
        "the swappable parts: each owns its state and checks what it is given",
        (
            "noise",
            "buffers",
            "her",
            "policies",
            "torch_layers",
            "vec_env",
            "callbacks",
            "logger",
            "monitor",
            "evaluation",
            "results_plotter",
            "env_util",
        ),
    ),
    ("update", "the update's kernels", ("update",)),
    ("persistence", "what a model file holds and how a run resumes", ("persistence",)),
    ("base", "BaseAlgorithm and the components' type names", ("base_class", "type_aliases")),
    ("loop", "OffPolicyAlgorithm: collect, store, update", ("off_policy", "off_policy_algorithm")),
    ("algorithms", "the algorithms and the package's face", ("td3", "ddpg", "td7", FACE)),
    ("tooling", "through the public API only", ("experiments", "cli", "demo", "__main__")),
)
"""The layers, bottom first: ``(name, what they hold, parts)``. A part imports only parts of its own layer or below."""

MAX_TOP_LEVEL_MODULES = 25
MAX_FLOORS = 15


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name, for its ``__init__``)."""
    mods = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def imported_modules(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """The package's modules that module ``name`` imports, anywhere in its source.

    ``from package import name`` is an edge to the submodule when ``name`` is one, else to the package.
    """
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in mods else base)
    edges = set()
    for target in targets:
        while target and target not in mods:  # `import a.b.c` of a name inside a module: its module
            target = target.rpartition(".")[0]
        if target and target != name:
            edges.add(target)
    return edges


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """``{module: the package's modules it imports}`` for every module of the package."""
    mods = module_files(package)
    return {name: imported_modules(name, path, mods) for name, path in mods.items()}


def part_of(module: str) -> str:
    """The top-level part a module belongs to: ``rlkit_td3.fileio.file_reader`` -> ``fileio``."""
    names = module.split(".")
    return names[1] if len(names) > 1 else FACE


def part_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The import graph between top-level parts (imports inside a part are left out)."""
    parts: dict[str, set[str]] = {}
    for module, targets in graph.items():
        edges = parts.setdefault(part_of(module), set())
        edges.update(part_of(target) for target in targets if part_of(target) != part_of(module))
    return parts


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), those of more than one node, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def floors(parts: dict[str, set[str]]) -> dict[str, int]:
    """Each part's floor: 1 for a part that imports no other, else one above the highest it imports.

    Raises:
        ValueError: the parts import each other in a circle (then no floors exist).
    """
    circles = strongly_connected(parts)
    if circles:
        raise ValueError(f"the parts import each other in circles: {circles}")
    found: dict[str, int] = {}

    def floor(part: str) -> int:
        if part not in found:
            found[part] = 1 + max((floor(target) for target in parts.get(part, ())), default=0)
        return found[part]

    for part in parts:
        floor(part)
    return found


def layer_of(part: str) -> int | None:
    """The index in `LAYERS` of the layer that lists ``part`` (``None`` if none does)."""
    for index, (_, _, members) in enumerate(LAYERS):
        if part in members:
            return index
    return None


def upward_imports(parts: dict[str, set[str]]) -> list[str]:
    """The imports from a part to a part of a higher layer, as readable lines."""
    return [
        f"{part} ({LAYERS[layer_of(part)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
        for part, targets in sorted(parts.items())
        for target in sorted(targets)
        if layer_of(part) is not None and layer_of(target) is not None and layer_of(target) > layer_of(part)
    ]


def top_level_modules(package: Path = PACKAGE) -> list[str]:
    """The ``.py`` files directly in the package (``__init__`` and ``__main__`` included)."""
    return sorted(path.name for path in package.glob("*.py"))


def summary(part: str, package: Path = PACKAGE) -> str:
    """The first line of the part's docstring (a folder's ``__init__``), for the table."""
    if part == FACE:
        path = package / "__init__.py"
    else:
        path = package / f"{part}.py" if (package / f"{part}.py").exists() else package / part / "__init__.py"
    doc = ast.get_docstring(ast.parse(path.read_text())) if path.exists() else None
    paragraph = " ".join((doc or "").strip().split("\n\n")[0].split())
    sentence_end = paragraph.find(". ")
    return paragraph if sentence_end < 0 else paragraph[: sentence_end + 1]


@cache
def _computed() -> tuple[dict[str, set[str]], dict[str, int]]:
    parts = part_graph(import_graph())
    return parts, floors(parts)


def floor_table() -> str:
    """The Markdown table of the parts by floor, highest floor first."""
    parts, floor_of = _computed()
    lines = ["| floor | part | layer | what it holds |", "|---:|---|---|---|"]
    for part in sorted(parts, key=lambda p: (-floor_of[p], p)):
        layer = layer_of(part)
        folder = "" if (PACKAGE / f"{part}.py").exists() else "/"
        name = "`rlkit_td3` (the face)" if part == FACE else f"`{part}{folder}`"
        kind = LAYERS[layer][0] if layer is not None else "(none)"
        lines.append(f"| {floor_of[part]} | {name} | {kind} | {summary(part).replace('|', '/')} |")
    return "\n".join(lines)


_COLOURS = ("#e8eef7", "#e6f4ea", "#fdf2e0", "#f3e8fd", "#fde8e8", "#e0f2f1", "#fff8d6", "#eeeeee")


def diagram() -> str:
    """An SVG of the floors: one row a floor (highest at the top), one box a part, coloured by layer."""
    parts, floor_of = _computed()
    top = max(floor_of.values())
    rows = {f: sorted(p for p in parts if floor_of[p] == f) for f in range(1, top + 1)}
    box_w, box_h, gap, label_w = 118, 22, 6, 34
    width = label_w + max(len(r) for r in rows.values()) * (box_w + gap)
    height = top * (box_h + gap) + gap
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="The package parts by floor" style="max-width:100%;height:auto;font:11px sans-serif">'
    ]
    for floor, members in rows.items():
        y = gap + (top - floor) * (box_h + gap)
        out.append(f'<text x="2" y="{y + 15}">{floor}</text>')
        for i, part in enumerate(members):
            x = label_w + i * (box_w + gap)
            layer = layer_of(part)
            colour = _COLOURS[layer % len(_COLOURS)] if layer is not None else "#ffffff"
            title = html.escape(f"{part}: {LAYERS[layer][0] if layer is not None else '?'}")
            out.append(
                f'<g><title>{title}</title><rect x="{x}" y="{y}" width="{box_w}" height="{box_h}" rx="3" '
                f'fill="{colour}" stroke="#777"/><text x="{x + 5}" y="{y + 15}">{html.escape(part)}</text></g>'
            )
    legend = " · ".join(
        f'<span style="background:{_COLOURS[i]};padding:0 .3em">{name}</span>' for i, (name, _, _) in enumerate(LAYERS)
    )
    out.append("</svg>")
    return "\n".join(["<figure>", "".join(out), f"<figcaption>Layers: {legend}</figcaption>", "</figure>"])


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """Replace the architecture markers with the generated table and diagram."""
    if "<!-- architecture:" not in markdown:
        return markdown
    return markdown.replace("<!-- architecture: floors -->", floor_table()).replace(
        "<!-- architecture: diagram -->", diagram()
    )

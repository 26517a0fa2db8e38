"""The package's structure: no import circles (lazy imports included), imports only down the floors that
docs/architecture.md lists, and no file over 750 lines.

The import graph is drawn from the source (the AST), not from ``sys.modules``: every ``import`` and
``from ... import`` anywhere in a module counts, also one inside a function, so that a lazy import cannot hide
a circle. ``from package import name`` is an edge to the submodule when ``name`` is one, else to the package
(its ``__init__``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rlkit_td3"
MAX_LINES = 750
ARCHITECTURE_PAGE = ROOT / "docs" / "architecture.md"


def module_files() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name, for its ``__init__``)."""
    mods = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def imported_modules(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """The package's modules that module ``name`` imports, anywhere in its source."""
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


def import_graph() -> dict[str, set[str]]:
    mods = module_files()
    return {name: imported_modules(name, path, mods) for name, path in mods.items()}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), those of more than one module, sorted."""
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
                    work.append((child, iter(sorted(graph[child]))))
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


def floors_from_page() -> dict[str, int]:
    """The floor table of docs/architecture.md: ``{dotted module or package name: floor}``."""
    floors = {}
    for line in ARCHITECTURE_PAGE.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            for name in re.findall(r"`([\w.]+)`", cells[1]):
                floors["rlkit_td3" if name == "rlkit_td3" else f"rlkit_td3.{name}"] = int(cells[0])
    return floors


def floor_of(module: str, floors: dict[str, int]) -> int | None:
    """The floor of the most specific name that covers ``module`` (``rlkit_td3`` covers only the package's face)."""
    covering = [name for name in floors if module == name or (name != "rlkit_td3" and module.startswith(name + "."))]
    return floors[max(covering, key=len)] if covering else None


def test_graph_sees_lazy_relative_and_submodule_imports():
    graph = import_graph()
    assert "rlkit_td3.td3" in graph["rlkit_td3"]  # `from rlkit_td3.td3 import TD3` in the package's face
    assert all(target.startswith("rlkit_td3") for edges in graph.values() for target in edges)
    # the cycle finder itself, on a made-up graph
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_import_circles():
    circles = strongly_connected(import_graph())
    assert not circles, "import circles in rlkit_td3 (lazy imports included):\n" + "\n".join(
        " <-> ".join(circle) for circle in circles
    )


def test_no_library_file_over_750_lines():
    long = {
        str(path.relative_to(ROOT)): n
        for path in PACKAGE.rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"files over {MAX_LINES} lines (split them by concept): {long}"


def test_every_module_has_a_floor_on_the_architecture_page():
    floors = floors_from_page()
    assert len(floors) > 20 and set(floors.values()) == set(range(7))
    missing = [module for module in import_graph() if floor_of(module, floors) is None]
    assert not missing, f"modules without a floor in docs/architecture.md's table (add them): {missing}"


def test_imports_run_down_the_floors():
    floors = floors_from_page()
    upward = [
        f"{module} (floor {floor_of(module, floors)}) imports {target} (floor {floor_of(target, floors)})"
        for module, targets in sorted(import_graph().items())
        for target in sorted(targets)
        if (floor_of(target, floors) or 0) > (floor_of(module, floors) or 0)
    ]
    assert not upward, "imports that go up a floor (see docs/architecture.md):\n" + "\n".join(upward)


def test_the_floor_check_sees_an_upward_import():
    floors = {"rlkit_td3": 5, "rlkit_td3.noise": 1, "rlkit_td3.policies": 1, "rlkit_td3.policies.registry": 0}
    assert floor_of("rlkit_td3.policies.td3_policy", floors) == 1
    assert floor_of("rlkit_td3.policies.registry", floors) == 0
    assert floor_of("rlkit_td3.td3", floors) is None  # the package's face covers no submodule

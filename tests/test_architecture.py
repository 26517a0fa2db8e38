"""The package's structure, on the computation that generates the Architecture page (docs_hooks/architecture.py).

The import graph is drawn from the source (the AST), not from ``sys.modules``: every ``import`` and
``from ... import`` anywhere in a module counts, also one inside a function, so that a lazy import cannot hide
a circle. The rules: no import circle between modules; the top-level parts (each top-level module, each folder
taken whole) form no circle either, so each stands on a floor, at most 15 of them; no part imports a part of a
higher layer; at most 25 top-level modules; no file over 750 lines.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs_hooks"))
import architecture as arch  # noqa: E402

PACKAGE = ROOT / "rlkit_td3"
MAX_LINES = 750


def test_graph_sees_lazy_relative_and_submodule_imports():
    graph = arch.import_graph()
    assert "rlkit_td3.td3" in graph["rlkit_td3"]  # `from rlkit_td3.td3 import TD3` in the package's face
    assert all(target.startswith("rlkit_td3") for edges in graph.values() for target in edges)
    # the cycle finder itself, on a made-up graph
    assert arch.strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert arch.strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_import_circles():
    circles = arch.strongly_connected(arch.import_graph())
    assert not circles, "import circles in rlkit_td3 (lazy imports included):\n" + "\n".join(
        " <-> ".join(circle) for circle in circles
    )


def test_the_top_level_parts_stand_on_at_most_15_floors():
    parts = arch.part_graph(arch.import_graph())
    assert not arch.strongly_connected(parts), arch.strongly_connected(parts)
    floors = arch.floors(parts)
    assert max(floors.values()) <= arch.MAX_FLOORS, sorted(floors.items(), key=lambda item: item[1])
    assert floors["__main__"] == max(floors.values())  # the entry point is the top of the house


def test_floors_and_part_graph_on_a_made_up_graph():
    graph = {"rlkit_td3.a.x": {"rlkit_td3.a.y", "rlkit_td3.b"}, "rlkit_td3.a.y": set(), "rlkit_td3.b": set()}
    parts = arch.part_graph(graph)
    assert parts == {"a": {"b"}, "b": set()}
    assert arch.floors(parts) == {"a": 2, "b": 1}
    try:
        arch.floors({"a": {"b"}, "b": {"a"}})
    except ValueError as exc:
        assert "circles" in str(exc)
    else:
        raise AssertionError("a circle between parts must have no floors")


def test_every_part_has_a_layer_and_imports_only_its_layer_or_below():
    parts = arch.part_graph(arch.import_graph())
    missing = [part for part in parts if arch.layer_of(part) is None]
    assert not missing, f"parts without a layer in docs_hooks/architecture.py's LAYERS (add them): {missing}"
    upward = arch.upward_imports(parts)
    assert not upward, "imports that go up a layer (see the Architecture page):\n" + "\n".join(upward)


def test_the_layer_check_sees_an_upward_import():
    assert arch.upward_imports({"noise": {"persistence"}, "persistence": set()}) == [
        "noise (components) imports persistence (persistence)"
    ]
    assert arch.upward_imports({"persistence": {"noise"}, "noise": set()}) == []


def test_at_most_25_top_level_modules():
    modules = arch.top_level_modules()
    assert len(modules) <= arch.MAX_TOP_LEVEL_MODULES, modules


def test_no_library_file_over_750_lines():
    long = {
        str(path.relative_to(ROOT)): n
        for path in PACKAGE.rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"files over {MAX_LINES} lines (split them by concept): {long}"


def test_the_architecture_page_is_generated_from_the_code():
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert "<!-- architecture: floors -->" in page and "<!-- architecture: diagram -->" in page
    table = arch.floor_table()
    assert "| 15 | `__main__` |" in table and "`fileio/`" in table
    assert arch.diagram().count("<rect") == len(arch.part_graph(arch.import_graph()))

"""Every byte from a file goes through `rlkit_td3.fileio.file_reader`: no other module of the package calls a loader.

The package is parsed with `ast` (not grepped, so a comment or a docstring mentioning ``torch.load`` does not count
and an aliased import does): a call of ``numpy.load``, ``torch.load``, ``json.load(s)``, ``pickle.load(s)``,
``cloudpickle.load(s)``, an ``Unpickler(...).load()``, an import of one of those functions by name, or a
``zipfile.ZipFile`` opened for reading, anywhere outside the reader, fails the test.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rlkit_td3"
READER = PACKAGE / "fileio" / "file_reader.py"
LOADER_MODULES = {"numpy", "torch", "json", "pickle", "cloudpickle"}
LOADER_FUNCTIONS = {"load", "loads"}
ALLOWED: dict[tuple[str, str], str] = {
    ("rlkit_td3/vec_env/base_vec_env.py", "cloudpickle.loads"): (
        "CloudpickleWrapper.__setstate__: the env factory this process pickled itself and sent to its own "
        "SubprocVecEnv worker through a pipe; never bytes from a file"
    ),
}
"""Calls the test lets through, each with the reason it reads no untrusted file (the in-memory JSON round trip of a
run's config goes through the reader too)."""


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Local names bound to the loader modules (``import numpy as np`` gives ``{"np": "numpy"}``)."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                if root in LOADER_MODULES or alias.name == "zipfile":
                    names[alias.asname or root] = alias.name
    return names


def loader_calls(source: str, filename: str = "<string>") -> list[str]:
    """The forbidden reads in ``source``, as ``"line: what"`` strings."""
    tree = ast.parse(source, filename=filename)
    aliases = _aliases(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in LOADER_MODULES:
            for alias in node.names:
                if alias.name in LOADER_FUNCTIONS or alias.name == "Unpickler":
                    found.append(f"{node.lineno}: from {node.module} import {alias.name}")
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        func = node.func
        if func.attr in LOADER_FUNCTIONS:
            base = func.value
            if isinstance(base, ast.Name) and aliases.get(base.id, "").split(".")[0] in LOADER_MODULES:
                found.append(f"{node.lineno}: {aliases[base.id]}.{func.attr}")
            elif isinstance(base, ast.Call) and func.attr == "load" and ast.unparse(base.func).endswith("Unpickler"):
                found.append(f"{node.lineno}: {ast.unparse(base.func)}(...).load")
        elif func.attr == "ZipFile" and isinstance(func.value, ast.Name) and aliases.get(func.value.id) == "zipfile":
            mode = (
                node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
            )
            if not (isinstance(mode, ast.Constant) and mode.value in ("w", "x", "a")):
                found.append(f"{node.lineno}: zipfile.ZipFile opened for reading")
    return found


def test_the_scan_sees_every_form():
    source = (
        "import numpy as np\nimport torch, json\nimport pickle as pk\nimport zipfile\n"
        "from json import loads\n"
        "np.load('x')\ntorch.load(b)\njson.loads(s)\npk.load(f)\nMyUnpickler(f).load()\n"
        "zipfile.ZipFile(p)\nzipfile.ZipFile(p, 'w')\nzipfile.ZipFile(p, mode='r')\n"
        "# np.load in a comment\n'torch.load in a string'\n"
    )
    found = [line.split(": ", 1)[1] for line in loader_calls(source)]
    assert sorted(found) == sorted(
        [
            "from json import loads",
            "numpy.load",
            "torch.load",
            "json.loads",
            "pickle.load",
            "MyUnpickler(...).load",
            "zipfile.ZipFile opened for reading",
            "zipfile.ZipFile opened for reading",
        ]
    )
    assert loader_calls("model = TD3.load(path)\nalgorithm_class('td3').load(path)\n") == []


def test_no_module_but_the_reader_reads_files():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == READER:
            continue
        rel = str(path.relative_to(ROOT))
        for hit in loader_calls(path.read_text(), rel):
            if (rel, hit.split(": ", 1)[1]) not in ALLOWED:
                offenders.append(f"{rel}:{hit}")
    assert not offenders, "read these through rlkit_td3.fileio.file_reader:\n" + "\n".join(offenders)
    assert all(reason for reason in ALLOWED.values())


def _package_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    imported = [
        alias.name if isinstance(node, ast.Import) else node.module
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in (node.names if isinstance(node, ast.Import) else [None])
    ]
    return {name for name in imported if name and name.startswith("rlkit_td3")}


def test_the_reader_imports_no_other_module_of_the_package():
    # only its plain-data unpickler and the error class, neither of which imports anything of the package
    assert _package_imports(READER) == {"rlkit_td3.fileio.plain_pickle", "rlkit_td3.checks.errors"}
    assert _package_imports(READER.with_name("plain_pickle.py")) == set()
    assert _package_imports(PACKAGE / "checks" / "errors.py") == set()


@pytest.mark.parametrize("door", sorted(importlib.import_module("rlkit_td3.fileio.file_reader").DOORS))
def test_every_door_names_a_real_function_that_reads_through_the_reader(door):
    from rlkit_td3.fileio.file_reader import DOORS

    dotted, checks = DOORS[door]
    assert len(checks) > 20
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):  # the longest importable prefix, then attributes
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        break
    assert callable(obj), dotted
    module = Path(importlib.import_module(obj.__module__).__file__).read_text()
    assert "file_reader" in module or "read_model_zip" in module, f"{dotted} does not read through the reader"


def test_the_security_page_lists_every_door_from_the_registry():
    import sys

    sys.path.insert(0, str(ROOT))
    from docs_hooks.security import MARKER, doors_table, on_page_markdown, read_doors
    from rlkit_td3.fileio.file_reader import DOORS

    assert read_doors() == DOORS  # the hook reads the very registry the code holds
    page = (ROOT / "docs" / "security.md").read_text()
    assert MARKER in page
    rendered = on_page_markdown(page)
    for door, (function, _) in DOORS.items():
        assert f"| {door} | `{function}` |" in rendered
    assert doors_table({"d": ("f", "a | b")}).splitlines()[-1] == "| d | `f` | a / b |"

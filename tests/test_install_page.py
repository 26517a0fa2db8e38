"""The install page (docs/install.md) says what pyproject.toml and the Makefile say: extras, packages, versions."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "install.md"
CHANGELOG = ROOT / "docs" / "changelog.md"  # a record of what changed, not instructions
CODE = re.compile(r"`([^`]+)`")


def markdown_table(text: str, first_header: str) -> list[list[str]]:
    """The body rows of the Markdown table whose first header cell is ``first_header``, as lists of cell texts."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == first_header:
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append([cell.strip() for cell in row.strip().strip("|").split("|")])
            return rows
    raise ValueError(f"no table with first header {first_header!r}")


def page_extras(text: str) -> dict[str, list[str]]:
    """``{extra: [requirement, ...]}`` from the page's extras table (code spans of the first and last columns)."""
    extras: dict[str, list[str]] = {}
    for row in markdown_table(text, "extra"):
        (name,) = CODE.findall(row[0])
        extras[name] = CODE.findall(row[-1])
    return extras


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_extras_table_lists_every_extra_with_exactly_its_requirements():
    declared = pyproject()["project"]["optional-dependencies"]
    listed = page_extras(PAGE.read_text())
    assert sorted(listed) == sorted(declared), "extras missing from or extra on docs/install.md"
    for name, requirements in declared.items():
        assert listed[name] == requirements, f"extra {name!r}: page {listed[name]} != pyproject {requirements}"


def test_every_extra_says_what_it_enables():
    for row in markdown_table(PAGE.read_text(), "extra"):
        assert len(row) == 3 and row[1], f"row without a description: {row}"


def test_supported_versions_are_pyprojects_and_the_makefiles():
    rows = {row[0]: CODE.findall(row[1]) for row in markdown_table(PAGE.read_text(), "requirement")}
    project = pyproject()["project"]
    (torch,) = [dep for dep in project["dependencies"] if re.match(r"torch\b", dep)]
    (tested,) = re.findall(r"^TORCH_SPEC \?= (\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert rows["Python"] == [project["requires-python"]]
    assert rows["torch"] == [torch.removeprefix("torch")]
    assert rows["torch, tested"] == [tested]
    assert f"install {tested}" in PAGE.read_text()  # the pip commands install the tested torch


def test_a_drifted_table_is_caught():
    text = PAGE.read_text()
    declared = pyproject()["project"]["optional-dependencies"]
    dropped = text.replace(", `rich>=13`", "")
    assert page_extras(dropped)["progress"] != declared["progress"]
    renamed = text.replace("| `ray` |", "| `cluster` |")
    assert sorted(page_extras(renamed)) != sorted(declared)
    with pytest.raises(ValueError, match="no table"):
        markdown_table("no table here", "extra")


# Installing the package by its name with pip (either spelling, with or without extras) would install whatever is
# registered under that name on PyPI: the package is installed from its clone. The pattern is built from parts so
# that this file does not match itself.
PYPI_INSTALL = re.compile("pip install\\s+[\"']?rlkit" + "[_-]td3", re.I)
SCANNED = ["README.md", "Makefile", "pyproject.toml", "docs", "rlkit_td3", "tests", "benchmarks"]
TEXT_SUFFIXES = {".md", ".py", ".toml", ".txt", ".cfg", ".yml", ".yaml", ""}


def pypi_install_lines(root: Path) -> list[str]:
    """``path:line`` for every line under ``root`` (the scanned parts) that installs the package from PyPI."""
    found = []
    for part in SCANNED:
        base = root / part
        for path in [base] if base.is_file() else sorted(base.rglob("*")):
            if not path.is_file() or path.suffix not in TEXT_SUFFIXES or "__pycache__" in path.parts:
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if PYPI_INSTALL.search(line):
                    found.append(f"{path.relative_to(root)}:{number}")
    return found


def test_nothing_tells_the_reader_to_pip_install_the_package_by_name():
    assert pypi_install_lines(ROOT) == []


def test_a_pypi_install_line_is_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("ok: pip install -e '.[ray]'\nbad: pip install 'rlkit" + "_td3[ray]'\n")
    (tmp_path / "README.md").write_text("pip install rlkit" + "-td3\n")
    assert pypi_install_lines(tmp_path) == ["README.md:1", "docs/page.md:2"]


def test_every_page_that_names_an_extra_links_to_the_install_pages_extras_section():
    assert "\n## Extras\n" in PAGE.read_text()
    extras = pyproject()["project"]["optional-dependencies"]
    names = "|".join(map(re.escape, extras))
    mention = re.compile(f"`({names})` extra")
    for page in sorted((ROOT / "docs").rglob("*.md")):
        text = page.read_text()
        if page not in (PAGE, CHANGELOG) and mention.search(text):
            assert re.search(r"\(([./]*)install\.md#extras\)", text), f"{page.relative_to(ROOT)} names an extra"


def test_the_licence_is_an_spdx_string_which_setuptools_reads_without_a_deprecation_warning():
    # A TOML table (license = { text = "MIT" }) makes setuptools >= 77 print a deprecation banner on every build.
    data = pyproject()
    assert data["project"]["license"] == "MIT"
    (setuptools,) = [req for req in data["build-system"]["requires"] if req.startswith("setuptools")]
    assert setuptools == "setuptools>=77"  # the first to read an SPDX string

"""mkdocs hook: the site header shows the package version, read from ``rlkit_td3/version.py``.

The file is parsed, not imported (the docs build needs no torch for this) and the version is not written
anywhere else, so the header cannot drift from the package.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

VERSION_FILE = Path(__file__).resolve().parents[1] / "rlkit_td3" / "version.py"


def read_version(path: str | Path = VERSION_FILE) -> str:
    """The string assigned to ``__version__`` in ``path``; ``ValueError`` if there is no such string literal."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(target, ast.Name) and target.id == "__version__" for target in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    raise ValueError(f"no `__version__ = '...'` string assignment in {path}")


def on_config(config: Any, version_file: str | Path = VERSION_FILE, **kwargs: Any) -> Any:
    """Append the version to ``site_name`` (the header and the page titles) and set ``extra.version``."""
    version = read_version(version_file)
    name = config["site_name"]
    if not name.endswith(f" {version}"):
        config["site_name"] = f"{name} {version}"
    extra = config.get("extra")
    if extra is None:
        extra = config["extra"] = {}
    extra["version"] = version
    return config

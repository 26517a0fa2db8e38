"""The site header shows the package version, parsed from rlkit_td3/version.py (docs_hooks/version.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs_hooks"))
from version import on_config, read_version  # noqa: E402

import rlkit_td3  # noqa: E402


def test_the_version_is_the_packages():
    assert read_version() == rlkit_td3.__version__


def test_the_hook_appends_the_version_to_the_site_name_once(tmp_path: Path):
    version_file = tmp_path / "version.py"
    version_file.write_text('"""Doc."""\n\nOTHER = "x"\n__version__ = "9.8.7rc1"\n')
    config = {"site_name": "rlkit_td3", "extra": None}
    assert on_config(config, version_file=version_file) is config
    assert config["site_name"] == "rlkit_td3 9.8.7rc1"
    assert config["extra"] == {"version": "9.8.7rc1"}
    on_config(config, version_file=version_file)  # mkdocs serve reloads the config: no "rlkit_td3 9.8.7rc1 9.8.7rc1"
    assert config["site_name"] == "rlkit_td3 9.8.7rc1"


def test_the_real_config_gets_the_real_version():
    config = {"site_name": "rlkit_td3", "extra": {"keep": 1}}
    on_config(config)
    version = rlkit_td3.__version__
    assert config == {"site_name": f"rlkit_td3 {version}", "extra": {"keep": 1, "version": version}}


@pytest.mark.parametrize("text", ["", "__version__ = VERSION\n", "version = '1.0'\n", "__version__ = 1\n"])
def test_a_file_without_a_version_string_is_an_error(tmp_path: Path, text: str):
    path = tmp_path / "version.py"
    path.write_text(text)
    with pytest.raises(ValueError, match="__version__"):
        read_version(path)

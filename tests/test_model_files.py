"""The registry of model file formats and algorithm classes that `BaseAlgorithm.load`/``save`` dispatch through."""

from __future__ import annotations

import pytest

from rlkit_td3 import DDPG, TD3
from rlkit_td3.fileio.model_files import (
    ALGORITHMS,
    FILE_FORMATS,
    FileFormat,
    algorithm_class,
    format_for,
    native_format,
    register_format,
)
from rlkit_td3.off_policy import OffPolicyAlgorithm


def test_the_library_registers_its_formats_and_algorithms():
    assert native_format().name == "rlkit_td3"
    assert "stable-baselines3" in FILE_FORMATS
    assert {name: ALGORITHMS[name] for name in ("OffPolicyAlgorithm", "TD3", "DDPG")} == {
        "OffPolicyAlgorithm": OffPolicyAlgorithm,
        "TD3": TD3,
        "DDPG": DDPG,
    }
    assert algorithm_class("DDPG") is DDPG
    with pytest.raises(RuntimeError, match="'SAC'"):
        algorithm_class("SAC")


def test_load_dispatches_to_the_format_that_claims_the_file(tmp_path):
    calls = []

    def load(cls, path, *args, **kwargs):
        calls.append((cls, path, args, kwargs))
        return "a model"

    register_format(FileFormat("toy", load=load, recognises=lambda path: str(path).endswith(".toy")))
    try:
        assert format_for(tmp_path / "m.toy").name == "toy"
        assert format_for(tmp_path / "m.zip").name == "rlkit_td3"  # unclaimed: the native format
        assert DDPG.load(tmp_path / "m.toy", verbose=1) == "a model"
        assert calls == [(DDPG, tmp_path / "m.toy", (None, "auto", None, False, True, False), {"verbose": 1})]
    finally:
        del FILE_FORMATS["toy"]


def test_a_second_native_format_is_refused():
    with pytest.raises(ValueError, match="native file format is registered already: 'rlkit_td3'"):
        register_format(FileFormat("other", load=lambda *a, **k: None))
    assert "other" not in FILE_FORMATS

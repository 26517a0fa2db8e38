"""The structural fuzzer of every door (``benchmarks/fuzz_doors.py``), 50 cases per door: no signal death, no
exception but the documented ones, no child past its memory cap. The 1,000-case run's figures are in
``benchmarks/results/fuzz_load_*.txt``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.fuzz_doors import main  # noqa: E402


def test_fifty_cases_per_door_break_no_rule(capsys):
    status = main(["--cases", "50", "--seed", "7"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "0 cases broke a rule" in out
    for door in (
        "model zip",
        "policy file",
        "VecNormalize file",
        "buffer file (n-step)",
        "buffer file (HER, Dict)",
        "buffer file (PER)",
        "set_parameters dict",
        "actor file (Actor.load)",
        "plain-data pickle (load_from_pkl)",
    ):
        assert door in out

"""The SB3-style example scripts of env_checker, EvalCallback and get/set_parameters run in a fresh interpreter.

(Once tests/test_sb3_style.py, which runs every script of tests/sb3_style/, is merged, this module is redundant.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "sb3_style"
ROOT = Path(__file__).parent.parent


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("custom_env_check.py", "mean_reward="),
        ("eval_callback_stop_on_reward.py", "stopped after 200 timesteps"),
        ("get_set_parameters.py", "round trip: OK"),
    ],
)
def test_script_runs(script, expected, tmp_path):
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    result = subprocess.run(
        [sys.executable, str(SCRIPTS / script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert expected in result.stdout
    assert list(tmp_path.iterdir()) == []  # the scripts leave nothing behind

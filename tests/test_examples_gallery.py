"""The examples gallery (docs/examples/*.py): each script runs on its own, in a fresh interpreter, with
``RLKIT_EXAMPLES_FAST=1`` (short runs), and does what its page says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "docs" / "examples").glob("*.py"))


def run_example(name: str, cwd: Path) -> str:
    env = {**os.environ, "RLKIT_EXAMPLES_FAST": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "examples" / name)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_every_example_is_on_the_gallery_page():
    page = (ROOT / "docs" / "examples.md").read_text()
    included = set(re.findall(r'--8<-- "docs/examples/([^"]+\.py)"', page))
    assert included == {path.name for path in EXAMPLES}


def test_quickstart(tmp_path):
    out = run_example("quickstart.py", tmp_path)
    assert re.search(r"mean return -?\d+\.\d \+- \d+\.\d", out)
    assert "same action after loading: True" in out
    assert (tmp_path / "td3_pendulum.zip").is_file()


def test_custom_callback(tmp_path):
    out = run_example("custom_callback.py", tmp_path)
    steps, best = re.search(r"stopped after (\d+) steps; best recent return (-?\d+\.\d)", out).groups()
    assert int(steps) < 3000  # the callback stopped learn() early (threshold -1600 in the fast run)
    assert float(best) >= -1600
    log = (tmp_path / "logs" / "progress.csv").read_text()
    assert "custom/recent_return" in log.splitlines()[0]


def test_save_and_resume(tmp_path):
    out = run_example("save_and_resume.py", tmp_path)
    assert "resumed from step 1000 to 1400;\nweights equal to the uninterrupted run's: True" in out


def test_td3_vs_ddpg(tmp_path):
    out = run_example("td3_vs_ddpg.py", tmp_path)
    rows = re.findall(r"^(TD3|DDPG)\s+per seed \[(.*)\]\s+IQM (-?\d+\.\d)$", out, re.M)
    assert [name for name, _, _ in rows] == ["TD3", "DDPG"]
    for _, per_seed, iqm in rows:
        values = [float(v) for v in per_seed.split(",")]
        assert len(values) == 2 and min(values) <= float(iqm) <= max(values)


def test_bullet_video(tmp_path):
    out = run_example("bullet_video.py", tmp_path)
    videos = list((tmp_path / "videos").glob("*.mp4"))
    assert len(videos) == 1 and videos[0].stat().st_size > 1000
    assert videos[0].name in out


def test_sb3_port(tmp_path):
    out = run_example("sb3_port.py", tmp_path)
    assert re.search(r"mean reward -?\d+\.\d \+- \d+\.\d", out)
    for name in ("td3_pendulum.zip", "vec_normalize.json", "best/best_model.zip", "eval/evaluations.npz"):
        assert (tmp_path / name).is_file(), name
    checkpoints = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert any(name.endswith(".zip") for name in checkpoints)
    assert any("vecnormalize" in name for name in checkpoints)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_has_a_test_here(path):
    assert f'"{path.name}"' in Path(__file__).read_text()

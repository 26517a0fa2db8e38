"""Run every script of tests/sb3_style/ (SB3-documentation-style examples written with rlkit_td3's SB3-style
imports) in a fresh interpreter, in an empty folder: each must exit 0, and the scripts listed in ``CHECKS``
must also have produced what they are about (event files, CSV rows, plots).

Every ``tests/sb3_style/*.py`` is discovered, so a new script is run without touching this file; add a
check for it to ``CHECKS`` when its output can be verified.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import plugin_data_pb2

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "tests" / "sb3_style").glob("*.py") if not p.name.startswith("_"))
TIMEOUT_S = 300


def _events(folder: Path) -> EventAccumulator:
    files = sorted(folder.glob("events.out.tfevents.*"))
    assert len(files) == 1, f"expected one event file in {folder}, found {files}"
    acc = EventAccumulator(str(files[0]), size_guidance={"images": 0, "tensors": 0, "scalars": 0})
    acc.Reload()
    return acc


def _check_custom_values(cwd: Path, stdout: str) -> None:
    acc = _events(cwd / "td3_pendulum_tb" / "TD3_1")
    assert [e.step for e in acc.Scalars("custom/abs_action")] == [200, 400]
    assert all(0 <= e.value <= 1 for e in acc.Scalars("custom/abs_action"))
    (strip,) = acc.Images("custom/action_strip")
    assert (strip.width, strip.height) == (200, 20)
    (plot,) = acc.Images("custom/action_plot")
    assert (plot.width, plot.height) == (400, 200)  # figsize (4, 2) at matplotlib's default 100 dpi
    assert "abs_action" in stdout and "action_strip" not in stdout  # excluded from the terminal table


def _check_video(cwd: Path, stdout: str) -> None:
    import io

    from PIL import Image

    (video,) = _events(cwd / "video_tb" / "TD3_1").Images("trajectory/video")
    gif = Image.open(io.BytesIO(video.encoded_image_string))
    assert (gif.format, gif.size) == ("GIF", (32, 32))
    # GIF encoders merge identical consecutive frames into one longer frame: check the total play time instead
    # (30 frames at 15 fps = 2 s; GIF stores durations in hundredths of a second).
    durations = []
    for index in range(gif.n_frames):
        gif.seek(index)
        durations.append(gif.info["duration"])
    assert 2 <= gif.n_frames <= 30 and abs(sum(durations) - 2000) <= 10 * gif.n_frames


def _check_hparams(cwd: Path, stdout: str) -> None:
    for gamma in (0.9, 0.98):
        content = _events(cwd / "hparams_tb" / f"gamma_{gamma}_1").PluginTagToContent("hparams")
        data = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
        hparams = dict(data.session_start_info.hparams)
        assert hparams["gamma"].number_value == gamma
        assert hparams["algorithm"].string_value == "TD3"
        assert hparams["batch size"].number_value == 256
        assert "0.001" in hparams["learning rate"].string_value  # the model's learning-rate schedule, as text
        experiment = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"]).experiment
        assert [m.name.tag for m in experiment.metric_infos] == ["rollout/ep_rew_mean", "train/critic_loss"]


def _check_summary_writer(cwd: Path, stdout: str) -> None:
    texts = _events(cwd / "sw_tb" / "TD3_1").Tensors("direct_access/text_summary")
    assert [(t.step, t.tensor_proto.string_val[0].decode()) for t in texts] == [
        (n, f"{n} steps done") for n in (100, 200, 300)
    ]


def _check_log_every_n(cwd: Path, stdout: str) -> None:
    progress = pd.read_csv(cwd / "every_n_logs" / "progress.csv")
    assert progress["time/total_timesteps"].tolist() == [150, 300, 450, 600]
    assert stdout.count("total_timesteps") == 4


def _check_results_plotter(cwd: Path, stdout: str) -> None:
    assert (cwd / "learning_curves.png").read_bytes()[:4] == b"\x89PNG"
    for seed in (0, 1):
        lines = (cwd / "monitor_runs" / f"seed_{seed}" / "monitor.csv").read_text().splitlines()
        assert lines[1] == "r,l,t" and len(lines) == 2 + 6  # 300 steps of 50-step episodes
    assert "4 smoothed points" in stdout  # 6 episodes, window 3


def _check_export_onnx(cwd: Path, stdout: str) -> None:
    assert (cwd / "td3_actor.onnx").is_file()


def _check_export_torchscript(cwd: Path, stdout: str) -> None:
    assert (cwd / "td3_actor_traced.pt").is_file()


def _check_policy_save_load(cwd: Path, stdout: str) -> None:
    assert "mean_reward=" in stdout


CHECKS: dict[str, Callable[[Path, str], None]] = {
    "export_onnx.py": _check_export_onnx,
    "export_torchscript.py": _check_export_torchscript,
    "policy_save_load.py": _check_policy_save_load,
    "tensorboard_custom_values.py": _check_custom_values,
    "tensorboard_video.py": _check_video,
    "tensorboard_hparams.py": _check_hparams,
    "tensorboard_summary_writer.py": _check_summary_writer,
    "log_every_n_timesteps.py": _check_log_every_n,
    "results_plotter_monitor.py": _check_results_plotter,
}


def test_scripts_are_found():
    assert set(CHECKS) <= {p.name for p in SCRIPTS}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_sb3_style_script(script: Path, tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.update(MPLBACKEND="Agg", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")  # 1 thread, as in the other tests
    result = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert result.returncode == 0, f"{script.name} exited {result.returncode}:\n{result.stderr[-4000:]}"
    check = CHECKS.get(script.name)
    if check is not None:
        check(tmp_path, result.stdout)

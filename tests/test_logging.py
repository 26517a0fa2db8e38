"""Logger writers, TensorBoard runs, Monitor files, learning-curve plots and the progress bar."""

from __future__ import annotations

import json
import tempfile

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from conftest import make_counter
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from rlkit_td3 import DDPG, TD3
from rlkit_td3.logger import configure
from rlkit_td3.monitor import Monitor, load_results, plot_results

KW = dict(batch_size=16, policy_kwargs={"net_arch": [32, 32]}, seed=0)


def test_tensorboard_scalars_and_run_folders(tmp_path):
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=100, tensorboard_log=tmp_path / "tb", **KW)
    model.learn(800, log_interval=1)
    events = list((tmp_path / "tb" / "TD3_1").glob("events.out.tfevents.*"))
    assert len(events) == 1
    acc = EventAccumulator(str(events[0]))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {"rollout/ep_rew_mean", "rollout/ep_len_mean", "train/critic_loss", "train/actor_loss", "time/fps"} <= tags
    assert [e.step for e in acc.Scalars("rollout/ep_rew_mean")] == [200, 400, 600, 800]
    assert all(np.isfinite(e.value) for e in acc.Scalars("train/critic_loss"))
    model.learn(200, tb_log_name="run")
    model.learn(200, tb_log_name="run", reset_num_timesteps=False)  # continues run_1
    model.learn(200)
    assert sorted(p.name for p in (tmp_path / "tb").iterdir()) == ["TD3_1", "TD3_2", "run_1"]
    assert len(list((tmp_path / "tb" / "run_1").iterdir())) == 2


def test_nothing_written_without_a_folder(tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.chdir(tmp_path)
    DDPG("MlpPolicy", "Pendulum-v1", learning_starts=100, **KW).learn(400, log_interval=1)
    assert list(scratch.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]


def test_configure_validates_formats():
    with pytest.raises(ValueError, match="'xml'"):
        configure("x", ["xml"])
    with pytest.raises(ValueError, match="folder"):
        configure(None, ["csv"])


def test_progress_csv_json_and_monitor_csv_agree(tmp_path):
    (tmp_path / "monitor").mkdir()  # an existing folder gets monitor.csv; "a/run" would give a/run.monitor.csv
    env = Monitor(gym.make("Pendulum-v1"), tmp_path / "monitor")
    model = TD3("MlpPolicy", env, learning_starts=100, **KW)
    model.set_logger(configure(tmp_path / "log", ["csv", "json"]))
    model.learn(1000, log_interval=1)
    progress = pd.read_csv(tmp_path / "log" / "progress.csv")
    expected = {
        "rollout/ep_rew_mean",
        "rollout/ep_len_mean",
        "time/fps",
        "time/total_timesteps",
        "time/episodes",
        "train/actor_loss",
        "train/critic_loss",
        "train/n_updates",
        "train/learning_rate",
    }
    assert expected <= set(progress.columns)
    assert progress["time/total_timesteps"].tolist() == [200, 400, 600, 800, 1000]
    lines = (tmp_path / "log" / "progress.json").read_text().splitlines()
    assert [json.loads(line)["time/episodes"] for line in lines] == [1, 2, 3, 4, 5]

    first = (tmp_path / "monitor" / "monitor.csv").read_text().splitlines()[0]
    assert first.startswith("#") and json.loads(first[1:])["env_id"] == "Pendulum-v1"
    monitor = load_results(tmp_path / "monitor")
    assert list(monitor.columns) == ["index", "r", "l", "t"] and monitor["l"].tolist() == [200] * 5
    assert (monitor["t"].diff().dropna() >= 0).all()
    # One source of truth: the logged mean return is the mean of the monitored episodes.
    assert progress["rollout/ep_rew_mean"].iloc[-1] == pytest.approx(monitor["r"].mean(), abs=1e-3)
    assert [e["r"] for e in model.ep_info_buffer] == pytest.approx(monitor["r"].tolist(), abs=1e-5)


def test_episode_stats_with_monitored_next_step_vector_env(tmp_path):
    # gymnasium's default autoreset mode is NEXT_STEP: the reset step must not count as an episode step.
    vec = gym.vector.SyncVectorEnv([lambda i=i: Monitor(make_counter(5), tmp_path / f"{i}") for i in range(2)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.monitor.csv", "1.monitor.csv"]
    model = TD3("MlpPolicy", vec, learning_starts=1000, **KW).learn(24)
    assert model.ep_info_buffer == [{"r": 15.0, "l": 5}] * 4
    assert load_results(tmp_path)["r"].tolist() == [15.0] * 4


def test_plot_results_writes_png(tmp_path):
    for run, shift in (("a", 0.0), ("b", 50.0)):
        folder = tmp_path / run
        folder.mkdir()
        rows = "\n".join(f"{-500 + 2 * i + shift},200,{i}.0" for i in range(150))
        (folder / "monitor.csv").write_text('#{"t_start": 1000.0, "env_id": "Pendulum-v1"}\nr,l,t\n' + rows + "\n")
    out = plot_results([tmp_path / "a", tmp_path / "b"], path=tmp_path / "curve.png", window=20)
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    with pytest.raises(ValueError, match="x_axis"):
        plot_results(tmp_path / "a", x_axis="hours", path=tmp_path / "x.png")


def test_progress_bar_in_captured_run(capsys):
    TD3("MlpPolicy", "Pendulum-v1", learning_starts=100, **KW).learn(300, progress_bar=True)
    out = capsys.readouterr().out
    assert "300/300" in out and "100%" in out and "steps/s" in out

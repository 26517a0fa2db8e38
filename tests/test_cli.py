"""The rlkit-td3 command: train → eval, the run directory, resume after SIGKILL, bad input."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from rlkit_td3 import TD3
from rlkit_td3.cli import main

SMALL = ["--hp", "net_arch=[32]", "learning_starts=200", "batch_size=32", "--no-progress-bar"]


def test_train_then_eval(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["train", "--algo", "td3", "--env", "Pendulum-v1", "--timesteps", "1000", "--seed", "3", "--out", str(out)]
    assert main([*argv, "--preset", "zoo", "--eval-freq", "500", "--eval-episodes", "2", *SMALL]) == 0
    names = {p.name for p in out.iterdir()}
    assert {"model.zip", "config.json", "monitor.csv", "progress.csv", "evaluations.npz", "checkpoints"} <= names
    config = json.loads((out / "config.json").read_text())
    assert config["origins"]["gamma"] == "preset:zoo" and config["hyperparameters"]["gamma"] == 0.98
    assert config["origins"]["net_arch"] == "override" and config["origins"]["tau"] == "default"
    assert config["seed"] == 3 and config["timesteps"] == 1000
    with np.load(out / "evaluations.npz") as evaluations:
        assert evaluations["timesteps"].tolist() == [500, 1000]
    assert list(pd.read_csv(out / "monitor.csv", skiprows=1).columns[:3]) == ["r", "l", "t"]
    assert TD3.load(out / "model.zip").num_timesteps == 1000
    capsys.readouterr()
    assert main(["eval", str(out), "--episodes", "2"]) == 0
    assert "Pendulum-v1: mean return" in capsys.readouterr().out
    video = tmp_path / "pendulum.mp4"
    assert main(["record", str(out), "--out", str(video), "--steps", "30"]) == 0
    written = video if video.exists() else video.with_suffix(".gif")  # GIF where ffmpeg is missing
    assert written.stat().st_size > 1000 and f"wrote {written}" in capsys.readouterr().out
    assert main(["record", str(out), "--out", str(tmp_path / "v.avi")]) == 2
    assert "--out must end in .mp4 or .gif" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--algo", "td4", "--env", "Pendulum-v1"], "unknown algo 'td4'; did you mean 'td7' or 'td3'?"),
        (["train", "--algo", "td3", "--env", "Pendulm-v1"], "unknown env id 'Pendulm-v1'; did you mean 'Pendulum-v1'"),
        (["train", "--algo", "td3", "--env", "Pendulum-v1", "--preset", "zo"], "unknown preset 'zo'"),
        (["train", "--algo", "td3", "--env", "Pendulum-v1", "--hp", "gama=0.9"], "did you mean 'gamma'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys, tmp_path):
    assert main([*argv, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_version_prints_the_package_version(capsys):
    from rlkit_td3 import __version__

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"rlkit-td3 {__version__}\n"


@pytest.mark.parametrize("timesteps", ["0", "-5"])
def test_non_positive_timesteps_rejected(timesteps, capsys):
    with pytest.raises(SystemExit) as info:
        main(["train", "--algo", "td3", "--env", "Pendulum-v1", "--timesteps", timesteps])
    assert info.value.code == 2 and "positive integer" in capsys.readouterr().err


def test_resume_a_killed_train_reaches_the_requested_total(tmp_path, capsys):
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "rlkit_td3", "train", "--algo", "td3", "--env", "Pendulum-v1", "--out", str(out)]
    argv += ["--timesteps", "3000", "--checkpoint-freq", "400", "--eval-freq", "1000", "--eval-episodes", "1", *SMALL]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([*argv, "--verbose"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    for line in proc.stdout:  # the child reports each checkpoint once it is written
        if "replay_buffer_800_steps.npz" in line:
            break
    else:
        pytest.fail("train ended before its second checkpoint")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (out / "model.zip").exists()
    episodes_before = len(pd.read_csv(out / "monitor.csv", skiprows=1))
    assert main(argv[3:] + ["--resume"]) == 0
    assert TD3.load(out / "model.zip").num_timesteps == 3000
    episodes = pd.read_csv(out / "monitor.csv", skiprows=1)
    assert len(episodes) > episodes_before >= 4  # appended, not replaced
    assert episodes["l"].sum() == 3000  # the episodes of the killed stretch after the checkpoint were cut
    with np.load(out / "evaluations.npz") as evaluations:  # earlier evaluations kept, none twice
        assert evaluations["timesteps"].tolist() == [1000, 2000, 3000]
    logged = pd.read_csv(out / "progress.csv")["time/total_timesteps"].tolist()
    assert logged == sorted(logged) and logged[0] == 800 and logged[-1] == 3000  # the row from before the kill
    capsys.readouterr()
    assert main(argv[3:]) == 2  # no --resume: the checkpoints are not overwritten
    assert "holds the checkpoints of an earlier run; pass resume=True (--resume)" in capsys.readouterr().err
    assert main([*argv[3:], "--resume", "--hp", *SMALL[1:4], "gamma=0.5"]) == 2
    assert "it was made with gamma=0.99, not 0.5" in capsys.readouterr().err


def test_train_with_the_plus_preset(tmp_path, capsys):
    out = tmp_path / "plus"
    argv = ["train", "--algo", "td3", "--env", "Pendulum-v1", "--timesteps", "400", "--out", str(out)]
    assert main([*argv, "--preset", "plus", "--eval-freq", "400", "--eval-episodes", "1", *SMALL]) == 0
    config = json.loads((out / "config.json").read_text())
    assert (config["hyperparameters"]["n_steps"], config["hyperparameters"]["replay_buffer"]) == (3, "lap")
    assert config["origins"]["replay_buffer"] == "preset:plus"
    model = TD3.load(out / "model.zip")
    assert model.n_steps == 3 and type(model.replay_buffer).__name__ == "LAPReplayBuffer"


_TRAIN = ["train", "--algo", "td3", "--env", "Pendulum-v1", "--timesteps", "300", "--no-progress-bar"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--hp", "gamma=1.5"], "gamma"),
        (["--hp", "tau=-0.1"], "tau"),
        (["--hp", "batch_size=0"], "batch_size"),
        (["--hp", "learning_rate=-1.0"], "learning_rate"),
        (["--hp", "policy_delay=0"], "policy_delay"),
        (["--hp", "target_noise_clip=-1.0"], "target_noise_clip"),
        (["--hp", "buffer_size=0"], "buffer_size"),
        (["--hp", "gradient_steps=-2"], "gradient_steps"),
        (["--hp", "net_arch=[0]"], "net_arch"),
        (["--hp", "learning_starts=-1"], "learning_starts"),
        (["--hp", "noise_std=-0.5"], "noise_std|scale|sigma"),
        (["--seed", "-1"], r"seed must be an int in \[0, 2\*\*64 - 1\]"),
        (["--seed", str(2**70)], r"seed must be an int in \[0, 2\*\*64 - 1\]"),
        (["--device", "cuda:0" if not __import__("torch").cuda.is_available() else "nonsense"], "device"),
    ],
)
def test_train_user_errors_are_one_line_exit_2_and_write_nothing(tmp_path, capsys, extra, message):
    out = tmp_path / "run"
    assert main([*_TRAIN, "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("rlkit-td3: error:"), err
    assert re.search(message, err), err
    assert not out.exists(), sorted(p.name for p in out.iterdir())


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "run"
    assert main([*_TRAIN, "--out", str(out), "--eval-freq", "300", "--eval-episodes", "1", *SMALL]) == 0
    return out


def test_eval_of_a_truncated_or_mismatched_model_is_one_line_exit_2(trained, tmp_path, capsys):
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes((trained / "model.zip").read_bytes()[:2000])
    capsys.readouterr()
    assert main(["eval", str(truncated), "--env", "Pendulum-v1", "--episodes", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot load the model" in err, err
    assert main(["eval", str(trained / "model.zip"), "--env", "MountainCarContinuous-v0", "--episodes", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "trained on another observation_space" in err, err
    assert main(["eval", str(trained), "--episodes", "1", "--seed", "-3"]) == 2
    assert "--seed must be an int" in capsys.readouterr().err


def test_eval_accepts_an_sb3_zip_that_td3_load_accepts(tmp_path, capsys):
    sb3 = pytest.importorskip("stable_baselines3")
    model = sb3.TD3(
        "MlpPolicy",
        "Pendulum-v1",
        learning_starts=50,
        batch_size=16,
        seed=0,
        device="cpu",
        policy_kwargs={"net_arch": [16]},
    )
    model.learn(60)
    path = tmp_path / "sb3_td3.zip"
    model.save(path)
    TD3.load(path)  # the library accepts it
    capsys.readouterr()
    assert main(["eval", str(path), "--env", "Pendulum-v1", "--episodes", "1"]) == 0, capsys.readouterr().err
    assert "Pendulum-v1: mean return" in capsys.readouterr().out


def test_resume_falls_back_to_the_last_complete_checkpoint_pair(tmp_path, capsys):
    from rlkit_td3.experiments import latest_checkpoint

    out = tmp_path / "run"
    argv = [*_TRAIN[:-3], "--timesteps", "800", "--checkpoint-freq", "300", "--eval-freq", "800", "--eval-episodes"]
    assert main([*argv, "1", "--out", str(out), "--no-progress-bar", *SMALL[:-1]]) == 0
    folder = out / "checkpoints"
    assert latest_checkpoint(out)[0] == 600
    (folder / "rl_model_replay_buffer_600_steps.npz").unlink()  # killed between the model and its buffer
    steps, model_path, buffer_path = latest_checkpoint(out)
    assert steps == 300 and model_path.name == "rl_model_300_steps.zip" and buffer_path.is_file()
    (folder / "rl_model_replay_buffer_300_steps.npz").unlink()
    from rlkit_td3.experiments import ConfigError

    with pytest.raises(ConfigError, match="none with its replay buffer file"):
        latest_checkpoint(out)
    capsys.readouterr()
    assert main([*argv, "1", "--out", str(out), "--no-progress-bar", "--resume", *SMALL[:-1]]) == 2
    assert "none with its replay buffer file" in capsys.readouterr().err

"""Every subcommand of ``rlkit-td3`` answers a damaged or foreign file in the folders it reads with one line on
stderr and exit code 2 (issue 45): ``train --resume`` (checkpoints, buffers, config and logs), ``eval`` and
``record`` (the model and its config), ``compare`` (result.json, sweep.json, run folders to resume) and ``plot``
(results.csv, evaluations.npz, config.json). A run folder must prove it belongs to the run before it is resumed
or counted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from rlkit_td3 import TD3
from rlkit_td3.cli import main
from rlkit_td3.utils import ReplayBufferRunWarning

TINY = ["--hp", "net_arch=[8]", "learning_starts=100", "batch_size=16"]
RUN = ["--algo", "td3", "--env", "Pendulum-v1", "--seed", "0", "--eval-freq", "300", "--eval-episodes", "1"]
TRAIN = ["train", *RUN, "--checkpoint-freq", "150", "--no-progress-bar", *TINY]
SWEEP = [
    "compare", "--algos", "td3", "--envs", "Pendulum-v1", "--seeds", "0", "--eval-freq", "150", "--eval-episodes",
    "1", "--checkpoint-freq", "150", "--workers", "1", *TINY,
]  # fmt: skip


def _one_line_exit_2(argv: list[str], capsys, *names: str) -> str:
    capsys.readouterr()
    code = main(argv)
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert code == 2, (code, err, captured.out[-500:])
    assert len(err.splitlines()) == 1 and err.startswith("rlkit-td3: error:") and "Traceback" not in err, err
    for name in names:
        assert name in err, (name, err)
    return err


# ---------------------------------------------------------------------------- train --resume
@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hostile") / "run"
    assert main([*TRAIN, "--timesteps", "300", "--out", str(out)]) == 0
    assert (out / "checkpoints" / "rl_model_300_steps.zip").is_file()
    return out


@pytest.fixture
def run(run_dir, tmp_path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    return copy


def _resume(run: Path) -> list[str]:
    return [*TRAIN, "--timesteps", "450", "--out", str(run), "--resume"]


def _model(net_arch: list[int]) -> TD3:
    return TD3("MlpPolicy", "Pendulum-v1", learning_starts=100, batch_size=16, policy_kwargs={"net_arch": net_arch})


def test_a_checkpoint_of_another_architecture_is_refused(run, capsys):
    _model([16]).save(run / "checkpoints" / "rl_model_300_steps.zip")
    _one_line_exit_2(_resume(run), capsys, "rl_model_300_steps.zip", "architecture")
    assert TD3.load(run / "model.zip").policy.actor.mu[0].out_features == 8  # model.zip untouched


def test_a_fresh_model_as_checkpoint_does_not_claim_to_resume(run, capsys):
    _model([8]).save(run / "checkpoints" / "rl_model_300_steps.zip")  # the run's architecture, 0 steps
    _one_line_exit_2(_resume(run), capsys, "rl_model_300_steps.zip", "0 steps")


def test_a_stable_baselines3_zip_as_checkpoint_is_refused(run, capsys):
    sb3 = pytest.importorskip("stable_baselines3")
    sb3.TD3("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [8]}, device="cpu").save(
        run / "checkpoints" / "rl_model_300_steps.zip"
    )
    _one_line_exit_2(_resume(run), capsys, "rl_model_300_steps.zip", "Stable-Baselines3")


@pytest.mark.parametrize(
    ("name", "damage"),
    [
        ("checkpoints/rl_model_300_steps.zip", lambda raw: raw[: len(raw) // 2]),
        ("checkpoints/rl_model_300_steps.zip", lambda raw: b"PK\x03\x04" + b"\x00" * 100),
        ("checkpoints/rl_model_replay_buffer_300_steps.npz", lambda raw: raw[: len(raw) // 2]),
        ("checkpoints/rl_model_replay_buffer_300_steps.npz", lambda raw: b"garbage"),
        ("config.json", lambda raw: b"\xff\xfe{not json"),
        ("config.json", lambda raw: b"[1, 2, 3]"),
        ("evaluations.npz", lambda raw: b"not a zip"),
        ("progress.csv", lambda raw: raw + b"\xff\xfe\xfd,\n"),
        ("monitor.csv", lambda raw: raw + b"12.5,not-a-length,3\n"),
    ],
)
def test_train_resume_refuses_each_damaged_file_by_name(run, capsys, name, damage):
    path = run / name
    path.write_bytes(damage(path.read_bytes()))
    _one_line_exit_2(_resume(run), capsys, Path(name).name)


def test_train_resume_refuses_an_object_array_in_evaluations(run, capsys):
    np.savez(run / "evaluations.npz", timesteps=np.array([300], dtype=object), results=np.zeros((1, 1)))
    _one_line_exit_2(_resume(run), capsys, "evaluations.npz")


def test_train_resume_refuses_checkpoints_without_config(run, capsys):
    (run / "config.json").unlink()
    _one_line_exit_2(_resume(run), capsys, "config.json")


def test_train_resume_refuses_a_config_of_another_architecture(run, capsys):
    config = json.loads((run / "config.json").read_text())
    config["hyperparameters"]["net_arch"] = [16]
    (run / "config.json").write_text(json.dumps(config))
    _one_line_exit_2(_resume(run), capsys, "net_arch")


def test_train_resume_refuses_the_replay_buffer_of_another_run(run, capsys):
    """Another run's buffer of the same shapes (the Python API warns and loads it; a resume must not)."""
    buffer = run / "checkpoints" / "rl_model_replay_buffer_300_steps.npz"
    other = _model([8])
    with pytest.warns(ReplayBufferRunWarning):
        other.load_replay_buffer(buffer)
    other.save_replay_buffer(buffer)  # the same transitions and shapes, written by another run
    checkpoint_run = TD3.load(run / "checkpoints" / "rl_model_300_steps.zip").run_id
    _one_line_exit_2(_resume(run), capsys, buffer.name, other.run_id, checkpoint_run)


def test_an_intact_run_still_resumes(run, capsys):
    assert main(_resume(run)) == 0
    assert "resuming" in capsys.readouterr().out and TD3.load(run / "model.zip").num_timesteps == 450


# ---------------------------------------------------------------------------- eval and record
@pytest.mark.parametrize("command", ["eval", "record"])
@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("model.zip", b"PK\x05\x06" + b"\x00" * 18),
        ("model.zip", b"not a zip at all"),
        ("config.json", b"\xff{"),
        ("config.json", b'{"env_id": ["Pendulum-v1"]}'),
        ("config.json", b'{"env_id": 7}'),
    ],
)
def test_eval_and_record_refuse_damaged_files(run, capsys, tmp_path, command, name, content):
    (run / name).write_bytes(content)
    extra = ["--episodes", "1"] if command == "eval" else ["--out", str(tmp_path / "v.gif"), "--steps", "5"]
    _one_line_exit_2([command, str(run), *extra], capsys)


# ---------------------------------------------------------------------------- compare
@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hostile_sweep") / "sweep"
    assert main([*SWEEP, "--timesteps", "300", "--out", str(out)]) == 0
    return out


@pytest.fixture
def sweep(sweep_dir, tmp_path) -> Path:
    copy = tmp_path / "sweep"
    shutil.copytree(sweep_dir, copy)
    return copy


def _result(sweep: Path) -> Path:
    return sweep / "runs" / "td3_Pendulum-v1_seed0" / "result.json"


def _edit_result(sweep: Path, **changes) -> None:
    result = json.loads(_result(sweep).read_text())
    result.update(changes)
    _result(sweep).write_text(json.dumps(result))


@pytest.mark.parametrize(
    "changes",
    [
        {"mean_returns": ["=cmd|' /C calc'!A0", 1.0]},
        {"timesteps": [150, 150]},
        {"timesteps": [150]},
        {"std_returns": [0.0, "x"]},
        {"timesteps": "150,300"},
    ],
    ids=["text returns", "duplicated timesteps", "unequal lengths", "text std", "not a list"],
)
def test_compare_refuses_a_forged_result_before_writing_anything(sweep, capsys, changes):
    before = (sweep / "results.csv").read_bytes()
    _edit_result(sweep, **changes)
    _one_line_exit_2([*SWEEP, "--timesteps", "300", "--out", str(sweep)], capsys, "result.json")
    assert (sweep / "results.csv").read_bytes() == before


def test_compare_refuses_a_result_of_other_settings(sweep, capsys):
    result = json.loads(_result(sweep).read_text())
    result["spec"]["overrides"]["net_arch"] = [64]
    _result(sweep).write_text(json.dumps(result))
    _one_line_exit_2([*SWEEP, "--timesteps", "300", "--out", str(sweep)], capsys, "result.json", "overrides")


def test_compare_without_sweep_json_does_not_mix_timesteps(sweep, capsys):
    (sweep / "sweep.json").unlink()
    _one_line_exit_2([*SWEEP, "--timesteps", "400", "--out", str(sweep)], capsys, "result.json", "timesteps=300")


@pytest.mark.parametrize("content", [b"\xff\xfe", b"[]", b'{"timesteps": '])
def test_compare_refuses_a_damaged_sweep_json(sweep, capsys, content):
    (sweep / "sweep.json").write_bytes(content)
    _one_line_exit_2([*SWEEP, "--timesteps", "300", "--out", str(sweep)], capsys, "sweep.json")


def test_compare_refuses_a_run_folder_of_another_run_before_anything_runs(sweep, capsys):
    _result(sweep).unlink()
    config_path = _result(sweep).with_name("config.json")
    config = json.loads(config_path.read_text())
    config["hyperparameters"]["net_arch"] = [16]
    config_path.write_text(json.dumps(config))
    _one_line_exit_2([*SWEEP, "--timesteps", "300", "--out", str(sweep)], capsys, "net_arch")
    assert not (_result(sweep)).exists()


def test_compare_refuses_a_damaged_checkpoint_of_a_run_it_resumes(sweep, capsys):
    _result(sweep).unlink()
    checkpoint = _result(sweep).parent / "checkpoints" / "rl_model_300_steps.zip"
    checkpoint.write_bytes(checkpoint.read_bytes()[:500])
    _one_line_exit_2([*SWEEP, "--timesteps", "300", "--out", str(sweep)], capsys, "rl_model_300_steps.zip")


# ---------------------------------------------------------------------------- plot
@pytest.mark.parametrize(
    "csv",
    [
        b"algo,env,seed,timestep,std_return\ntd3,Pendulum-v1,0,150,1.0\n",
        b"algo,env,seed,timestep,mean_return,std_return\ntd3,Pendulum-v1,0,150,\xff\xfe,1.0\n",
        b"algo,env,seed,timestep,mean_return,std_return\ntd3,Pendulum-v1,0,150,=cmd|' /C calc'!A0,1.0\n",
        b"algo,env,seed,timestep,mean_return,std_return\ntd3,Pendulum-v1,zero,150,1.0,1.0\n",
        b"",
        b'algo,env\n"unclosed\n',
    ],
    ids=["no mean_return", "not UTF-8", "text returns", "text seed", "empty", "unclosed quote"],
)
def test_plot_refuses_a_damaged_results_csv(sweep, capsys, csv):
    (sweep / "results.csv").write_bytes(csv)
    _one_line_exit_2(["plot", str(sweep)], capsys, "results.csv")


@pytest.mark.parametrize(
    ("name", "write"),
    [
        ("evaluations.npz", lambda p: np.savez(p, timesteps=np.array([1], dtype=object), results=np.zeros((1, 1)))),
        ("evaluations.npz", lambda p: np.savez(p, timesteps=[300], results=np.zeros(1), ep_lengths=np.zeros(1))),
        ("evaluations.npz", lambda p: p.write_bytes(b"PK garbage")),
        ("config.json", lambda p: p.write_text('{"algo": "td3"}')),
        ("config.json", lambda p: p.write_bytes(b"\xff")),
    ],
)
def test_plot_refuses_a_damaged_run_folder(run, capsys, name, write):
    write(run / name)
    _one_line_exit_2(["plot", str(run)], capsys, name)


def test_plot_of_intact_folders_still_draws(run, sweep, capsys, tmp_path):
    assert main(["plot", str(run), str(sweep), "--out", str(tmp_path / "plots")]) == 0
    assert (tmp_path / "plots" / "learning_curve_Pendulum-v1.png").is_file()

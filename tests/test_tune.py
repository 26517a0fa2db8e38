"""rlkit-td3 tune: a study writes every output, prunes, resumes (an interrupted trial failed and retried), is
shared by two processes, refuses bad input with one line, and its best preset trains."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

optuna = pytest.importorskip("optuna", reason="the tune extra")

from rlkit_td3.cli import main  # noqa: E402
from rlkit_td3.experiments import ConfigError, RunSpec, resolve_config  # noqa: E402
from rlkit_td3.experiments.tuning import open_storage, tune  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SPACE = "space:\n  net_arch: {choices: ['16', '16x16']}\n  learning_starts: {choices: [100, 200]}\n"
"""Tiny networks: the built-in space with net_arch narrowed, and learning_starts added."""
TUNE = ["tune", "--algo", "td3", "--env", "Pendulum-v1", "--timesteps", "400", "--eval-freq", "200"]
TUNE += ["--eval-episodes", "1", "--n-startup-trials", "1", "--hp", "batch_size=32"]


def _study(out: Path, name: str = "td3_Pendulum-v1"):
    return optuna.load_study(study_name=name, storage=f"sqlite:///{out / 'study.db'}")


@pytest.fixture(scope="module")
def study_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tune")
    (folder / "space.yaml").write_text(SPACE)
    out = folder / "out"
    assert main([*TUNE, "--trials", "3", "--search-space", str(folder / "space.yaml"), "--out", str(out)]) == 0
    return out


def test_a_study_writes_every_output(study_dir):
    names = {p.name for p in study_dir.iterdir()}
    assert {"study.db", "trials.csv", "best_preset.toml", "optimization_history.png", "summary.md"} <= names
    table = pd.read_csv(study_dir / "trials.csv")
    assert list(table["number"]) == [0, 1, 2]
    assert set(table["state"]) <= {"COMPLETE", "PRUNED"} and "COMPLETE" in set(table["state"])
    assert {"value", "duration_s", "params_learning_rate", "params_net_arch", "params_learning_starts"} <= set(table)
    study = _study(study_dir)
    for trial in study.trials:  # every evaluation was reported to Optuna at its step
        assert set(trial.intermediate_values) <= {200, 400} and 200 in trial.intermediate_values
        if trial.state.name == "COMPLETE":  # the value: the mean of its last evaluations
            assert trial.value == pytest.approx(sum(trial.intermediate_values.values()) / 2)
    best = study.best_trial
    summary = (study_dir / "summary.md").read_text()
    assert f"Best trial: {best.number}" in summary and "rlkit-td3 tune" in summary and "sample_td3_params" in summary
    # the preset holds the best trial's complete hyperparameters
    config = resolve_config("td3", "Pendulum-v1", str(study_dir / "best_preset.toml"))
    assert config["hyperparameters"]["net_arch"] == best.user_attrs["hyperparameters"]["net_arch"]
    assert config["hyperparameters"]["batch_size"] == 32  # fixed by --hp: not searched
    assert "batch_size_pow" not in best.params
    assert config["hyperparameters"]["gamma"] == pytest.approx(1 - best.params["one_minus_gamma"])


def test_the_best_preset_trains_and_compare_accepts_it(study_dir, tmp_path):
    preset = str(study_dir / "best_preset.toml")
    run = tmp_path / "run"
    args = ["--algo", "td3", "--env", "Pendulum-v1", "--preset", preset, "--timesteps", "300"]
    assert main(["train", *args, "--eval-freq", "300", "--eval-episodes", "1", "--out", str(run)]) == 0
    config = json.loads((run / "config.json").read_text())
    best = _study(study_dir).best_trial.user_attrs["hyperparameters"]
    for key, value in best.items():
        if key != "n_timesteps":
            assert config["hyperparameters"][key] == value, key
    assert (run / "model.zip").is_file()
    spec = RunSpec("td3", "Pendulum-v1", preset=preset, timesteps=300)  # what compare resolves for each run
    assert spec.resolve()["hyperparameters"]["learning_rate"] == best["learning_rate"]


def test_resume_continues_and_retries_an_interrupted_trial(study_dir, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(study_dir, out)
    before = {t.number: (t.state.name, t.value, t.params) for t in _study(out).trials}
    # a trial whose process was killed mid-training: RUNNING, its worker gone
    study = _study(out)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    orphan = study.ask({name: dist for name, dist in study.trials[0].distributions.items()})
    orphan.set_user_attr("worker", f"{os.uname().nodename}:{int(dead.stdout)}")
    assert (
        main([*TUNE, "--trials", "2", "--search-space", str(study_dir.parent / "space.yaml"), "--out", str(out)]) == 0
    )
    trials = _study(out).trials
    assert [t.number for t in trials] == [0, 1, 2, 3, 4, 5]  # numbers continue; nothing lost or doubled
    assert {t.number: (t.state.name, t.value, t.params) for t in trials[:3]} == before  # finished trials kept
    assert trials[3].state.name == "FAIL" and "interrupted" in trials[3].user_attrs["error"]
    retry = [t for t in trials if t.system_attrs.get("failed_trial") == 3]
    assert len(retry) == 1 and retry[0].params == trials[3].params and retry[0].state.name in ("COMPLETE", "PRUNED")
    assert len(pd.read_csv(out / "trials.csv")) == 6


def test_a_pruned_trial_stops_early_when_the_pruner_is_on(tmp_path):
    # Pendulum's returns are negative: this pruner prunes every trial at its first evaluation past the warm-up
    pruner = optuna.pruners.ThresholdPruner(lower=0.0, n_warmup_steps=150)
    space = {"space": {"net_arch": {"choices": ["16"]}}, "replace": True}
    common = dict(env_id="Pendulum-v1", timesteps=400, eval_freq=200, eval_episodes=1, search_space=space)
    result = tune(n_trials=1, out=tmp_path / "on", pruner=pruner, verbose=False, **common)
    (trial,) = result.study.trials
    assert (
        trial.state.name == "PRUNED" and trial.user_attrs["steps"] == 200 and list(trial.intermediate_values) == [200]
    )
    assert result.best_number is None and not (tmp_path / "on" / "best_preset.toml").exists()
    assert "No trial has completed yet" in (tmp_path / "on" / "summary.md").read_text()
    off = tune(n_trials=1, out=tmp_path / "off", pruner="none", verbose=False, **common)
    assert [t.state.name for t in off.study.trials] == ["COMPLETE"]
    assert list(off.study.trials[0].intermediate_values) == [200, 400]


def test_two_processes_share_one_study(tmp_path):
    storage = f"sqlite:///{tmp_path / 'shared.db'}"
    (tmp_path / "space.yaml").write_text(SPACE)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    args = [*TUNE, "--trials", "2", "--storage", storage, "--study-name", "shared"]
    args += ["--search-space", str(tmp_path / "space.yaml"), "--sampler", "random"]
    workers = [
        subprocess.Popen([sys.executable, "-m", "rlkit_td3", *args, "--out", str(tmp_path / f"w{i}")],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for i in range(2)
    ]  # fmt: skip
    outputs = [w.communicate(timeout=300)[0] for w in workers]
    assert [w.returncode for w in workers] == [0, 0], outputs
    trials = optuna.load_study(study_name="shared", storage=storage).trials
    assert sorted(t.number for t in trials) == [0, 1, 2, 3]  # none lost, none doubled
    assert all(t.state.name in ("COMPLETE", "PRUNED") for t in trials)
    assert len({t.user_attrs["worker"] for t in trials}) == 2  # both processes contributed ...
    for output in outputs:  # ... two trials each, one progress line per trial
        assert sum(line.startswith("trial ") for line in output.splitlines()) == 2
    # both folders hold the outputs of the whole study
    assert len(pd.read_csv(tmp_path / "w0" / "trials.csv")) in (2, 3, 4)
    assert len(pd.read_csv(tmp_path / "w1" / "trials.csv")) in (2, 3, 4)


BAD = [
    (["--storage", "foo://nowhere"], "cannot open the storage 'foo://nowhere'"),
    (["--storage", "not-a-url"], "--storage must be a database URL"),
    (["--algo", "td4"], "unknown algo 'td4'"),
    (["--env", "Pendulm-v1"], "unknown env id 'Pendulm-v1'"),
    (["--hp", "gama=0.9"], "unknown hyperparameter 'gama' in --hp"),
    (["--trials", "0"], "n_trials (--trials) must be a positive integer, got 0"),
    (["--search-space", "lr.yaml"], "search space file 'lr.yaml': 'learning_rate': low must be > 0 when log is true"),
    (["--search-space", "key.yaml"], "unknown hyperparameter 'learnin_rate' in search space file 'key.yaml'"),
    (["--search-space", "choice.yaml"], "noise_type must be one of"),
    (["--search-space", "missing.yaml"], "search space file 'missing.yaml' does not exist"),
]


@pytest.mark.parametrize("extra, message", BAD, ids=[m.split("'")[0].strip() + str(i) for i, (_, m) in enumerate(BAD)])
def test_bad_input_is_one_line_and_exit_2_with_nothing_written(extra, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lr.yaml").write_text("space:\n  learning_rate: {low: 0.0, high: 0.1, log: true}\n")
    (tmp_path / "key.yaml").write_text("space:\n  learnin_rate: {low: 0.001, high: 0.1}\n")
    (tmp_path / "choice.yaml").write_text("space:\n  noise_type: {choices: [normal, gaussian]}\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main([*TUNE, "--trials", "1", "--out", "out", *extra]) == 2  # the last --algo, --env, --hp wins
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rlkit-td3: error: ") and message in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written, --out not even created


def test_a_study_of_another_algo_or_env_is_refused(study_dir, capsys):
    for extra, message in (
        (["--algo", "ddpg"], "holds study 'td3_Pendulum-v1', not 'ddpg_Pendulum-v1'"),
        (["--algo", "ddpg", "--study-name", "td3_Pendulum-v1"], "tunes td3 on Pendulum-v1, not ddpg on Pendulum-v1"),
        (["--env", "MountainCarContinuous-v0", "--study-name", "td3_Pendulum-v1"], "not td3 on MountainCarContinuous"),
        (["--timesteps", "800", "--search-space", str(study_dir.parent / "space.yaml")], "made with timesteps=400"),
    ):
        assert main([*TUNE, "--trials", "1", "--out", str(study_dir), *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
    assert len(_study(study_dir).trials) == 3


def test_search_space_errors_name_the_key():
    from rlkit_td3.experiments.search_space import build_space

    for space, message in (
        ({"space": {"tau": {"low": 0.1, "high": 0.01}}}, "'tau': low (0.1) must not exceed high (0.01)"),
        ({"space": {"tau": {"lo": 0.1}}}, "'tau': unknown key 'lo'; did you mean 'low'"),
        ({"space": {"net_arch": {"choices": ["huge"]}}}, "a choice must be one of"),
        ({"space": {"batch_size": {"type": "int", "low": 1.5, "high": 4}}}, "'batch_size': low must be an integer"),
        ({"space": {}, "replace": True}, "the search space is empty"),
        ({"spaces": {}}, "unknown top-level key 'spaces'"),
    ):
        with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")):
            build_space("td3", space)


def test_preset_file_errors_name_the_file(tmp_path):
    for name, text, message in (
        ("broken.toml", "[td3.default\n", "preset file '.*broken.toml' is not valid TOML"),
        ("algo.toml", "[td33.default]\ngamma = 0.9\n", "unknown algo table 'td33'; did you mean 'td3'"),
        ("extends.toml", 'extends = "zo"\n', "extends must name a shipped preset; did you mean 'zoo'"),
        ("key.toml", "[td3.default]\ngama = 0.9\n", "unknown hyperparameter 'gama' in preset '.*key.toml'"),
        ("absent.toml", None, "preset file '.*absent.toml' does not exist"),
    ):
        if text is not None:
            (tmp_path / name).write_text(text)
        with pytest.raises(ConfigError, match=message):
            resolve_config("td3", "Pendulum-v1", str(tmp_path / name))
    (tmp_path / "env.toml").write_text('extends = "zoo"\n[td3."Pendulum-v1"]\ntau = 0.01\n')
    config = resolve_config("td3", "Pendulum-v1", str(tmp_path / "env.toml"))
    assert config["hyperparameters"]["tau"] == 0.01 and config["hyperparameters"]["gamma"] == 0.98  # zoo's
    assert resolve_config("td3", "Hopper-v5", str(tmp_path / "env.toml"))["hyperparameters"]["tau"] == 0.005


def test_td7_has_a_sourced_space_and_a_tiny_study_runs(tmp_path):
    from rlkit_td3.experiments.search_space import SEARCH_SPACES, TD7_SPACE, build_space, to_hyperparameters

    space = build_space("td7")
    assert space.keys() == TD7_SPACE.keys() and SEARCH_SPACES["td7"] is TD7_SPACE
    # the authors' values lie inside each range (TD7.py Hyperparameters)
    centre = {"learning_rate": 3e-4, "batch_size": 256, "gamma": 0.99, "target_update_interval": 250}
    centre |= {"noise_std": 0.1, "net_arch": [256, 256]}
    lows = to_hyperparameters({n: s["choices"][0] if "choices" in s else s["low"] for n, s in space.items()})
    highs = to_hyperparameters({n: s["choices"][-1] if "choices" in s else s["high"] for n, s in space.items()})
    for key, value in centre.items():
        if key == "net_arch":
            assert value in (lows[key], highs[key])
        else:
            assert min(lows[key], highs[key]) < value < max(lows[key], highs[key]), key
    assert not {"tau", "train_freq", "gradient_steps"} & set(space)  # TD7 needs its own (episode-end training)
    (tmp_path / "space.yaml").write_text("space:\n  net_arch: {choices: ['16', '16x16']}\n")
    out = tmp_path / "out"
    args = ["tune", "--algo", "td7", "--env", "Pendulum-v1", "--timesteps", "400", "--eval-freq", "200"]
    args += ["--eval-episodes", "1", "--n-startup-trials", "1", "--trials", "2", "--out", str(out)]
    args += ["--search-space", str(tmp_path / "space.yaml"), "--hp", "learning_starts=200", "--hp", "buffer_size=1000"]
    assert main(args) == 0
    study = _study(out, "td7_Pendulum-v1")
    assert [t.state.name for t in study.trials].count("COMPLETE") >= 1
    assert {"learning_rate", "target_update_interval", "batch_size_pow"} <= set(study.trials[0].params)
    assert "TD7.py" in (out / "summary.md").read_text()


@pytest.mark.parametrize(
    "race", ["table trials already exists", "database is locked", "UNIQUE constraint failed: alembic_version"]
)
def test_opening_a_new_sqlite_storage_survives_another_process_creating_it(tmp_path, monkeypatch, race):
    # Two processes creating one new SQLite database's tables at once: the loser's CREATE TABLE finds the table
    # made ("already exists", an OperationalError), or its version row taken (an IntegrityError); it must try again.
    class OperationalError(Exception):
        pass

    class IntegrityError(Exception):
        pass

    real, calls = optuna.storages.RDBStorage, []

    def racing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise (IntegrityError if "UNIQUE" in race else OperationalError)(race)
        return real(*args, **kwargs)

    monkeypatch.setattr(optuna.storages, "RDBStorage", racing)
    storage = open_storage(f"sqlite:///{tmp_path / 'new.db'}")
    assert len(calls) == 2 and storage is not None

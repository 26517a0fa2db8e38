"""Stable-Baselines3 names on the model: ``actor``/``critic`` (and targets) as on SB3's TD3, the public
``dump_logs()``, and callbacks driven through `CallbackModel` rather than the algorithm class."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rlkit_td3 import DDPG, TD3
from rlkit_td3.callbacks import CallbackModel, CheckpointCallback
from rlkit_td3.logger import configure

TINY = dict(learning_starts=10, batch_size=8, buffer_size=100, policy_kwargs={"net_arch": [8]}, seed=0)


@pytest.mark.parametrize("cls", [TD3, DDPG])
def test_actor_and_critic_aliases_are_the_policy_modules(cls: type) -> None:
    model = cls("MlpPolicy", "Pendulum-v1", **TINY)
    assert model.actor is model.policy.actor
    assert model.actor_target is model.policy.actor_target
    assert model.critic is model.policy.critic
    assert model.critic_target is model.policy.critic_target
    assert model.actor is not model.actor_target and model.critic is not model.critic_target
    with pytest.raises(AttributeError):
        model.actor = model.policy.actor_target  # read-only: the policy owns the networks


def test_aliases_follow_a_loaded_policy(tmp_path: Path) -> None:
    model = TD3("MlpPolicy", "Pendulum-v1", **TINY)
    model.save(tmp_path / "m.zip")
    loaded = TD3.load(tmp_path / "m.zip")
    assert loaded.actor is loaded.policy.actor and loaded.critic_target is loaded.policy.critic_target


def test_dump_logs_writes_a_row_now(tmp_path: Path) -> None:
    model = TD3("MlpPolicy", "Pendulum-v1", **TINY)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(20)  # no episode ends in 20 Pendulum steps: learn itself writes no row
    assert not (tmp_path / "progress.csv").exists() or "20" not in (tmp_path / "progress.csv").read_text()
    model.dump_logs()
    rows = pd.read_csv(tmp_path / "progress.csv")
    assert rows["time/total_timesteps"].tolist() == [20]


class _FakeModel:
    """Just what `CallbackModel` names: no algorithm behind it."""

    def __init__(self) -> None:
        self.num_timesteps = 0
        self.logger = configure(None, [])
        self.saved: list[str] = []

    def get_env(self) -> Any:
        return None

    def get_vec_normalize_env(self) -> Any:
        return None

    def predict(self, observation: Any, state: Any = None, episode_start: Any = None, deterministic: bool = True):
        return np.zeros(1), None

    def save(self, path: Any) -> None:
        self.saved.append(Path(path).name)

    def save_replay_buffer(self, path: Any) -> None:
        raise AssertionError("not asked for")

    def _dump_logs(self) -> None:
        pass

    def _exact_resume_problem(self) -> str | None:
        return None


def test_callbacks_run_on_any_object_with_the_protocol(tmp_path: Path) -> None:
    fake: CallbackModel = _FakeModel()
    callback = CheckpointCallback(save_freq=2, save_path=tmp_path, name_prefix="fake")
    callback.init_callback(fake)
    callback.on_training_start({}, {})
    for step in range(1, 5):
        fake.num_timesteps = step
        assert callback.on_step()
    assert fake.saved == ["fake_2_steps.zip", "fake_4_steps.zip"]

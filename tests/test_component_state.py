"""The component state protocol: a component of the user's own saves and resumes through ``state_dict()`` /
``load_state_dict()`` alone, with no edit of the checkpoint module (issue 34)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlkit_td3 import TD3
from rlkit_td3.noise import ActionNoise, VectorizedActionNoise
from rlkit_td3.serialization import ModelFileError
from tests.test_resume import _assert_same_run, _entries

SMALL = dict(batch_size=32, buffer_size=2000, learning_starts=100, policy_kwargs={"net_arch": [16, 16]}, seed=0)


class CountingNoise(ActionNoise):
    """A user's noise with state of its own: a draw counter and a generator of its own (not the base class's),
    both saved through the state protocol only."""

    def __init__(self, action_dim: int, seed: int = 1234) -> None:
        super().__init__()
        self.action_dim = action_dim
        self.own_rng = np.random.default_rng(seed)
        self.count = 0

    def __call__(self) -> np.ndarray:
        self.count += 1
        scale = 0.1 * (1 + self.count % 7)  # depends on the counter: a lost count changes the actions
        return (scale * self.own_rng.standard_normal(self.action_dim)).astype(np.float32)

    def state_dict(self) -> dict[str, Any]:
        return {"count": self.count, "own_rng": self.own_rng.bit_generator.state}

    def load_state_dict(self, state: Any) -> None:
        if not isinstance(state, dict) or set(state) != {"count", "own_rng"}:
            raise ModelFileError(f"CountingNoise state must hold count and own_rng, got {str(state)[:100]}")
        self.count = int(state["count"])
        self.own_rng.bit_generator.state = state["own_rng"]


def test_a_custom_noise_with_state_resumes_bit_for_bit(tmp_path):
    model = TD3("MlpPolicy", gym.make("Pendulum-v1"), action_noise=CountingNoise(1), **SMALL)
    model.learn(400)  # two whole Pendulum episodes: the checkpoint falls on an episode boundary
    model.save(tmp_path / "mid.zip", include_buffer=True)
    saved_count = model.action_noise.count
    model.learn(200, reset_num_timesteps=False)
    model.save(tmp_path / "straight.zip", include_buffer=True)
    assert model.action_noise.count == 600 > saved_count  # drawn once per step, warm-up included (SB3's warm-up)

    resumed = TD3.load(
        tmp_path / "mid.zip", env=gym.make("Pendulum-v1"), custom_objects={"action_noise": CountingNoise(1)}
    )
    assert resumed.action_noise.count == saved_count
    resumed.learn(200, reset_num_timesteps=False)
    resumed.save(tmp_path / "resumed.zip", include_buffer=True)
    _assert_same_run(_entries(tmp_path / "straight.zip"), _entries(tmp_path / "resumed.zip"))


def test_a_custom_noise_checks_the_state_it_is_given(tmp_path):
    model = TD3("MlpPolicy", gym.make("Pendulum-v1"), action_noise=CountingNoise(1), **SMALL)
    model.learn(120)
    model.save(tmp_path / "model.zip")
    with pytest.raises(ModelFileError, match="CountingNoise state must hold count and own_rng"):
        TD3.load(tmp_path / "model.zip", custom_objects={"action_noise": _Renamed(1)})


class _Renamed(CountingNoise):
    """Expects another layout than the file holds."""

    def load_state_dict(self, state: Any) -> None:
        super().load_state_dict({"renamed": state})


def test_vectorized_noise_delegates_the_protocol_to_each_copy():
    noise = VectorizedActionNoise(CountingNoise(2), n_envs=3, seed=0)
    for _ in range(5):
        noise()
    state = noise.state_dict()
    assert [copy["count"] for copy in state["noises"]] == [5, 5, 5]
    other = VectorizedActionNoise(CountingNoise(2), n_envs=3, seed=0)
    other.load_state_dict(state)
    np.testing.assert_array_equal(other(), noise())
    with pytest.raises(ModelFileError, match="3 noise states"):
        other.load_state_dict({"noises": state["noises"][:2]})

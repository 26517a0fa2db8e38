"""Stable-Baselines3's replay-buffer calls on every buffer kind: ``add(..., done, infos)``, ``sample(n, env)``,
``dones``, ``device="auto"`` and a batch larger than the buffer."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces

from rlkit_td3 import TD3
from rlkit_td3.buffers import (
    DictReplayBuffer,
    LAPReplayBuffer,
    NStepReplayBuffer,
    PrioritizedReplayBuffer,
    ReplayBuffer,
)
from rlkit_td3.envs import BitFlippingEnv
from rlkit_td3.her import HerReplayBuffer
from rlkit_td3.vec_env import DummyVecEnv, VecNormalize

BOX = spaces.Box(-10.0, 10.0, (3,), np.float32)
ACT = spaces.Box(-1.0, 1.0, (2,), np.float32)
GOAL_SPACE = spaces.Dict(
    {
        "observation": spaces.Box(-10.0, 10.0, (2,), np.float32),
        "achieved_goal": spaces.Box(-10.0, 10.0, (3,), np.float32),
        "desired_goal": spaces.Box(-10.0, 10.0, (3,), np.float32),
    }
)


class _GoalEnv(gym.Env):
    observation_space = GOAL_SPACE
    action_space = ACT

    def compute_reward(self, achieved_goal, desired_goal, info):
        return -np.abs(achieved_goal - desired_goal).sum(axis=-1)


def _box_obs(t: float) -> np.ndarray:
    return np.full((1, 3), t, np.float32)


def _goal_obs(t: float) -> dict[str, np.ndarray]:
    return {
        "observation": np.full((1, 2), t, np.float32),
        "achieved_goal": np.full((1, 3), t, np.float32),
        "desired_goal": np.zeros((1, 3), np.float32),
    }


BUFFERS = {
    "ReplayBuffer": lambda: ReplayBuffer(20, BOX, ACT, seed=0),
    "optimized ReplayBuffer": lambda: ReplayBuffer(20, BOX, ACT, seed=0, optimize_memory_usage=True),
    "NStepReplayBuffer": lambda: NStepReplayBuffer(20, BOX, ACT, seed=0, n_steps=3),
    "PrioritizedReplayBuffer": lambda: PrioritizedReplayBuffer(20, BOX, ACT, seed=0),
    "LAPReplayBuffer": lambda: LAPReplayBuffer(20, BOX, ACT, seed=0),
    "DictReplayBuffer": lambda: DictReplayBuffer(20, GOAL_SPACE, ACT, seed=0),
    "HerReplayBuffer": lambda: HerReplayBuffer(20, GOAL_SPACE, ACT, _GoalEnv(), seed=0),
}


def _feed_sb3_style(buffer, steps: int, done_at: int | None = None, timeout_at: int | None = None) -> None:
    """SB3's call: ``add(obs, next_obs, action, reward, done, infos)`` with one info dict per env."""
    obs_of = _goal_obs if isinstance(buffer, DictReplayBuffer) else _box_obs
    for t in range(steps):
        done = np.array([t in (done_at, timeout_at)])
        infos = [{"TimeLimit.truncated": t == timeout_at}]
        buffer.add(obs_of(t), obs_of(t + 1), np.zeros((1, 2), np.float32), np.array([1.0]), done, infos)


@pytest.mark.parametrize("kind", list(BUFFERS))
def test_sb3_add_with_infos_stores_the_episode_flags_it_means(kind):
    # Before: the list of infos landed in `truncated` and was truthy, so every row was stored as truncated.
    buffer = BUFFERS[kind]()
    _feed_sb3_style(buffer, 6, done_at=2, timeout_at=4)
    rows = np.arange(6) if not buffer.optimize_memory_usage else np.arange(6)  # one env: row t is step t
    np.testing.assert_array_equal(buffer.terminated[rows], [0, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(buffer.truncated[rows], [0, 0, 0, 0, 1, 0])
    assert buffer.dones[:6, 0].tolist() == [False, False, True, False, True, False]
    assert buffer.timeouts[:6, 0].tolist() == [False, False, False, False, True, False]


def test_sb3_add_keeps_n_step_windows_whole():
    buffer = NStepReplayBuffer(20, BOX, ACT, seed=0, n_steps=3, gamma=0.5)
    _feed_sb3_style(buffer, 8)
    batch = buffer._get_samples(np.array([0, 4]))
    np.testing.assert_allclose(batch.rewards.numpy(), [1.75, 1.75])  # 1 + 0.5 + 0.25: three-step windows
    np.testing.assert_allclose(batch.discounts.numpy(), [0.125, 0.125])


def test_sb3_add_keeps_her_episodes_whole():
    buffer = HerReplayBuffer(20, GOAL_SPACE, ACT, _GoalEnv(), seed=0)
    _feed_sb3_style(buffer, 6, timeout_at=5)
    assert buffer.n_sampleable() == 6
    assert buffer.ep_length[:6].tolist() == [6] * 6  # one episode of six steps, not six of one


def test_sb3_add_stores_infos_for_her_copy_info_dict():
    buffer = HerReplayBuffer(20, GOAL_SPACE, ACT, _GoalEnv(), seed=0, copy_info_dict=True)
    obs, nxt = _goal_obs(0), _goal_obs(1)
    buffer.add(obs, nxt, np.zeros((1, 2)), np.array([0.0]), np.array([True]), [{"TimeLimit.truncated": True, "x": 3}])
    assert buffer.infos[0]["x"] == 3 and buffer.truncated[0] and not buffer.terminated[0]


@pytest.mark.parametrize("kind", ["ReplayBuffer", "DictReplayBuffer", "HerReplayBuffer", "NStepReplayBuffer"])
def test_ambiguous_flags_are_refused(kind):
    buffer = BUFFERS[kind]()
    obs_of = _goal_obs if isinstance(buffer, DictReplayBuffer) else _box_obs
    args = (obs_of(0), obs_of(1), np.zeros((1, 2)), np.array([0.0]), np.array([False]))
    with pytest.raises(TypeError, match="6th argument"):
        buffer.add(*args, {"TimeLimit.truncated": np.array([False])})  # a gymnasium vector env's infos dict
    with pytest.raises(TypeError, match="infos must be a list"):
        buffer.add(*args, [{"a": 1}, False])
    with pytest.raises(ValueError, match="one dict per transition"):
        buffer.add(*args, [{}, {}])
    assert buffer.size() == 0


def test_plain_flags_still_work_as_lists():
    buffer = ReplayBuffer(10, BOX, ACT, seed=0)
    buffer.add(_box_obs(0), _box_obs(1), np.zeros((1, 2)), [0.0], [False], [True])
    assert buffer.truncated[0] and not buffer.terminated[0]


@pytest.mark.parametrize("kind", list(BUFFERS))
def test_samples_have_sb3_dones_and_auto_device(kind):
    buffer = BUFFERS[kind]()
    _feed_sb3_style(buffer, 6, done_at=5)
    batch = buffer.sample(64)  # more than stored: drawn with replacement
    assert torch.equal(batch.dones, batch.terminated)
    assert batch.rewards.shape == (64,)
    auto = type(buffer)(20, buffer.observation_space, ACT, **({"env": _GoalEnv()} if kind == "HerReplayBuffer" else {}))
    assert auto.device == torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.parametrize("kind", ["ReplayBuffer", "optimized ReplayBuffer", "NStepReplayBuffer", "HerReplayBuffer"])
def test_writing_stored_dones_and_timeouts_changes_the_flags_with_sb3s_meaning(kind):
    # SB3 users (offline-data scripts, its own n-step test) edit buffer.dones / buffer.timeouts in place.
    buffer = BUFFERS[kind]()
    _feed_sb3_style(buffer, 5, timeout_at=3)
    buffer.dones[1, 0] = True  # an episode end that is no time limit: a termination
    assert buffer.terminated[1] and not buffer.truncated[1]
    buffer.dones[3, :] = False  # a time-limit truncation stays one (SB3 keeps its timeouts flag)
    assert buffer.truncated[3] and not buffer.terminated[3]
    buffer.timeouts[3] = False  # the episode still ended there: now as a termination
    assert buffer.terminated[3] and not buffer.truncated[3]
    buffer.timeouts[1, 0] = True  # a termination turned into a truncation
    assert buffer.truncated[1] and not buffer.terminated[1]
    buffer.timeouts[1] = False  # first a termination again,
    buffer.dones[1] = False  # then no episode end
    assert not buffer.terminated[1] and not buffer.truncated[1]
    assert buffer.dones[:5, 0].tolist() == [False, False, False, True, False]
    assert np.asarray(buffer.timeouts).dtype == bool and not buffer.timeouts.any()
    assert buffer.dones.shape == (20, 1) and (buffer.dones == 1).sum() == 1


def test_writing_dones_ends_an_n_step_window_there():
    buffer = NStepReplayBuffer(10, BOX, ACT, seed=0, n_steps=3, gamma=0.5)
    _feed_sb3_style(buffer, 5)
    before = buffer._get_samples(np.array([0]))
    assert before.rewards.item() == pytest.approx(1.75) and before.dones.item() == 0.0
    buffer.dones[1, 0] = True
    after = buffer._get_samples(np.array([0]))
    assert after.rewards.item() == pytest.approx(1.5) and after.dones.item() == 1.0
    assert after.discounts.item() == pytest.approx(0.25)
    torch.testing.assert_close(after.next_observations, torch.as_tensor(_box_obs(2)))


def test_stored_flags_cannot_be_an_ufunc_output():
    buffer = ReplayBuffer(10, BOX, ACT, seed=0)
    with pytest.raises(TypeError, match="assign to buffer.dones"):
        np.logical_or(buffer.dones, True, out=buffer.dones)


class _ShiftEnv(gym.Env):
    observation_space = BOX
    action_space = ACT

    def __init__(self):
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.full(3, 5.0, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.full(3, 5.0 + self.t % 3, np.float32), 10.0 + self.t % 2, False, self.t >= 50, {}


@pytest.mark.parametrize("kind", ["ReplayBuffer", "NStepReplayBuffer", "PrioritizedReplayBuffer"])
def test_sample_with_env_normalizes_like_vec_normalize(kind):
    venv = VecNormalize(DummyVecEnv([_ShiftEnv]))
    buffer = {"ReplayBuffer": ReplayBuffer, "NStepReplayBuffer": NStepReplayBuffer}.get(kind, PrioritizedReplayBuffer)(
        100, BOX, ACT, seed=0, **({"n_steps": 1} if kind == "NStepReplayBuffer" else {})
    )
    venv.reset()
    obs = venv.get_original_obs()
    for _ in range(60):
        _, _, done, infos = venv.step(np.zeros((1, 2), np.float32))
        nxt = venv.get_original_obs()
        buffer.add(obs, nxt, np.zeros((1, 2)), venv.get_original_reward(), done, infos)
        obs = nxt
    raw = buffer.sample(32)
    buffer.seed(0)
    raw = buffer.sample(32)
    buffer.seed(0)
    normalized = buffer.sample(32, venv)
    np.testing.assert_allclose(normalized.observations.numpy(), venv.normalize_obs(raw.observations.numpy()))
    np.testing.assert_allclose(normalized.next_observations.numpy(), venv.normalize_obs(raw.next_observations.numpy()))
    np.testing.assert_allclose(normalized.rewards.numpy(), venv.normalize_reward(raw.rewards.numpy()), rtol=1e-6)
    assert abs(float(normalized.observations.mean())) < 1.0 < float(raw.observations.mean())


def test_dict_sample_with_env_normalizes_each_key():
    venv = VecNormalize(DummyVecEnv([lambda: BitFlippingEnv(n_bits=3)]), norm_reward=False)
    buffer = DictReplayBuffer(50, venv.observation_space, venv.action_space, seed=0)
    venv.reset()
    obs = venv.get_original_obs()
    for _ in range(30):
        _, _, done, infos = venv.step(np.ones((1, 3), np.float32))
        nxt = venv.get_original_obs()
        buffer.add(obs, nxt, np.zeros((1, 3)), venv.get_original_reward(), done, infos)
        obs = nxt
    buffer.seed(1)
    raw = buffer.sample(8)
    buffer.seed(1)
    normalized = buffer.sample(8, venv)
    expected = venv.normalize_obs({key: value.numpy() for key, value in raw.observations.items()})
    for key, value in normalized.observations.items():
        np.testing.assert_allclose(value.numpy(), expected[key], rtol=1e-6)


def test_batch_larger_than_the_buffer_trains():
    # SB3 samples with replacement and accepts buffer_size < batch_size; so do we (it was refused before).
    model = TD3("MlpPolicy", "Pendulum-v1", buffer_size=50, batch_size=64, learning_starts=10, seed=0)
    model.learn(30)
    assert model.replay_buffer.size() == 30


def test_her_truncate_last_trajectory_marks_and_warns():
    buffer = HerReplayBuffer(20, GOAL_SPACE, ACT, _GoalEnv(), seed=0)
    _feed_sb3_style(buffer, 3)
    with pytest.warns(UserWarning, match="The last trajectory in the replay buffer will be truncated"):
        buffer.truncate_last_trajectory()
    assert buffer.truncated[:3].tolist() == [False, False, True]
    assert buffer.dones[2, 0] and buffer.n_sampleable() == 3

"""ReplayBuffer: memory, ring behaviour, seeded sampling, flags, persistence."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

from rlkit_td3.buffers import ReplayBuffer


def _spaces(obs_dim: int = 3, act_dim: int = 2):
    return spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32), spaces.Box(-1, 1, (act_dim,), np.float32)


def _fill(buffer: ReplayBuffer, n: int, start: int = 0, k: int = 1) -> None:
    for i in range(start, start + n, k):
        rows = np.arange(i, i + k, dtype=np.float32)
        obs = np.repeat(rows[:, None], buffer.obs_shape[0], axis=1)
        buffer.add(obs, obs + 0.5, np.zeros((k, buffer.action_dim)), rows, rows % 7 == 0, rows % 5 == 0)


def test_one_million_halfcheetah_transitions_fit_in_250_mb():
    buffer = ReplayBuffer(1_000_000, *_spaces(26, 6))
    assert buffer.nbytes <= 250_000_000, buffer.nbytes
    assert buffer.observations.dtype == np.float32 and buffer.terminated.dtype == bool


def test_ring_overwrites_oldest_and_keeps_flags():
    buffer = ReplayBuffer(10, *_spaces(), n_envs=3)
    _fill(buffer, 12, k=3)  # 12 transitions into 10 slots: 10, 11 overwrite slots 0, 1
    assert buffer.full and buffer.size() == 10 and buffer.pos == 2
    assert buffer.rewards.tolist() == [10, 11, 2, 3, 4, 5, 6, 7, 8, 9]
    np.testing.assert_array_equal(buffer.next_observations[:, 0], buffer.rewards + 0.5)
    np.testing.assert_array_equal(buffer.terminated, buffer.rewards % 7 == 0)
    np.testing.assert_array_equal(buffer.truncated, buffer.rewards % 5 == 0)


def test_add_more_rows_than_envs_raises():
    buffer = ReplayBuffer(10, *_spaces(), n_envs=1)
    with pytest.raises(ValueError, match="n_envs"):
        _fill(buffer, 2, k=2)


def test_sampling_is_seeded_and_consistent():
    a, b = ReplayBuffer(100, *_spaces(), seed=7), ReplayBuffer(100, *_spaces(), seed=7)
    _fill(a, 50)
    _fill(b, 50)
    sa, sb = a.sample(32), b.sample(32)
    for x, y in zip(sa, sb):
        assert np.array_equal(x.numpy(), y.numpy())
    # every sampled row is a stored transition: next_obs = obs + 0.5, reward = obs
    np.testing.assert_array_equal(sa.next_observations.numpy(), sa.observations.numpy() + 0.5)
    np.testing.assert_array_equal(sa.rewards.numpy(), sa.observations.numpy()[:, 0])
    assert sa.rewards.max() < 50
    c = ReplayBuffer(100, *_spaces(), seed=8)
    _fill(c, 50)
    assert not np.array_equal(c.sample(32).rewards.numpy(), sa.rewards.numpy())


def test_sample_empty_raises():
    with pytest.raises(ValueError, match="empty"):
        ReplayBuffer(10, *_spaces()).sample(4)


def test_save_load_writes_only_filled_part(tmp_path):
    buffer = ReplayBuffer(100_000, *_spaces(), seed=1)
    _fill(buffer, 30)
    path = tmp_path / "buf.npz"
    buffer.save(path)
    assert path.stat().st_size < 20_000  # 30 transitions, not 100k
    restored = ReplayBuffer(100_000, *_spaces(), seed=999)
    restored.load(path)
    assert restored.size() == 30 and restored.pos == 30
    for x, y in zip(buffer.sample(16), restored.sample(16)):  # RNG state restored too
        assert np.array_equal(x.numpy(), y.numpy())


def test_load_into_incompatible_buffer_raises(tmp_path):
    buffer = ReplayBuffer(10, *_spaces(3, 2))
    _fill(buffer, 5)
    buffer.save(tmp_path / "b.npz")
    with pytest.raises(ValueError, match="obs shape"):
        ReplayBuffer(10, *_spaces(4, 2)).load(tmp_path / "b.npz")

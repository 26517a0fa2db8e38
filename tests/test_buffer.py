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


# ---------------------------------------------------------------------------------------------------------
# optimize_memory_usage: each observation stored once, final observations in a side table


def _stream(n_steps: int, n_envs: int, seed: int = 0):
    """Per-step vector-env data with episodes of random length that end by termination or truncation.

    Yields ``(obs, next_obs, action, reward, terminated, truncated, valid)`` as a collector would store them:
    ``next_obs`` is the true next observation (the final one when the episode ended), and after an episode
    end the env starts again from a fresh observation. Some envs skip some steps (``valid`` False), as in
    next-step autoreset.
    """
    rng = np.random.default_rng(seed)
    obs = rng.standard_normal((n_envs, 3)).astype(np.float32)
    for _ in range(n_steps):
        next_obs = rng.standard_normal((n_envs, 3)).astype(np.float32)
        ended = rng.random(n_envs) < 0.15
        terminated = ended & (rng.random(n_envs) < 0.5)
        truncated = ended & ~terminated
        valid = rng.random(n_envs) < 0.9
        action = rng.uniform(-1, 1, (n_envs, 2)).astype(np.float32)
        reward = rng.standard_normal(n_envs).astype(np.float32)
        yield obs, next_obs, action, reward, terminated, truncated, valid
        restart = rng.standard_normal((n_envs, 3)).astype(np.float32)
        # an env that skipped the step keeps its observation; an ended episode restarts
        obs = np.where(valid[:, None], np.where(ended[:, None], restart, next_obs), obs)


def _feed(buffers, n_steps: int, n_envs: int, seed: int = 0) -> list[tuple]:
    stored = []
    for obs, nxt, act, rew, term, trunc, valid in _stream(n_steps, n_envs, seed):
        idx = np.flatnonzero(valid)
        if len(idx) == 0:
            continue
        for buffer in buffers:
            buffer.add(obs[idx], nxt[idx], act[idx], rew[idx], term[idx], trunc[idx], env_indices=idx)
        stored += [(e, obs[e].tobytes(), nxt[e].tobytes(), rew[e], term[e], trunc[e]) for e in idx]
    return stored


def _as_set(samples) -> set:
    obs, act, nxt, rew, term, trunc = (t.numpy() for t in samples)
    return {(o.tobytes(), n.tobytes(), float(r), bool(a), bool(b)) for o, n, r, a, b in zip(obs, nxt, rew, term, trunc)}


def test_optimized_buffer_samples_equal_plain_buffer_batches():
    plain = ReplayBuffer(5_000, *_spaces(), seed=3)
    optimized = ReplayBuffer(5_000, *_spaces(), seed=3, optimize_memory_usage=True)
    stored = _feed([plain, optimized], 2_000, n_envs=1)
    assert optimized.next_observations is None
    assert plain.size() == optimized.size() == len(stored)
    assert plain.truncated[: plain.size()].sum() > 50 and plain.terminated[: plain.size()].sum() > 50
    for _ in range(20):
        a, b = plain.sample(256), optimized.sample(256)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_optimized_buffer_final_observations_of_ended_episodes_are_exact():
    optimized = ReplayBuffer(10_000, *_spaces(), seed=0, optimize_memory_usage=True, n_envs=3)
    stored = _feed([optimized], 500, n_envs=3, seed=1)
    expected = {(o, n, float(r), bool(a), bool(b)) for _, o, n, r, a, b in stored}
    everything = optimized._get_samples(optimized._rows_of(np.arange(optimized.size())))
    assert _as_set(everything) == expected
    assert any(b for *_, b in expected) and any(a for *_, a, _ in expected)  # both kinds of episode end


def test_optimized_buffer_ring_keeps_the_newest_transitions_per_env():
    n_envs, capacity = 2, 40
    optimized = ReplayBuffer(capacity, *_spaces(), seed=0, optimize_memory_usage=True, n_envs=n_envs)
    stored = _feed([optimized], 300, n_envs=n_envs, seed=2)
    slots = capacity // n_envs
    assert optimized.full and optimized.size() == n_envs * (slots - 1)
    newest = []
    for env in range(n_envs):
        newest += [t[1:] for t in stored if t[0] == env][-(slots - 1) :]
    expected = {(o, n, float(r), bool(a), bool(b)) for o, n, r, a, b in newest}
    assert _as_set(optimized._get_samples(optimized._rows_of(np.arange(optimized.size())))) == expected
    # the side table only holds entries for rows that are still transitions
    assert len(optimized._final_obs) <= optimized.size()
    assert _as_set(optimized.sample(512)) <= expected


def test_optimized_buffer_save_load_round_trip(tmp_path):
    a = ReplayBuffer(60, *_spaces(), seed=5, optimize_memory_usage=True, n_envs=2)
    _feed([a], 50, n_envs=2, seed=4)
    a.save(tmp_path / "rb.npz")
    b = ReplayBuffer(60, *_spaces(), seed=0, optimize_memory_usage=True, n_envs=2)
    b.load(tmp_path / "rb.npz")
    for x, y in zip(a.sample(64), b.sample(64)):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    # both continue identically after more data
    _feed([a, b], 30, n_envs=2, seed=9)
    for x, y in zip(a.sample(64), b.sample(64)):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    with pytest.raises(ValueError, match="optimize_memory_usage"):
        ReplayBuffer(60, *_spaces()).load(tmp_path / "rb.npz")


def test_optimized_buffer_uses_at_most_055_of_sb3_default_bytes():
    # SB3's default ReplayBuffer for float32 obs 26 / act 6 stores obs, next_obs, actions, rewards, dones and
    # timeouts, all float32: 4 * (26 + 26 + 6 + 1 + 1 + 1) = 244 bytes per transition.
    sb3_bytes = 1_000_000 * 4 * (26 + 26 + 6 + 1 + 1 + 1)
    buffer = ReplayBuffer(1_000_000, *_spaces(26, 6), optimize_memory_usage=True)
    assert buffer.nbytes / sb3_bytes <= 0.55, buffer.nbytes / sb3_bytes


def test_optimized_buffer_rejects_too_small_capacity():
    with pytest.raises(ValueError, match="buffer_size"):
        ReplayBuffer(3, *_spaces(), n_envs=2, optimize_memory_usage=True)

"""DictReplayBuffer and HerReplayBuffer: storage, relabelling against a brute-force reference, persistence."""

from __future__ import annotations

import copy
import io
import json
import zipfile
from collections import OrderedDict

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from learning_cases import BIT_FLIPPING_ALONE, BIT_FLIPPING_HER, BitFlippingEnv, make_bit_flipping, run_case
from scipy import stats

from rlkit_td3 import TD3
from rlkit_td3 import HerReplayBuffer as TopLevelHer
from rlkit_td3.buffers import BUFFER_REGISTRY, DictReplayBuffer
from rlkit_td3.evaluation import evaluate_policy
from rlkit_td3.fileio.serialization import ModelFileError
from rlkit_td3.her import GoalSelectionStrategy, HerReplayBuffer
from rlkit_td3.off_policy import NonFiniteError

ACTION_SPACE = spaces.Box(-1.0, 1.0, (2,), np.float32)


class IdGoalEnv(gym.Env):
    """Only its ``compute_reward`` is used: a dense reward that identifies the goal pair (-sum |a - d|)."""

    observation_space = spaces.Dict(
        {
            "observation": spaces.Box(-np.inf, np.inf, (2,), np.float32),
            "achieved_goal": spaces.Box(-np.inf, np.inf, (3,), np.float32),
            "desired_goal": spaces.Box(-np.inf, np.inf, (3,), np.float32),
        }
    )
    action_space = ACTION_SPACE

    def compute_reward(self, achieved_goal, desired_goal, info):
        assert achieved_goal.ndim == 2 and len(info) == len(achieved_goal)
        return -np.abs(achieved_goal - desired_goal).sum(axis=-1)


def _obs(env: int, episode: int, t: int) -> dict[str, np.ndarray]:
    """Observation at step ``t`` of ``episode`` of ``env``: the achieved goal names (env, episode, t)."""
    return {
        "observation": np.array([env, t], np.float32),
        "achieved_goal": np.array([env, episode, t], np.float32),
        "desired_goal": np.array([env, episode, -1], np.float32),
    }


def _stack(rows: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {key: np.stack([row[key] for row in rows]) for key in rows[0]}


def _fill(buffer: HerReplayBuffer, n_envs: int, steps: int, seed: int, skip_prob: float = 0.0):
    """Feed ``steps`` vector steps of random-length episodes (ended by termination or truncation; some env rows
    missing, as in next-step autoreset). Returns the reference: for every (env, episode), its length once ended,
    and the ring contents ``ring[env][slot] = (episode, t)``."""
    rng = np.random.default_rng(seed)
    episode, t = np.zeros(n_envs, int), np.zeros(n_envs, int)
    length = rng.integers(1, 9, n_envs)
    ended_len: dict[tuple[int, int], int] = {}
    ring = [[None] * buffer.n_slots for _ in range(n_envs)]
    pos = [0] * n_envs
    for _ in range(steps):
        envs = [e for e in range(n_envs) if rng.random() >= skip_prob]
        if not envs:
            continue
        done = [t[e] + 1 >= length[e] for e in envs]
        terminated = np.array([d and episode[e] % 2 == 0 for d, e in zip(done, envs)])
        truncated = np.array([d and episode[e] % 2 == 1 for d, e in zip(done, envs)])
        buffer.add(
            _stack([_obs(e, episode[e], t[e]) for e in envs]),
            _stack([_obs(e, episode[e], t[e] + 1) for e in envs]),
            rng.uniform(-1, 1, (len(envs), 2)).astype(np.float32),
            np.array([10.0 * e + t[e] for e in envs], np.float32),
            terminated,
            truncated,
            env_indices=np.array(envs) if len(envs) < n_envs else None,
        )
        for e, d in zip(envs, done):
            ring[e][pos[e]] = (int(episode[e]), int(t[e]))
            pos[e] = (pos[e] + 1) % buffer.n_slots
            t[e] += 1
            if d:
                ended_len[(e, int(episode[e]))] = int(t[e])
                episode[e] += 1
                t[e] = 0
                length[e] = rng.integers(1, 9)
    return ended_len, ring


def _sampleable(ended_len, ring) -> set[tuple[int, int, int]]:
    """Brute force: the transitions of episodes that ended and still have every step in the buffer."""
    present = {(e, ep, t) for e, slots in enumerate(ring) for item in slots if item is not None for ep, t in [item]}
    return {
        (e, ep, t) for (e, ep), n in ended_len.items() if all((e, ep, s) in present for s in range(n)) for t in range(n)
    }


def _decode(batch):
    obs = {k: v.numpy() for k, v in batch.observations.items()}
    next_obs = {k: v.numpy() for k, v in batch.next_observations.items()}
    ident = obs["achieved_goal"].astype(int)  # (env, episode, t)
    return obs, next_obs, ident


# ---------------------------------------------------------------------------------------------- DictReplayBuffer
def _dict_space():
    return spaces.Dict(
        {
            "image": spaces.Box(0, 255, (3, 4, 4), np.uint8),
            "vector": spaces.Box(-1.0, 1.0, (5,), np.float64),
        }
    )


def _dict_rows(rng, k, space):
    return {
        "image": rng.integers(0, 256, (k, *space["image"].shape), dtype=np.uint8),
        "vector": rng.uniform(-1, 1, (k, 5)),
    }


def _fill_dict(buffer, steps, seed):
    rng = np.random.default_rng(seed)
    space = buffer.observation_space
    for _ in range(steps):
        k = buffer.n_envs
        buffer.add(
            _dict_rows(rng, k, space),
            _dict_rows(rng, k, space),
            rng.uniform(-1, 1, (k, 2)),
            rng.normal(size=k),
            rng.random(k) < 0.1,
            rng.random(k) < 0.1,
        )


def test_dict_buffer_stores_each_key_with_its_dtype_and_samples_dicts():
    buffer = DictReplayBuffer(10, _dict_space(), ACTION_SPACE, n_envs=2, seed=0)
    assert buffer.observations["image"].dtype == np.uint8 and buffer.observations["image"].shape == (10, 3, 4, 4)
    assert buffer.observations["vector"].dtype == np.float32
    rng = np.random.default_rng(1)
    obs, next_obs = _dict_rows(rng, 2, _dict_space()), _dict_rows(rng, 2, _dict_space())
    buffer.add(obs, next_obs, np.zeros((2, 2)), np.array([1.0, 2.0]), np.array([True, False]), np.array([False, True]))
    assert buffer.size() == 2
    batch = buffer.sample(64)
    assert batch.observations["image"].dtype == torch.uint8 and batch.observations["image"].shape == (64, 3, 4, 4)
    assert batch.next_observations["vector"].dtype == torch.float32
    for i in range(64):
        row = int(batch.rewards[i]) - 1
        assert np.array_equal(batch.observations["image"][i].numpy(), obs["image"][row])
        assert np.array_equal(batch.next_observations["image"][i].numpy(), next_obs["image"][row])
        assert bool(batch.terminated[i]) == (row == 0) and bool(batch.truncated[i]) == (row == 1)
    _fill_dict(buffer, 7, seed=2)  # 2 + 14 rows into 10: wraps
    assert buffer.size() == 10 and buffer.full and buffer.pos == 6


def test_dict_buffer_refuses_bad_spaces_and_layouts():
    with pytest.raises(TypeError, match="observation_space must be a gymnasium.spaces.Dict"):
        DictReplayBuffer(10, spaces.Box(-1, 1, (3,)), ACTION_SPACE)
    with pytest.raises(TypeError, match=r"observation_space\['d'\] must be a gymnasium.spaces.Box"):
        DictReplayBuffer(10, spaces.Dict({"d": spaces.Tuple((spaces.Discrete(3),))}), ACTION_SPACE)
    with pytest.raises(ValueError, match="optimize_memory_usage=True is not available with Dict observations"):
        DictReplayBuffer(10, _dict_space(), ACTION_SPACE, optimize_memory_usage=True)
    buffer = DictReplayBuffer(10, _dict_space(), ACTION_SPACE)
    with pytest.raises(ValueError, match=r"obs must be a dict with keys \['image', 'vector'\]"):
        buffer.add({"image": np.zeros((1, 3, 4, 4))}, {}, np.zeros((1, 2)), [0.0], [False], [False])
    with pytest.raises(ValueError, match="empty"):
        buffer.sample(4)


def test_dict_buffer_save_load_round_trip_resumes_sampling(tmp_path):
    buffer = DictReplayBuffer(12, _dict_space(), ACTION_SPACE, n_envs=2, seed=3)
    _fill_dict(buffer, 9, seed=4)
    buffer.sample(5)
    path = tmp_path / "dict_buffer.npz"
    buffer.save(path)
    with zipfile.ZipFile(path) as archive:  # no pickle: only .npy members, per key by position
        assert "observations.0.npy" in archive.namelist() and "next_observations.1.npy" in archive.namelist()
        for name in archive.namelist():
            np.load(io.BytesIO(archive.read(name)), allow_pickle=False)
    restored = DictReplayBuffer(12, _dict_space(), ACTION_SPACE, n_envs=2)
    restored.load(path)
    assert (restored.pos, restored.full, restored.size()) == (buffer.pos, buffer.full, buffer.size())
    a, b = buffer.sample(32), restored.sample(32)
    for key in ("image", "vector"):
        assert torch.equal(a.observations[key], b.observations[key])
        assert torch.equal(a.next_observations[key], b.next_observations[key])
    assert torch.equal(a.actions, b.actions) and torch.equal(a.rewards, b.rewards)


def _rewrite(data: bytes, change) -> bytes:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = {name[:-4]: np.load(io.BytesIO(archive.read(name))) for name in archive.namelist()}
    meta = json.loads(members["meta"].tobytes())
    change(meta, members)
    members["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    out = io.BytesIO()
    np.savez(out, **members)
    return out.getvalue()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m, a: m.update(obs_shape=dict(reversed(list(m["obs_shape"].items())))), "obs shape"),
        (lambda m, a: m["obs_dtype"].update(image="<f4"), "observation dtypes"),
        (lambda m, a: a.update({"observations.0": a["observations.0"].astype(np.float32)}), "observations.0.npy"),
        (lambda m, a: a.update(extra=np.zeros(3)), "unexpected entries"),
        (lambda m, a: a["observations.1"].__setitem__((0, 0), np.nan), "non-finite"),
        (lambda m, a: m.update(pos=3), "inconsistent"),
    ],
)
def test_dict_buffer_load_refuses_malformed_files(change, message):
    buffer = DictReplayBuffer(12, _dict_space(), ACTION_SPACE, n_envs=2, seed=3)
    _fill_dict(buffer, 4, seed=4)
    target = DictReplayBuffer(12, _dict_space(), ACTION_SPACE, n_envs=2, seed=3)
    before = target.to_bytes()
    with pytest.raises(ModelFileError, match=message):
        target.load(io.BytesIO(_rewrite(buffer.to_bytes(), change)))
    assert target.to_bytes() == before  # nothing changed


# ---------------------------------------------------------------------------------------------- HER sampling
def test_her_is_exported_and_registered():
    assert TopLevelHer is HerReplayBuffer and BUFFER_REGISTRY["HerReplayBuffer"] is HerReplayBuffer
    space = IdGoalEnv.observation_space
    buffer = HerReplayBuffer(20, space, ACTION_SPACE, IdGoalEnv(), goal_selection_strategy="FINAL")
    assert buffer.goal_selection_strategy is GoalSelectionStrategy.FINAL and buffer.her_ratio == 0.8


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(goal_selection_strategy="later"), ValueError, "goal_selection_strategy must be one of"),
        (dict(n_sampled_goal=-1), ValueError, "n_sampled_goal must be a non-negative int"),
        (dict(copy_info_dict=1), TypeError, "copy_info_dict must be a bool"),
        (dict(optimize_memory_usage=True), ValueError, "optimize_memory_usage=True is not available"),
    ],
)
def test_her_refuses_bad_settings(kwargs, error, message):
    with pytest.raises(error, match=message):
        HerReplayBuffer(20, IdGoalEnv.observation_space, ACTION_SPACE, IdGoalEnv(), **kwargs)


def test_her_needs_goal_keys_of_one_shape():
    space = spaces.Dict({"observation": spaces.Box(-1, 1, (2,)), "desired_goal": spaces.Box(-1, 1, (2,))})
    with pytest.raises(ValueError, match="must have a 'achieved_goal' entry"):
        HerReplayBuffer(20, space, ACTION_SPACE)
    space = spaces.Dict({"achieved_goal": spaces.Box(-1, 1, (2,)), "desired_goal": spaces.Box(-1, 1, (3,))})
    with pytest.raises(ValueError, match="must have the same shape"):
        HerReplayBuffer(20, space, ACTION_SPACE)


@pytest.mark.parametrize("n_envs", [1, 3])
@pytest.mark.parametrize("strategy", ["future", "final", "episode"])
def test_her_relabelling_matches_brute_force_reference(n_envs, strategy):
    buffer_size = 60  # small: the rings wrap several times, overwriting episodes part-way
    buffer = HerReplayBuffer(
        buffer_size,
        IdGoalEnv.observation_space,
        ACTION_SPACE,
        IdGoalEnv(),
        n_envs=n_envs,
        seed=5,
        goal_selection_strategy=strategy,
    )
    ended_len, ring = _fill(buffer, n_envs, steps=137, seed=6, skip_prob=0.2 if n_envs > 1 else 0.0)
    expected = _sampleable(ended_len, ring)
    assert buffer.n_sampleable() == len(expected)
    batch = buffer.sample(4000)
    obs, next_obs, ident = _decode(batch)
    seen = {tuple(row) for row in ident.tolist()}
    assert seen == expected  # every sampleable transition, and nothing else (no overwritten or running episode)
    assert np.array_equal(next_obs["achieved_goal"][:, 2], obs["achieved_goal"][:, 2] + 1)
    goal = obs["desired_goal"].astype(int)
    relabelled = goal[:, 2] >= 0
    assert np.array_equal(goal, next_obs["desired_goal"].astype(int))  # s and s' carry the same goal
    # Real transitions keep their goal and reward.
    real = ~relabelled
    assert np.array_equal(goal[real], np.c_[ident[real, :2], -np.ones(real.sum(), int)])
    assert np.array_equal(batch.rewards.numpy()[real], 10.0 * ident[real, 0] + ident[real, 2])
    # Relabelled: the goal is an achieved goal (the next observation's) of the same env and episode.
    assert np.array_equal(goal[relabelled, :2], ident[relabelled, :2])
    step = goal[relabelled, 2] - 1  # the transition whose next achieved goal became the goal
    length = np.array([ended_len[(e, ep)] for e, ep, _ in ident[relabelled]])
    t = ident[relabelled, 2]
    assert np.all((step >= 0) & (step < length))
    if strategy == "future":
        assert np.all(step >= t) and np.any(step == t) and np.any(step > t)
    elif strategy == "final":
        assert np.array_equal(step, length - 1)
    else:
        assert np.any(step < t)
    expected_rewards = -np.abs(next_obs["achieved_goal"][relabelled] - obs["desired_goal"][relabelled]).sum(-1)
    assert np.array_equal(batch.rewards.numpy()[relabelled], expected_rewards.astype(np.float32))
    # Terminated and truncated stay apart and follow the transition.
    ends = ident[:, 2] + 1 == np.array([ended_len[(e, ep)] for e, ep, _ in ident])
    terminated, truncated = batch.terminated.numpy() > 0, batch.truncated.numpy() > 0
    assert np.array_equal(terminated | truncated, ends)
    assert np.array_equal(terminated, ends & (ident[:, 1] % 2 == 0))


@pytest.mark.parametrize("n_sampled_goal", [0, 1, 4])
def test_her_ratio_chi_square(n_sampled_goal):
    buffer = HerReplayBuffer(
        200, IdGoalEnv.observation_space, ACTION_SPACE, IdGoalEnv(), seed=7, n_sampled_goal=n_sampled_goal
    )
    _fill(buffer, 1, steps=150, seed=8)
    n = 20000
    relabelled = int((buffer.sample(n).observations["desired_goal"][:, 2] >= 0).sum())
    ratio = 1 - 1 / (n_sampled_goal + 1)
    if n_sampled_goal == 0:
        assert relabelled == 0
        return
    chi2 = stats.chisquare([relabelled, n - relabelled], [n * ratio, n * (1 - ratio)])
    assert chi2.pvalue > 0.01, (relabelled, n * ratio)


def test_her_future_goal_is_uniform_over_the_rest_of_the_episode():
    buffer = HerReplayBuffer(100, IdGoalEnv.observation_space, ACTION_SPACE, IdGoalEnv(), seed=9, n_sampled_goal=10**6)
    obs = _stack([_obs(0, 0, t) for t in range(6)])
    next_obs = _stack([_obs(0, 0, t + 1) for t in range(6)])
    for t in range(6):
        one = {k: v[t : t + 1] for k, v in obs.items()}
        nxt = {k: v[t : t + 1] for k, v in next_obs.items()}
        buffer.add(one, nxt, np.zeros((1, 2)), [0.0], [False], [t == 5])
    _, _, ident = _decode(batch := buffer.sample(30000))
    steps = batch.observations["desired_goal"][:, 2].numpy().astype(int) - 1
    at_two = steps[ident[:, 2] == 2]
    counts = np.bincount(at_two, minlength=6)[2:]  # steps 2..5, each 1/4
    assert stats.chisquare(counts).pvalue > 0.01, counts


def test_her_running_episode_is_not_sampled_until_it_ends():
    buffer = HerReplayBuffer(50, IdGoalEnv.observation_space, ACTION_SPACE, IdGoalEnv(), seed=0)
    for t in range(3):
        buffer.add(_stack([_obs(0, 0, t)]), _stack([_obs(0, 0, t + 1)]), np.zeros((1, 2)), [0.0], [False], [False])
    assert buffer.size() == 3 and buffer.n_sampleable() == 0
    with pytest.raises(ValueError, match="cannot sample before the first episode has ended"):
        buffer.sample(4)
    buffer.add(_stack([_obs(0, 0, 3)]), _stack([_obs(0, 0, 4)]), np.zeros((1, 2)), [0.0], [False], [True])
    assert buffer.n_sampleable() == 4


def test_her_closes_an_episode_the_env_left_without_ending_it():
    buffer = HerReplayBuffer(50, IdGoalEnv.observation_space, ACTION_SPACE, IdGoalEnv(), seed=0)

    def float64(obs):  # values float32 cannot hold exactly: stored rounded, still recognised as continuing
        return {key: value.astype(np.float64) + 0.1 for key, value in obs.items()}

    for t in range(3):
        obs, nxt = float64(_stack([_obs(0, 0, t)])), float64(_stack([_obs(0, 0, t + 1)]))
        buffer.add(obs, nxt, np.zeros((1, 2)), [0.0], [False], [False])
    assert buffer.n_sampleable() == 0
    # A new episode starts (the env was reset by a new learn()): the old one is closed where it stopped.
    buffer.add(_stack([_obs(0, 1, 0)]), _stack([_obs(0, 1, 1)]), np.zeros((1, 2)), [0.0], [False], [False])
    assert buffer.n_sampleable() == 3
    _, _, ident = _decode(buffer.sample(200))
    assert set(ident[:, 1].tolist()) == {0}  # (the +0.1 truncates away)
    with pytest.warns(UserWarning, match="last trajectory"):
        buffer.truncate_last_trajectory()
    assert buffer.n_sampleable() == 4


def test_her_rings_per_env_let_envs_add_out_of_step_and_truncate_each_where_it_stands():
    # The layout docs/migration.md states (SB3 keeps one [step, env] ring): env 1 adds two rows fewer than env 0
    # (e.g. next-step autoreset skipped its rows); each episode stays contiguous in its env's ring.
    buffer = HerReplayBuffer(20, IdGoalEnv.observation_space, ACTION_SPACE, IdGoalEnv(), n_envs=2, seed=0)
    for t in range(4):
        envs = [0, 1] if t < 2 else [0]
        obs, nxt = _stack([_obs(e, 0, t) for e in envs]), _stack([_obs(e, 0, t + 1) for e in envs])
        buffer.add(
            obs,
            nxt,
            np.zeros((len(envs), 2)),
            [0.0] * len(envs),
            [False] * len(envs),
            [False] * len(envs),
            env_indices=np.array(envs),
        )
    assert buffer.n_slots == 10 and buffer.pos == 4 and buffer.size() == 6
    np.testing.assert_array_equal(buffer.observations["achieved_goal"][:4, 0], [0, 0, 0, 0])  # env 0's rows
    np.testing.assert_array_equal(buffer.observations["achieved_goal"][10:12], [[1, 0, 0], [1, 0, 1]])  # env 1's
    with pytest.warns(UserWarning, match="last trajectory"):
        buffer.truncate_last_trajectory()
    assert buffer.dones.shape == (10, 2) and buffer.dones[3, 0] and buffer.dones[1, 1]  # each env's last row
    assert buffer.timeouts[:, 0].tolist() == [False] * 3 + [True] + [False] * 6 and buffer.n_sampleable() == 6
    _, _, ident = _decode(buffer.sample(100))
    assert {tuple(row[:2]) for row in ident.tolist()} == {(0, 0), (1, 0)}


def test_her_episode_longer_than_the_ring_keeps_its_latest_steps():
    buffer = HerReplayBuffer(4, IdGoalEnv.observation_space, ACTION_SPACE, IdGoalEnv(), seed=0, n_sampled_goal=10**6)
    for t in range(7):
        buffer.add(_stack([_obs(0, 0, t)]), _stack([_obs(0, 0, t + 1)]), np.zeros((1, 2)), [0.0], [False], [t == 6])
    batch = buffer.sample(500)
    _, _, ident = _decode(batch)
    assert set(ident[:, 2].tolist()) == {3, 4, 5, 6}
    steps = batch.observations["desired_goal"][:, 2].numpy().astype(int) - 1
    assert np.all((steps >= ident[:, 2]) & (steps <= 6))


def test_her_copy_info_dict_passes_the_transitions_infos():
    seen = []

    class InfoEnv(IdGoalEnv):
        def compute_reward(self, achieved_goal, desired_goal, info):
            seen.append([dict(i) for i in info])
            return np.array([i["bonus"] for i in info], np.float32)

    buffer = HerReplayBuffer(
        20, IdGoalEnv.observation_space, ACTION_SPACE, InfoEnv(), seed=0, copy_info_dict=True, n_sampled_goal=10**6
    )
    for t in range(3):
        buffer.add(
            _stack([_obs(0, 0, t)]),
            _stack([_obs(0, 0, t + 1)]),
            np.zeros((1, 2)),
            [0.0],
            [False],
            [t == 2],
            infos=[{"bonus": 100.0 + t}],
        )
    batch = buffer.sample(50)
    assert np.array_equal(batch.rewards.numpy(), 100.0 + batch.observations["achieved_goal"][:, 2].numpy())
    seen[-1][0]["bonus"] = -1.0  # compute_reward got copies
    assert buffer.infos[0]["bonus"] == 100.0
    with pytest.raises(ValueError, match="infos must be a list of 1 dicts"):
        buffer.add(_stack([_obs(0, 1, 0)]), _stack([_obs(0, 1, 1)]), np.zeros((1, 2)), [0.0], [False], [False])


def test_her_without_env_says_how_to_give_one():
    buffer = HerReplayBuffer(20, IdGoalEnv.observation_space, ACTION_SPACE, seed=0)
    _fill(buffer, 1, steps=20, seed=1)
    with pytest.raises(ValueError, match="pass env= or call set_env"):
        buffer.sample(64)
    buffer.set_env(IdGoalEnv())
    assert buffer.sample(64).rewards.shape == (64,)
    with pytest.raises(ValueError, match="already has an env"):
        buffer.set_env(IdGoalEnv())


def test_her_reward_from_a_vector_env_and_an_sb3_vec_env():
    from stable_baselines3.common.vec_env import DummyVecEnv

    from rlkit_td3.her.her_replay_buffer import _reward_function

    achieved, desired = np.zeros((4, 3), np.float32), np.ones((4, 3), np.float32)
    expected = np.full(4, -3.0)
    for env in (
        IdGoalEnv(),
        gym.vector.SyncVectorEnv([IdGoalEnv, IdGoalEnv]),
        DummyVecEnv([IdGoalEnv]),
    ):
        assert np.array_equal(_reward_function(env)(achieved, desired, [{}] * 4), expected)
    with pytest.raises(TypeError, match="env must be a gymnasium env"):
        _reward_function(object())


# ---------------------------------------------------------------------------------------------- HER persistence
@pytest.mark.parametrize("n_envs", [1, 3])
def test_her_save_load_round_trip_resumes_exactly(tmp_path, n_envs):
    def make():
        return HerReplayBuffer(
            45, IdGoalEnv.observation_space, ACTION_SPACE, IdGoalEnv(), n_envs=n_envs, seed=11, copy_info_dict=True
        )

    buffer = make()
    rng = np.random.default_rng(12)
    for step in range(70):  # wraps; leaves episodes running
        k = n_envs
        obs = _stack([_obs(e, step // 4, step % 4) for e in range(k)])
        nxt = _stack([_obs(e, step // 4, step % 4 + 1) for e in range(k)])
        end = np.full(k, step % 4 == 3)
        buffer.add(obs, nxt, rng.uniform(-1, 1, (k, 2)), np.zeros(k), end, ~end & False, infos=[{"s": step}] * k)
    buffer.sample(10)
    path = tmp_path / "her.npz"
    buffer.save(path)
    restored = make()
    restored.load(path)
    for name in ("ep_start", "ep_length", "_env_pos", "_env_full", "_current_ep_start", "_current_ep_length"):
        assert np.array_equal(getattr(restored, name), getattr(buffer, name)), name
    for b in (buffer, restored):  # both go on alike: add, close episodes, wrap, sample
        for step in range(70, 75):
            obs = _stack([_obs(e, step // 4, step % 4) for e in range(n_envs)])
            nxt = _stack([_obs(e, step // 4, step % 4 + 1) for e in range(n_envs)])
            end = np.full(n_envs, step % 4 == 3)
            b.add(obs, nxt, np.zeros((n_envs, 2)), np.zeros(n_envs), end, end & False, infos=[{"s": step}] * n_envs)
    a, b = buffer.sample(256), restored.sample(256)
    for key in a.observations:
        assert torch.equal(a.observations[key], b.observations[key])
    assert torch.equal(a.rewards, b.rewards) and torch.equal(a.actions, b.actions)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m, a: a["ep_length"].__setitem__(0, 40), "ep_start must be in"),
        (lambda m, a: a["ep_length"].__setitem__(slice(0, 2), 3), "start and end with rows of the same episode"),
        (lambda m, a: a["ep_start"].__setitem__(1, 2), "cover their own rows"),
        (lambda m, a: m.update(current_ep_length=[m["current_ep_length"][0] + 1]), "ring 0 is inconsistent"),
        (lambda m, a: m.update(n_slots=20), "rings of 20 rows"),
        (lambda m, a: m.update(size=3), "disagree with its rings"),
    ],
)
def test_her_load_refuses_inconsistent_episodes(change, message):
    buffer = HerReplayBuffer(30, IdGoalEnv.observation_space, ACTION_SPACE, IdGoalEnv(), seed=0)
    _fill(buffer, 1, steps=25, seed=3)
    target = HerReplayBuffer(30, IdGoalEnv.observation_space, ACTION_SPACE, IdGoalEnv(), seed=0)
    before = target.to_bytes()
    with pytest.raises(ModelFileError, match=message):
        target.load(io.BytesIO(_rewrite(buffer.to_bytes(), change)))
    assert target.to_bytes() == before


# ---------------------------------------------------------------------------------------------- through the loop
class CounterGoalEnv(gym.Env):
    """Goal env whose observations name the episode and step: achieved goal ``[episode, t, 0]``, desired goal
    ``[episode, -1, 0]``; ends by termination at ``terminate_at`` steps or by its TimeLimit."""

    metadata: dict = {"render_modes": []}
    observation_space = IdGoalEnv.observation_space
    action_space = ACTION_SPACE

    def __init__(self, terminate_at: int = 1000, offset: int = 0):
        self.terminate_at, self.episode, self.t = terminate_at, offset - 1, 0

    def _obs(self):
        return {
            "observation": np.array([self.episode, self.t], np.float32),
            "achieved_goal": np.array([self.episode, self.t, 0], np.float32),
            "desired_goal": np.array([self.episode, -1, 0], np.float32),
        }

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode, self.t = self.episode + 1, 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), float(self.t), self.t >= self.terminate_at, False, {"step": self.t}

    def compute_reward(self, achieved_goal, desired_goal, info):
        return -np.abs(achieved_goal - desired_goal).sum(axis=-1)


def _counter_vec_env(n_envs, terminate_at, max_steps, mode=gym.vector.AutoresetMode.NEXT_STEP):
    def make(i):
        return lambda: gym.wrappers.TimeLimit(CounterGoalEnv(terminate_at, offset=100 * i), max_steps)

    return gym.vector.SyncVectorEnv([make(i) for i in range(n_envs)], autoreset_mode=mode)


@pytest.mark.parametrize("mode", [gym.vector.AutoresetMode.NEXT_STEP, gym.vector.AutoresetMode.SAME_STEP])
def test_dict_env_trains_with_a_dict_buffer_by_default(mode):
    model = TD3("MultiInputPolicy", _counter_vec_env(2, 4, 6, mode), learning_starts=10, batch_size=8, seed=0)
    assert type(model.replay_buffer) is DictReplayBuffer
    model.learn(40)
    buffer = model.replay_buffer
    n = buffer.size()
    ag, next_ag = buffer.observations["achieved_goal"][:n], buffer.next_observations["achieved_goal"][:n]
    # Every stored transition goes one step on within one episode: the final observations of ended episodes
    # (infos["final_obs"] under same-step autoreset) and no reset row (next-step autoreset).
    assert np.array_equal(next_ag[:, 0], ag[:, 0]) and np.array_equal(next_ag[:, 1], ag[:, 1] + 1)
    assert np.array_equal(buffer.terminated[:n], next_ag[:, 1] == 4)
    assert buffer.terminated[:n].any()


def test_her_through_the_loop_with_three_envs_keeps_episodes_apart():
    env = _counter_vec_env(3, terminate_at=5, max_steps=3)  # every episode is cut by the time limit
    model = TD3(
        "MultiInputPolicy",
        env,
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs=dict(n_sampled_goal=4, goal_selection_strategy="episode", copy_info_dict=True),
        buffer_size=30,  # rings of 10 rows: they wrap
        learning_starts=6,
        batch_size=16,
        seed=1,
    )
    buffer = model.replay_buffer
    assert isinstance(buffer, HerReplayBuffer) and buffer.env is model._venv
    model.learn(60)
    assert buffer.truncated[buffer.ep_length > 0].any() and not buffer.terminated.any()
    assert buffer.infos[0] == {"step": int(buffer.next_observations["achieved_goal"][0, 1])}  # copied infos
    batch = buffer.sample(500)
    obs, next_obs, ident = _decode(batch)
    goal = obs["desired_goal"].astype(int)
    relabelled = goal[:, 1] >= 0
    assert 0.7 < relabelled.mean() < 0.9
    assert np.array_equal(goal[:, 0], ident[:, 0])  # same env (episode ids are 100 apart) and same episode
    assert np.all(goal[relabelled, 1] <= 3)
    assert np.array_equal(
        batch.rewards.numpy()[relabelled], -np.abs(next_obs["achieved_goal"] - goal)[relabelled].sum(1)
    )


def test_predict_and_evaluate_policy_on_dict_observations():
    model = TD3("MultiInputPolicy", make_bit_flipping(4), seed=0)
    env = make_bit_flipping(4)
    obs, _ = env.reset(seed=0)
    action, _ = model.predict(obs)
    assert action.shape == (4,)
    batch = {key: np.stack([value, value, value]) for key, value in obs.items()}
    actions, _ = model.predict(batch)
    assert actions.shape == (3, 4) and np.allclose(actions[1], action, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"observation has keys \['observation'\]"):
        model.predict({"observation": obs["observation"]})
    with pytest.raises(ValueError, match=r"observation\['desired_goal'\] has shape \(5,\)"):
        model.predict({**obs, "desired_goal": np.zeros(5)})
    with pytest.raises(ValueError, match="keys disagree"):
        model.predict({**batch, "desired_goal": obs["desired_goal"]})
    with pytest.raises(TypeError, match="is an \\(obs, info\\) tuple"):
        model.predict(env.reset())
    mean, _ = evaluate_policy(model, make_bit_flipping(4), n_eval_episodes=3)
    assert -4.0 <= mean <= 0.0
    returns, lengths = evaluate_policy(
        model, gym.vector.SyncVectorEnv([lambda: make_bit_flipping(4)] * 2), 4, return_episode_rewards=True
    )
    assert len(returns) == 4 and all(1 <= n <= 4 for n in lengths)


def test_dict_env_checks_name_the_key():
    class BadKey(CounterGoalEnv):
        def step(self, action):
            obs, *rest = super().step(action)
            obs["achieved_goal"] = np.zeros(2, np.float32)
            return (obs, *rest)

    model = TD3("MultiInputPolicy", gym.wrappers.TimeLimit(BadKey(), 5), learning_starts=50, seed=0)
    with pytest.raises(ValueError, match=r"returned observation\['achieved_goal'\] of shape \(2,\).*observation_space"):
        model.learn(3)

    class NaNGoal(CounterGoalEnv):
        def step(self, action):
            obs, *rest = super().step(action)
            obs["desired_goal"][0] = np.nan
            return (obs, *rest)

    model = TD3("MultiInputPolicy", gym.wrappers.TimeLimit(NaNGoal(), 5), learning_starts=50, seed=0)
    with pytest.raises(NonFiniteError, match=r"env 0 .*observation \{.*'desired_goal': '\[nan -1.  0.\]'"):
        model.learn(3)
    env = CounterGoalEnv()
    env.observation_space = spaces.Dict({"a": spaces.Tuple((spaces.Discrete(3),))})
    with pytest.raises(TypeError, match=r"^CounterGoalEnv: observation_space\['a'\] must be a gymnasium.spaces.Box"):
        TD3("MultiInputPolicy", env)


def test_non_finite_final_dict_observation_is_refused():
    class NaNFinal(CounterGoalEnv):
        def step(self, action):
            obs, reward, terminated, truncated, info = super().step(action)
            if terminated:
                obs["observation"][1] = np.nan
            return obs, reward, terminated, truncated, info

    env = gym.vector.SyncVectorEnv(
        [lambda: NaNFinal(terminate_at=2)], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
    )
    model = TD3("MultiInputPolicy", env, learning_starts=50, seed=0)
    with pytest.raises(NonFiniteError, match=r"env 0 .*final observation .*infos\['final_obs'\]"):
        model.learn(5)
    assert model.replay_buffer.size() == 1  # the step before, not the bad one


@pytest.mark.slow
def test_td3_her_learns_bit_flipping_where_td3_alone_does_not():
    """10 bits, 4,000 steps, the same settings for both (`learning_cases.BIT_FLIPPING_HER` and
    `learning_cases.BIT_FLIPPING_ALONE`, shared with benchmarks/learning_paths.py, which runs them under every float
    path): the median success rate over three seeds, with HER at least 0.3, without it at most 0.1.

    The bar is the learning, not the plateau: a run climbs towards 0.9 over several thousand steps (seed 0 on an AMD
    EPYC: 0.30, 0.60, 0.84, 0.86 at 2,000 to 8,000 steps), so a threshold near the plateau (the former 0.9 at 8,000
    steps: 0.86 there) decides on rounding; the measured margins are in benchmarks/results/learning_paths/."""
    with_her = run_case(BIT_FLIPPING_HER)
    assert with_her.passed, with_her.describe()
    without_her = run_case(BIT_FLIPPING_ALONE)
    assert without_her.passed, without_her.describe()


def test_dict_spaces_round_trip_through_model_metadata():
    from rlkit_td3.fileio.serialization import space_from_dict, space_to_dict, spaces_equal

    space = _dict_space()
    spec = json.loads(json.dumps(space_to_dict(space)))
    rebuilt = space_from_dict(spec)
    assert list(rebuilt.spaces) == ["image", "vector"] and spaces_equal(rebuilt, space)
    assert rebuilt["image"].dtype == np.uint8 and rebuilt["vector"].shape == (5,)
    swapped = spaces.Dict(OrderedDict(vector=space["vector"], image=space["image"]))  # a plain dict is sorted
    assert not spaces_equal(space_from_dict(space_to_dict(swapped)), space)
    for bad, message in [
        ({"type": "Dict", "spaces": []}, "1 to 64 entries"),
        ({"type": "Dict", "spaces": [["a", spec["spaces"][0][1]], ["a", spec["spaces"][1][1]]]}, "distinct str keys"),
        ({"type": "Dict", "spaces": [["a", {"type": "Dict", "spaces": []}]]}, "must be Box, Discrete"),
    ]:
        with pytest.raises(ModelFileError, match=message):
            space_from_dict(bad)
    with pytest.raises(TypeError, match="only Box, Discrete, MultiDiscrete and MultiBinary spaces and Dicts"):
        space_to_dict(spaces.Dict({"t": spaces.Tuple((spaces.Discrete(2),))}))


class ReachGoalEnv(gym.Env):
    """A point to move to a goal, both drawn from the env's generator at reset; 5-step episodes, sparse reward."""

    metadata: dict = {"render_modes": []}
    observation_space = IdGoalEnv.observation_space
    action_space = ACTION_SPACE

    def _obs(self):
        point = np.r_[self.point, 0.0].astype(np.float32)
        return {"observation": self.point.copy(), "achieved_goal": point, "desired_goal": self.goal.copy()}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.point = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        self.goal = np.r_[self.np_random.uniform(-1, 1, 2), 0.0].astype(np.float32)
        return self._obs(), {}

    def step(self, action):
        self.point = (self.point + 0.2 * np.asarray(action, np.float32)).astype(np.float32)
        obs = self._obs()
        return obs, float(self.compute_reward(obs["achieved_goal"][None], self.goal[None], [{}])[0]), False, False, {}

    def compute_reward(self, achieved_goal, desired_goal, info):
        return -(np.linalg.norm(achieved_goal - desired_goal, axis=-1) > 0.2).astype(np.float32)


@pytest.mark.parametrize(("n_envs", "first", "then"), [(1, 150, 60), (2, 118, 60)])
def test_her_checkpoint_resumes_bit_for_bit(tmp_path, n_envs, first, then):
    if n_envs == 1:
        make = lambda: gym.wrappers.TimeLimit(ReachGoalEnv(), 5)  # noqa: E731
    else:  # next-step autoreset; `first` ends both envs' episodes at its last step
        make = lambda: gym.vector.SyncVectorEnv([lambda: gym.wrappers.TimeLimit(ReachGoalEnv(), 5)] * 2)  # noqa: E731
    model = TD3(
        "MultiInputPolicy",
        make(),
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs=dict(n_sampled_goal=4, goal_selection_strategy="future"),
        learning_starts=20,
        batch_size=16,
        policy_kwargs=dict(net_arch=[16]),
        seed=3,
    )
    model.learn(first)
    model.save(tmp_path / "checkpoint.zip", include_buffer=True)
    resumed = TD3.load(tmp_path / "checkpoint.zip", env=make())
    assert isinstance(resumed.replay_buffer, HerReplayBuffer) and resumed.replay_buffer.env is resumed._venv
    for m in (model, resumed):
        m.learn(then, reset_num_timesteps=False)
    for a, b in zip(model.policy.parameters(), resumed.policy.parameters()):
        assert torch.equal(a, b)
    assert model.replay_buffer.to_bytes() == resumed.replay_buffer.to_bytes()
    assert model.replay_buffer.n_sampleable() > 0.5 * model.replay_buffer.size()


def _her_buffer_fuzz_cases(valid: bytes, n: int, seed: int):
    """Corrupted variants of a HerReplayBuffer file: bytes flipped or cut, meta fields of odd values, arrays
    with odd values or shapes, members dropped."""
    from tests.model_fuzz import ODD_VALUES, _leaf_paths, _set

    rng = np.random.default_rng(seed)
    with zipfile.ZipFile(io.BytesIO(valid)) as archive:
        members = {name[:-4]: np.load(io.BytesIO(archive.read(name))) for name in archive.namelist()}
    meta = json.loads(members["meta"].tobytes())
    leaves = [path for path in _leaf_paths(meta) if path[0] != "rng_state"]
    arrays = sorted(name for name in members if name != "meta")
    for i in range(n):
        kind = i % 5
        if kind == 0:
            data = bytearray(valid)
            for pos in rng.integers(0, len(data), size=int(rng.integers(1, 12))):
                data[pos] ^= int(rng.integers(1, 256))
            yield bytes(data)
        elif kind == 1:
            yield valid[: int(rng.integers(0, len(valid)))]
        else:
            new_meta, new_members = copy.deepcopy(meta), {k: v.copy() for k, v in members.items()}
            if kind == 2:
                _set(new_meta, leaves[int(rng.integers(0, len(leaves)))], _pick(rng, ODD_VALUES))
            elif kind == 3:
                name = arrays[int(rng.integers(0, len(arrays)))]
                array = new_members[name]
                if array.size:
                    flat = array.reshape(-1)
                    odd = [-1, 0, 1, 7, 14, 15, 16, 2**40] + ([np.nan, np.inf] if flat.dtype.kind == "f" else [])
                    flat[int(rng.integers(0, flat.size))] = _pick(rng, odd)
            else:
                name = arrays[int(rng.integers(0, len(arrays)))]
                if rng.random() < 0.5:
                    del new_members[name]
                else:
                    new_members[name] = new_members[name][: max(0, len(new_members[name]) - 1)]
            new_members["meta"] = np.frombuffer(json.dumps(new_meta).encode(), dtype=np.uint8)
            out = io.BytesIO()
            np.savez(out, **new_members)
            yield out.getvalue()


def _pick(rng, options):
    return options[int(rng.integers(0, len(options)))]


def test_fuzzed_her_buffer_files_load_or_raise_model_file_error():
    def make():
        return HerReplayBuffer(30, IdGoalEnv.observation_space, ACTION_SPACE, IdGoalEnv(), n_envs=2, seed=0)

    buffer = make()
    _fill(buffer, 2, steps=40, seed=2)
    loaded = 0
    for data in _her_buffer_fuzz_cases(buffer.to_bytes(), 400, seed=0):
        target = make()
        try:
            target.load(io.BytesIO(data))
        except ModelFileError:
            continue
        loaded += 1
        # What loads is consistent: every goal the buffer can draw is a filled row of the transition's episode.
        valid = target._sampleable_rows()
        if len(valid):
            goals = target._goal_rows(valid)
            filled = np.where(target._env_full, target.n_slots, target._env_pos)
            assert np.all(goals // target.n_slots == valid // target.n_slots)
            assert np.all(goals % target.n_slots < filled[goals // target.n_slots])
            assert np.array_equal(target.ep_start[goals], target.ep_start[valid])
            assert np.array_equal(target.ep_length[goals], target.ep_length[valid])
            target.sample(64)
    assert 0 < loaded < 400  # some variants (e.g. an odd reward) are valid files


class _NaNRewardBitFlipping(BitFlippingEnv):
    """Its env rewards are finite; only ``compute_reward`` (the relabelled rewards) returns NaN."""

    def compute_reward(self, achieved_goal, desired_goal, info):
        return np.full(np.shape(achieved_goal)[:-1], np.nan, dtype=np.float32)


def test_a_nan_from_compute_reward_is_refused_at_sampling_before_any_weight_changes():
    env = gym.wrappers.TimeLimit(_NaNRewardBitFlipping(4), max_episode_steps=4)
    model = TD3("MultiInputPolicy", env, replay_buffer_class=HerReplayBuffer, learning_starts=20, batch_size=16, seed=0)
    model.learn(16)  # before learning_starts: env rewards only, no relabelling yet
    before = [p.detach().clone() for p in model.policy.parameters()]
    with pytest.raises(ValueError, match=r"compute_reward returned a non-finite reward \(nan\) for a relabelled goal"):
        model.learn(40, reset_num_timesteps=False)
    assert all(torch.equal(a, b) for a, b in zip(before, model.policy.parameters()))  # main: NaN weights

"""The collect → store loop: episode boundaries under every autoreset mode, warm-up, counters."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from rlkit_td3 import TD3
from tests.conftest import make_counter

KW = dict(learning_starts=10_000, batch_size=4, policy_kwargs={"net_arch": [8]}, seed=0)


def _stored(model):
    n = model.replay_buffer.size()
    rb = model.replay_buffer
    return rb.observations[:n], rb.next_observations[:n], rb.rewards[:n], rb.terminated[:n], rb.truncated[:n]


def _assert_no_cross_episode_transition(model, max_steps: int, terminate_at: int | None):
    obs, next_obs, rewards, terminated, truncated = _stored(model)
    assert len(obs) > 0
    # same episode, one step later, reward = t of the next obs
    np.testing.assert_array_equal(next_obs[:, 0], obs[:, 0])
    np.testing.assert_array_equal(next_obs[:, 1], obs[:, 1] + 1)
    np.testing.assert_array_equal(rewards, next_obs[:, 1])
    end = terminate_at if terminate_at is not None and terminate_at <= max_steps else None
    if end is not None:
        np.testing.assert_array_equal(terminated, next_obs[:, 1] == end)
        assert not truncated.any()
    else:
        np.testing.assert_array_equal(truncated, next_obs[:, 1] == max_steps)
        assert not terminated.any()


@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED])
@pytest.mark.parametrize("terminate_at", [None, 3])
def test_vector_env_boundaries_every_autoreset_mode(mode, terminate_at):
    env = SyncVectorEnv([lambda: make_counter(5, terminate_at) for _ in range(3)], autoreset_mode=mode)
    model = TD3("MlpPolicy", env, **KW).learn(90)
    assert model.num_timesteps == 90
    _assert_no_cross_episode_transition(model, 5, terminate_at)
    ep_len = terminate_at or 5
    expected = 90 if mode != AutoresetMode.NEXT_STEP else 90 - 3 * (30 // (ep_len + 1))
    assert model.replay_buffer.size() == expected
    assert model._episode_num == 3 * (30 // ep_len if mode != AutoresetMode.NEXT_STEP else 30 // (ep_len + 1))


def test_single_env_and_env_id_are_wrapped():
    model = TD3("MlpPolicy", make_counter(4), **KW).learn(20)
    _assert_no_cross_episode_transition(model, 4, None)
    assert model.n_envs == 1 and model.replay_buffer.size() == 20
    assert TD3("MlpPolicy", "Pendulum-v1", **KW).get_env().num_envs == 1


def test_gymnasium_make_vec_default_mode():
    env = gym.make_vec("Pendulum-v1", num_envs=2)
    model = TD3("MlpPolicy", env, **{**KW, "learning_starts": 50}).learn(500)
    # 250 steps per env, Pendulum episodes are 200 steps: each env's post-reset row is skipped
    assert model.num_timesteps == 500 and model.replay_buffer.size() == 500 - 2
    assert model._episode_num == 2


def test_warmup_is_uniform_then_actor_acts():
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=300, policy_kwargs={"net_arch": [8]}, seed=1)
    model.learn(600)
    warm = model.replay_buffer.actions[:300, 0]
    assert warm.min() < -0.9 and warm.max() > 0.9 and abs(warm.mean()) < 0.15
    assert model._n_updates == 600 - 300


def test_no_noise_and_train_freq_episode():
    model = TD3(
        "MlpPolicy",
        make_counter(5),
        learning_starts=0,
        batch_size=4,
        train_freq=(1, "episode"),
        gradient_steps=-1,
        action_noise=None,
        policy_kwargs={"net_arch": [8]},
        seed=0,
    )
    model.learn(20)
    assert model.action_noise is None
    assert model._n_updates == 20  # one gradient step per collected transition, after every episode
    actions = model.replay_buffer.actions[:5]
    obs = model.replay_buffer.observations[:5]
    np.testing.assert_allclose(actions, model.policy.actor_numpy(obs), atol=1)  # deterministic actor acted


def test_same_seed_same_run_different_seed_differs():
    def run(seed):
        m = TD3(
            "MlpPolicy",
            "Pendulum-v1",
            learning_starts=100,
            batch_size=32,
            policy_kwargs={"net_arch": [16]},
            seed=seed,
        )
        m.learn(300)
        return np.concatenate([p.detach().numpy().ravel() for p in m.policy.parameters()])

    assert np.array_equal(run(5), run(5))
    assert not np.array_equal(run(5), run(6))


def test_env_is_seeded_once_per_model():
    model = TD3("MlpPolicy", "Pendulum-v1", **KW)
    model.learn(5)
    first = model.replay_buffer.observations[0].copy()
    model.learn(5)  # reset_num_timesteps=True resets the env, but does not re-seed it
    assert not np.array_equal(model.replay_buffer.observations[5], first)
    again = TD3("MlpPolicy", "Pendulum-v1", **KW).learn(5)
    np.testing.assert_array_equal(again.replay_buffer.observations[0], first)


def test_optimize_memory_usage_trains_bit_for_bit_like_the_plain_buffer():
    # Pendulum truncates every 200 steps: the final observations come from the buffer's side table.
    kw = dict(learning_starts=200, batch_size=32, policy_kwargs={"net_arch": [16]}, seed=4)
    plain = TD3("MlpPolicy", "Pendulum-v1", **kw).learn(700)
    optimized = TD3("MlpPolicy", "Pendulum-v1", optimize_memory_usage=True, **kw).learn(700)
    assert optimized.replay_buffer.next_observations is None and len(optimized.replay_buffer._final_obs) == 3
    for a, b in zip(plain.policy.parameters(), optimized.policy.parameters()):
        assert torch.equal(a, b)


@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP])
def test_optimize_memory_usage_vector_env_stores_the_same_transitions(mode):
    def stored(optimize: bool) -> set:
        env = SyncVectorEnv([lambda i=i: make_counter(5, 3 if i else None) for i in range(3)], autoreset_mode=mode)
        model = TD3("MlpPolicy", env, optimize_memory_usage=optimize, **KW).learn(90)
        rb = model.replay_buffer
        batch = rb._get_samples(rb._rows_of(np.arange(rb.size())) if optimize else np.arange(rb.size()))
        rows = zip(*(t.numpy() for t in (batch.observations, batch.next_observations, batch.terminated)))
        return sorted((tuple(o), tuple(n), float(d)) for o, n, d in rows)

    plain, optimized = stored(False), stored(True)
    assert plain == optimized and len(plain) > 60

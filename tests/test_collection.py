"""The collect → store loop: episode boundaries under every autoreset mode, warm-up, counters."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from rlkit_td3 import TD3
from rlkit_td3.noise import ActionNoise, NormalActionNoise, VectorizedActionNoise
from rlkit_td3.utils import NonFiniteError
from tests.conftest import CounterEnv, make_counter

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


# ---------------------------------------------------------------- the env changes: noise and buffer follow or refuse


def _counters(n: int, mode=AutoresetMode.NEXT_STEP) -> SyncVectorEnv:
    return SyncVectorEnv([lambda: make_counter(5) for _ in range(n)], autoreset_mode=mode)


NOISY = dict(KW, learning_starts=0, action_noise=NormalActionNoise([0.0], [0.5]))


@pytest.mark.parametrize("batch", [1, 2, 3, 5])
def test_stochastic_predict_any_batch_size_on_a_several_env_model(batch):
    model = TD3("MlpPolicy", _counters(3), **NOISY).learn(12)
    obs = np.random.default_rng(0).normal(size=(batch, 2)).astype(np.float32)
    deterministic, _ = model.predict(obs)
    noisy, _ = model.predict(obs, deterministic=False)
    assert noisy.shape == deterministic.shape == (batch, 1)
    assert np.all(noisy != deterministic) and np.all(np.abs(noisy) <= 1)
    single, _ = model.predict(obs[0], deterministic=False)
    assert single.shape == (1,) and single[0] != deterministic[0, 0]


def test_set_env_with_fewer_envs_keeps_the_remaining_noise_copies():
    model = TD3("MlpPolicy", _counters(3), **NOISY).learn(12)
    copies = [noise.get_state() for noise in model.action_noise.noises]
    model.set_env(_counters(2))
    assert model.action_noise.n_envs == 2 and model.n_envs == 2
    assert [noise.get_state() for noise in model.action_noise.noises] == copies[:2]
    model.learn(10, reset_num_timesteps=False)
    assert model.num_timesteps == 22
    model.set_env(make_counter(5))  # a single env: one noise copy
    model.learn(4, reset_num_timesteps=False)
    assert model.action_noise.n_envs == 1 and model.num_timesteps == 26
    _assert_no_cross_episode_transition(model, 5, None)


def test_set_env_with_more_envs_than_the_buffer_is_refused_naming_both():
    model = TD3("MlpPolicy", make_counter(5), **NOISY)
    with pytest.raises(ValueError, match=r"CounterEnv: the env has n_envs=2, more than the replay buffer.*n_envs=1"):
        model.set_env(_counters(2))
    assert model.n_envs == 1 and model.get_env().num_envs == 1  # unchanged


@pytest.mark.parametrize("n_envs", [1, 2, 4])
def test_load_with_another_number_of_envs_resizes_the_noise(tmp_path, n_envs):
    model = TD3("MlpPolicy", _counters(3), **NOISY).learn(12)
    model.save(tmp_path / "m.zip", include_buffer=True)
    loaded = TD3.load(tmp_path / "m.zip", env=_counters(n_envs) if n_envs > 1 else make_counter(5))
    noise = loaded.action_noise
    assert isinstance(noise, VectorizedActionNoise) and noise.n_envs == n_envs
    kept = min(n_envs, 3)
    assert [c.get_state() for c in noise.noises[:kept]] == [c.get_state() for c in model.action_noise.noises[:kept]]
    loaded.learn(4 * n_envs, reset_num_timesteps=False)
    assert loaded.predict(np.zeros((7, 2), np.float32), deterministic=False)[0].shape == (7, 1)


def test_noise_of_another_action_size_is_refused():
    env = make_counter(5, act_low=(-1.0, -1.0, -1.0), act_high=(1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match=r"action_noise has 1 dimension.*has 3"):
        TD3("MlpPolicy", env, action_noise=NormalActionNoise([0.0], [0.1]))
    with pytest.raises(ValueError, match=r"VectorizedActionNoise for n_envs=4; the env has n_envs=2"):
        TD3("MlpPolicy", _counters(2), action_noise=VectorizedActionNoise(NormalActionNoise([0.0], [0.1]), 4))

    class Pink(ActionNoise):  # a noise that does not say its size: caught at its first draw
        def __call__(self):
            return np.zeros(2, np.float32)

    model = TD3("MlpPolicy", make_counter(5), **{**KW, "learning_starts": 0, "action_noise": Pink()})
    with pytest.raises(ValueError, match=r"action_noise returned samples of shape \(1, 2\).*needs \(1, 1\)"):
        model.learn(3)


# ---------------------------------------------------------------- non-finite data is stopped where it enters


class NaNCounter(CounterEnv):
    """A counter env that returns NaN (or ``value``) from its ``nan_reset``-th reset and/or ``nan_step``-th step."""

    def __init__(self, nan_reset=None, nan_step=None, value=np.nan, dtype=np.float32):
        super().__init__()
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), dtype)
        self.nan_reset, self.nan_step, self.value, self.dtype = nan_reset, nan_step, value, dtype
        self.resets = self.steps = 0

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        self.resets += 1
        return self._maybe(obs, self.resets == self.nan_reset), info

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        self.steps += 1
        return self._maybe(obs, self.steps == self.nan_step), reward, terminated, truncated, info

    def _maybe(self, obs, bad):
        obs = obs.astype(self.dtype)
        if bad:
            obs[1] = self.value
        return obs


def _nan_counter(**kwargs):
    return gym.wrappers.TimeLimit(NaNCounter(**kwargs), max_episode_steps=5)


def _assert_consecutive(model):
    obs, next_obs, _, _, _ = _stored(model)
    np.testing.assert_array_equal(next_obs[:, 0], obs[:, 0])  # never joins two episodes
    np.testing.assert_array_equal(next_obs[:, 1], obs[:, 1] + 1)  # never skips a step


def test_non_finite_first_reset_is_caught_before_the_actor_sees_it():
    model = TD3("MlpPolicy", _nan_counter(nan_reset=1), **{**KW, "learning_starts": 0})
    with pytest.raises(
        NonFiniteError, match=r"env 0 \(NaNCounter\).*observation \[ 0. nan\] from reset\(\) .*before step 1 "
    ):
        model.learn(10)
    assert model.replay_buffer.size() == 0 and model.num_timesteps == 0
    model.learn(12, reset_num_timesteps=False)
    assert model.num_timesteps == 12
    _assert_consecutive(model)


@pytest.mark.parametrize(("where", "at"), [("reset", 3), ("step", 7)])
def test_after_a_non_finite_error_learn_stores_no_skipping_or_joining_transition(where, at):
    kwargs = {"nan_reset": at} if where == "reset" else {"nan_step": at}
    model = TD3("MlpPolicy", _nan_counter(**kwargs), **KW)
    expected = 10 if where == "reset" else 6  # two episodes of 5 steps; or the six steps before the NaN
    with pytest.raises(NonFiniteError, match=rf"from {where}\(\) .*(at|before) step {expected + 1} "):
        model.learn(30)
    assert model.num_timesteps == model.replay_buffer.size() == expected
    assert np.isfinite(_stored(model)[1]).all()
    model.learn(15, reset_num_timesteps=False)
    assert model.num_timesteps == model.replay_buffer.size() == expected + 15
    _assert_consecutive(model)


def test_values_beyond_float32_are_caught_as_non_finite():
    env = _nan_counter(nan_step=3, value=1e300, dtype=np.float64)  # finite in float64, inf in the float32 buffer
    with pytest.raises(NonFiniteError, match=r"env 0 \(NaNCounter\).*1\.e\+300.*float32.*at step 3 "):
        TD3("MlpPolicy", env, **KW).learn(10)


def test_non_finite_final_observation_of_a_same_step_vector_env_is_caught():
    env = SyncVectorEnv(
        [lambda: make_counter(5), lambda: _nan_counter(nan_step=5)], autoreset_mode=AutoresetMode.SAME_STEP
    )
    model = TD3("MlpPolicy", env, **KW)
    with pytest.raises(NonFiniteError, match=r"env 1 \(NaNCounter\) returned a non-finite final observation.*step 10 "):
        model.learn(20)
    assert model.replay_buffer.size() == 8 and np.isfinite(_stored(model)[1]).all()


@pytest.mark.parametrize("vector", ["sync", "make_vec", "async", "single"])
def test_non_finite_message_names_the_users_env_not_the_librarys_wrappers(vector):
    if vector == "sync":
        env, name = SyncVectorEnv([lambda: make_counter(5), lambda: _nan_counter(nan_step=2)]), "NaNCounter"
    elif vector == "make_vec":
        env, name = gym.make_vec("Pendulum-v1", num_envs=2, wrappers=[_NaNReward]), "Pendulum-v1"
    elif vector == "async":  # the sub-envs are asked for their spec
        env = gym.vector.AsyncVectorEnv([lambda: _NaNReward(gym.make("Pendulum-v1")) for _ in range(2)])
        name = "Pendulum-v1"
    else:
        env, name = _nan_counter(nan_step=2), "NaNCounter"
    index = 0 if vector == "single" else 1
    with pytest.raises(NonFiniteError, match=rf"env {index} \({name}\) returned") as info:
        TD3("MlpPolicy", env, **KW).learn(10)
    env.close()
    assert "RecordEpisodeStatistics" not in str(info.value) and "SyncVectorEnv" not in str(info.value)


class _NaNReward(gym.Wrapper):
    """Pendulum whose second copy (it is given a seed 1 apart) returns an infinite reward at its second step."""

    def reset(self, **kwargs):
        self.steps = 0
        self.bad = kwargs.get("seed") == 1
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        return obs, float("inf") if self.bad and self.steps == 2 else reward, terminated, truncated, info


# ---------------------------------------------------------------- env ids render frames


def test_env_ids_are_made_to_render_rgb_frames():
    import warnings

    model = TD3("MlpPolicy", "Pendulum-v1", **KW).learn(2)
    frames = model.get_env().get_images()  # SB3's VecEnv: one frame per env; render() tiles them
    assert len(frames) == 1 and frames[0].shape == (500, 500, 3) and frames[0].dtype == np.uint8
    assert model.get_env().render(mode="rgb_array").shape == (500, 500, 3)
    gym.register("H2NoRender-v0", entry_point=lambda: make_counter(5))  # an id without rgb_array: made as it is
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            model = TD3("MlpPolicy", "H2NoRender-v0", **KW)
        assert model.get_env().get_attr("render_mode") == [None]
        model.learn(5)
    finally:
        del gym.registry["H2NoRender-v0"]


def test_learn_stops_at_n_whatever_the_round_length():
    """``learn(n)`` returns at ``n`` timesteps even when a ``train_freq`` round would not end for a long time (a
    loaded file's ``train_freq=(10**9, "step")``, or episodes that never end): SB3 finishes the round, we do not,
    and the partial round is trained on (Coming from SB3)."""
    env = SyncVectorEnv([lambda: make_counter(50) for _ in range(2)])
    model = TD3("MlpPolicy", env, **{**KW, "learning_starts": 0, "train_freq": 3, "gradient_steps": -1}).learn(3)
    assert model.num_timesteps == 4 and model.replay_buffer.size() == 4 and model._n_updates == 4
    model = TD3("MlpPolicy", make_counter(10**9), **{**KW, "learning_starts": 0, "train_freq": (10**9, "step")})
    model.learn(30)
    assert model.num_timesteps == 30 and model._n_updates > 0
    model = TD3("MlpPolicy", make_counter(10**9), **{**KW, "learning_starts": 0, "train_freq": (1, "episode")})
    model.learn(30)
    assert model.num_timesteps == 30 and model._n_updates > 0

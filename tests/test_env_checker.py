"""``rlkit_td3.env_checker.check_env``: a correct env passes, each kind of broken env is named."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from rlkit_td3.env_checker import EnvCheckError, check_env


class GoodEnv(gym.Env):
    """A correct env: bounded float32 observations, actions in [-1, 1]."""

    metadata: dict = {"render_modes": ["rgb_array"]}

    def __init__(self, render_mode: str | None = None) -> None:
        self.observation_space = spaces.Box(-10.0, 10.0, shape=(3,), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.render_mode = render_mode
        self.renders = 0
        self.t = 0

    def _obs(self) -> np.ndarray:
        return self.np_random.uniform(-1.0, 1.0, size=3).astype(np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), float(np.sum(action)), False, self.t >= 5, {}

    def render(self):
        self.renders += 1
        return np.zeros((4, 4, 3), dtype=np.uint8)


def run_check(env: gym.Env, **kwargs) -> list[str]:
    """Run check_env and return the messages of the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, **kwargs)
    return [str(w.message) for w in caught]


def test_correct_env_passes_silently():
    assert run_check(GoodEnv()) == []


def test_render_check_calls_render_only_when_asked():
    env = GoodEnv(render_mode="rgb_array")
    run_check(env)
    assert env.renders == 0
    run_check(env, skip_render_check=False)
    assert env.renders == 1


def test_not_a_gymnasium_env():
    with pytest.raises(TypeError, match="gymnasium.Env"):
        check_env(object())  # type: ignore[arg-type]


class WrongDtype(GoodEnv):
    def _obs(self):
        return np.zeros(3, dtype=np.float64)


class OutsideSpace(GoodEnv):
    def step(self, action):
        obs, *rest = super().step(action)
        obs[1] = 11.0
        return (obs, *rest)


class ResetObsOnly(GoodEnv):
    def reset(self, *, seed=None, options=None):
        return super().reset(seed=seed)[0]


class OldStepApi(GoodEnv):
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated or truncated, info


class NoSeed(GoodEnv):
    def reset(self):  # type: ignore[override]
        return super().reset()


class WrongShape(GoodEnv):
    def _obs(self):
        return np.zeros(4, dtype=np.float32)


class ArrayReward(GoodEnv):
    def step(self, action):
        obs, reward, *rest = super().step(action)
        return (obs, np.array([reward]), *rest)


class NaNObs(GoodEnv):
    def __init__(self):
        super().__init__()
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(3,), dtype=np.float32)

    def step(self, action):
        obs, *rest = super().step(action)
        if self.t == 3:
            obs[0] = np.nan
        return (obs, *rest)


@pytest.mark.parametrize(
    ("env_class", "error", "match"),
    [
        (WrongDtype, EnvCheckError, r"dtype float64, which cannot be cast .* float32"),
        (
            OutsideSpace,
            EnvCheckError,
            r"step\(\) is outside .* 1 invalid indices:\n  Expected: -10.0 <= obs\[1\] <= 10.0, actual value: 11.0",
        ),
        (ResetObsOnly, EnvCheckError, r"reset\(\) must return a tuple \(obs, info\), got ndarray"),
        (OldStepApi, EnvCheckError, r"step\(\) must return five values .* got 4 values .*\(obs, reward, done, info\)"),
        (NoSeed, TypeError, r"reset\(\) must accept the keyword argument seed"),
        (WrongShape, EnvCheckError, r"reset\(\) does not have .* shape .*Expected: \(3,\), actual shape: \(4,\)"),
        (ArrayReward, EnvCheckError, r"reward returned by step\(\) must be a float"),
        (NaNObs, EnvCheckError, r"non-finite observation .* at random step 2"),
    ],
)
def test_broken_env_is_named(env_class, error, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=match):
            check_env(env_class())


def test_env_check_error_is_an_assertion_error():
    # Stable-Baselines3's checker asserts: scripts catching AssertionError keep working.
    with pytest.raises(AssertionError):
        check_env(ResetObsOnly())


@pytest.mark.parametrize(
    "action_space",
    [spaces.Discrete(3), spaces.MultiDiscrete([2, 3]), spaces.MultiBinary(2)],
)
def test_discrete_action_spaces_pass_as_in_sb3(action_space):
    # SB3's checker accepts them (it has algorithms for them); TD3 and DDPG refuse them when the model is built.
    env = GoodEnv()
    env.action_space = action_space
    assert run_check(env) == []


def test_dict_action_space_warns():
    class Env(GoodEnv):
        def step(self, action):
            return self._obs(), 0.0, False, False, {}

    env = Env()
    env.action_space = spaces.Dict({"a": spaces.Box(-1, 1)})
    assert any("action space is a Dict, which is not supported" in m for m in run_check(env))


def test_infinite_action_bounds_are_an_error():
    env = GoodEnv()
    env.action_space = spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32)
    with pytest.raises(EnvCheckError, match=r"action_space must have finite bounds"):  # after SB3's warning
        with pytest.warns(UserWarning, match="symmetric and normalised"):
            check_env(env)
    with pytest.raises(EnvCheckError, match=r"action_space must have finite bounds"):
        check_env(env, warn=False)


def test_unnormalised_actions_warn_once_and_only_with_warn():
    env = GoodEnv()
    env.action_space = spaces.Box(0.0, 2.0, shape=(2,), dtype=np.float32)
    messages = run_check(env)
    assert len(messages) == 1 and "symmetric and normalised" in messages[0] and "low=[0. 0.]" in messages[0]
    assert run_check(env, warn=False) == []


class SampledObsEnv(GoodEnv):
    def __init__(self, observation_space):
        super().__init__()
        self.observation_space = observation_space

    def reset(self, *, seed=None, options=None):
        if seed is not None:  # seeded resets must give the same observations
            self.observation_space.seed(seed)
        return super().reset(seed=seed, options=options)

    def _obs(self):
        return self.observation_space.sample()


@pytest.mark.parametrize(
    ("observation_space", "expected"),
    [
        (spaces.Box(0, 255, shape=(20, 40, 3), dtype=np.uint8), "smaller than the 36 x 36"),
        (spaces.Box(0, 1, shape=(40, 40, 3), dtype=np.float32), "looks like an image but has dtype float32"),
        (spaces.Box(0, 1, shape=(40, 40, 3), dtype=np.uint8), "bounds are not 0 and 255"),
        (spaces.Box(-1.0, 1.0, shape=(3, 2), dtype=np.float32), "neither an image nor a 1D vector"),
        (spaces.Tuple((spaces.Box(-1.0, 1.0, shape=(2,)), spaces.Discrete(3))), "Tuple, which is not supported"),
        (spaces.Dict({"x": spaces.Dict({"y": spaces.Discrete(2)})}), "Nested observation spaces"),
        (spaces.Discrete(3, start=1), "starts at 1"),
    ],
)
def test_observation_space_warnings(observation_space, expected):
    messages = run_check(SampledObsEnv(observation_space))
    assert any(expected in m for m in messages), messages
    assert not any(expected in m for m in run_check(SampledObsEnv(observation_space), warn=False))


@pytest.mark.parametrize(
    "observation_space",
    [
        spaces.Dict({"x": spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32)}),  # MultiInputPolicy serves Dicts
        spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float64),
        spaces.Box(0, 255, shape=(40, 40, 3), dtype=np.uint8),
        spaces.Discrete(4),
        spaces.Box(-np.inf, np.inf, shape=(3,), dtype=np.float32),
    ],
)
def test_spaces_sb3_accepts_give_no_warning(observation_space):
    # Before, every Dict got "flatten it", float64 and image spaces got advice, and gymnasium's checker warned
    # about infinite bounds; SB3's checker gives none of these warnings.
    assert run_check(SampledObsEnv(observation_space)) == []


def test_our_goal_env_passes_silently():
    from rlkit_td3.envs import BitFlippingEnv

    assert run_check(BitFlippingEnv(n_bits=4)) == []


class UnseededEnv(GoodEnv):
    """Draws from its own generator, never seeded by reset(seed=...); reset() takes no options."""

    def __init__(self):
        super().__init__()
        self.rng = np.random.default_rng()

    def reset(self, seed=None):  # type: ignore[override]
        self.t = 0
        return self._obs(), {}

    def _obs(self):
        return self.rng.uniform(-1.0, 1.0, size=3).astype(np.float32)


def test_env_not_seeding_through_super_reset_passes_with_a_warning():
    messages = run_check(UnseededEnv())
    assert len(messages) == 1 and "gymnasium's env checker failed" in messages[0], messages
    assert run_check(UnseededEnv(), warn=False) == []


def test_goal_env_with_a_missing_key_is_an_error():
    from rlkit_td3.envs import BitFlippingEnv

    env = BitFlippingEnv(n_bits=4)
    del env.observation_space.spaces["observation"]
    with pytest.raises(EnvCheckError, match="at least 3 keys"):
        check_env(env)


def test_missing_render_modes_warn_with_render_check():
    env = GoodEnv()
    env.metadata = {}
    assert any("declares no render modes" in m for m in run_check(env, skip_render_check=False))
    assert run_check(env) == []


def test_float64_observation_matching_a_float64_space_passes():
    class Env(GoodEnv):
        def __init__(self):
            super().__init__()
            self.observation_space = spaces.Box(-10.0, 10.0, shape=(3,), dtype=np.float64)

        def _obs(self):
            return np.zeros(3)

    check_env(Env(), warn=False)

"""``evaluate_policy`` with Stable-Baselines3's signature and semantics, on every kind of env it accepts."""

from __future__ import annotations

import inspect
import warnings

import gymnasium as gym
import numpy as np
import pytest
from conftest import make_counter
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from rlkit_td3 import TD3
from rlkit_td3.evaluation import evaluate_policy, is_sb3_vec_env
from rlkit_td3.monitor import Monitor

# env i of the test vector envs runs episodes of LENGTHS[i] steps, returning 1 + 2 + ... + LENGTHS[i]
LENGTHS = (3, 4, 5)
RETURNS = {3: 6.0, 4: 10.0, 5: 15.0}
# 7 episodes over 3 envs: 2, 2 and 3 episodes, in completion order (steps 3, 4, 5, 6, 8, 10, 15)
SEVEN_OVER_THREE = ([6.0, 10.0, 15.0, 6.0, 10.0, 15.0, 15.0], [3, 4, 5, 3, 4, 5, 5])


class ZeroModel:
    """A model acting 0 everywhere; records the keyword arguments of its predict calls."""

    def __init__(self) -> None:
        self.kwargs: list[dict] = []

    def predict(self, observation, deterministic=True, **kwargs):
        copies = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        self.kwargs.append({"deterministic": deterministic, **copies})
        obs = np.asarray(observation)
        return np.zeros((*obs.shape[:-1], 1), dtype=np.float32), kwargs.get("state")


class ScaleReward(gym.RewardWrapper):
    def reward(self, reward):
        return 10.0 * reward


class RenderCount(gym.Wrapper):
    def __init__(self, env):
        super().__init__(env)
        self.renders = 0

    def render(self):
        self.renders += 1


class ListVecEnv:
    """A minimal Stable-Baselines3-style VecEnv: a list of envs, auto-reset with ``terminal_observation``."""

    def __init__(self, env_fns, render_counter: list | None = None) -> None:
        self.envs = [fn() for fn in env_fns]
        self.num_envs = len(self.envs)
        self.observation_space = self.envs[0].observation_space
        self.action_space = self.envs[0].action_space
        self._seed: int | None = None
        self._actions = None
        self.renders = 0

    def seed(self, seed=None):
        self._seed = seed

    def reset(self):
        seeds = [None if self._seed is None else self._seed + i for i in range(self.num_envs)]
        self._seed = None
        return np.stack([env.reset(seed=s)[0] for env, s in zip(self.envs, seeds)])

    def step_async(self, actions):
        self._actions = actions

    def step_wait(self):
        results = []
        for env, action in zip(self.envs, self._actions):
            obs, reward, terminated, truncated, info = env.step(action)
            info = dict(info, **{"TimeLimit.truncated": truncated and not terminated})
            if terminated or truncated:
                info["terminal_observation"] = obs
                obs, _ = env.reset()
            results.append((obs, reward, terminated or truncated, info))
        obs, rewards, dones, infos = zip(*results)
        return np.stack(obs), np.array(rewards, dtype=np.float32), np.array(dones), list(infos)

    def step(self, actions):
        self.step_async(actions)
        return self.step_wait()

    def env_is_wrapped(self, wrapper_class, indices=None):
        def wrapped(env):
            while isinstance(env, gym.Wrapper):
                if isinstance(env, wrapper_class):
                    return True
                env = env.env
            return False

        return [wrapped(env) for env in self.envs]

    def render(self):
        self.renders += 1


def counters(monitor: bool = True, scale: bool = False):
    def make(length):
        def fn():
            env = make_counter(length)
            env = Monitor(env) if monitor else env
            return ScaleReward(env) if scale else env

        return fn

    return [make(length) for length in LENGTHS]


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        return fn(*args, **kwargs)


def test_signature_is_sb3s():
    params = inspect.signature(evaluate_policy).parameters
    sb3 = [
        ("model", inspect.Parameter.empty),
        ("env", inspect.Parameter.empty),
        ("n_eval_episodes", 10),
        ("deterministic", True),
        ("render", False),
        ("callback", None),
        ("reward_threshold", None),
        ("return_episode_rewards", False),
        ("warn", True),
    ]
    assert [(name, params[name].default) for name in params][: len(sb3)] == sb3


def test_single_env_returns_and_lengths():
    returns, lengths = quiet(evaluate_policy, ZeroModel(), Monitor(make_counter(4)), 3, return_episode_rewards=True)
    assert returns == [10.0, 10.0, 10.0] and lengths == [4, 4, 4]
    assert quiet(evaluate_policy, ZeroModel(), Monitor(make_counter(4)), 3) == (10.0, 0.0)


def test_monitor_figures_are_used_when_present():
    # Monitor below a reward-scaling wrapper: the env's own returns, as Stable-Baselines3 reports them
    returns, _ = quiet(
        evaluate_policy, ZeroModel(), ScaleReward(Monitor(make_counter(4))), 2, return_episode_rewards=True
    )
    assert returns == [10.0, 10.0]
    with pytest.warns(UserWarning, match="no Monitor wrapper"):
        returns, _ = evaluate_policy(ZeroModel(), ScaleReward(make_counter(4)), 2, return_episode_rewards=True)
    assert returns == [100.0, 100.0]
    returns, _ = quiet(
        evaluate_policy, ZeroModel(), ScaleReward(make_counter(4)), 2, return_episode_rewards=True, warn=False
    )
    assert returns == [100.0, 100.0]


def test_an_env_id_or_an_env_with_only_gymnasium_make_wrappers_does_not_warn():
    mean, _ = quiet(evaluate_policy, ZeroModel(), "Pendulum-v1", 1, seed=3)
    assert quiet(evaluate_policy, ZeroModel(), gym.make("Pendulum-v1"), 1, seed=3) == (mean, 0.0)
    assert quiet(evaluate_policy, ZeroModel(), make_counter(4), 1) == (10.0, 0.0)  # TimeLimit only
    assert quiet(evaluate_policy, ZeroModel(), SyncVectorEnv(counters(monitor=False)), 3)[0] == pytest.approx(31 / 3)
    with pytest.warns(UserWarning, match="no Monitor wrapper"):  # any other wrapper may change the returns
        evaluate_policy(ZeroModel(), gym.wrappers.ClipAction(make_counter(4)), 1)


class LoseLife(gym.Wrapper):
    """Signals termination every 2 steps (a "lost life"); reset() only restarts a really finished episode."""

    def __init__(self, env):
        super().__init__(env)
        self.real_done = True
        self.t = 0

    def reset(self, **kwargs):
        if self.real_done:
            self.real_done = False
            return self.env.reset(**kwargs)
        return self._obs, {}

    def step(self, action):
        self._obs, reward, terminated, truncated, info = self.env.step(action)
        self.real_done = terminated or truncated
        self.t += 1
        return self._obs, reward, terminated or self.t % 2 == 0, truncated, info


def test_a_done_without_monitor_episode_does_not_end_the_episode():
    returns, lengths = quiet(
        evaluate_policy, ZeroModel(), LoseLife(Monitor(make_counter(5))), 2, return_episode_rewards=True
    )
    assert returns == [15.0, 15.0] and lengths == [5, 5]


def test_a_wrapper_above_monitor_ending_every_episode_is_an_error_not_a_hang():
    env = gym.wrappers.TimeLimit(Monitor(make_counter(50)), max_episode_steps=2)  # Monitor never sees the ends
    with pytest.raises(RuntimeError, match=r"env 0 ended 100 episodes in a row without the Monitor wrapper"):
        evaluate_policy(ZeroModel(), env, 1, warn=False)


def test_callback_sees_the_step_locals_and_render_renders():
    seen = []

    def callback(locals_, globals_):
        seen.append((locals_["i"], locals_["done"], "episode" in locals_["info"], len(locals_["episode_rewards"])))

    env = RenderCount(Monitor(make_counter(3)))
    quiet(evaluate_policy, ZeroModel(), env, 2, render=True, callback=callback)
    assert seen == [(0, False, False, 0), (0, False, False, 0), (0, True, True, 0)] * 1 + [
        (0, False, False, 1),
        (0, False, False, 1),
        (0, True, True, 1),
    ]
    assert env.renders == 6


def test_reward_threshold_asserts_like_sb3():
    env = Monitor(make_counter(4))
    assert quiet(evaluate_policy, ZeroModel(), env, 2, reward_threshold=9.9) == (10.0, 0.0)
    with pytest.raises(AssertionError, match=r"Mean reward below threshold: 10.00 < 10.00"):
        evaluate_policy(ZeroModel(), env, 2, reward_threshold=10.0)


def test_bad_arguments():
    env = Monitor(make_counter(4))
    with pytest.raises(ValueError, match="n_eval_episodes must be a positive int, got 0"):
        evaluate_policy(ZeroModel(), env, 0)
    with pytest.raises(TypeError, match="callback must be a function"):
        evaluate_policy(ZeroModel(), env, 1, callback=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="reward_threshold must be a number or None, got 'high'"):
        evaluate_policy(ZeroModel(), env, 1, reward_threshold="high")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="env must be a gymnasium Env, an env id"):
        evaluate_policy(ZeroModel(), [env], 1)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED])
def test_gymnasium_vector_env_spreads_episodes_like_sb3(mode):
    calls = []
    env = SyncVectorEnv(counters(), autoreset_mode=mode)
    result = quiet(
        evaluate_policy, ZeroModel(), env, 7, return_episode_rewards=True, callback=lambda lo, gl: calls.append(lo["i"])
    )
    assert result == SEVEN_OVER_THREE
    assert [calls.count(i) for i in range(3)] == [6, 8, 15]  # each env, until its last counted episode ends


def test_gymnasium_vector_env_uses_monitor_figures_and_warns_without():
    env = SyncVectorEnv(counters(scale=True))
    assert quiet(evaluate_policy, ZeroModel(), env, 7, return_episode_rewards=True) == SEVEN_OVER_THREE
    with pytest.warns(UserWarning, match="no Monitor wrapper"):
        returns, _ = evaluate_policy(
            ZeroModel(), SyncVectorEnv(counters(monitor=False, scale=True)), 3, return_episode_rewards=True
        )
    assert returns == [60.0, 100.0, 150.0]


def test_the_models_own_env_as_in_sb3s_basic_example():
    model = TD3("MlpPolicy", make_counter(5), learning_starts=5, policy_kwargs={"net_arch": [8]}, seed=0)
    model.learn(10)
    returns, lengths = quiet(evaluate_policy, model, model.get_env(), n_eval_episodes=3, return_episode_rewards=True)
    assert returns == [15.0, 15.0, 15.0] and lengths == [5, 5, 5]


def test_sb3_style_vec_env():
    model = ZeroModel()
    env = ListVecEnv(counters())
    assert is_sb3_vec_env(env) and not is_sb3_vec_env(SyncVectorEnv(counters()))
    seen = []
    result = quiet(
        evaluate_policy,
        model,
        env,
        7,
        render=True,
        return_episode_rewards=True,
        callback=lambda lo, gl: seen.append((lo["i"], lo["done"], "terminal_observation" in lo["info"])),
    )
    assert result == SEVEN_OVER_THREE
    assert [sum(1 for i, *_ in seen if i == k) for k in range(3)] == [6, 8, 15]
    assert all(done == has_terminal for _, done, has_terminal in seen)
    assert env.renders == 15
    # predict gets SB3's state and episode_start: True at the first step, then for envs that just ended
    assert model.kwargs[0]["episode_start"].tolist() == [True, True, True]
    assert model.kwargs[3]["episode_start"].tolist() == [True, False, False]  # env 0 ended at step 3


def test_sb3_style_vec_env_monitor_detection():
    env = ListVecEnv(counters(scale=True))
    assert quiet(evaluate_policy, ZeroModel(), env, 3, return_episode_rewards=True)[0] == [6.0, 10.0, 15.0]
    with pytest.warns(UserWarning, match="no Monitor wrapper"):
        returns, _ = evaluate_policy(
            ZeroModel(), ListVecEnv(counters(monitor=False, scale=True)), 3, return_episode_rewards=True
        )
    assert returns == [60.0, 100.0, 150.0]


def test_sb3_style_vec_env_seed_reaches_the_reset():
    env = ListVecEnv([lambda: gym.make("Pendulum-v1")] * 2)
    first = evaluate_policy(ZeroModel(), env, 2, seed=5, warn=False)
    assert evaluate_policy(ZeroModel(), env, 2, seed=5, warn=False) == first
    assert evaluate_policy(ZeroModel(), env, 2, seed=6, warn=False) != first


def test_sb3_style_vec_env_without_seed_method():
    env = ListVecEnv(counters())
    env.seed = None  # type: ignore[assignment]
    with pytest.raises(TypeError, match="seed=3 needs a VecEnv with a seed\\(\\) method; ListVecEnv has none"):
        evaluate_policy(ZeroModel(), env, 1, seed=3)
    assert evaluate_policy(ZeroModel(), env, 1)[0] == 15.0  # without seed it runs (1 episode: on env 2, as in SB3)

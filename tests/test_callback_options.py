"""The Stable-Baselines3 options of the built-in callbacks: EvalCallback's render, warn, success rate and
SB3-style VecEnvs; CheckpointCallback's save_vecnormalize; every signature against SB3's."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from conftest import make_counter
from test_evaluation import ListVecEnv, counters

from rlkit_td3 import TD3
from rlkit_td3 import callbacks as cb
from rlkit_td3.logger import configure
from rlkit_td3.monitor import Monitor

KW = dict(learning_starts=5, policy_kwargs={"net_arch": [8]}, seed=0)

# Stable-Baselines3 2.x's constructor arguments and defaults (stable_baselines3/common/callbacks.py)
SB3_SIGNATURES = {
    "BaseCallback": [("verbose", 0)],
    "EventCallback": [("callback", None), ("verbose", 0)],
    "CallbackList": [("callbacks", inspect.Parameter.empty)],
    "ConvertCallback": [("callback", inspect.Parameter.empty), ("verbose", 0)],
    "EveryNTimesteps": [("n_steps", inspect.Parameter.empty), ("callback", inspect.Parameter.empty)],
    "StopTrainingOnRewardThreshold": [("reward_threshold", inspect.Parameter.empty), ("verbose", 0)],
    "StopTrainingOnNoModelImprovement": [
        ("max_no_improvement_evals", inspect.Parameter.empty),
        ("min_evals", 0),
        ("verbose", 0),
    ],
    "StopTrainingOnMaxEpisodes": [("max_episodes", inspect.Parameter.empty), ("verbose", 0)],
    "ProgressBarCallback": [],
    "CheckpointCallback": [
        ("save_freq", inspect.Parameter.empty),
        ("save_path", inspect.Parameter.empty),
        ("name_prefix", "rl_model"),
        ("save_replay_buffer", False),
        ("save_vecnormalize", False),
        ("verbose", 0),
    ],
    "EvalCallback": [
        ("eval_env", inspect.Parameter.empty),
        ("callback_on_new_best", None),
        ("callback_after_eval", None),
        ("n_eval_episodes", 5),
        ("eval_freq", 10000),
        ("log_path", None),
        ("best_model_save_path", None),
        ("deterministic", True),
        ("render", False),
        ("verbose", 1),
        ("warn", True),
    ],
}


@pytest.mark.parametrize("name", sorted(SB3_SIGNATURES))
def test_constructor_signature_starts_with_sb3s(name):
    params = list(inspect.signature(getattr(cb, name).__init__).parameters.values())[1:]
    expected = SB3_SIGNATURES[name]
    assert [(p.name, p.default) for p in params][: len(expected)] == expected


class Successes(gym.Wrapper):
    """Reports ``info["is_success"]`` at the end of each episode: True for every other episode."""

    def __init__(self, env):
        super().__init__(env)
        self.episodes = 0

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            self.episodes += 1
            info = dict(info, is_success=self.episodes % 2 == 0)
        return obs, reward, terminated, truncated, info


class RenderCount(gym.Wrapper):
    renders = 0

    def render(self):
        RenderCount.renders += 1


def test_eval_callback_logs_the_success_rate(tmp_path):
    model = TD3("MlpPolicy", make_counter(5), **KW)
    model.set_logger(configure(tmp_path / "logs", ["csv"]))
    callback = cb.EvalCallback(
        Monitor(Successes(make_counter(5))), n_eval_episodes=4, eval_freq=10, log_path=tmp_path, verbose=0
    )
    model.learn(20, callback=callback)
    assert callback.evaluations_successes == [[False, True, False, True]] * 2
    progress = pd.read_csv(tmp_path / "logs" / "progress.csv")
    assert progress["eval/success_rate"].dropna().tolist() == [0.5, 0.5]
    data = np.load(tmp_path / "evaluations.npz")
    assert data["successes"].tolist() == [[False, True, False, True]] * 2


def test_eval_callback_without_successes_writes_no_successes(tmp_path):
    model = TD3("MlpPolicy", make_counter(5), **KW)
    callback = cb.EvalCallback(Monitor(make_counter(5)), n_eval_episodes=1, eval_freq=10, log_path=tmp_path, verbose=0)
    model.learn(10, callback=callback)
    assert callback.evaluations_successes == [] and "successes" not in np.load(tmp_path / "evaluations.npz")


def test_eval_callback_render_and_warn():
    RenderCount.renders = 0
    model = TD3("MlpPolicy", make_counter(5), **KW)
    quiet = cb.EvalCallback(RenderCount(make_counter(5)), n_eval_episodes=1, eval_freq=10, warn=False, verbose=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.learn(10, callback=quiet)
    assert RenderCount.renders == 0
    loud = cb.EvalCallback(RenderCount(make_counter(5)), n_eval_episodes=1, eval_freq=10, render=True, verbose=0)
    with pytest.warns(UserWarning, match="no Monitor wrapper"):
        model.learn(10, callback=loud)
    assert RenderCount.renders == 5
    pendulum = TD3("MlpPolicy", "Pendulum-v1", **KW)
    with warnings.catch_warnings():  # an env id: the callback makes the env, nothing to warn about
        warnings.simplefilter("error")
        pendulum.learn(10, callback=cb.EvalCallback("Pendulum-v1", n_eval_episodes=1, eval_freq=10, verbose=0))


def test_eval_callback_accepts_an_sb3_style_vec_env():
    model = TD3("MlpPolicy", make_counter(5), **KW)
    callback = cb.EvalCallback(ListVecEnv(counters()), n_eval_episodes=3, eval_freq=10, verbose=0)
    model.learn(10, callback=callback)
    assert callback.evaluations_results == [[6.0, 10.0, 15.0]] and callback.last_mean_reward == pytest.approx(31 / 3)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"render": "yes"}, "render must be a bool, got 'yes'"),
        ({"warn": None}, "warn must be a bool, got None"),
        ({"eval_env": [1]}, "eval_env must be a gymnasium Env"),
    ],
)
def test_eval_callback_bad_options(kwargs, match):
    with pytest.raises(TypeError, match=match):
        cb.EvalCallback(**{"eval_env": make_counter(5), **kwargs})


class StubVecNormalize:
    """Stands for a VecNormalize env: records where it was asked to save itself."""

    def __init__(self) -> None:
        self.saved: list[Path] = []

    def save(self, path) -> None:
        self.saved.append(Path(path))
        Path(path).write_bytes(b"stats")


def test_checkpoint_saves_vecnormalize_beside_the_model(tmp_path):
    model = TD3("MlpPolicy", make_counter(5), **KW)
    stub = StubVecNormalize()
    model.get_vec_normalize_env = lambda: stub  # what the coordinator wires on the algorithm
    model.learn(20, callback=cb.CheckpointCallback(10, tmp_path, save_vecnormalize=True))
    assert len(stub.saved) == 2 and all(path.parent == tmp_path for path in stub.saved)  # written beside, then renamed
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "rl_model_10_steps.zip",
        "rl_model_20_steps.zip",
        "rl_model_vecnormalize_10_steps.pkl",
        "rl_model_vecnormalize_20_steps.pkl",
    ]
    assert (tmp_path / "rl_model_vecnormalize_20_steps.pkl").read_bytes() == b"stats"


def test_checkpoint_vecnormalize_only_when_asked_and_available(tmp_path):
    model = TD3("MlpPolicy", make_counter(5), **KW)
    stub = StubVecNormalize()
    model.get_vec_normalize_env = lambda: stub
    model.learn(10, callback=cb.CheckpointCallback(10, tmp_path / "a"))
    assert stub.saved == []
    model.get_vec_normalize_env = lambda: None
    model.learn(10, callback=cb.CheckpointCallback(10, tmp_path / "b", save_vecnormalize=True))
    del model.get_vec_normalize_env  # a model without the method at all
    model.learn(10, callback=cb.CheckpointCallback(10, tmp_path / "c", save_vecnormalize=True))
    for folder in "bc":
        assert sorted(p.name for p in (tmp_path / folder).iterdir()) == ["rl_model_10_steps.zip"]


def test_checkpoint_bad_flags():
    with pytest.raises(TypeError, match="save_vecnormalize must be a bool, got 'yes'"):
        cb.CheckpointCallback(10, "x", save_vecnormalize="yes")  # type: ignore[arg-type]


def test_eval_callback_evaluates_with_the_training_vecnormalize_statistics():
    from rlkit_td3.env_util import make_vec_env
    from rlkit_td3.vec_env import VecNormalize

    train_env = VecNormalize(make_vec_env("Pendulum-v1", n_envs=2, seed=0))
    eval_env = VecNormalize(make_vec_env("Pendulum-v1", n_envs=1, seed=1), training=False, norm_reward=False)
    seen = []

    class RecordStatistics(cb.BaseCallback):
        def _on_step(self) -> bool:
            seen.append((eval_env.obs_rms.mean.copy(), train_env.obs_rms.mean.copy(), eval_env.obs_rms.count))
            return True

    callback = cb.EvalCallback(
        eval_env, eval_freq=100, n_eval_episodes=1, callback_after_eval=RecordStatistics(), verbose=0, warn=False
    )
    model = TD3("MlpPolicy", train_env, learning_starts=50, policy_kwargs={"net_arch": [8]}, seed=0)
    model.learn(200, callback=callback)
    assert len(seen) == 2
    for eval_mean, train_mean, count in seen:
        assert count > 1  # the training statistics, not eval_env's untouched ones
        np.testing.assert_array_equal(eval_mean, train_mean)
    assert eval_env.obs_rms is not train_env.obs_rms  # a copy: training no longer moves it


def test_eval_callback_needs_a_vecnormalize_eval_env_when_training_is_normalised():
    from rlkit_td3.env_util import make_vec_env
    from rlkit_td3.vec_env import VecNormalize

    model = TD3("MlpPolicy", VecNormalize(make_vec_env("Pendulum-v1", seed=0)), learning_starts=50, seed=0)
    callback = cb.EvalCallback(make_vec_env("Pendulum-v1", seed=1), eval_freq=50, n_eval_episodes=1, verbose=0)
    with pytest.raises(TypeError, match="eval_env must be wrapped like env"):
        model.learn(100, callback=callback)

"""Every public bool switch takes True/False (NumPy bools too) and nothing else: ``"False"`` or ``0`` is a TypeError
naming the parameter (one rule, `rlkit_td3.checks.arguments.check_bool`)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from conftest import make_counter

from rlkit_td3 import TD3, HerReplayBuffer
from rlkit_td3.buffers import ReplayBuffer
from rlkit_td3.callbacks import CheckpointCallback, EvalCallback, convert_callback
from rlkit_td3.checks.arguments import check_bool
from rlkit_td3.env_checker import check_env
from rlkit_td3.envs.bit_flipping_env import BitFlippingEnv
from rlkit_td3.evaluation import evaluate_policy
from rlkit_td3.monitor import Monitor
from rlkit_td3.torch_layers import CombinedExtractor, NatureCNN
from rlkit_td3.utils import set_random_seed
from rlkit_td3.vec_env import DummyVecEnv, VecCheckNan, VecNormalize, VecTransposeImage

OBS = np.zeros((1, 2), np.float32)


@pytest.fixture(scope="module")
def model():
    return TD3("MlpPolicy", make_counter(5), policy_kwargs={"net_arch": [8]}, learning_starts=5, seed=0)


def _venv():
    return DummyVecEnv([lambda: make_counter(5)])


class _ImageEnv(gym.Env):
    observation_space = gym.spaces.Box(0, 255, (8, 8, 3), np.uint8)
    observation_space_big = gym.spaces.Box(0, 255, (3, 36, 36), np.uint8)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)


def _image_venv():
    return DummyVecEnv([_ImageEnv])


# (what, call with the switch set to ``value``) for every bool parameter of the public API
CALLS = {
    "learn(reset_num_timesteps=)": lambda m, v, tmp: m.learn(5, reset_num_timesteps=v),
    "learn(progress_bar=)": lambda m, v, tmp: m.learn(5, progress_bar=v),
    "predict(deterministic=)": lambda m, v, tmp: m.predict(OBS, deterministic=v),
    "policy.predict(deterministic=)": lambda m, v, tmp: m.policy.predict(OBS, deterministic=v),
    "save(include_buffer=)": lambda m, v, tmp: m.save(tmp / "m.zip", include_buffer=v),
    "set_parameters(exact_match=)": lambda m, v, tmp: m.set_parameters(m.get_parameters(), exact_match=v),
    "use_fused_update": lambda m, v, tmp: setattr(m, "use_fused_update", v),
    "TD3(optimize_memory_usage=)": lambda m, v, tmp: TD3("MlpPolicy", make_counter(5), optimize_memory_usage=v),
    "evaluate_policy(deterministic=)": lambda m, v, tmp: evaluate_policy(m, _venv(), 1, deterministic=v),
    "evaluate_policy(render=)": lambda m, v, tmp: evaluate_policy(m, _venv(), 1, render=v),
    "evaluate_policy(return_episode_rewards=)": lambda m, v, tmp: evaluate_policy(
        m, _venv(), 1, return_episode_rewards=v
    ),
    "evaluate_policy(warn=)": lambda m, v, tmp: evaluate_policy(m, _venv(), 1, warn=v),
    "VecCheckNan(raise_exception=)": lambda m, v, tmp: VecCheckNan(_venv(), raise_exception=v),
    "VecCheckNan(warn_once=)": lambda m, v, tmp: VecCheckNan(_venv(), warn_once=v),
    "VecCheckNan(check_inf=)": lambda m, v, tmp: VecCheckNan(_venv(), check_inf=v),
    "VecNormalize(training=)": lambda m, v, tmp: VecNormalize(_venv(), training=v),
    "VecNormalize(norm_obs=)": lambda m, v, tmp: VecNormalize(_venv(), norm_obs=v),
    "VecNormalize(norm_reward=)": lambda m, v, tmp: VecNormalize(_venv(), norm_reward=v),
    "VecNormalize.training": lambda m, v, tmp: setattr(VecNormalize(_venv()), "training", v),
    "VecTransposeImage(skip=)": lambda m, v, tmp: VecTransposeImage(_image_venv(), skip=v),
    "EvalCallback(deterministic=)": lambda m, v, tmp: EvalCallback(_venv(), deterministic=v),
    "EvalCallback(render=)": lambda m, v, tmp: EvalCallback(_venv(), render=v),
    "EvalCallback(warn=)": lambda m, v, tmp: EvalCallback(_venv(), warn=v),
    "CheckpointCallback(save_replay_buffer=)": lambda m, v, tmp: CheckpointCallback(10, tmp, save_replay_buffer=v),
    "CheckpointCallback(save_vecnormalize=)": lambda m, v, tmp: CheckpointCallback(10, tmp, save_vecnormalize=v),
    "convert_callback(progress_bar=)": lambda m, v, tmp: convert_callback(None, progress_bar=v),
    "TD3.load(print_system_info=)": lambda m, v, tmp: TD3.load(_saved(m, tmp), print_system_info=v),
    "TD3.load(force_reset=)": lambda m, v, tmp: TD3.load(_saved(m, tmp), force_reset=v),
    "TD3.load(allow_pickle=)": lambda m, v, tmp: TD3.load(_saved(m, tmp), allow_pickle=v),
    "ReplayBuffer(optimize_memory_usage=)": lambda m, v, tmp: ReplayBuffer(
        10, m.observation_space, m.action_space, optimize_memory_usage=v
    ),
    "HerReplayBuffer(copy_info_dict=)": lambda m, v, tmp: HerReplayBuffer(
        100, *_her_spaces(), env=None, copy_info_dict=v
    ),
    "Monitor(override_existing=)": lambda m, v, tmp: Monitor(make_counter(5), str(tmp / "x"), override_existing=v),
    "check_env(warn=)": lambda m, v, tmp: check_env(gym.make("Pendulum-v1"), warn=v),
    "check_env(skip_render_check=)": lambda m, v, tmp: check_env(gym.make("Pendulum-v1"), skip_render_check=v),
    "BitFlippingEnv(continuous=)": lambda m, v, tmp: BitFlippingEnv(continuous=v),
    "BitFlippingEnv(channel_first=)": lambda m, v, tmp: BitFlippingEnv(channel_first=v),
    "set_random_seed(using_cuda=)": lambda m, v, tmp: set_random_seed(0, using_cuda=v),
    "NatureCNN(normalized_image=)": lambda m, v, tmp: NatureCNN(_ImageEnv.observation_space_big, normalized_image=v),
    "CombinedExtractor(normalized_image=)": lambda m, v, tmp: CombinedExtractor(
        gym.spaces.Dict({"x": _ImageEnv.observation_space_big}), normalized_image=v
    ),
    "policy_kwargs share_features_extractor": lambda m, v, tmp: TD3(
        "MlpPolicy", make_counter(5), policy_kwargs={"share_features_extractor": v}
    ),
    "policy_kwargs normalize_images": lambda m, v, tmp: TD3(
        "MlpPolicy", make_counter(5), policy_kwargs={"normalize_images": v}
    ),
}


def _saved(model, tmp):
    path = tmp / "saved.zip"
    if not path.exists():
        model.save(path)
    return path


def _her_spaces():
    env = BitFlippingEnv(n_bits=4, continuous=True)
    return env.observation_space, env.action_space


@pytest.mark.parametrize("bad", ["False", 0, 1, None])
@pytest.mark.parametrize("what", sorted(CALLS))
def test_a_switch_refuses_anything_but_a_bool(model, tmp_path, what, bad):
    name = what.split("(")[-1].rstrip("=)").split(" ")[-1].split(".")[-1]
    with pytest.raises(TypeError, match=rf"{name} must be a bool, got {bad!r} of type"):
        CALLS[what](model, bad, tmp_path)


@pytest.mark.parametrize("what", sorted(CALLS))
def test_a_switch_takes_numpy_bools(model, tmp_path, what):
    if what in ("TD3.load(allow_pickle=)", "TD3.load(print_system_info=)"):
        value = np.False_
    elif what in ("evaluate_policy(render=)", "EvalCallback(render=)", "set_random_seed(using_cuda=)"):
        value = np.False_
    else:
        value = np.True_
    CALLS[what](model, value, tmp_path)


def test_check_bool_returns_a_python_bool():
    assert check_bool("x", np.True_) is True
    assert check_bool("x", False) is False
    with pytest.raises(TypeError, match="x must be a bool"):
        check_bool("x", "True")


def test_reset_num_timesteps_as_a_string_no_longer_resets_the_counters():
    model = TD3("MlpPolicy", make_counter(5), policy_kwargs={"net_arch": [8]}, learning_starts=5, seed=0).learn(20)
    with pytest.raises(TypeError, match="reset_num_timesteps"):
        model.learn(20, reset_num_timesteps="False")
    assert model.num_timesteps == 20

"""Stable-Baselines3's contract where its own test suite checks it (issue 32): the exception types its checks
raise, ``set_env(force_reset=False)``, ``load(policy_kwargs=)``, ``load_replay_buffer`` into a model without a
buffer, ``ReplayBuffer.extend``, ``get_device("cuda")`` without CUDA, image-like float inputs to ``CnnPolicy``
with ``normalize_images=False`` and the optional plotting dependencies' messages."""

from __future__ import annotations

import copy
import importlib
import sys
from collections import OrderedDict
from unittest import mock

import numpy as np
import pytest
import torch

from rlkit_td3 import TD3
from rlkit_td3.envs import FakeImageEnv, IdentityEnvBox
from rlkit_td3.utils import get_device
from rlkit_td3.vec_env import DummyVecEnv, VecNormalize


def small_model(**kwargs) -> TD3:
    kwargs = {"policy_kwargs": {"net_arch": [16]}, "learning_starts": 20, "seed": 0, **kwargs}
    return TD3("MlpPolicy", DummyVecEnv([lambda: IdentityEnvBox(-10, 10)]), **kwargs)


def test_get_device_falls_back_to_the_cpu_without_cuda():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert get_device("cuda").type == expected
    assert get_device("cpu").type == "cpu"


def test_set_parameters_missing_state_dict_key_is_a_runtime_error_too():
    model = small_model()
    params = model.get_parameters()
    partial = {**params, "policy": OrderedDict(list(params["policy"].items())[:-1])}
    with pytest.raises(RuntimeError, match="missing keys") as info:
        model.set_parameters(partial, exact_match=True)
    assert isinstance(info.value, ValueError)
    with pytest.raises(ValueError):  # an unknown object stays a plain ValueError, as in SB3
        model.set_parameters({**params, "nonsense": {}}, exact_match=False)
    model.set_parameters(partial, exact_match=False)  # a part is fine without exact_match


def test_set_env_more_envs_is_an_assertion_error_too_and_force_reset_false_keeps_the_episode():
    model = small_model().learn(40)
    more = DummyVecEnv([lambda: IdentityEnvBox(-10, 10) for _ in range(2)])
    with pytest.raises(AssertionError, match="more than the replay buffer") as info:
        model.set_env(more)
    assert isinstance(info.value, ValueError)
    assert model._last_obs is not None
    model.set_env(model.get_env(), force_reset=False)
    assert model._last_obs is not None
    model.learn(20, reset_num_timesteps=False)
    assert model.num_timesteps == 60
    model.set_env(model.get_env(), force_reset=True)
    assert model._last_obs is None


def test_load_accepts_equal_policy_kwargs_and_refuses_others(tmp_path):
    small_model().save(tmp_path / "m")
    TD3.load(tmp_path / "m.zip", policy_kwargs={"net_arch": [16]})
    with pytest.raises(ValueError, match="do not equal the stored policy kwargs"):
        TD3.load(tmp_path / "m.zip", policy_kwargs={"net_arch": [32]})
    with pytest.raises(ValueError, match="'no_such_setting'"):
        TD3.load(tmp_path / "m.zip", policy_kwargs={"no_such_setting": 1})


def test_load_replay_buffer_into_a_model_without_one_and_extend(tmp_path):
    model = small_model(buffer_size=200).learn(60)
    old = copy.deepcopy(model.replay_buffer)
    model.save_replay_buffer(tmp_path / "buffer")
    model.replay_buffer = None
    model.load_replay_buffer(tmp_path / "buffer.zip" if (tmp_path / "buffer.zip").exists() else tmp_path / "buffer")
    assert model.replay_buffer.size() == old.size() == 60
    np.testing.assert_array_equal(model.replay_buffer.observations, old.observations)
    np.testing.assert_array_equal(model.replay_buffer.dones, old.dones)
    # SB3's extend: add() for each step of its arguments; rows of the buffer's own arrays are one transition each
    n = old.size()
    infos = [[{"TimeLimit.truncated": bool(t)}] for t in old.timeouts[:n, 0]]
    model.replay_buffer.extend(
        old.observations[:n], old.next_observations[:n], old.actions[:n], old.rewards[:n], old.dones[:n], infos
    )
    assert model.replay_buffer.size() == 2 * n
    np.testing.assert_array_equal(model.replay_buffer.rewards[n : 2 * n], old.rewards[:n])
    with pytest.raises(ValueError, match="same number of steps"):
        model.replay_buffer.extend(old.observations[:2], old.observations[:3])


def test_cnn_policy_takes_image_like_floats_with_normalize_images_false():
    env = FakeImageEnv(screen_height=36, screen_width=36, n_channels=1, channel_first=True, discrete=False)
    venv = VecNormalize(DummyVecEnv([lambda: env]))
    kwargs = {"buffer_size": 100, "learning_starts": 10, "seed": 1}
    extractor = {"features_extractor_kwargs": {"features_dim": 8}}
    model = TD3("CnnPolicy", venv, policy_kwargs={"normalize_images": False, **extractor}, **kwargs).learn(20)
    assert model.policy.actor.features_extractor.cnn is not None
    with pytest.raises(AssertionError, match="NatureCNN needs an image observation space") as info:
        TD3("CnnPolicy", venv, policy_kwargs=extractor, **kwargs)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("hidden", "message"),
    [({"pandas": None}, "pandas is required for plotting"), ({"matplotlib": None}, "matplotlib is required")],
)
def test_results_plotter_names_its_missing_dependency(hidden, message):
    blocked = {**hidden, "matplotlib.pyplot": None} if "matplotlib" in hidden else hidden
    with mock.patch.dict(sys.modules, blocked):
        sys.modules.pop("rlkit_td3.results_plotter", None)
        with pytest.raises(ImportError, match=message):
            importlib.import_module("rlkit_td3.results_plotter")
    sys.modules.pop("rlkit_td3.results_plotter", None)
    importlib.import_module("rlkit_td3.results_plotter")


def test_monitor_imports_without_pandas_and_load_results_names_it(tmp_path):
    from rlkit_td3.monitor import load_results

    with mock.patch.dict(sys.modules, {"pandas": None}):
        with pytest.raises(ImportError, match="pandas is required for loading results"):
            load_results(tmp_path)


def test_a_compiled_policy_saves_as_the_module_it_compiles(tmp_path):
    model = small_model()
    plain = model.policy
    model.policy = torch.compile(model.policy)
    model.save(tmp_path / "m")
    assert model.policy is not plain  # the compiled wrapper stays in place
    loaded = TD3.load(tmp_path / "m.zip")
    for key, value in plain.state_dict().items():
        torch.testing.assert_close(loaded.policy.state_dict()[key], value)

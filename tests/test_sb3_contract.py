"""Stable-Baselines3's contract where its own test suite checks it (issue 32): the exception types its checks
raise, ``set_env(force_reset=False)``, ``load(policy_kwargs=)``, ``load_replay_buffer`` into a model without a
buffer, ``ReplayBuffer.extend``, ``get_device("cuda")`` without CUDA, image-like float inputs to ``CnnPolicy``
with ``normalize_images=False``, the optional plotting dependencies' messages, and Discrete, MultiDiscrete and
MultiBinary observations (one-hot / float encoded, as SB3)."""

from __future__ import annotations

import copy
import importlib
import json
import sys
from collections import OrderedDict
from unittest import mock

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces

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


class _SpaceEnv(gym.Env):
    """Observations drawn from any space; the action is a 2-d Box."""

    def __init__(self, observation_space: spaces.Space):
        self.observation_space = observation_space
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.observation_space.seed(seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


@pytest.mark.parametrize(
    ("space", "stored", "width"),
    [
        (spaces.Discrete(5), (1,), 5),
        (spaces.MultiDiscrete([4, 3]), (2,), 7),
        (spaces.MultiBinary((3, 2)), (3, 2), 6),
    ],
    ids=["Discrete", "MultiDiscrete", "MultiBinary"],
)
def test_discrete_and_binary_observations_learn_predict_and_reload(tmp_path, space, stored, width):
    # SB3 one-hot encodes (Multi)Discrete observations and casts MultiBinary ones; buffers keep its shapes.
    env = gym.wrappers.TimeLimit(_SpaceEnv(space), 10)
    model = TD3("MlpPolicy", env, learning_starts=10, train_freq=5, seed=0, policy_kwargs={"net_arch": [8]})
    model.learn(30)
    assert model.replay_buffer.observations.shape[1:] == stored
    assert model.policy.actor.mu[0].in_features == width
    obs = space.sample()
    action = model.predict(obs, deterministic=True)[0]
    model.save(tmp_path / "m")
    loaded = TD3.load(tmp_path / "m.zip", env=env)
    assert loaded.observation_space == space
    np.testing.assert_allclose(loaded.predict(obs, deterministic=True)[0], action)
    if isinstance(space, spaces.Discrete):  # one-hot: distinct observations reach the actor as distinct inputs
        batch = torch.arange(space.n).reshape(-1, 1)
        assert torch.equal(model.policy.actor.preprocess(batch), torch.eye(space.n))


def test_a_dict_with_discrete_entries_learns_with_vec_normalize_of_its_box_keys(tmp_path):
    space = spaces.Dict({"d": spaces.Discrete(4), "v": spaces.Box(-1, 1, (2,), np.float32), "m": spaces.MultiBinary(3)})
    env = VecNormalize(DummyVecEnv([lambda: gym.wrappers.TimeLimit(_SpaceEnv(space), 10)]), norm_obs_keys=["v"])
    model = TD3("MultiInputPolicy", env, learning_starts=10, train_freq=5, seed=0, policy_kwargs={"net_arch": [8]})
    model.learn(30)
    assert {key: rows.shape[1:] for key, rows in model.replay_buffer.observations.items()} == {
        "d": (1,),
        "v": (2,),
        "m": (3,),
    }
    model.save(tmp_path / "m")
    assert TD3.load(tmp_path / "m.zip").observation_space == space


def test_saved_discrete_space_descriptions_round_trip_and_forged_sizes_are_refused():
    from rlkit_td3.fileio.serialization import ModelFileError, space_from_dict, space_to_dict

    for space in (spaces.Discrete(3, start=1), spaces.MultiDiscrete([[2, 3], [4, 5]]), spaces.MultiBinary(4)):
        assert space_from_dict(json.loads(json.dumps(space_to_dict(space)))) == space
    with pytest.raises(ModelFileError, match="must be ints"):
        space_from_dict({"type": "Discrete", "n": 2.5, "start": 0, "dtype": "int64"})
    with pytest.raises(ModelFileError, match="malformed space description"):
        space_from_dict({"type": "Discrete", "n": -3, "start": 0, "dtype": "int64"})


@pytest.mark.parametrize("handle", [True, False])
def test_handle_timeout_termination_on_every_buffer(handle):
    from rlkit_td3.buffers import DictReplayBuffer, NStepReplayBuffer, PrioritizedReplayBuffer, ReplayBuffer
    from rlkit_td3.envs import BitFlippingEnv
    from rlkit_td3.her import HerReplayBuffer

    box, act = spaces.Box(-1, 1, (2,), np.float32), spaces.Box(-1, 1, (1,), np.float32)
    done, infos = np.array([True, True]), [{"TimeLimit.truncated": True}, {}]  # a time limit, then a termination
    kw = {"n_envs": 2, "handle_timeout_termination": handle}
    flat = [
        ReplayBuffer(8, box, act, **kw),
        NStepReplayBuffer(8, box, act, **kw),
        PrioritizedReplayBuffer(8, box, act, **kw),
    ]
    for buffer in flat:
        buffer.add(np.zeros((2, 2)), np.ones((2, 2)), np.zeros((2, 1)), np.zeros(2), done, infos)
    goal_env = BitFlippingEnv(n_bits=2, continuous=True)
    goal_obs = {key: np.zeros((2, *sub.shape), sub.dtype) for key, sub in goal_env.observation_space.spaces.items()}
    goal_act = goal_env.action_space
    dict_buffers = [
        DictReplayBuffer(8, goal_env.observation_space, goal_act, **kw),
        HerReplayBuffer(
            8,
            goal_env.observation_space,
            goal_act,
            env=DummyVecEnv([lambda: BitFlippingEnv(n_bits=2, continuous=True) for _ in range(2)]),
            **kw,
        ),
    ]
    for buffer in dict_buffers:
        buffer.add(goal_obs, goal_obs, np.zeros((2, 2)), np.zeros(2), done, infos)
    for buffer in flat + dict_buffers:
        assert buffer.handle_timeout_termination is handle
        # SB3: kept apart, the time limit is a truncation; otherwise it is stored as terminal
        # (HER keeps one ring per env: count the flags instead of reading rows 0 and 1)
        assert (buffer.terminated.sum(), buffer.truncated.sum()) == ((1, 1) if handle else (2, 0)), type(buffer)
    with pytest.raises(TypeError, match="handle_timeout_termination"):
        ReplayBuffer(8, box, act, handle_timeout_termination="no")


def test_handle_timeout_termination_false_through_the_model():
    env = DummyVecEnv([lambda: IdentityEnvBox(-10, 10, ep_length=10)])  # its episodes end by truncation only
    kwargs = {"replay_buffer_kwargs": {"handle_timeout_termination": False}, "learning_starts": 5}
    model = TD3("MlpPolicy", env, policy_kwargs={"net_arch": [8]}, seed=0, **kwargs)
    model.learn(30)
    buffer = model.replay_buffer
    assert not buffer.truncated[: buffer.size()].any() and buffer.terminated[: buffer.size()].any()

"""Stable-Baselines3's public helpers and types that a TD3/DDPG user's tools touch (issue 32): the logger's
levels and writer signature, ``utils``' checks, ``get_obs_shape``, ``create_mlp``, ``type_aliases``, Monitor's
SB3 arguments and the vectorized noise's checks."""

from __future__ import annotations

import codecs
import io
import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from torch import nn

from rlkit_td3 import TD3
from rlkit_td3.logger import (
    DEBUG,
    DISABLED,
    ERROR,
    INFO,
    WARN,
    CSVOutputFormat,
    FormatUnsupportedError,
    HumanOutputFormat,
    Image,
    JSONOutputFormat,
    Logger,
    TensorBoardOutputFormat,
    configure,
    make_output_format,
)
from rlkit_td3.monitor import LoadMonitorResultsError, Monitor, get_monitor_files, load_results
from rlkit_td3.noise import NormalActionNoise, VectorizedActionNoise
from rlkit_td3.preprocessing import get_obs_shape
from rlkit_td3.torch_layers import create_mlp
from rlkit_td3.utils import (
    FloatSchedule,
    check_shape_equal,
    get_latest_run_id,
    get_parameters_by_name,
    get_system_info,
    is_vectorized_observation,
    zip_strict,
)
from rlkit_td3.vec_env import DummyVecEnv


# ------------------------------------------------------------------ logger
def test_levels_and_messages():
    stream = io.StringIO()
    logger = Logger(None, [HumanOutputFormat(stream)])
    assert (DEBUG, INFO, WARN, ERROR, DISABLED) == (10, 20, 30, 40, 50) and logger.level == INFO
    logger.debug("hidden")
    logger.info("shown", 1)
    logger.log("also", level=WARN)
    logger.set_level(ERROR)
    logger.warn("hidden too")
    logger.error("error", "text")
    assert stream.getvalue() == "shown 1\nalso\nerror text\n"
    logger.set_level(DISABLED)
    logger.record("a", 1)
    logger.dump()
    assert stream.getvalue().count("|") == 0


def test_writer_takes_sb3_signature_and_exclusions(tmp_path):
    stream = io.StringIO()
    writer = HumanOutputFormat(stream)
    writer.write({"a": 1, "b": 2}, {"a": None, "b": ("stdout",)})
    writer.write({"c": 3}, {"c": "log"})  # "log" excludes both text tables, as in SB3
    assert "| a |" in stream.getvalue() and "b" not in stream.getvalue() and "c" not in stream.getvalue()
    with pytest.raises(TypeError, match="key_excluded"):
        writer.write({"a": 1}, 5)
    csv = make_output_format("csv", tmp_path)
    csv.write({"x": 1.5, "y": 2}, {"y": ("csv",)}, step=3)
    csv.close()
    assert (tmp_path / "progress.csv").read_text().splitlines() == ["x", "1.5"]


def test_make_output_format(tmp_path):
    assert isinstance(make_output_format("stdout", tmp_path), HumanOutputFormat)
    log = make_output_format("log", tmp_path / "new", log_suffix="_2")
    assert log.name == "log" and (tmp_path / "new" / "log_2.txt").exists()
    assert isinstance(make_output_format("json", tmp_path), JSONOutputFormat)
    assert isinstance(make_output_format("csv", tmp_path), CSVOutputFormat)
    assert isinstance(make_output_format("tensorboard", tmp_path), TensorBoardOutputFormat)
    with pytest.raises(ValueError, match="Unknown format specified: 'xml'"):
        make_output_format("xml", tmp_path)


def test_max_length_cuts_keys_and_values_and_refuses_aliases():
    stream = io.StringIO()
    writer = HumanOutputFormat(stream, max_length=8)
    writer.write({"abcdefghij": "0123456789"}, {"abcdefghij": None})
    assert "| abcde... | 01234... |" in stream.getvalue()
    with pytest.raises(ValueError, match=r"Key.*truncated"):
        writer.write({"abcdefghi1": 1, "abcdefghi2": 2}, {})
    writer.max_length = 12
    writer.write({"abcdefghi1": 1, "abcdefghi2": 2}, {})
    with pytest.raises(ValueError, match="max_length"):
        HumanOutputFormat(stream, max_length=2)


def test_table_groups_same_leaf_under_two_prefixes():
    stream = io.StringIO()
    HumanOutputFormat(stream).write({"k1/foo": "a", "k2/foo": "b"}, {"k1/foo": None, "k2/foo": None})
    assert stream.getvalue().splitlines()[1:-1] == [
        "| k1/    |   |",
        "|    foo | a |",
        "| k2/    |   |",
        "|    foo | b |",
    ]


def test_unsupported_value_on_direct_write_names_the_format(tmp_path):
    writer = make_output_format("json", tmp_path)
    with pytest.raises(FormatUnsupportedError, match="json"):
        writer.write({"img": Image(np.zeros((2, 2, 3)), "HWC")}, {"img": ()})


def test_record_mean_and_dir_as_sb3(tmp_path):
    logger = configure(str(tmp_path), [])
    assert logger.dir == str(tmp_path) and logger.get_dir() == str(tmp_path)
    for value in (1.0, 2.0, None, 6.0):
        logger.record_mean("m", value)
    assert logger.name_to_value["m"] == pytest.approx(3.0) and logger.name_to_count["m"] == 3


def test_configure_defaults_follow_sb3_with_a_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("SB3_LOG_FORMAT", raising=False)
    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    names = [w.name for w in configure(tmp_path).output_formats]
    assert names == ["stdout", "log", "csv"]
    assert [w.name for w in configure().output_formats] == ["stdout"] and configure().dir is None
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path / "env"))
    monkeypatch.setenv("SB3_LOG_FORMAT", "json,csv")
    logger = configure()
    assert logger.dir == str(tmp_path / "env") and [w.name for w in logger.output_formats] == ["json", "csv"]


def test_train_values_readable_after_learn_without_a_dump():
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=10, batch_size=8, train_freq=5, seed=0)
    model.learn(30)
    values = model.logger.name_to_value
    assert values["train/n_updates"] == model._n_updates == 4  # 4 train calls after learning_starts
    assert np.isfinite(values["train/critic_loss"]) and np.isfinite(values["train/actor_loss"])
    assert values["train/learning_rate"] == pytest.approx(1e-3)


# ------------------------------------------------------------------ utils
def test_zip_strict_and_check_shape_equal():
    assert list(zip_strict([1, 2], "ab")) == [(1, "a"), (2, "b")]
    with pytest.raises(ValueError):
        list(zip_strict([1, 2], [1]))
    check_shape_equal(spaces.Box(0, 1, (2,)), spaces.Box(-1, 2, (2,)))
    with pytest.raises(AssertionError):
        check_shape_equal(spaces.Box(0, 1, (2,)), spaces.Box(0, 1, (3,)))
    with pytest.raises(AssertionError):
        check_shape_equal(spaces.Dict({"a": spaces.Box(0, 1, (2,))}), spaces.Dict({"a": spaces.Box(0, 1, (1,))}))


@pytest.mark.parametrize(
    ("space", "single", "batch", "wrong"),
    [
        (spaces.Box(-1, 1, (2,)), np.zeros(2), np.zeros((3, 2)), np.zeros((1, 1, 2))),
        (spaces.Discrete(3), np.int64(1), np.zeros(4, int), np.zeros((1, 2), int)),
        (spaces.MultiDiscrete([2, 3]), np.zeros(2, int), np.zeros((1, 2), int), np.zeros((2, 1), int)),
        (spaces.MultiBinary(3), np.zeros(3, np.int8), np.zeros((2, 3), np.int8), np.zeros((3, 1), np.int8)),
    ],
)
def test_is_vectorized_observation(space, single, batch, wrong):
    assert not is_vectorized_observation(single, space)
    assert is_vectorized_observation(batch, space)
    with pytest.raises(ValueError, match="Unexpected observation shape"):
        is_vectorized_observation(wrong, space)


def test_is_vectorized_dict_observation_refuses_a_mix():
    space = spaces.Dict({"box": spaces.Box(-1, 1, (2,)), "d": spaces.Discrete(2)})
    assert is_vectorized_observation({"box": np.zeros((1, 2)), "d": np.zeros(1, int)}, space)
    assert not is_vectorized_observation({"box": np.zeros(2), "d": np.int64(0)}, space)
    with pytest.raises(ValueError, match="mix of vectorized"):
        is_vectorized_observation({"box": np.zeros(2), "d": np.zeros(1, int)}, space)


def test_get_parameters_by_name_latest_run_id_and_system_info(tmp_path, capsys):
    net = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    stats = get_parameters_by_name(net, ["running_"])
    assert len(stats) == 2 and stats[0].data_ptr() == net[1].running_mean.data_ptr()
    for name in ("TD3_1", "TD3_7", "TD3_x", "DDPG_9", "TD3_3"):
        (tmp_path / name).mkdir()
    assert get_latest_run_id(str(tmp_path), "TD3") == 7 and get_latest_run_id(tmp_path, "SAC") == 0
    info, text = get_system_info(print_info=True)
    assert {"Python", "PyTorch", "GPU Enabled", "Numpy", "Gymnasium", "rlkit_td3"} <= set(info)
    assert f"- PyTorch: {torch.__version__}\n" in text and text in capsys.readouterr().out


def test_float_schedule():
    assert FloatSchedule(0.5)(0.3) == 0.5 and type(FloatSchedule(np.float32(0.5))(0.1)) is float
    schedule = FloatSchedule(lambda progress: np.float32(progress * 2))
    assert schedule(0.25) == 0.5 and type(schedule(0.25)) is float
    assert FloatSchedule(schedule).value_schedule is schedule.value_schedule
    with pytest.raises(TypeError, match="value_schedule"):
        FloatSchedule("fast")


# ------------------------------------------------------------------ preprocessing, layers, types
def test_get_obs_shape():
    assert get_obs_shape(spaces.Box(0, 1, (2, 3))) == (2, 3)
    assert get_obs_shape(spaces.Discrete(4)) == (1,)
    assert get_obs_shape(spaces.MultiDiscrete([2, 2, 2])) == (3,)
    assert get_obs_shape(spaces.MultiBinary([2, 2])) == (2, 2)
    assert get_obs_shape(spaces.Dict({"a": spaces.Discrete(2), "b": spaces.Box(0, 1, (5,))})) == {"a": (1,), "b": (5,)}
    with pytest.raises(NotImplementedError):
        get_obs_shape(spaces.Text(3))


def test_create_mlp():
    layers = create_mlp(3, 2, [4, 5], activation_fn=nn.Tanh, squash_output=True, with_bias=False)
    assert [type(layer) for layer in layers] == [nn.Linear, nn.Tanh, nn.Linear, nn.Tanh, nn.Linear, nn.Tanh]
    assert [(layer.in_features, layer.out_features) for layer in layers if isinstance(layer, nn.Linear)] == [
        (3, 4),
        (4, 5),
        (5, 2),
    ]
    assert all(layer.bias is None for layer in layers if isinstance(layer, nn.Linear))
    normed = create_mlp(3, 0, [4], pre_linear_modules=[nn.BatchNorm1d], post_linear_modules=[nn.LayerNorm])
    assert [type(layer) for layer in normed] == [nn.BatchNorm1d, nn.Linear, nn.LayerNorm, nn.ReLU]
    assert normed[0].num_features == 3 and normed[2].normalized_shape == (4,)
    assert [type(layer) for layer in create_mlp(3, 2, [])] == [nn.Linear]


def test_type_aliases():
    from rlkit_td3.buffers import ReplayBufferSamples
    from rlkit_td3.callbacks import BaseCallback
    from rlkit_td3.type_aliases import GymEnv, MaybeCallback, Schedule
    from rlkit_td3.type_aliases import ReplayBufferSamples as Aliased
    from rlkit_td3.vec_env import VecEnv

    assert Aliased is ReplayBufferSamples and VecEnv in GymEnv.__args__ and BaseCallback in MaybeCallback.__args__
    assert Schedule is not None


# ------------------------------------------------------------------ Monitor
def test_monitor_sb3_arguments(tmp_path):
    env = Monitor(gym.make("CartPole-v1"), str(tmp_path / "run"), allow_early_resets=False, reset_keywords=("options",))
    with pytest.raises(ValueError, match="Expected you to pass keyword argument options into reset"):
        env.reset(seed=0)
    with pytest.raises(RuntimeError, match="Tried to step environment that needs reset"):
        env.step(0)
    env.reset(seed=0, options={"x": 1})
    env.step(0)
    with pytest.raises(RuntimeError, match="Tried to reset an environment before done"):
        env.reset(options={"x": 1})
    done = False
    while not done:
        _, _, terminated, truncated, info = env.step(0)
        done = terminated or truncated
    assert info["episode"]["options"] == {"x": 1} and len(env.get_episode_times()) == 1
    env.close()
    assert get_monitor_files(tmp_path) == [str(tmp_path / "run.monitor.csv")]
    assert list(load_results(tmp_path).columns) == ["index", "r", "l", "t", "options"]


def test_load_results_errors_and_empty_files(tmp_path):
    with pytest.raises(LoadMonitorResultsError, match="No monitor files"):
        load_results(tmp_path)
    assert issubclass(LoadMonitorResultsError, FileNotFoundError)
    (tmp_path / "0.monitor.csv").write_text('#{"t_start": 1.0, "env_id": null}\nr,l,t\n')
    assert load_results(tmp_path).empty
    (tmp_path / "1.monitor.csv").write_text('#{"t_start": 2.0, "env_id": null}\nr,l,t\n-1.5,10,0.5\n')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data = load_results(tmp_path)
    assert data["r"].tolist() == [-1.5] and data["t"].tolist() == [1.5]


# ------------------------------------------------------------------ noise, vec env
def test_vectorized_noise_checks_as_sb3():
    base = NormalActionNoise(np.zeros(2), np.ones(2))
    with pytest.raises(ValueError, match="None"):
        VectorizedActionNoise(None, 2)
    with pytest.raises(TypeError):
        VectorizedActionNoise(12, 2)
    vec = VectorizedActionNoise(base, 3)
    with pytest.raises(AssertionError):
        vec.noises = []
    with pytest.raises(ValueError, match="one noise per env"):
        vec.noises = [base]
    with pytest.raises(TypeError):
        vec.noises = None
    with pytest.raises(ValueError, match="entries"):
        vec.noises = [None] * 3
    vec.noises = [NormalActionNoise(np.zeros(2), np.ones(2) * 0) for _ in range(3)]
    assert (vec() == 0).all()


def test_dummy_vec_env_refuses_wrappers_of_one_env():
    env = gym.make("Pendulum-v1")
    with pytest.raises(ValueError, match="same env object"):
        DummyVecEnv([lambda: Monitor(env), lambda: Monitor(env)])


# ------------------------------------------------------------------ settings SB3 accepts
def test_tau_zero_keeps_targets_and_gradient_steps_zero_only_collects():
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=10, batch_size=8, tau=0.0, seed=0)
    before = [p.clone() for p in model.policy.actor_target.parameters()]
    model.learn(30)
    assert model._n_updates > 0
    assert all(torch.equal(a, b) for a, b in zip(before, model.policy.actor_target.parameters()))
    collector = TD3("MlpPolicy", "Pendulum-v1", learning_starts=10, batch_size=8, gradient_steps=0, seed=0)
    collector.learn(30)
    assert collector._n_updates == 0 and collector.replay_buffer.size() == 30


class NoOptionsEnv(gym.Env):
    """An env written before gymnasium's reset(options=): reset takes only a seed."""

    observation_space = spaces.Box(-1, 1, (2,), np.float32)
    action_space = spaces.Box(-1, 1, (1,), np.float32)

    def reset(self, seed=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, False, False, {}


def test_env_whose_reset_has_no_options_parameter():
    model = TD3("MlpPolicy", NoOptionsEnv(), learning_starts=5, batch_size=4, seed=0)
    model.learn(10)
    assert model.num_timesteps == 10
    model.get_env().set_options({})  # empty options are not passed either
    model.learn(5, reset_num_timesteps=True)
    assert model.num_timesteps == 5


def test_vec_env_errors_and_indices_as_sb3():
    from rlkit_td3.vec_env import StackedObservations, SubprocVecEnv, VecFrameStack

    venv = DummyVecEnv([lambda: gym.make("Pendulum-v1") for _ in range(3)])
    venv.set_attr("marker", 7, indices=[-1])
    assert venv.get_attr("marker", indices=[2]) == [7] and venv.get_attr("marker", indices=-1) == [7]
    with pytest.raises(IndexError, match=r"\[-3, 3\)"):
        venv.get_attr("marker", indices=[-4])
    with pytest.raises(AssertionError):
        VecFrameStack(venv, n_stack=2, channels_order="not_valid")
    with pytest.raises(ValueError, match="cannot find context for 'illegal_method'"):
        SubprocVecEnv([lambda: gym.make("Pendulum-v1")], start_method="illegal_method")
    image = spaces.Box(0, 255, (3, 8, 8), np.uint8)
    assert StackedObservations.compute_stacking(4, image) == (True, 1, (12, 8, 8), 0)
    assert StackedObservations.compute_stacking(4, spaces.Box(-1, 1, (2, 5))) == (False, -1, (2, 20), -1)
    assert StackedObservations.compute_stacking(2, image, "last") == (False, -1, (3, 8, 16), -1)


# ------------------------------------------------------------------ save_util (its safe subset)
def test_open_path_as_sb3(tmp_path):
    from rlkit_td3.save_util import open_path

    with open_path(tmp_path / "a", "w", suffix="pkl") as fh:
        fh.write(b"x")
    assert (tmp_path / "a.pkl").read_bytes() == b"x"
    with open_path(str(tmp_path / "a"), "read", suffix="pkl") as fh:  # the suffix is tried for a missing path
        assert fh.read() == b"x"
    (tmp_path / "folder.pkl").mkdir()
    with pytest.warns(UserWarning, match="is a folder"):
        open_path(tmp_path / "folder.pkl", "w").close()
    assert (tmp_path / "folder.pkl_2").is_file()
    with pytest.warns(UserWarning, match="does not exist"):
        open_path(tmp_path / "new" / "sub" / "f", "w", suffix="pkl").close()
    assert (tmp_path / "new" / "sub" / "f.pkl").is_file()
    buffer = io.BytesIO()
    assert open_path(buffer, "w") is buffer
    with pytest.raises(TypeError):
        open_path(123, "w")
    with pytest.raises(ValueError, match="'w' or 'r'"):
        open_path(buffer, "randomstuff")
    with open(tmp_path / "a.pkl", "rb") as reader:
        with pytest.raises(ValueError, match="writable"):
            open_path(reader, "w")
    buffer.close()
    with pytest.raises(ValueError, match="closed"):
        open_path(buffer, "r")


_CALLS: list = []


def _record(what):
    _CALLS.append(what)


class _Recorder:
    """Unpickling one of these calls ``_record``: what a hostile pickle could do instead."""

    def __reduce__(self):
        return (_record, ("ran",))


def test_pickles_of_objects_load_only_with_allow_pickle(tmp_path):
    from rlkit_td3.save_util import load_from_pkl, save_to_pkl

    save_to_pkl(tmp_path / "obj", _Recorder())
    assert (tmp_path / "obj.pkl").is_file()
    with pytest.raises(ValueError, match=r"needs .*_record.*allow_pickle=True"):
        load_from_pkl(tmp_path / "obj")
    assert _CALLS == []  # refused before anything ran
    load_from_pkl(tmp_path / "obj", allow_pickle=True)
    assert _CALLS == ["ran"]
    save_to_pkl(tmp_path / "fn", lambda x: 2 * x)  # cloudpickle, as SB3
    with pytest.raises(ValueError, match="cloudpickle"):
        load_from_pkl(tmp_path / "fn")
    assert load_from_pkl(tmp_path / "fn", allow_pickle=True)(4) == 8
    with pytest.raises(TypeError, match="allow_pickle"):
        load_from_pkl(tmp_path / "fn", allow_pickle="yes")


@pytest.mark.parametrize("protocol", [0, 1, 2, 3, 4, 5])
def test_plain_data_pickles_load_without_allow_pickle(tmp_path, protocol):
    import collections
    import pickle

    from rlkit_td3.save_util import load_from_pkl, open_path, save_to_pkl

    data = {
        "list": [1, 2.5, None, True, "s", b"b", b""],  # protocols 0 to 2 write b"" as bytes()
        "set": {1, 2},
        "frozen": frozenset({3}),
        "complex": 1 + 2j,
        "ordered": collections.OrderedDict(a=1),
        "deque": collections.deque([1, 2], maxlen=3),
        "bytearray": bytearray(b"xy"),
        "array": np.arange(6, dtype=np.float32).reshape(2, 3),
        "objects": np.array([1, "a"], dtype=object),
        "scalar": np.float64(0.5),
        "strided": np.arange(6.0).reshape(2, 3)[:, ::2],
        "empty": np.zeros((2, 0)),
    }
    with open(tmp_path / "data.pkl", "wb") as fh:
        pickle.dump(data, fh, protocol=protocol)
    back = load_from_pkl(tmp_path / "data")  # the suffix is tried, as SB3's
    assert back.keys() == data.keys()
    for key, value in data.items():
        if isinstance(value, np.ndarray):
            assert back[key].dtype == value.dtype and np.array_equal(back[key], value)
        else:
            assert back[key] == value and type(back[key]) is type(value)
    with open_path(tmp_path / "t1", "w") as stream:  # a stream handed in is closed afterwards, as SB3's
        save_to_pkl(stream, "foo")
        assert stream.closed
    reader = open_path(tmp_path / "t1", "r")
    assert load_from_pkl(reader) == "foo" and reader.closed


class _Reduced:
    """Pickles as ``function(*args)``: a hand-made pickle naming only allowed globals."""

    def __init__(self, function, *args):
        self.reduced = (function, args)

    def __reduce__(self):
        return self.reduced


def test_plain_data_pickles_cannot_allocate_what_the_file_does_not_hold(tmp_path):
    import pickle

    from rlkit_td3.save_util import load_from_pkl

    reconstruct = np.ndarray.__reduce__(np.zeros(1))[0]  # NumPy's own _reconstruct
    nested_hex = "A" * 64
    for _ in range(30):  # 30 nested hex encodings: 64 GiB from a file of about 2 KiB
        nested_hex = _Reduced(codecs.encode, nested_hex, "hex")
    for bomb, message in (
        (_Reduced(bytearray, 2**40), "bytearray of int"),
        (_Reduced(bytes, 2**40), r"bytes\(...\) with arguments"),
        (_Reduced(reconstruct, np.ndarray, (2**40,), b"b"), "must start empty"),
        (nested_hex, r"_codecs.encode other than \(str, 'latin1'\)"),
        (_Built((1, (2**50,), np.dtype("V0"), False, b"")), r"declares 1125899906842624 items of 0 bytes"),
        (_Built((1, (2**30,), np.dtype("f8"), False, b"12345678")), "more than its 8 bytes"),
    ):
        raw = pickle.dumps(bomb, protocol=2)
        with pytest.raises(ValueError, match=message):
            load_from_pkl(io.BytesIO(raw))
    # NumPy trusts a dtype's pickled flags: an object dtype whose state says "no objects" would make 16 bytes of
    # the file into two object pointers (a segfault when read), a dtype changed after an array uses it likewise
    forged = _Made(np.dtype, ("O", False, True), (3, "|", None, None, None, -1, -1, 0))
    with pytest.raises(ValueError, match="a dtype's state .* is not NumPy's for '|O'"):
        load_from_pkl(io.BytesIO(pickle.dumps(_Built((1, (2,), forged, False, b"A" * 16)), protocol=2)))
    unbuilt = _Made(np.dtype, ("f8", False, True))  # no state yet: an array may not use it
    with pytest.raises(ValueError, match="needs a dtype that has its state"):
        load_from_pkl(io.BytesIO(pickle.dumps(_Built((1, (2,), unbuilt, False, b"A" * 16)), protocol=2)))
    built = np.dtype("f8")
    rebuilt = [
        _Built((1, (1,), built, False, b"A" * 8)),
        _Made(np.dtype, (built,), (3, "|", None, None, None, 64, 1, 63)),  # dtype(built) is built itself
    ]
    with pytest.raises(ValueError, match="gets its state once"):
        load_from_pkl(io.BytesIO(pickle.dumps(rebuilt, protocol=2)))
    # one remembered 64 KiB string copied by bytearray 4000 times: 256 MiB from a file of 130 KiB
    block = b"x" * 65536
    raw = pickle.dumps([_Reduced(bytearray, block) for _ in range(4000)], protocol=5)
    assert len(raw) < 200_000
    with pytest.raises(ValueError, match="more than 64 times its own size"):
        load_from_pkl(io.BytesIO(raw))
    assert len(load_from_pkl(io.BytesIO(pickle.dumps([bytearray(block) for _ in range(40)], 5)))) == 40


class _Made:
    """Pickles as ``function(*args)`` followed by ``BUILD`` with ``state`` (when given)."""

    def __init__(self, function, args, state=None):
        self.reduced = (function, args) if state is None else (function, args, state)

    def __reduce__(self):
        return self.reduced


class _Built:
    """Pickles as NumPy's own array pickle does (an empty array, then ``BUILD``) with a made-up ``state``."""

    def __init__(self, state):
        self.state = state

    def __reduce__(self):
        return (np.ndarray.__reduce__(np.zeros(1))[0], (np.ndarray, (0,), b"b"), self.state)


def test_set_env_takes_force_reset():
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=5, batch_size=4, seed=0)
    model.learn(10)
    model.set_env(gym.make("Pendulum-v1"), force_reset=False)
    assert model._last_obs is None  # the new env is reset before the next step either way
    model.learn(5, reset_num_timesteps=False)
    assert model.num_timesteps == 15
    with pytest.raises(TypeError, match="force_reset"):
        model.set_env(gym.make("Pendulum-v1"), force_reset="no")


def test_load_ignores_custom_objects_keys_the_file_lacks(tmp_path):
    model = TD3("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [8]}, seed=0)
    model.save(tmp_path / "m")
    with pytest.warns(UserWarning, match=r"\['dummy'\] name no entry"):
        loaded = TD3.load(tmp_path / "m", custom_objects={"learning_rate": 2e-5, "dummy": 1.0})
    assert loaded.learning_rate(1.0) == 2e-5


def test_integral_floats_where_sb3_takes_them(tmp_path):
    from rlkit_td3.results_plotter import X_TIMESTEPS, plot_results

    model = TD3("MlpPolicy", Monitor(gym.make("Pendulum-v1"), str(tmp_path)), learning_starts=5, batch_size=4)
    model.learn(2e2)
    assert model.num_timesteps == 200
    with pytest.raises(TypeError, match="total_timesteps"):
        model.learn(2.5)
    plot_results([str(tmp_path)], 1e5, X_TIMESTEPS, "Pendulum")
    with pytest.raises(ValueError, match="num_timesteps"):
        plot_results([str(tmp_path)], 1.5, X_TIMESTEPS, "Pendulum")


def test_rmsprop_tf_like_matches_tensorflow_formula():
    from rlkit_td3.sb2_compat import RMSpropTFLike

    param = torch.nn.Parameter(torch.tensor([1.0, -2.0], dtype=torch.float64))
    opt = RMSpropTFLike([param], lr=0.1, alpha=0.9, eps=1e-3)
    (param**2).sum().backward()
    opt.step()
    grad = torch.tensor([2.0, -4.0], dtype=torch.float64)
    square_avg = 0.9 * 1.0 + 0.1 * grad**2  # the average starts at one, eps inside the square root
    expected = torch.tensor([1.0, -2.0], dtype=torch.float64) - 0.1 * grad / torch.sqrt(square_avg + 1e-3)
    torch.testing.assert_close(param.detach(), expected, rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        RMSpropTFLike([param], lr=-1.0)
    model = TD3(
        "MlpPolicy", "Pendulum-v1", learning_starts=5, batch_size=4, policy_kwargs={"optimizer_class": RMSpropTFLike}
    )
    model.learn(10)
    assert isinstance(model.policy.actor_optimizer, RMSpropTFLike)


def test_constant_learning_rate_equals_its_number():
    model = TD3("MlpPolicy", "Pendulum-v1", learning_rate=2e-5)
    assert model.learning_rate == 2e-5 and model.learning_rate != 3e-5 and model.learning_rate(0.5) == 2e-5
    assert {model.learning_rate: 1}[2e-5] == 1


def test_lr_schedule_is_the_learning_rate_schedule_as_in_sb3():
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=20, batch_size=8, policy_kwargs={"net_arch": [8]}, seed=0)
    model.learn(40)
    assert model.lr_schedule is model.learning_rate
    before = [p.detach().clone() for p in model.critic.parameters()]
    model.lr_schedule = lambda _: 0.0  # SB3's test_cnn freezes the networks so
    model.train(gradient_steps=2, batch_size=8)
    assert all(torch.equal(a, b) for a, b in zip(before, model.critic.parameters()))
    model.lr_schedule = 1e-2
    model.train(gradient_steps=2, batch_size=8)
    assert not all(torch.equal(a, b) for a, b in zip(before, model.critic.parameters()))
    with pytest.raises(ValueError, match="lr_schedule"):
        model.lr_schedule = -1.0

"""Safe loading, one test group per class of defect (issue 15): trust switches take only real bools (1), a file's
parts must agree with each other and with the model (2), loading uses bounded memory (3), and the caller's
mistakes are not blamed on the file (9); plus Stable-Baselines3's ``save``/``load`` path and signature rules."""

from __future__ import annotations

import copy
import inspect
import io
import json
import pickle

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlkit_td3 import DDPG, TD3
from rlkit_td3.fileio.serialization import ModelFileError, read_model_zip
from tests.model_fuzz import _decode, _encode, _entries, _npy, _zip, run_isolated

TINY = dict(learning_starts=50, batch_size=16, buffer_size=500, policy_kwargs={"net_arch": [8]}, seed=0)


@pytest.fixture(scope="module")
def genuine(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("genuine") / "m.zip"
    TD3("MlpPolicy", "Pendulum-v1", **TINY).learn(120).save(path, include_buffer=True)
    # Load it once here, so that the forked children measuring memory below find every module of the load path
    # imported (and compiled: a fresh checkout has no bytecode cache, and compiling adds megabytes to a child).
    TD3.load(path, env=gym.make("Pendulum-v1"))
    return path.read_bytes()


def _write(tmp_path, data: bytes, name: str = "case.zip"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _mutated(genuine: bytes, mutate) -> bytes:
    parts = copy.deepcopy(_decode(genuine))
    mutate(parts)
    return _encode(parts)


# ---------------------------------------------------------------------------------------------------------
# class 1: switches that change what is trusted accept only a real bool


class _CreatesFile:
    def __init__(self, target: str) -> None:
        self.target = target

    def __reduce__(self):
        return (open, (self.target, "w"))


@pytest.mark.parametrize("value", ["false", "0", "no", "", 0, 1, None])
def test_allow_pickle_must_be_a_bool_and_the_pickle_never_runs(tmp_path, genuine, value):
    marker = tmp_path / "pwned"
    entries = _entries(genuine)
    meta = json.loads(entries["metadata.json"])
    meta["schedules"]["learning_rate"] = {"pickled": True}
    meta["pickled_keys"] = ["learning_rate"]
    evil = pickle.dumps({"learning_rate": _CreatesFile(str(marker))})
    path = _write(tmp_path, _zip({**entries, "metadata.json": json.dumps(meta).encode(), "pickled.pkl": evil}))
    with pytest.raises(TypeError, match="allow_pickle"):
        TD3.load(path, allow_pickle=value)
    with pytest.raises(TypeError, match="allow_pickle"):
        read_model_zip(path, allow_pickle=value)
    assert not marker.exists()
    # checked before the file is opened: a missing file still reports the bad switch
    with pytest.raises(TypeError, match="allow_pickle"):
        TD3.load(tmp_path / "missing.zip", allow_pickle=value)


def test_a_numpy_false_allow_pickle_is_false_and_the_pickle_never_runs(tmp_path, genuine):
    # a NumPy bool is a bool, as for every switch (rlkit_td3.checks.arguments.check_bool)
    marker = tmp_path / "pwned"
    entries = _entries(genuine)
    meta = json.loads(entries["metadata.json"])
    meta["schedules"]["learning_rate"] = {"pickled": True}
    meta["pickled_keys"] = ["learning_rate"]
    evil = pickle.dumps({"learning_rate": _CreatesFile(str(marker))})
    path = _write(tmp_path, _zip({**entries, "metadata.json": json.dumps(meta).encode(), "pickled.pkl": evil}))
    with pytest.raises(ValueError, match="allow_pickle=True"):
        TD3.load(path, allow_pickle=np.False_)
    assert read_model_zip(path, allow_pickle=np.False_)[2] == {}
    assert not marker.exists()


@pytest.mark.parametrize("name", ["print_system_info", "force_reset"])
def test_other_load_switches_must_be_bools(tmp_path, genuine, name):
    path = _write(tmp_path, genuine)
    with pytest.raises(TypeError, match=name):
        TD3.load(path, **{name: "False"})


# ---------------------------------------------------------------------------------------------------------
# class 2: a file's parts must agree with each other and with the model


def _adam_moment_shape(parts):
    state = parts["tensors"]["actor_optimizer"]["state"]
    state[0]["exp_avg"] = state[0]["exp_avg"].t().contiguous()


def _adam_moment_dtype(parts):
    state = parts["tensors"]["critic_optimizer"]["state"]
    state[1]["exp_avg_sq"] = state[1]["exp_avg_sq"].to(torch.int64)


def _adam_step(parts):
    parts["tensors"]["actor_optimizer"]["state"][0]["step"] = torch.tensor(-3.0)


def _adam_groups(parts):
    parts["tensors"]["critic_optimizer"]["param_groups"][0]["params"].append(17)


def _adam_switch(parts):
    parts["tensors"]["actor_optimizer"]["param_groups"][0]["amsgrad"] = True


def _last_obs(parts):
    parts["tensors"]["training_state"]["last_obs"] = torch.zeros(1, 5)


def _buffer_pos(parts):
    parts["buffer"]["meta"]["pos"] = parts["buffer"]["meta"]["size"] + 40


def _buffer_rows(parts):
    parts["buffer"]["arrays"]["rewards"] = parts["buffer"]["arrays"]["rewards"][:-1]


def _buffer_dtype(parts):
    parts["buffer"]["arrays"]["actions"] = parts["buffer"]["arrays"]["actions"].astype(np.float64)


def _noise_dim(parts):
    parts["meta"]["action_noise"]["mean"] = [0.0, 0.0, 0.0]
    parts["meta"]["action_noise"]["sigma"] = [0.1, 0.1, 0.1]


def _n_envs(parts):
    parts["meta"]["n_envs"] = 4


def _schedule_string(parts):
    parts["meta"]["schedules"]["learning_rate"] = {"type": "constant", "value": "1e-3"}


def _schedule_beyond_float32(parts):
    # fuzz case 898 (benchmarks/results/fuzz_load_be8527a.txt): 1e308 loaded, then training raised NonFiniteError
    parts["meta"]["schedules"]["learning_rate"] = {"type": "constant", "value": 1e308}


def _counters(parts):
    parts["meta"]["counters"]["episode_num"] = parts["meta"]["counters"]["num_timesteps"] + 1


def _rng_state(parts):
    parts["meta"]["training_state"]["warmup_rng"]["state"]["state"]["inc"] = -1


def _smoothing_rng(parts):
    # 24 bytes: neither a CPU generator's state (5056) nor a CUDA one's (16)
    parts["tensors"]["training_state"]["smoothing_rng"] = torch.zeros(24, dtype=torch.uint8)


def _policy_shape(parts):
    state = parts["tensors"]["policy"]
    state["actor.mu.0.weight"] = state["actor.mu.0.weight"].t().contiguous()  # same count, another shape


DISAGREEMENTS = {
    "adam moment shape": (_adam_moment_shape, r"actor_optimizer\.pth.*exp_avg.*shape"),
    "adam moment dtype": (_adam_moment_dtype, r"critic_optimizer\.pth.*exp_avg_sq.*int64"),
    "adam step": (_adam_step, r"actor_optimizer\.pth.*step"),
    "adam param ids": (_adam_groups, r"critic_optimizer\.pth.*params"),
    "adam switch": (_adam_switch, r"actor_optimizer\.pth.*amsgrad"),
    "last observation": (_last_obs, r"last_obs.*\(1, 3\)"),
    "buffer position": (_buffer_pos, r"replay buffer.*pos"),
    "buffer rows": (_buffer_rows, r"rewards\.npy"),
    "buffer dtype": (_buffer_dtype, r"actions\.npy.*float64"),
    "noise dimension": (_noise_dim, r"action_noise\.mean.*action dimension"),
    "n_envs": (_n_envs, r"n_envs"),
    "schedule type": (_schedule_string, r"schedules\.learning_rate\.value"),
    "schedule beyond float32": (_schedule_beyond_float32, r"schedules\.learning_rate\.value.*1e\+308"),
    "counters": (_counters, r"episodes in"),
    "rng state": (_rng_state, r"warmup_rng.*inc"),
    "smoothing rng": (_smoothing_rng, r"smoothing_rng"),
    "policy tensor shape": (_policy_shape, r"policy\.pth.*actor\.mu\.0\.weight"),
}


@pytest.mark.parametrize("name", sorted(DISAGREEMENTS))
def test_parts_that_disagree_are_refused_naming_the_entry(tmp_path, genuine, name):
    mutate, pattern = DISAGREEMENTS[name]
    path = _write(tmp_path, _mutated(genuine, mutate))
    with pytest.raises(ModelFileError, match=pattern):
        TD3.load(path)


def _cuda_smoothing_rng(parts):
    """The smoothing generator's state as a model trained on a GPU saves it: CUDA's Philox seed and offset."""
    seed, offset = 1234, 4096
    state = np.array([seed, offset], dtype="<i8").view(np.uint8)
    parts["tensors"]["training_state"]["smoothing_rng"] = torch.from_numpy(state.copy())


def test_a_model_saved_on_a_gpu_loads_on_the_cpu_with_a_reseeded_smoothing_generator(tmp_path, genuine):
    """A GPU's generator state cannot be set on a CPU generator: the rest of the file loads as saved, the smoothing
    generator is seeded from the saved state (the same seed at every load), and a warning says the run does not go
    on bit for bit."""
    path = _write(tmp_path, _mutated(genuine, _cuda_smoothing_rng))
    plain = TD3.load(_write(tmp_path, genuine, "genuine.zip"), env=gym.make("Pendulum-v1"))
    states = []
    for _ in range(2):
        with pytest.warns(UserWarning, match=r"smoothing noise generator was saved on another kind of device"):
            model = TD3.load(path, env=gym.make("Pendulum-v1"))
        states.append(model._smoothing_rng.get_state())
        for (name, a), b in zip(plain.policy.state_dict().items(), model.policy.state_dict().values()):
            assert torch.equal(a, b), name
        assert model.num_timesteps == plain.num_timesteps == 120
    assert torch.equal(states[0], states[1])
    assert not torch.equal(states[0], plain._smoothing_rng.get_state())
    model.learn(60, reset_num_timesteps=False)  # trains on from there
    assert model.num_timesteps == 180


def test_wrong_shape_adam_moment_never_reaches_the_fused_kernel(tmp_path, genuine):
    # Before the checks, this file loaded and the next learn() ran the fused Adam kernel over mismatched
    # buffers (heap corruption: a segfault or a glibc abort). In a child, so that a crash fails only this test.
    path = _write(tmp_path, _mutated(genuine, _adam_moment_shape))

    def load_and_train() -> str:
        try:
            model = TD3.load(path, env=gym.make("Pendulum-v1"))
        except ModelFileError:
            return "refused"
        model.learn(50, reset_num_timesteps=False)
        return "trained"

    outcome, _ = run_isolated(load_and_train, memory_cap=2**30, timeout=60)
    assert outcome == "refused"


def test_genuine_file_still_loads_and_trains(tmp_path, genuine):
    model = TD3.load(_write(tmp_path, genuine), env=gym.make("Pendulum-v1"))
    assert model.replay_buffer.size() == 120
    model.learn(50, reset_num_timesteps=False)
    assert model.num_timesteps == 170


# ---------------------------------------------------------------------------------------------------------
# class 3: loading a small file uses memory on the scale of the model it describes


def _peak_of_load(path) -> tuple[str, float]:
    def load() -> str:
        try:
            TD3.load(path)
        except ModelFileError as exc:
            return f"refused: {exc}"
        return "loaded"

    outcome, stats = run_isolated(load, memory_cap=2**30, timeout=60)
    return outcome, stats["peak_rss_delta"]


def test_a_compressed_oversized_entry_is_refused_before_it_is_read(tmp_path, genuine):
    # a 256 MB tensor of zeros deflates to ~250 kB (under the 2000x ratio limit), while the networks the
    # metadata declares need a few kB
    buf = io.BytesIO()
    torch.save({"huge": torch.zeros(64 * 2**20)}, buf)
    path = _write(tmp_path, _zip({**_entries(genuine), "policy.pth": buf.getvalue()}))
    assert path.stat().st_size < 2**20
    _, genuine_peak = _peak_of_load(_write(tmp_path, genuine, "genuine.zip"))
    outcome, peak = _peak_of_load(path)
    assert outcome.startswith("refused") and "policy.pth" in outcome, outcome
    assert peak < max(2 * genuine_peak, 16 * 2**20), (peak, genuine_peak)


def test_expensive_classes_named_by_the_file_are_not_built(tmp_path, genuine):
    def transformer(parts):
        parts["meta"]["policy"]["kwargs"]["activation_fn"] = "torch.nn.Transformer"

    _, genuine_peak = _peak_of_load(_write(tmp_path, genuine, "genuine.zip"))
    outcome, peak = _peak_of_load(_write(tmp_path, _mutated(genuine, transformer)))
    assert outcome.startswith("refused") and "activation_fn" in outcome, outcome
    assert peak < max(2 * genuine_peak, 32 * 2**20), (peak, genuine_peak)  # a Transformer: ~700 MB before


def test_a_buffer_array_header_cannot_make_loading_allocate(tmp_path, genuine):
    def lie(parts):
        rewards = parts["buffer"]["arrays"].pop("rewards")
        parts["buffer"]["raw"]["rewards.npy"] = _npy(rewards, shape=(2**33,))  # the data is 120 rows

    _, genuine_peak = _peak_of_load(_write(tmp_path, genuine, "genuine.zip"))
    outcome, peak = _peak_of_load(_write(tmp_path, _mutated(genuine, lie)))
    assert outcome.startswith("refused") and "rewards.npy" in outcome, outcome
    assert peak < max(2 * genuine_peak, 32 * 2**20), (peak, genuine_peak)  # the header asks for 32 GiB


# ---------------------------------------------------------------------------------------------------------
# class 9: the caller's mistakes are the caller's, and SB3's persistence API


def test_unknown_keyword_is_a_type_error_naming_it(tmp_path, genuine):
    path = _write(tmp_path, genuine)
    with pytest.raises(TypeError, match="not_a_setting") as info:
        TD3.load(path, not_a_setting=1)
    assert not isinstance(info.value, ModelFileError)
    # policy_kwargs: the stored networks fix them; different ones are a ValueError (as SB3's), equal ones accepted
    with pytest.raises(ValueError, match="policy_kwargs"):
        TD3.load(path, policy_kwargs={"net_arch": [7]})


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"learning_starts": -5}, ValueError, "learning_starts"),
        ({"batch_size": "big"}, TypeError, "batch_size"),
        ({"custom_objects": {"gamma": 1.5}}, ValueError, "gamma"),
        ({"custom_objects": {"learning_rate": -1.0}}, ValueError, "learning_rate"),
        ({"custom_objects": {"activation_fn": "relu"}}, TypeError, "activation_fn"),
        ({"custom_objects": [1]}, TypeError, "custom_objects"),
        ({"device": "no-such-device"}, ValueError, "device"),
    ],
)
def test_bad_arguments_are_not_blamed_on_the_file(tmp_path, genuine, kwargs, error, pattern):
    path = _write(tmp_path, genuine)
    with pytest.raises(error, match=pattern) as info:
        TD3.load(path, **kwargs)
    assert not isinstance(info.value, ModelFileError), info.value
    assert "malformed" not in str(info.value)


def test_valid_overrides_apply(tmp_path, genuine):
    model = TD3.load(_write(tmp_path, genuine), learning_starts=7, custom_objects={"learning_rate": 3e-4})
    assert model.learning_starts == 7 and model.learning_rate(1.0) == 3e-4


def test_load_has_the_sb3_signature():
    names = list(inspect.signature(TD3.load).parameters)
    assert names == [
        "path",
        "env",
        "device",
        "custom_objects",
        "print_system_info",
        "force_reset",
        "allow_pickle",
        "kwargs",
    ]
    assert list(inspect.signature(DDPG.load).parameters) == names


def test_save_and_load_add_zip_like_sb3(tmp_path):
    model = TD3("MlpPolicy", "Pendulum-v1", **TINY)
    model.save(tmp_path / "name")
    assert (tmp_path / "name.zip").is_file() and not (tmp_path / "name").exists()
    model.save(str(tmp_path / "other.zip"))
    assert (tmp_path / "other.zip").is_file() and not (tmp_path / "other.zip.zip").exists()
    loaded = TD3.load(tmp_path / "name")  # finds name.zip
    assert loaded.buffer_size == 500
    with pytest.raises(FileNotFoundError):
        TD3.load(tmp_path / "missing")


def test_print_system_info_prints_saved_and_current_versions(tmp_path, genuine, capsys):
    TD3.load(_write(tmp_path, genuine), print_system_info=True)
    out = capsys.readouterr().out
    assert f"torch: {torch.__version__} | {torch.__version__}" in out
    assert "numpy:" in out and "gymnasium:" in out and "python:" in out
    TD3.load(_write(tmp_path, genuine))
    assert capsys.readouterr().out == ""


def test_force_reset_true_resets_the_envs_before_the_next_step_and_false_keeps_the_last_observation(tmp_path):
    # force_reset=True (the default): no last observation is kept (as SB3's), every env is due for a reset before
    # the next step (at an episode boundary the reset the saved run would do next, which keeps exact resume).
    # force_reset=False: the env given stands where the saved run left it, the saved last observation goes on.
    model = TD3("MlpPolicy", "Pendulum-v1", **TINY).learn(30)
    path = tmp_path / "m.zip"
    model.save(path)
    loaded = TD3.load(path, env=gym.make("Pendulum-v1"), force_reset=True)
    assert loaded._last_obs is None and loaded._needs_reset.all()
    kept = TD3.load(path, env=model.get_env(), force_reset=False)
    assert np.array_equal(kept._last_obs, model._last_obs) and not kept._needs_reset.any()


def test_an_override_that_makes_file_values_valid_is_not_needed_by_the_file_check(tmp_path):
    # the file-only check uses the file's own values, never the constructor's defaults, for what the file has
    model = TD3("MlpPolicy", "Pendulum-v1", **{**TINY, "buffer_size": 20, "batch_size": 8})
    model.save(tmp_path / "m.zip")
    loaded = TD3.load(tmp_path / "m.zip", batch_size=64)  # larger than buffer_size: drawn with replacement, as SB3
    assert loaded.batch_size == 64 and loaded.buffer_size == 20
    with pytest.raises(ValueError, match="batch_size") as info:
        TD3.load(tmp_path / "m.zip", batch_size=0)  # the caller's mistake, not the file's
    assert not isinstance(info.value, ModelFileError)


def test_a_declared_buffer_larger_than_memory_is_refused_before_allocating(tmp_path, genuine):
    def huge(parts):
        parts["meta"]["hyperparameters"]["buffer_size"] = 2**40  # 2**40 rows of Pendulum: 44 TiB
        parts["buffer"] = None

    path = _write(tmp_path, _mutated(genuine, huge))
    with pytest.raises(ModelFileError, match=r"replay buffer of 1099511627776 transitions.*buffer_size="):
        TD3.load(path)
    assert TD3.load(path, buffer_size=1000).replay_buffer.buffer_size == 1000  # the caller's way out

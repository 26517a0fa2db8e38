"""Issue 45, the third campaign's broken promises (the library's; the CLI's are in test_cli_hostile.py): the
plain-data reader builds only what its bytes hold, SB3-style buffer input is honest, the caller's threads come
back, the JSON depth check is cheap, and a forged n-step buffer file is refused."""

from __future__ import annotations

import io
import json
import os
import tracemalloc
import warnings
import zipfile

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from rlkit_td3 import TD3, utils
from rlkit_td3.buffers import NStepReplayBuffer, PrioritizedReplayBuffer, ReplayBuffer
from rlkit_td3.fileio.file_reader import json_depth
from rlkit_td3.fileio.serialization import ModelFileError
from rlkit_td3.save_util import load_from_pkl
from rlkit_td3.utils import ThreadOversubscriptionWarning

MiB = 2**20
# the Security page's bound on what a plain-data pickle may take while it loads: 80 times its size plus 8 MiB
PICKLE_PEAK_FACTOR, PICKLE_PEAK_FLOOR = 80, 8 * MiB


def _peak_while(fn, *args):
    """(what ``fn`` returned or raised, the peak traced memory while it ran)."""
    tracemalloc.start()
    try:
        try:
            result: object = fn(*args)
        except Exception as exc:  # noqa: BLE001  (the caller inspects it)
            result = exc
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ---------------------------------------------------------------------------- 1. arrays sized by a number
@pytest.mark.parametrize(
    "raw",
    [
        b"\x80\x02cnumpy\nndarray\n((J\x00\x00\x00\x08tC\x02f8tR.",  # REDUCE: ndarray((2**27,), "f8"), 1 GiB
        b"\x80\x02cnumpy\nndarray\nJ\x00\x00\x00\x08\x85\x81.",  # NEWOBJ: ndarray.__new__(ndarray, 2**27)
        b"(cnumpy\nndarray\nJ\x00\x00\x00\x08o.",  # OBJ
        b"(J\x00\x00\x00\x08inumpy\nndarray\n.",  # INST
        b"\x80\x02cnumpy\nndarray\n((K\x10tC\x02u1tR.",  # 16 bytes of freed heap memory: an information leak
        b"\x80\x02cnumpy.core.multiarray\nscalar\ncnumpy\ndtype\nX\x0b\x00\x00\x00V1000000000\x85R\x85R.",  # 1 GB void
    ],
)
def test_no_array_or_scalar_is_sized_by_a_number(tmp_path, raw):
    path = tmp_path / "hostile.pkl"
    path.write_bytes(raw)
    result, peak = _peak_while(load_from_pkl, path)
    assert isinstance(result, ModelFileError), result
    assert peak < 16 * MiB


def test_numpys_own_pickles_still_load(tmp_path):
    import pickle

    values = {
        "a": np.arange(12, dtype=">i4").reshape(3, 4)[:, ::2],
        "s": np.float32(1.5),
        "v": np.void(b"abcd"),
        "o": np.array([1, "x", None], dtype=object),
    }
    for protocol in range(6):
        path = tmp_path / f"p{protocol}.pkl"
        path.write_bytes(pickle.dumps(values, protocol))
        loaded = load_from_pkl(path)
        assert loaded["a"].tolist() == values["a"].tolist() and loaded["s"] == values["s"]
        assert loaded["v"] == values["v"] and loaded["o"].tolist() == values["o"].tolist()


# ---------------------------------------------------------------------------- 2. memory from opcodes alone
@pytest.mark.parametrize(
    "unit",
    [b"\x8f", b"}", b"]", b"\x8f\x94", b"(\x91", b"(", b"}\x94h\x00", b"J\x00\x00\x01\x00"],
    ids=["EMPTY_SET", "EMPTY_DICT", "EMPTY_LIST", "set+MEMOIZE", "FROZENSET", "MARK", "dict+memo+get", "BININT"],
)
def test_opcodes_without_a_constructor_are_bounded_by_the_file_size(tmp_path, unit):
    size = 600_000
    raw = b"\x80\x04](" + unit * (size // len(unit)) + b"e."
    path = tmp_path / "opcodes.pkl"
    path.write_bytes(raw)
    result, peak = _peak_while(load_from_pkl, path)
    assert isinstance(result, (ModelFileError, list))
    assert peak <= PICKLE_PEAK_FACTOR * len(raw) + PICKLE_PEAK_FLOOR, peak / len(raw)


def test_the_issues_set_bomb_is_refused(tmp_path):
    path = tmp_path / "sets.pkl"
    path.write_bytes(b"\x80\x04](" + b"\x8f" * (23 * 2**20 // 10) + b"e.")
    result, peak = _peak_while(load_from_pkl, path)
    assert isinstance(result, ModelFileError) and "times its own size" in str(result)
    assert peak <= PICKLE_PEAK_FACTOR * path.stat().st_size + PICKLE_PEAK_FLOOR


def test_genuine_pickles_of_small_items_load(tmp_path):
    import pickle

    objects = [list(range(10**5)), set(range(50_000)), [str(i) for i in range(20_000)], [{"a": i} for i in range(5000)]]
    for obj in objects:
        for protocol in (0, 2, 4, 5):
            path = tmp_path / "genuine.pkl"
            path.write_bytes(pickle.dumps(obj, protocol))
            assert load_from_pkl(path) == obj


# ---------------------------------------------------------------------------- 3. SB3-style flags
OBS = spaces.Box(-1, 1, (2,), np.float32)
ACT = spaces.Box(-1, 1, (1,), np.float32)


def _sb3_add(buffer, done, infos):
    o = np.zeros((1, 2), np.float32)
    buffer.add(o, o, np.zeros((1, 1), np.float32), np.zeros(1, np.float32), done, infos)


@pytest.mark.parametrize("kind", [ReplayBuffer, NStepReplayBuffer])
@pytest.mark.parametrize(
    ("done", "infos"),
    [
        (np.array([True]), [{"TimeLimit.truncated": "False"}]),
        (["False"], [{}]),
        (np.array([0.5]), [{}]),
        ([None], [{}]),
        (np.array([True]), [{"TimeLimit.truncated": 2}]),
        (np.array([True]), [{"TimeLimit.truncated": None}]),
    ],
)
def test_sb3_flags_that_are_not_booleans_are_refused(kind, done, infos):
    buffer = kind(10, OBS, ACT)
    with pytest.raises(ValueError, match="booleans"):
        _sb3_add(buffer, done, infos)
    assert buffer.size() == 0


@pytest.mark.parametrize(("done", "timeout"), [(True, True), (np.array([1]), np.True_), ([1.0], 0), ([False], False)])
def test_sb3_flags_as_booleans_or_zero_one_are_stored(done, timeout):
    buffer = ReplayBuffer(10, OBS, ACT)
    _sb3_add(buffer, np.atleast_1d(done), [{"TimeLimit.truncated": timeout}])
    ended = bool(np.atleast_1d(done)[0])
    assert buffer.truncated[0] == bool(timeout) and buffer.terminated[0] == (ended and not bool(timeout))


# ---------------------------------------------------------------------------- 4. the caller's threads
def test_threads_come_back_when_the_oversubscription_warning_is_an_error(monkeypatch):
    monkeypatch.setattr(utils, "_thread_warning_given", False)
    monkeypatch.setattr(utils, "thread_oversubscription", lambda threads=None: "busy (a test)")
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=10, policy_kwargs={"net_arch": [8]}, seed=0)
    before = torch.get_num_threads()
    model.torch_num_threads = before + 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ThreadOversubscriptionWarning):
                model.learn(20)
        assert torch.get_num_threads() == before
    finally:
        torch.set_num_threads(before)


# ---------------------------------------------------------------------------- 6. the JSON depth check's memory
def test_json_depth_counts_brackets_outside_strings_only():
    doc = {"a": ["[[[{", {"b": '\\\\"[[', "c": [[]]}], "d": "\\"}
    assert json_depth(json.dumps(doc).encode()) == 5
    assert json_depth(b"[" * 70_000 + b"]" * 70_000) == 70_000  # across chunks
    long = json.dumps({"s": '\\"' * 50_000 + "[" * 10, "t": [[1]]}).encode()
    assert json_depth(long) == 3


@pytest.mark.parametrize("text", ["x" * 7_000_000, "\\" * 3_500_000, "\u00e9" * 3_000_000])
def test_a_model_file_with_a_multi_megabyte_string_loads_in_bounded_memory(tmp_path, text):
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=10, policy_kwargs={"net_arch": [8]}, seed=0)
    path = tmp_path / "model.zip"
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    metadata = json.loads(entries["metadata.json"])
    metadata["note"] = text
    entries["metadata.json"] = json.dumps(metadata).encode()
    forged = tmp_path / "forged.zip"
    with zipfile.ZipFile(forged, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    assert forged.stat().st_size < 200_000
    result, peak = _peak_while(TD3.load, forged)
    assert isinstance(result, (TD3, ModelFileError)), result
    # the document itself (up to 8 MiB, a few copies while it is read and decoded) and nothing per character
    assert peak < 6 * len(entries["metadata.json"]) + 32 * MiB, peak / MiB


# ---------------------------------------------------------------------------- 8. forged n-step links
def _filled_n_step_buffer(kind=NStepReplayBuffer, **kwargs) -> NStepReplayBuffer:
    buffer = kind(16, OBS, ACT, n_envs=2, n_steps=3, gamma=0.9, **kwargs)
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(2, 2)).astype(np.float32)
    for t in range(5):
        nxt = rng.normal(size=(2, 2)).astype(np.float32)
        term = np.array([t == 2, False])
        buffer.add(obs, nxt, np.zeros((2, 1), np.float32), np.ones(2, np.float32), term, np.zeros(2, bool))
        obs = np.where(term[:, None], rng.normal(size=(2, 2)).astype(np.float32), nxt)
    return buffer


def _forge(raw: bytes, links=None, last_row=None) -> bytes:
    entries = {}
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        for name in archive.namelist():
            entries[name] = archive.read(name)
    if links is not None:
        array = np.load(io.BytesIO(entries["next_row.npy"]))
        array = links(array.copy())
        out = io.BytesIO()
        np.save(out, array)
        entries["next_row.npy"] = out.getvalue()
    if last_row is not None:
        meta = json.loads(np.load(io.BytesIO(entries["meta.npy"])).tobytes())
        meta["last_row"] = last_row
        out = io.BytesIO()
        np.save(out, np.frombuffer(json.dumps(meta).encode(), np.uint8))
        entries["meta.npy"] = out.getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return out.getvalue()


def _set(row, value):
    def change(links):
        links[row] = value
        return links

    return change


FORGERIES = {
    "to an unfilled row": dict(links=_set(0, 12)),
    "to itself": dict(links=_set(0, 0)),
    "to another episode's row": dict(links=_set(0, 3)),  # row 3 is env 1's second transition
    "from a terminated row": dict(links=_set(4, 6)),  # env 0 terminated at step 2 (row 4)
    "backwards": dict(links=_set(8, 6)),
    "two predecessors": dict(links=_set(1, 2)),  # env 1's first row onto env 0's second (already linked from 0)
    "last row past the filled part": dict(last_row=[12, 9]),
}


@pytest.mark.parametrize("kind", [NStepReplayBuffer, PrioritizedReplayBuffer])
@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_a_forged_n_step_buffer_file_is_refused_before_anything_loads(kind, forgery):
    genuine = _filled_n_step_buffer(kind).to_bytes()
    target = _filled_n_step_buffer(kind)
    target.load(io.BytesIO(genuine))  # the genuine file loads
    fresh = kind(16, OBS, ACT, n_envs=2, n_steps=3, gamma=0.9)
    with pytest.raises(ModelFileError, match="next_row|last_row"):
        fresh.load(io.BytesIO(_forge(genuine, **FORGERIES[forgery])))
    assert fresh.size() == 0 and np.all(fresh.next_row == -1)


def test_forged_memory_optimized_links_are_refused():
    genuine = _filled_n_step_buffer(optimize_memory_usage=True).to_bytes()
    fresh = NStepReplayBuffer(16, OBS, ACT, n_envs=2, n_steps=3, gamma=0.9, optimize_memory_usage=True)
    fresh.load(io.BytesIO(genuine))
    assert fresh.size() > 0
    for change in (_set(0, 8), _set(0, 0), _set(1, 3)):  # env 1's ring, itself, a slot further on
        fresh = NStepReplayBuffer(16, OBS, ACT, n_envs=2, n_steps=3, gamma=0.9, optimize_memory_usage=True)
        with pytest.raises(ModelFileError, match="next_row"):
            fresh.load(io.BytesIO(_forge(genuine, links=change)))


def test_the_helpers_forge_what_they_say():
    genuine = _filled_n_step_buffer()
    assert genuine.next_row[:10].tolist() == [2, 3, 4, 5, -1, 7, 8, 9, -1, -1]
    assert genuine.terminated[4] and genuine._last_row.tolist() == [8, 9]
    assert os.path.basename(__file__) == "test_promises_round3.py"


# ---------------------------------------------------------------------------- the defensible items, decided
def test_a_callers_buffer_size_that_does_not_fit_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="buffer_size=1000000000000000") as caught:
        TD3("MlpPolicy", "Pendulum-v1", buffer_size=10**15)
    assert not isinstance(caught.value, ModelFileError)
    path = tmp_path / "m.zip"
    TD3("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [8]}).save(path)
    with pytest.raises(ValueError, match="buffer_size=1000000000000000 passed to load") as caught:
        TD3.load(path, buffer_size=10**15)
    assert not isinstance(caught.value, ModelFileError)


def test_logger_set_level_takes_ints_only():
    from rlkit_td3.logger import DEBUG, configure

    logger = configure(None, ["stdout"])
    for level in ("debug", None, 1.5, True):
        with pytest.raises(TypeError, match="level must be an int"):
            logger.set_level(level)
    logger.set_level(np.int64(DEBUG))
    assert logger.level == DEBUG
    logger.info("still works")


@pytest.mark.parametrize("eps", [float("nan"), float("inf"), -0.1, "0.1"])
def test_identity_env_box_refuses_an_eps_that_is_not_a_finite_tolerance(eps):
    from rlkit_td3.envs import IdentityEnvBox

    with pytest.raises(ValueError, match="eps must be a finite number"):
        IdentityEnvBox(eps=eps)
    assert IdentityEnvBox(eps=0).eps == 0.0


def test_vec_transpose_image_refuses_a_channels_first_image():
    from rlkit_td3.vec_env import DummyVecEnv, VecTransposeImage

    class Image(__import__("gymnasium").Env):
        def __init__(self, shape):
            self.observation_space = spaces.Box(0, 255, shape, np.uint8)
            self.action_space = spaces.Box(-1, 1, (1,), np.float32)

        def reset(self, *, seed=None, options=None):
            return self.observation_space.sample(), {}

        def step(self, action):
            return self.observation_space.sample(), 0.0, False, False, {}

    with pytest.raises(ValueError, match="already channels-first"):
        VecTransposeImage(DummyVecEnv([lambda: Image((3, 16, 16))]))
    assert VecTransposeImage(DummyVecEnv([lambda: Image((16, 16, 3))])).observation_space.shape == (3, 16, 16)


def test_learn_on_several_envs_ends_at_the_first_multiple_of_their_count():
    from rlkit_td3.env_util import make_vec_env

    env = make_vec_env("Pendulum-v1", n_envs=3, seed=0)
    model = TD3("MlpPolicy", env, learning_starts=100, policy_kwargs={"net_arch": [8]}, seed=0)
    model.learn(7)
    assert model.num_timesteps == 9  # documented on the migration page: one transition per env per step


def test_parse_json_of_a_multi_megabyte_string_costs_about_its_size():
    # the path of every JSON document read (our metadata, SB3's ``data`` entry, buffer headers, run files)
    from rlkit_td3.fileio.file_reader import parse_json

    raw = json.dumps({"policy_class": "x" * 7_000_000, "n": [[1]]}).encode()
    result, peak = _peak_while(parse_json, raw, "data")
    assert result["n"] == [[1]]
    assert peak < 4 * len(raw) + 8 * MiB, peak / MiB  # a copy, the text, the parsed string: nothing per character


def test_a_model_saved_before_its_first_learn_resumes_exactly(tmp_path):
    kwargs = dict(learning_starts=50, batch_size=16, policy_kwargs={"net_arch": [8]}, seed=3)
    straight = TD3("MlpPolicy", "Pendulum-v1", **kwargs)
    straight.save(tmp_path / "before.zip")
    straight.learn(120)
    resumed = TD3.load(tmp_path / "before.zip", env="Pendulum-v1")
    resumed.learn(120)
    mine, theirs = straight.policy.state_dict(), resumed.policy.state_dict()
    assert all(torch.equal(mine[key], theirs[key]) for key in mine)
    assert np.array_equal(straight.replay_buffer.observations, resumed.replay_buffer.observations)


def _model_file_entries(path) -> dict:
    """Every entry of a model file: the metadata, the tensors and the replay buffer's arrays."""
    with zipfile.ZipFile(path) as archive:
        out = {n: torch.load(io.BytesIO(archive.read(n)), weights_only=True) for n in archive.namelist() if ".pth" in n}
        out["metadata"] = json.loads(archive.read("metadata.json"))
        if "replay_buffer.npz" in archive.namelist():
            with np.load(io.BytesIO(archive.read("replay_buffer.npz")), allow_pickle=False) as buffer:
                out["buffer"] = {key: buffer[key] for key in buffer.files}
            out["buffer"]["meta"] = json.loads(out["buffer"]["meta"].tobytes())  # the header, as JSON
    return out


def _differences(a, b, where="") -> list[str]:
    """The paths at which two nested structures of dicts, lists, tensors and arrays differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{where} keys {sorted(map(str, a.keys() ^ b.keys()))}"]
        return [d for key in a for d in _differences(a[key], b[key], f"{where}/{key}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where} length {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{where}[{i}]")]
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return [] if a.shape == b.shape and torch.equal(a, b) else [where]
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return [] if a.shape == b.shape and np.array_equal(a, b) else [where]
    return [] if a == b else [where]


def _save_at(path, k: int):
    def callback(locals_, globals_):
        if locals_["self"].num_timesteps == k:
            locals_["self"].save(path, include_buffer=True)
        return True

    return callback


ENV_KINDS = {"single": lambda: "Pendulum-v1", "make_vec_next_step": lambda: gym.make_vec("Pendulum-v1", 2)}


@pytest.mark.parametrize("route", ["load_env", "load_then_set_env"])
@pytest.mark.parametrize("kind", list(ENV_KINDS))
def test_resume_onto_another_models_env_is_exact_in_what_it_holds_and_how_it_goes_on(tmp_path, kind, route):
    """``load(path, env=other.get_env())`` and ``load(path)`` then ``set_env(other.get_env())``: the model holds what
    the file holds (a save right after the load writes the file's entries again, entry by entry) and the continued
    run is the uninterrupted one, bit for bit, with no warning (main: the save was refused, the envs' records
    differed, and the set_env route warned and went on other bits)."""
    make, checkpoint = ENV_KINDS[kind], tmp_path / "k.zip"
    kwargs = dict(learning_starts=100, batch_size=16, policy_kwargs={"net_arch": [8]}, seed=3)
    straight = TD3("MlpPolicy", make(), **kwargs).learn(600, callback=_save_at(checkpoint, 400))  # 400: episodes end
    straight.save(tmp_path / "straight.zip", include_buffer=True)
    other = TD3("MlpPolicy", make(), **{**kwargs, "seed": 11}).learn(150)  # its env mid-episode
    with warnings.catch_warnings():
        warnings.simplefilter("error", utils.InexactResumeWarning)
        if route == "load_env":
            resumed = TD3.load(checkpoint, env=other.get_env())
        else:
            resumed = TD3.load(checkpoint)
            resumed.set_env(other.get_env())
    resumed.save(tmp_path / "again.zip", include_buffer=True)
    assert _differences(_model_file_entries(checkpoint), _model_file_entries(tmp_path / "again.zip")) == []
    resumed.learn(200, reset_num_timesteps=False)
    resumed.save(tmp_path / "resumed.zip", include_buffer=True)
    straight_entries = _model_file_entries(tmp_path / "straight.zip")
    assert _differences(straight_entries, _model_file_entries(tmp_path / "resumed.zip")) == []


def _without_run_ids(entries: dict) -> dict:
    """A model file's entries without the run ids (two runs made apart have different ones)."""
    entries["metadata"].pop("run_id")
    entries["buffer"]["meta"].pop("run_id")
    return entries


@pytest.mark.parametrize("steps", [400, 330], ids=["at_episode_ends", "mid_episode"])
@pytest.mark.parametrize("kind", list(ENV_KINDS))
def test_force_reset_false_on_the_saved_models_env_goes_on_exactly(tmp_path, kind, steps):
    """``load(path, env=saved.get_env(), force_reset=False)``: the episodes in flight go on, their statistics
    included (main: counted afresh from the load; a next-step vector env stored its reset step as a transition)."""
    make = ENV_KINDS[kind]
    kwargs = dict(learning_starts=100, batch_size=16, policy_kwargs={"net_arch": [8]}, seed=3)
    saved = TD3("MlpPolicy", make(), **kwargs).learn(steps)
    saved.save(tmp_path / "k.zip", include_buffer=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", utils.InexactResumeWarning)
        resumed = TD3.load(tmp_path / "k.zip", env=saved.get_env(), force_reset=False)
    resumed.save(tmp_path / "again.zip", include_buffer=True)
    assert _differences(_model_file_entries(tmp_path / "k.zip"), _model_file_entries(tmp_path / "again.zip")) == []
    resumed.learn(300, reset_num_timesteps=False).save(tmp_path / "resumed.zip", include_buffer=True)
    straight = TD3("MlpPolicy", make(), **kwargs).learn(steps).learn(300, reset_num_timesteps=False)
    straight.save(tmp_path / "straight.zip", include_buffer=True)
    mine, theirs = (_without_run_ids(_model_file_entries(tmp_path / f)) for f in ("straight.zip", "resumed.zip"))
    assert _differences(mine, theirs) == []


@pytest.mark.parametrize(
    "bad",
    [
        [1.0],
        {"returns": [0.0]},
        {"returns": [0.0, 1.0], "lengths": [1, 2]},
        {"returns": [float("nan")], "lengths": [1]},
        {"returns": ["1"], "lengths": [1]},
        {"returns": [0.0], "lengths": [-1]},
        {"returns": [0.0], "lengths": [1.5]},
    ],
)
def test_malformed_episodes_in_flight_are_refused(tmp_path, bad):
    _small_model().learn(30).save(tmp_path / "m.zip", include_buffer=True)

    def forge(entries):
        metadata = json.loads(entries["metadata.json"])
        metadata["training_state"]["episodes_in_flight"] = bad
        entries["metadata.json"] = json.dumps(metadata).encode()

    _rewrite_zip(tmp_path / "m.zip", forge)
    with pytest.raises(ModelFileError, match="episodes_in_flight"):
        TD3.load(tmp_path / "m.zip", env="Pendulum-v1")


def test_load_then_set_env_is_load_with_that_env(tmp_path):
    """``set_env`` after ``load`` without an env does what ``load(env=...)`` does, for both ``force_reset``."""
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=50, batch_size=16, policy_kwargs={"net_arch": [8]}, seed=3)
    model.learn(130)  # mid-episode
    model.save(tmp_path / "m.zip", include_buffer=True)
    for force_reset in (True, False):
        direct = TD3.load(tmp_path / "m.zip", env=model.get_env(), force_reset=force_reset)
        direct.save(tmp_path / "direct.zip", include_buffer=True)
        later = TD3.load(tmp_path / "m.zip")
        later.set_env(model.get_env(), force_reset=force_reset)
        later.save(tmp_path / "later.zip", include_buffer=True)
        entries = _model_file_entries(tmp_path / "later.zip")
        assert _differences(_model_file_entries(tmp_path / "direct.zip"), entries) == []
        # force_reset=False keeps the saved last observation (the episode in flight goes on), True drops it
        assert ("last_obs" in entries["training_state.pth"]) is (not force_reset)
    later.set_env("Pendulum-v1")  # only the first set_env after load: then a plain change of env
    assert later._last_obs is None and later._rollout is None


def test_a_user_vec_env_view_warns_at_every_load_and_set_env(tmp_path):
    """A `VecEnvView` the user made resets ended envs inside ``step()``, unlike the saved run's env: the envs'
    records cannot be the file's, and every route says so."""
    from rlkit_td3.vec_env.gymnasium_bridge import VecEnvView

    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=50, batch_size=16, policy_kwargs={"net_arch": [8]}, seed=3)
    model.learn(200)
    model.save(tmp_path / "m.zip", include_buffer=True)
    for autoreset in (AutoresetMode.DISABLED, AutoresetMode.NEXT_STEP):
        view = VecEnvView(gym.make_vec("Pendulum-v1", 1, vector_kwargs={"autoreset_mode": autoreset}))
        with pytest.warns(utils.InexactResumeWarning, match="VecEnvView, which resets ended envs inside step") as rec:
            TD3.load(tmp_path / "m.zip", env=view)
        assert rec[0].filename == __file__  # points at the caller's line
        loaded = TD3.load(tmp_path / "m.zip")
        with pytest.warns(utils.InexactResumeWarning, match=str(autoreset)) as rec:
            loaded.set_env(view)
        assert rec[0].filename == __file__


# ---------------------------------------------------------------------------- a run id in replay-buffer files
def _small_model(seed: int = 0) -> TD3:
    return TD3("MlpPolicy", "Pendulum-v1", learning_starts=10, batch_size=8, policy_kwargs={"net_arch": [8]}, seed=seed)


def _buffer_meta(path) -> dict:
    with np.load(path, allow_pickle=False) as archive:
        return json.loads(archive["meta"].tobytes())


def _rewrite_buffer_meta(path, change) -> None:
    """Give ``change`` the header of a buffer file (a path or a ``BytesIO``) to edit in place, and write it back."""
    with np.load(path, allow_pickle=False) as archive:
        members = {name: archive[name] for name in archive.files}
    meta = json.loads(members["meta"].tobytes())
    change(meta)
    members["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    if isinstance(path, io.BytesIO):
        path.seek(0)
        path.truncate()
        np.savez(path, **members)
        return
    with open(path, "wb") as fh:
        np.savez(fh, **members)


def _rewrite_zip(path, change) -> None:
    """Give ``change`` the model file's entries ({name: bytes}) to edit in place, and write them back."""
    with zipfile.ZipFile(path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    change(entries)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)


def test_every_model_has_a_run_id_that_its_files_carry_and_load_keeps(tmp_path):
    model, other = _small_model().learn(30), _small_model()
    assert len(model.run_id) == 32 and int(model.run_id, 16) >= 0 and model.run_id == model.run_id.lower()
    assert model.run_id != other.run_id  # random, not derived from the seed
    model.save(tmp_path / "k.zip", include_buffer=True)
    model.save_replay_buffer(tmp_path / "buffer.npz")
    with zipfile.ZipFile(tmp_path / "k.zip") as archive:
        assert json.loads(archive.read("metadata.json"))["run_id"] == model.run_id
        buffer_entry = io.BytesIO(archive.read("replay_buffer.npz"))
    assert _buffer_meta(buffer_entry)["run_id"] == model.run_id
    assert _buffer_meta(tmp_path / "buffer.npz")["run_id"] == model.run_id
    loaded = TD3.load(tmp_path / "k.zip", env="Pendulum-v1")
    assert loaded.run_id == model.run_id  # the run goes on under its id: its next checkpoints say so too
    loaded.learn(20, reset_num_timesteps=False).save(tmp_path / "k2.zip")
    assert TD3.load(tmp_path / "k2.zip").run_id == model.run_id


def test_loading_another_runs_buffer_warns_naming_both_ids(tmp_path):
    model, other = _small_model().learn(30), _small_model(seed=1).learn(30)
    model.save_replay_buffer(tmp_path / "mine.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.load_replay_buffer(tmp_path / "mine.npz")  # its own run: silent
    with pytest.warns(utils.ReplayBufferRunWarning, match=f"{model.run_id}.*{other.run_id}") as record:
        other.load_replay_buffer(tmp_path / "mine.npz")  # allowed, as in SB3
    assert record[0].filename == __file__
    assert issubclass(utils.ReplayBufferRunWarning, utils.InexactResumeWarning)
    assert np.array_equal(other.replay_buffer.observations[:30], model.replay_buffer.observations[:30])
    _rewrite_buffer_meta(tmp_path / "mine.npz", lambda meta: meta.pop("run_id"))  # an older file: no run id
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        other.load_replay_buffer(tmp_path / "mine.npz")


BAD_RUN_IDS = [123, None, "abc", "0" * 31, "0" * 33, "A" * 32, "g" * 32, ["0" * 32], "é" * 32]


@pytest.mark.parametrize("bad", BAD_RUN_IDS)
def test_a_bad_run_id_in_a_buffer_file_is_a_model_file_error_naming_it(tmp_path, bad):
    model = _small_model().learn(30)
    model.save_replay_buffer(tmp_path / "buffer.npz")
    _rewrite_buffer_meta(tmp_path / "buffer.npz", lambda meta: meta.update(run_id=bad))
    before = model.replay_buffer.observations.copy()
    model.replay_buffer.observations[:] = 0
    with pytest.raises(ModelFileError, match="replay buffer run_id must be a run id of 32 lowercase hex digits"):
        model.load_replay_buffer(tmp_path / "buffer.npz")
    assert not model.replay_buffer.observations.any() and before.any()  # nothing was loaded


@pytest.mark.parametrize("bad", BAD_RUN_IDS)
def test_a_bad_run_id_in_a_model_file_is_a_model_file_error_naming_it(tmp_path, bad):
    _small_model().save(tmp_path / "m.zip")

    def forge(entries):
        metadata = json.loads(entries["metadata.json"])
        metadata["run_id"] = bad
        entries["metadata.json"] = json.dumps(metadata).encode()

    _rewrite_zip(tmp_path / "m.zip", forge)
    with pytest.raises(ModelFileError, match="run_id must be a run id of 32 lowercase hex digits"):
        TD3.load(tmp_path / "m.zip")


def test_a_checkpoint_holding_another_runs_buffer_is_refused(tmp_path):
    model, other = _small_model().learn(30), _small_model(seed=1).learn(30)
    model.save(tmp_path / "k.zip", include_buffer=True)
    other.save(tmp_path / "other.zip", include_buffer=True)

    def swap(entries):  # the other run's buffer in this run's checkpoint: same shapes, another run
        with zipfile.ZipFile(tmp_path / "other.zip") as archive:
            entries["replay_buffer.npz"] = archive.read("replay_buffer.npz")

    _rewrite_zip(tmp_path / "k.zip", swap)
    with pytest.raises(ModelFileError, match=f"written by run {other.run_id}, the model file by run {model.run_id}"):
        TD3.load(tmp_path / "k.zip")


def test_files_without_a_run_id_load_as_before(tmp_path):
    model = _small_model().learn(30)
    model.save(tmp_path / "k.zip", include_buffer=True)

    def strip(entries):  # a file of a version without run ids
        metadata = json.loads(entries["metadata.json"])
        del metadata["run_id"]
        entries["metadata.json"] = json.dumps(metadata).encode()
        _rewrite_buffer_meta(buffer := io.BytesIO(entries["replay_buffer.npz"]), lambda meta: meta.pop("run_id"))
        entries["replay_buffer.npz"] = buffer.getvalue()

    _rewrite_zip(tmp_path / "k.zip", strip)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = TD3.load(tmp_path / "k.zip")
    assert len(loaded.run_id) == 32 and loaded.run_id != model.run_id  # a fresh id: the file names no run
    assert loaded.replay_buffer.size() == 30


def test_parameters_do_not_carry_the_run_id(tmp_path):
    model, other = _small_model().learn(30), _small_model(seed=1)
    assert set(model.get_parameters()) == {"policy", "actor.optimizer", "critic.optimizer"}
    model.save(tmp_path / "m.zip")
    own = other.run_id
    other.set_parameters(tmp_path / "m.zip")
    other.set_parameters(model.get_parameters())
    assert other.run_id == own  # the weights change, the run stays other's

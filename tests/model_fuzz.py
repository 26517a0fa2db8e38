"""Corrupted model files for the loader's fuzz tests (``tests/test_security.py``) and the longer run in
``benchmarks/fuzz_load.py``. Each case is ``(kind, bytes)``; every one must load cleanly or raise
:class:`~rlkit_td3.fileio.serialization.ModelFileError`.

Two modes:

* :func:`cases` corrupts bytes (truncations, flipped bytes, garbage JSON, lying zip headers, ...);
* :func:`structural_cases` keeps every entry well-formed (valid JSON, loadable tensors, a valid ``.npz``) but
  makes the entries disagree with each other: optimizer moments of another shape or dtype, buffer positions
  past the stored rows, observations of another shape, noise of another dimension, counts in the metadata
  (``n_envs``, ``net_arch``, ``buffer_size``) that the tensors do not back, classes that are expensive to
  build, ... A file that still loads must also train: :func:`run_isolated` runs one case in a forked child
  under a memory cap and reports what happened.
"""

from __future__ import annotations

import copy
import io
import json
import os
import resource
import signal
import struct
import zipfile
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch

ODD_VALUES: list[Any] = [None, "x", -1, 0, 2**40, 1e308, float("nan"), [], {}, [1, 2], {"a": 1}, True, "inf"]


def _zip(entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buf.getvalue()


def _entries(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _leaf_paths(node: Any, prefix: tuple = ()) -> Iterator[tuple]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaf_paths(value, (*prefix, key))
    elif isinstance(node, list) and node and len(node) <= 8:
        for i, value in enumerate(node):
            yield from _leaf_paths(value, (*prefix, i))
    else:
        yield prefix


def _set(node: Any, path: tuple, value: Any) -> None:
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


def cases(valid: bytes, n: int, seed: int = 0) -> Iterator[tuple[str, bytes]]:
    """``n`` corrupted variants of the model file ``valid`` (bytes of a zip written by ``save``)."""
    rng = np.random.default_rng(seed)
    entries = _entries(valid)
    meta = json.loads(entries["metadata.json"])
    leaves = list(_leaf_paths(meta))
    kinds = ["truncate", "flip", "missing", "json_type", "json_garbage", "entry_garbage", "declared_size", "extra"]
    for i in range(n):
        kind = kinds[i % len(kinds)]
        if kind == "truncate":
            yield kind, valid[: int(rng.integers(0, len(valid)))]
        elif kind == "flip":
            data = bytearray(valid)
            for pos in rng.integers(0, len(data), size=int(rng.integers(1, 12))):
                data[pos] ^= int(rng.integers(1, 256))
            yield kind, bytes(data)
        elif kind == "missing":
            names = sorted(entries)
            drop = names[int(rng.integers(0, len(names)))]
            yield kind, _zip({k: v for k, v in entries.items() if k != drop})
        elif kind == "json_type":
            mutated = json.loads(entries["metadata.json"])
            path = leaves[int(rng.integers(0, len(leaves)))]
            _set(mutated, path, ODD_VALUES[int(rng.integers(0, len(ODD_VALUES)))])
            yield kind, _zip({**entries, "metadata.json": json.dumps(mutated).encode()})
        elif kind == "json_garbage":
            text = bytearray(entries["metadata.json"])
            for pos in rng.integers(0, len(text), size=int(rng.integers(1, 6))):
                text[pos] = int(rng.integers(32, 127))
            yield kind, _zip({**entries, "metadata.json": bytes(text)})
        elif kind == "entry_garbage":
            names = sorted(k for k in entries if k != "metadata.json")
            name = names[int(rng.integers(0, len(names)))]
            data = bytearray(entries[name])
            if rng.random() < 0.5:
                data = data[: int(rng.integers(0, len(data)))]
            else:
                for pos in rng.integers(0, len(data), size=int(rng.integers(1, 20))):
                    data[pos] ^= int(rng.integers(1, 256))
            yield kind, _zip({**entries, name: bytes(data)})
        elif kind == "declared_size":
            # Rewrite an entry's uncompressed size in the central directory (a zip bomb's lie).
            data = bytearray(valid)
            headers = [j for j in range(len(data) - 4) if data[j : j + 4] == b"PK\x01\x02"]
            j = headers[int(rng.integers(0, len(headers)))]
            data[j + 24 : j + 28] = struct.pack("<I", int(rng.choice([2**32 - 1, 2**31, 10**9, 17 * 2**20])))
            yield kind, bytes(data)
        else:  # an entry a model file never has, possibly with a path trick
            name = str(rng.choice(["../evil.py", "/etc/passwd", "x/../../y", "pickled.pkl.bak", "extra.bin"]))
            yield kind, _zip({**entries, name: b"print('hi')"})


# ---------------------------------------------------------------------------------------------------------
# structural corruptions


def _decode(valid: bytes) -> dict[str, Any]:
    entries = _entries(valid)
    parts: dict[str, Any] = {
        "meta": json.loads(entries["metadata.json"]),
        "tensors": {
            name[:-4]: torch.load(io.BytesIO(data), weights_only=True)
            for name, data in entries.items()
            if name.endswith(".pth")
        },
        "buffer": None,
    }
    if "replay_buffer.npz" in entries:
        with np.load(io.BytesIO(entries["replay_buffer.npz"]), allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
        parts["buffer"] = {"meta": json.loads(bytes(arrays.pop("meta")).decode()), "arrays": arrays, "raw": {}}
    return parts


def _npy(array: np.ndarray, shape: tuple | None = None) -> bytes:
    """``.npy`` bytes of ``array``, with its header declaring ``shape`` instead when given (a lying header)."""
    buf = io.BytesIO()
    header = np.lib.format.header_data_from_array_1_0(array)
    if shape is not None:
        header["shape"] = shape
    np.lib.format.write_array_header_1_0(buf, header)
    buf.write(np.ascontiguousarray(array).tobytes())
    return buf.getvalue()


def _encode(parts: dict[str, Any]) -> bytes:
    entries = {"metadata.json": json.dumps(parts["meta"]).encode()}
    for name, state in parts["tensors"].items():
        buf = io.BytesIO()
        torch.save(state, buf)
        entries[f"{name}.pth"] = buf.getvalue()
    buffer = parts["buffer"]
    if buffer is not None:
        members = {"meta.npy": _npy(np.frombuffer(json.dumps(buffer["meta"]).encode(), dtype=np.uint8))}
        members.update({f"{name}.npy": _npy(array) for name, array in buffer["arrays"].items()})
        members.update(buffer["raw"])
        entries["replay_buffer.npz"] = _zip(members)
    return _zip(entries)


def _pick(rng: np.random.Generator, options: list) -> Any:
    return options[int(rng.integers(0, len(options)))]


def _opt_state(rng: np.random.Generator, parts: dict) -> tuple[str, dict, Any]:
    name = _pick(rng, ["actor_optimizer", "critic_optimizer"])
    state = parts["tensors"][name]
    pid = _pick(rng, sorted(k for k in state["state"] if type(k) is int and k >= 0))
    return name, state, pid


def _m_opt_shape(rng, parts):
    _, state, pid = _opt_state(rng, parts)
    key = _pick(rng, ["exp_avg", "exp_avg_sq"])
    t = state["state"][pid][key]
    options = [t.flatten(), torch.cat([t, t[:1]]), t.reshape(-1)[:1], torch.zeros(t.numel() * 4), t[None]]
    if t.dim() >= 2:
        options += [t.transpose(-1, -2).contiguous(), t[..., :-1].contiguous()]
    state["state"][pid][key] = _pick(rng, options)
    return "optimizer moment shape"


def _m_opt_dtype(rng, parts):
    _, state, pid = _opt_state(rng, parts)
    key = _pick(rng, ["exp_avg", "exp_avg_sq"])
    dtype = _pick(rng, [torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.bool])
    state["state"][pid][key] = state["state"][pid][key].to(dtype)
    return "optimizer moment dtype"


def _m_opt_step(rng, parts):
    _, state, pid = _opt_state(rng, parts)
    options = [
        torch.tensor(-1.0),
        torch.tensor(float("nan")),
        torch.tensor(float("inf")),
        torch.tensor([1.0, 2.0]),
        torch.tensor(5),
        5.0,
        torch.tensor(1e30),
        torch.zeros(3, 3),
        torch.tensor(0.0),
    ]
    state["state"][pid]["step"] = _pick(rng, options)
    return "optimizer step"


def _m_opt_keys(rng, parts):
    _, state, pid = _opt_state(rng, parts)
    entry = state["state"][pid]
    choice = int(rng.integers(0, 5))
    if choice == 0:
        entry.pop(_pick(rng, sorted(entry)))
    elif choice == 1:
        entry["max_exp_avg_sq"] = entry["exp_avg_sq"].clone()
    elif choice == 2:
        entry["momentum_buffer"] = entry["exp_avg"].clone()
    elif choice == 3:
        state["state"][pid] = {}
    else:
        state["state"][pid] = [entry["exp_avg"]]
    return "optimizer state keys"


def _m_opt_ids(rng, parts):
    _, state, pid = _opt_state(rng, parts)
    entry = state["state"].pop(pid)
    choice = int(rng.integers(0, 4))
    if choice == 0:
        state["state"][99] = entry
    elif choice == 1:
        state["state"][-1] = entry
    elif choice == 2:
        state["state"][str(pid)] = entry
    # choice 3: a parameter without state (a parameter that never had a gradient): legitimate
    return "optimizer state ids"


def _m_opt_groups(rng, parts):
    _, state, _ = _opt_state(rng, parts)
    groups = state["param_groups"]
    params = groups[0]["params"]
    choice = int(rng.integers(0, 6))
    if choice == 0:
        groups[0]["params"] = params[::-1]
    elif choice == 1:
        groups[0]["params"] = params[:-1]
    elif choice == 2:
        groups[0]["params"] = [*params, len(params)]
    elif choice == 3:
        groups[0]["params"] = [params[0], *params[:-1]]
    elif choice == 4:
        groups.append(copy.deepcopy(groups[0]))
    else:
        groups.clear()
    return "optimizer param groups"


def _m_opt_hyper(rng, parts):
    _, state, _ = _opt_state(rng, parts)
    group = state["param_groups"][0]
    key, value = _pick(
        rng,
        [
            ("lr", -1.0),
            ("lr", float("nan")),
            ("lr", 1e10),
            ("lr", 3e-4),
            ("betas", (1.0, 0.999)),
            ("betas", (0.9,)),
            ("betas", (-0.1, 0.9)),
            ("betas", (0.8, 0.99)),
            ("eps", 0.0),
            ("eps", -1.0),
            ("eps", 1e-6),
            ("weight_decay", -1.0),
            ("amsgrad", True),
            ("fused", False),
            ("foreach", True),
            ("capturable", True),
            ("differentiable", True),
            ("maximize", True),
            ("momentum", 0.9),
            ("betas", None),
        ],
    )
    if value is None:
        group.pop(key)
    else:
        group[key] = value
    return "optimizer hyperparameters"


def _m_opt_values(rng, parts):
    _, state, pid = _opt_state(rng, parts)
    entry = state["state"][pid]
    if rng.random() < 0.5:
        entry["exp_avg_sq"] = -entry["exp_avg_sq"] - 1.0
    else:
        entry["exp_avg"] = entry["exp_avg"].clone().fill_(float("nan"))
    return "optimizer moment values"


def _m_policy(rng, parts):
    state = parts["tensors"]["policy"]
    key = _pick(rng, sorted(state))
    t = state[key]
    choice = int(rng.integers(0, 6))
    if choice == 0 and t.dim() >= 2:
        state[key] = t.transpose(-1, -2).contiguous()  # same number of parameters, another shape
    elif choice == 1:
        state[key] = t.reshape(-1)
    elif choice == 2:
        state[key] = t.double()
    elif choice == 3:
        state.pop(key)
    elif choice == 4:
        state["extra.weight"] = torch.zeros(3)
    else:
        state[key] = t.clone().fill_(float("inf"))
    return "policy tensors"


def _m_training_tensors(rng, parts):
    state = parts["tensors"]["training_state"]
    obs = state["last_obs"]
    choice = int(rng.integers(0, 8))
    if choice == 0:
        state["last_obs"] = torch.zeros(obs.shape[0] + 1, *obs.shape[1:])
    elif choice == 1:
        state["last_obs"] = torch.zeros(obs.shape[0], obs.shape[1] + 1)
    elif choice == 2:
        state["last_obs"] = obs[..., None]
    elif choice == 3:
        state["last_obs"] = obs.to(torch.bool)
    elif choice == 4:
        state["smoothing_rng"] = state["smoothing_rng"][:-8]
    elif choice == 5:
        state["smoothing_rng"] = state["smoothing_rng"].long()
    elif choice == 6:
        state.pop("smoothing_rng")
    else:
        state["extra"] = torch.zeros(2)
    return "training state tensors"


def _m_counters(rng, parts):
    counters = parts["meta"]["counters"]
    key = _pick(rng, sorted(counters))
    counters[key] = _pick(rng, [-1, 2**63, 1.5, "7", 10**18, None])
    if rng.random() < 0.3 and isinstance(counters["num_timesteps"], int):
        counters["episode_num"] = counters["num_timesteps"] + 1
    return "counters"


def _m_n_envs(rng, parts):
    parts["meta"]["n_envs"] = _pick(rng, [0, -1, 1, 2, 3, 65_536, 10**9, 1.5])
    return "n_envs"


def _m_net_arch(rng, parts):
    kwargs = parts["meta"]["policy"]["kwargs"]
    if rng.random() < 0.7:
        kwargs["net_arch"] = _pick(
            rng,
            [[10**6, 10**6], [2**31], [8] * 10_000, [], {"pi": [8], "qf": [16]}, [16], [0], [8, 8], [4096] * 64],
        )
    else:
        kwargs["n_critics"] = _pick(rng, [1, 3, 1000, 10**9, 0])
    return "net_arch / n_critics"


def _box(shape: list[int], low: float = -1.0, high: float = 1.0) -> dict[str, Any]:
    size = int(np.prod(shape))
    return {"type": "Box", "shape": shape, "dtype": "float32", "low": [low] * size, "high": [high] * size}


def _m_spaces(rng, parts):
    meta = parts["meta"]
    obs_dim = int(np.prod(meta["observation_space"]["shape"]))
    choice = int(rng.integers(0, 6))
    if choice == 0:
        meta["observation_space"] = _box([obs_dim + 1])
    elif choice == 1:
        meta["observation_space"] = {**meta["observation_space"], "shape": [obs_dim, 1]}
    elif choice == 2:
        meta["observation_space"] = _box([100_000])
    elif choice == 3:
        meta["action_space"] = _box([2])
    elif choice == 4:
        meta["action_space"] = {**meta["action_space"], "low": meta["action_space"]["high"]}
    else:
        meta["observation_space"] = {**meta["observation_space"], "dtype": _pick(rng, ["uint8", "float64", "int64"])}
    return "spaces"


def _m_hyper(rng, parts):
    hyper = parts["meta"]["hyperparameters"]
    key, value = _pick(
        rng,
        [
            ("buffer_size", 10**12),
            ("buffer_size", 2**40),
            ("buffer_size", 10**9),
            ("buffer_size", 10),
            ("buffer_size", 10_000),
            ("batch_size", 10**6),
            ("batch_size", 0),
            ("learning_starts", 10**9),
            ("train_freq", [10**9, "step"]),
            ("train_freq", [1, "episode"]),
            ("tau", 2.0),
            ("gamma", -1.0),
            ("optimize_memory_usage", not hyper["optimize_memory_usage"]),
            ("policy_delay", 0),
            ("unknown_setting", 1),
        ],
    )
    hyper[key] = value
    return "hyperparameters"


def _m_optimizer_kwargs(rng, parts):
    kwargs = parts["meta"]["policy"]["kwargs"]
    kwargs["optimizer_kwargs"] = _pick(
        rng,
        [{"betas": [1.5, 0.9]}, {"eps": -1.0}, {"lr": "x"}, {"not_an_option": 1}, {"amsgrad": True}, {"eps": 1e-6}],
    )
    return "optimizer_kwargs"


def _m_classes(rng, parts):
    meta = parts["meta"]
    where, value = _pick(
        rng,
        [
            ("activation_fn", "torch.nn.Transformer"),
            ("activation_fn", "torch.nn.Linear"),
            ("activation_fn", "torch.nn.Tanh"),
            ("optimizer_class", "torch.optim.LBFGS"),
            ("optimizer_class", "torch.optim.SGD"),
            ("optimizer_class", "torch.optim.AdamW"),
            ("policy", "torch.nn.Transformer"),
            ("buffer", "torch.nn.Module"),
        ],
    )
    if where == "policy":
        meta["policy"]["class"] = value
    elif where == "buffer":
        meta["replay_buffer"]["class"] = value
    else:
        meta["policy"]["kwargs"][where] = value
    return "classes"


def _noise_leaf(meta: dict) -> dict:
    noise = meta["action_noise"]
    return noise["base_noise"] if noise.get("type") == "VectorizedActionNoise" else noise


def _m_noise_spec(rng, parts):
    meta = parts["meta"]
    leaf = _noise_leaf(meta)
    choice = int(rng.integers(0, 7))
    if choice == 0:
        leaf["mean"] = [0.0, 0.0]
    elif choice == 1:
        leaf["sigma"] = [0.1] * 100_000
    elif choice == 2:
        leaf["sigma"] = [-0.1] * len(leaf["sigma"])
    elif choice == 3:
        leaf["decay"] = _pick(rng, [0.0, 2.0, "x"])
    elif choice == 4:
        meta["action_noise"] = {
            "type": "VectorizedActionNoise",
            "base_noise": leaf,
            "n_envs": _pick(rng, [1, 3, 10**6]),
        }
    elif choice == 5:
        leaf["type"] = "OrnsteinUhlenbeckActionNoise" if leaf["type"] == "NormalActionNoise" else "NormalActionNoise"
    else:
        leaf["unknown"] = 1
    return "noise description"


def _m_noise_state(rng, parts):
    state = parts["meta"]["training_state"]["action_noise"]
    copies = state.get("noises")
    leaf = copies[0] if copies else state
    choice = int(rng.integers(0, 7))
    if choice == 0:
        leaf["rng"]["bit_generator"] = "MT19937"
    elif choice == 1:
        leaf["rng"]["state"]["state"] = _pick(rng, [-1, 2**130, "x"])
    elif choice == 2:
        leaf["n_draws"] = _pick(rng, [-1, 1.5, None])
    elif choice == 3:
        leaf["x"] = [0.0] * 5
    elif choice == 4 and copies:
        state["noises"] = copies + copies
    elif choice == 5:
        leaf["rng"].pop("has_uint32")
    else:
        leaf["rng"]["uinteger"] = 2**40
    return "noise state"


def _m_schedules(rng, parts):
    schedules = parts["meta"]["schedules"]
    schedules["learning_rate"] = _pick(
        rng,
        [
            {"type": "constant", "value": "1e-3"},
            {"type": "constant", "value": True},
            {"type": "constant", "value": 0},
            {"type": "constant", "value": -1e-3},
            {"type": "linear", "start": 1e-3, "end": 0.0, "end_fraction": 0.0},
            {"type": "linear", "start": 1e-3, "end": 0.0, "end_fraction": 2.0},
            {"type": "step", "value": 1e-3},
            {"pickled": True},
            {"type": "constant", "value": 5e-4},
        ],
    )
    return "schedules"


def _m_training_json(rng, parts):
    state = parts["meta"]["training_state"]
    choice = int(rng.integers(0, 10))
    if choice == 0:
        state["rollout"] = {"calls": -1, "episodes": 0, "collected": 0}
    elif choice == 1:
        state["rollout"] = {"calls": 0, "episodes": 0, "collected": 0, "extra": 1}
    elif choice == 2:
        state["progress_remaining"] = _pick(rng, [2.0, -1.0, "x"])
    elif choice == 3:
        state["episode_infos"] = [[1.0, 200]] * 100_000
    elif choice == 4:
        state["episode_infos"] = [[1.0]]
    elif choice == 5:
        state["env_seeded"] = "yes"
    elif choice == 6:
        state["warmup_rng"] = {"kind": "Generator", "state": {"bit_generator": "PCG64"}}
    elif choice == 7 and state.get("env_rngs"):
        state["env_rngs"] = state["env_rngs"] * 2
    elif choice == 8 and state.get("env_rngs"):
        state["env_rngs"][0]["state"]["state"]["inc"] = -5
    else:
        state.pop(_pick(rng, sorted(state)))
    return "training state"


def _m_buffer_meta(rng, parts):
    buffer = parts["buffer"]
    meta = buffer["meta"]
    if "n_slots" in meta:
        choice = int(rng.integers(0, 7))
        if choice == 0:
            meta["env_pos"][0] = meta["n_slots"] + 5
        elif choice == 1:
            meta["env_full"][0] = not meta["env_full"][0]
        elif choice == 2:
            meta["env_filled"][0] += 1
        elif choice == 3:
            meta["n_slots"] = _pick(rng, [1, meta["n_slots"] * 1000, 10**12])
        elif choice == 4 and len(buffer["arrays"]["final_rows"]):
            buffer["arrays"]["final_rows"] = buffer["arrays"]["final_rows"] + 10**6
        elif choice == 5:
            meta["n_envs"] = meta["n_envs"] + 1
        else:
            meta["env_has_next"] = [False] * len(meta["env_has_next"])
        return "buffer rings"
    key, value = _pick(
        rng,
        [
            ("pos", meta["pos"] + 7),
            ("pos", -1),
            ("size", meta["size"] + 1),
            ("size", 10**9),
            ("full", True),
            ("buffer_size", meta["buffer_size"] * 2),
            ("buffer_size", 3),
            ("n_envs", 2),
            ("obs_shape", [4]),
            ("action_dim", 2),
            ("rng_state", {"bit_generator": "PCG64", "state": {"state": -1, "inc": 0}, "has_uint32": 0, "uinteger": 0}),
        ],
    )
    meta[key] = value
    return "buffer positions"


def _m_buffer_arrays(rng, parts):
    buffer = parts["buffer"]
    arrays = buffer["arrays"]
    name = _pick(rng, sorted(k for k in arrays if k not in ("final_rows", "final_obs")))
    a = arrays[name]
    choice = int(rng.integers(0, 8))
    if choice == 0:
        arrays[name] = a.astype(np.float64 if a.dtype != np.float64 else np.float32)
    elif choice == 1:
        arrays[name] = a[:-1]
    elif choice == 2:
        arrays[name] = np.concatenate([a, a[:1]])
    elif choice == 3:
        arrays[name] = a[..., None]
    elif choice == 4:
        buffer["raw"][f"{name}.npy"] = _npy(a, shape=(10**9, *a.shape[1:]))  # a header that lies
        del arrays[name]
    elif choice == 5:
        if a.dtype == np.bool_:
            raw = a.view(np.uint8).copy()
            raw[0] = 2
            buffer["raw"][f"{name}.npy"] = _npy(raw).replace(b"|u1", b"|b1", 1)
            del arrays[name]
        else:
            arrays[name] = a.copy()
            arrays[name].flat[0] = np.nan
    elif choice == 6:
        del arrays[name]
    else:
        buffer["raw"]["extra.npy"] = _npy(np.zeros(3))
    return "buffer arrays"


def _m_buffer_entry(rng, parts):
    # the whole buffer entry of a model with another layout, or none at all
    if rng.random() < 0.5:
        parts["buffer"] = None
    else:
        parts["buffer"]["meta"]["optimize_memory_usage"] = not parts["buffer"]["meta"]["optimize_memory_usage"]
    return "buffer layout"


STRUCTURAL_MUTATIONS: list[Callable[[np.random.Generator, dict], str]] = [
    _m_opt_shape,
    _m_opt_dtype,
    _m_opt_step,
    _m_opt_keys,
    _m_opt_ids,
    _m_opt_groups,
    _m_opt_hyper,
    _m_opt_values,
    _m_policy,
    _m_training_tensors,
    _m_counters,
    _m_n_envs,
    _m_net_arch,
    _m_spaces,
    _m_hyper,
    _m_optimizer_kwargs,
    _m_classes,
    _m_noise_spec,
    _m_noise_state,
    _m_schedules,
    _m_training_json,
    _m_buffer_meta,
    _m_buffer_arrays,
    _m_buffer_entry,
]
"""Every structural mutation; :func:`structural_cases` applies them in turn, 1 to 2 per case."""


def structural_cases(bases: list[bytes], n: int, seed: int = 0) -> Iterator[tuple[int, str, bytes]]:
    """``n`` files that keep every entry well-formed but make entries disagree; yields ``(base index, kind,
    bytes)``. ``bases`` are genuine model files saved with ``include_buffer=True`` after some training (so that
    every entry exists). Deterministic for a given ``seed``."""
    rng = np.random.default_rng(seed)
    decoded = [_decode(b) for b in bases]
    for i in range(n):
        b = i % len(bases)
        parts = copy.deepcopy(decoded[b])
        first = STRUCTURAL_MUTATIONS[(i // len(bases)) % len(STRUCTURAL_MUTATIONS)]
        kinds = [first(rng, parts)]
        if rng.random() < 0.25:  # now and then a second disagreement on top
            second = STRUCTURAL_MUTATIONS[int(rng.integers(0, len(STRUCTURAL_MUTATIONS)))]
            before = copy.deepcopy(parts)
            try:
                kinds.append(second(rng, parts))
            except (KeyError, TypeError, IndexError, ValueError, AttributeError, RuntimeError):
                parts = before  # the first mutation removed what the second one changes
        yield b, " + ".join(kinds), _encode(parts)


def _vm_bytes(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def run_isolated(fn: Callable[[], str], memory_cap: int = 2**30, timeout: int = 60) -> tuple[str, dict[str, float]]:
    """Run ``fn`` in a forked child whose address space may grow by at most ``memory_cap`` bytes.

    Returns ``(outcome, stats)``: ``fn``'s string, ``"ERROR <type>: <message>"`` for an exception,
    ``"SIGNAL <n>"`` for a child killed by a signal (``SIGNAL 14`` after ``timeout`` seconds). ``stats`` holds
    the child's ``peak_rss_delta`` (bytes, peak resident set minus the resident set at the start) and
    ``seconds``.
    """
    import time

    read_fd, write_fd = os.pipe()
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_fd)
        try:
            signal.alarm(timeout)
            with open("/proc/self/clear_refs", "w") as fh:  # the peak starts here, not at the parent's peak
                fh.write("5")
            rss0 = _vm_bytes("VmRSS")
            soft = _vm_bytes("VmSize") + memory_cap
            resource.setrlimit(resource.RLIMIT_AS, (soft, resource.getrlimit(resource.RLIMIT_AS)[1]))
            try:
                outcome = fn()
            except BaseException as exc:  # noqa: BLE001  (reported to the parent)
                outcome = f"ERROR {type(exc).__name__}: {exc}"
            report = json.dumps({"outcome": outcome[:4000], "peak_rss_delta": _vm_bytes("VmHWM") - rss0})
            os.write(write_fd, report.encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 65536):
        chunks.append(chunk)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    seconds = time.perf_counter() - start
    if os.WIFSIGNALED(status):
        return f"SIGNAL {os.WTERMSIG(status)}", {"peak_rss_delta": float("nan"), "seconds": seconds}
    if not chunks:
        return f"ERROR child exited with status {os.waitstatus_to_exitcode(status)} and no report", {
            "peak_rss_delta": float("nan"),
            "seconds": seconds,
        }
    report = json.loads(b"".join(chunks))
    return report["outcome"], {"peak_rss_delta": float(report["peak_rss_delta"]), "seconds": seconds}

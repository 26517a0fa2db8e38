"""Structural fuzzing of every door into a model: model zips, policy files, actor files, VecNormalize files, replay
buffer files of each kind (uniform, n-step, PER, LAP, Dict, HER), ``set_parameters`` dicts, Stable-Baselines3 zips,
and SB3's pickle helper ``load_from_pkl`` without ``allow_pickle`` (plain data only; cases in ``fuzz_pickle.py``).

For each door, a genuine file (or dict) is mutated ``--cases`` times: JSON leaves replaced by odd values or deleted,
``.npy`` members of another dtype, shape, with NaN/inf/negative values, lying headers or deflated bombs, tensors of
another shape or dtype, 0-d, NaN, dropped or extra, truncations and flipped bytes, extra entries. Every case runs in a
forked child (so a signal death is seen and counted, as is a child that runs past its time or its 1 GiB address
space cap); a case that loads is then used (predict, a training step, a sample). The only exceptions allowed are
the documented ones, all ``ValueError`` subclasses: ``ModelFileError`` (the file's content), ``UnsupportedModelError``
(an SB3 file of another algorithm) and, for a ``set_parameters`` dict (the caller's object, not a file), the
``ValueError`` / ``TypeError`` that names the key or value. The worst peak memory growth of each door is
compared with that of loading its genuine file; a case that grows memory by more than ``MEMORY_MARGIN_MIB`` past
the genuine file's peak breaks a rule even when the cap stopped it (its ``MemoryError`` would read as refused).

Usage: ``python benchmarks/fuzz_doors.py [--cases 1000] [--seed 1] [--doors model,policy,...]``; exit status 1 if any
case breaks a rule. ``make test`` runs 50 cases per door (``tests/test_fuzz_doors.py``).
"""

from __future__ import annotations

import argparse
import collections
import copy
import io
import json
import os
import pickle
import struct
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from benchmarks.fuzz_pickle import mutate_pickle, peak_bound, plain_data, use_pickle  # noqa: E402
from rlkit_td3 import TD3  # noqa: E402
from rlkit_td3.buffers import LAPReplayBuffer, PrioritizedReplayBuffer  # noqa: E402
from rlkit_td3.fileio.file_reader import ModelFileError  # noqa: E402
from rlkit_td3.her import HerReplayBuffer  # noqa: E402
from rlkit_td3.persistence.sb3_zip import UnsupportedModelError  # noqa: E402
from rlkit_td3.policies import Actor, TD3Policy  # noqa: E402
from rlkit_td3.vec_env import DummyVecEnv, VecNormalize  # noqa: E402
from tests.model_fuzz import run_isolated  # noqa: E402

ODD = [None, "x", -1, 0, -(2**70), 2**70, 1e308, float("nan"), float("inf"), -0.5, [], {}, [1, 2], True, "inf", 1.5]
ALLOWED = (ModelFileError, UnsupportedModelError)
MEMORY_CAP = 2**30
MEMORY_MARGIN_MIB = 128  # a case may grow memory by at most this much more than the genuine file does
PICKLE_DOOR = "plain-data pickle (load_from_pkl)"
SIZE_BOUNDS: dict[str, Callable[[int], int]] = {PICKLE_DOOR: peak_bound}
"""Doors whose documented bound is a function of the file's size: each case's peak growth past the genuine file's
must stay within it (bytes of a file of that size)."""


# ---------------------------------------------------------------------------- mutations of a zip's entries
def _entries(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _zip(entries: dict[str, bytes], compress: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compress) as archive:
        for name, raw in entries.items():
            archive.writestr(name, raw)
    return buf.getvalue()


def _leaves(node: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += _leaves(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node[:8]):
            found += _leaves(value, (*prefix, i))
    return found


def _mutate_json(rng: np.random.Generator, doc: Any) -> Any:
    doc = copy.deepcopy(doc)
    paths = _leaves(doc)
    if not paths:
        return ODD[int(rng.integers(len(ODD)))]
    path = paths[int(rng.integers(len(paths)))]
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    roll = rng.random()
    if roll < 0.15 and isinstance(parent, dict):
        del parent[path[-1]]
    elif roll < 0.25:
        parent[path[-1]] = json.loads("[" * 100 + "]" * 100)  # deep, but legal JSON
    else:
        parent[path[-1]] = ODD[int(rng.integers(len(ODD)))]
    return doc


def _npy(array: np.ndarray, declared: tuple | None = None, descr: str | None = None) -> bytes:
    buf = io.BytesIO()
    header = {
        "descr": descr or np.lib.format.dtype_to_descr(array.dtype),
        "fortran_order": False,
        "shape": declared if declared is not None else array.shape,
    }
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue() + np.ascontiguousarray(array).tobytes()


def _mutate_array(rng: np.random.Generator, raw: bytes) -> tuple[str, bytes]:
    array = np.load(io.BytesIO(raw), allow_pickle=False)  # the genuine member, written by this script's parent
    kind = ["dtype", "shape", "values", "header_lie", "zero_d", "fortran", "bomb_header", "object"][
        int(rng.integers(8))
    ]
    if kind == "dtype":
        return kind, _npy(array.astype(rng.choice([np.float16, np.float64, np.int32, np.uint8, np.bool_])))
    if kind == "shape":
        flat = array.reshape(-1)
        return kind, _npy(flat[: max(0, flat.size - int(rng.integers(1, 3)))] if flat.size else np.zeros(3))
    if kind == "values" and array.dtype.kind in "fi" and array.size:
        changed = array.astype(np.float64 if array.dtype.kind == "f" else array.dtype).copy()
        idx = int(rng.integers(array.size))
        changed.reshape(-1)[idx] = (
            rng.choice([np.nan, np.inf, -1.0, 1e300, -(2**40)])
            if changed.dtype.kind == "f"
            else (rng.choice([-1, 2**40, -(2**62)]))
        )
        with np.errstate(over="ignore"):  # a huge value cast to a small int dtype: wrapping is the point
            return kind, _npy(changed.astype(array.dtype))
    if kind == "header_lie":
        declared = (int(rng.choice([2**20, 2**28, 2**40])),) + tuple(array.shape[1:])
        return kind, _npy(array, declared=declared)
    if kind == "zero_d":
        return kind, _npy(np.asarray(array.reshape(-1)[0] if array.size else 0, dtype=array.dtype))
    if kind == "fortran":
        buf = io.BytesIO()
        header = {"descr": np.lib.format.dtype_to_descr(array.dtype), "fortran_order": True, "shape": array.shape}
        np.lib.format.write_array_header_1_0(buf, header)
        return kind, buf.getvalue() + array.tobytes()
    if kind == "bomb_header":
        return kind, _npy(np.zeros(2**18, dtype=array.dtype))  # 2**18 zeros: deflates ~1000 times
    return "object", _npy(np.zeros(2, dtype=np.uint8), descr="|O")


def _mutate_tensors(rng: np.random.Generator, raw: bytes) -> tuple[str, bytes]:
    state = torch.load(io.BytesIO(raw), weights_only=True)  # genuine bytes the parent wrote
    tensors = []

    def walk(node: Any, path: tuple) -> None:
        if isinstance(node, torch.Tensor):
            tensors.append(path)
        elif isinstance(node, dict):
            for key, value in node.items():
                walk(value, (*path, key))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, (*path, i))

    walk(state, ())
    kind = ["shape", "dtype", "nan", "zero_d", "drop", "extra", "value", "view"][int(rng.integers(8))]
    if not tensors:
        return "extra", _save({**state, "junk": torch.zeros(3)} if isinstance(state, dict) else state)
    path = tensors[int(rng.integers(len(tensors)))]
    parent = state
    for key in path[:-1]:
        parent = parent[key]
    t = parent[path[-1]]
    if kind == "shape":
        parent[path[-1]] = torch.zeros(*(s + 1 for s in t.shape), dtype=t.dtype) if t.dim() else torch.zeros(2)
    elif kind == "dtype":
        parent[path[-1]] = t.to(torch.float64 if t.dtype != torch.float64 else torch.float16)
    elif kind == "nan" and t.is_floating_point() and t.numel():
        t = t.clone()
        t.view(-1)[0] = float("nan")
        parent[path[-1]] = t
    elif kind == "zero_d":
        parent[path[-1]] = torch.tensor(1.0)
    elif kind == "drop" and isinstance(parent, dict):
        del parent[path[-1]]
    elif kind == "value":
        parent[path[-1]] = ODD[int(rng.integers(len(ODD)))]
    elif kind == "view":
        parent[path[-1]] = torch.zeros(1, dtype=t.dtype).expand(2**16)
    else:
        if isinstance(parent, dict):
            parent["junk"] = torch.zeros(2)
    return kind, _save(state)


def _save(state: Any) -> bytes:
    buf = io.BytesIO()
    torch.save(state, buf)
    return buf.getvalue()


def mutate_zip(rng: np.random.Generator, valid: bytes) -> tuple[str, bytes]:
    """One structural or byte-level corruption of the zip ``valid``."""
    entries = _entries(valid)
    roll = rng.random()
    if roll < 0.08:
        return "truncate", valid[: int(rng.integers(0, len(valid)))]
    if roll < 0.16:
        data = bytearray(valid)
        for pos in rng.integers(0, len(data), size=int(rng.integers(1, 10))):
            data[pos] ^= int(rng.integers(1, 256))
        return "flip", bytes(data)
    if roll < 0.20:
        data = bytearray(valid)
        heads = [j for j in range(len(data) - 4) if data[j : j + 4] == b"PK\x01\x02"]
        j = heads[int(rng.integers(len(heads)))]
        data[j + 24 : j + 28] = struct.pack("<I", int(rng.choice([2**32 - 1, 2**31, 17 * 2**20])))
        return "declared_size", bytes(data)
    if roll < 0.24:
        name = str(rng.choice(["../evil", "/abs", "extra.bin", "pickled.pkl"]))
        return "extra_entry", _zip({**entries, name: b"\x80\x04junk"})
    if roll < 0.28:
        names = sorted(entries)
        return "missing_entry", _zip({k: v for k, v in entries.items() if k != names[int(rng.integers(len(names)))]})
    if roll < 0.31:  # an entry replaced by 32 MiB of zeros, deflated about 1000 times
        names = sorted(entries)
        return "deflated_zeros", _zip({**entries, names[int(rng.integers(len(names)))]: bytes(32 * 2**20)})
    name = sorted(entries)[int(rng.integers(len(entries)))]
    raw = entries[name]
    if name.endswith((".json", "data")) or name == "metadata.json":
        try:
            doc = json.loads(raw)
        except ValueError:
            return "entry_bytes", _zip({**entries, name: raw[::-1]})
        return f"json:{name}", _zip({**entries, name: json.dumps(_mutate_json(rng, doc)).encode()})
    if name.endswith(".pth"):
        kind, new = _mutate_tensors(rng, raw)
        return f"tensor:{kind}", _zip({**entries, name: new})
    if name.endswith(".npz") or raw[:4] == b"PK\x03\x04":
        kind, new = mutate_npz(rng, raw)
        return f"npz:{kind}", _zip({**entries, name: new})
    if name.endswith(".npy"):
        kind, new = _mutate_npy_member(rng, name, raw, entries)
        return f"npy:{kind}", new
    return "entry_bytes", _zip({**entries, name: raw[: len(raw) // 2]})


def _mutate_npy_member(rng: np.random.Generator, name: str, raw: bytes, entries: dict[str, bytes]) -> tuple[str, bytes]:
    if name == "meta.npy" and rng.random() < 0.6:
        meta = json.loads(np.load(io.BytesIO(raw)).tobytes())
        text = json.dumps(_mutate_json(rng, meta)).encode()
        return "meta_json", _zip({**entries, name: _npy(np.frombuffer(text, dtype=np.uint8))}, zipfile.ZIP_STORED)
    kind, new = _mutate_array(rng, raw)
    compress = zipfile.ZIP_DEFLATED if kind == "bomb_header" else zipfile.ZIP_STORED
    return kind, _zip({**entries, name: new}, compress)


def mutate_npz(rng: np.random.Generator, raw: bytes) -> tuple[str, bytes]:
    """One corruption of an ``.npz`` archive (a member's array, its header, a meta JSON, or its bytes)."""
    entries = _entries(raw)
    if rng.random() < 0.1 or not entries:
        return "bytes", raw[: int(rng.integers(0, max(1, len(raw))))]
    name = sorted(entries)[int(rng.integers(len(entries)))]
    return _mutate_npy_member(rng, name, entries[name], entries)


# ---------------------------------------------------------------------------- the doors
def _pendulum_model(**kwargs: Any) -> TD3:
    return TD3(
        "MlpPolicy",
        "Pendulum-v1",
        learning_starts=50,
        buffer_size=400,
        batch_size=16,
        policy_kwargs={"net_arch": [8]},
        seed=0,
        **kwargs,
    ).learn(120)


def _buffer_bytes(model: Any) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        model.save_replay_buffer(Path(tmp) / "buffer.npz")
        return (Path(tmp) / "buffer.npz").read_bytes()


Door = tuple[Any, Callable[[Any], str], Callable[[np.random.Generator, Any], tuple[str, Any]]]
"""``(genuine file bytes or dict, use, mutate)``: ``use(path_or_dict)`` loads a case and uses what loaded;
``mutate(rng, genuine)`` draws one case, ``(kind, bytes or dict)``."""


def build_doors(tmp: Path) -> dict[str, Door]:
    """``{door: (genuine, use, mutate)}``, every door into a model and SB3's pickle helper."""
    doors: dict[str, Door] = {}
    model = _pendulum_model()
    model.save(tmp / "model.zip", include_buffer=True)
    obs = model.observation_space.sample()[None]

    def use_model(path: Any) -> str:
        loaded = TD3.load(path)
        loaded.predict(obs, deterministic=True)
        if loaded.replay_buffer is not None and loaded.replay_buffer.size() >= 16:
            loaded.train(gradient_steps=2, batch_size=16)
        return "loaded"

    doors["model zip"] = ((tmp / "model.zip").read_bytes(), use_model, mutate_zip)
    model.policy.save(tmp / "policy.zip")

    def use_policy(path: Any) -> str:
        TD3Policy.load(path, device="cpu").predict(obs, deterministic=True)
        return "loaded"

    doors["policy file"] = ((tmp / "policy.zip").read_bytes(), use_policy, mutate_zip)
    venv = VecNormalize(DummyVecEnv([lambda: gym.make("Pendulum-v1")]))
    venv.reset()
    for _ in range(20):
        venv.step(np.zeros((1, 1), dtype=np.float32))
    venv.save(tmp / "vn.zip")

    def use_vn(path: Any) -> str:
        loaded = VecNormalize.load(path, DummyVecEnv([lambda: gym.make("Pendulum-v1")]))
        loaded.reset()
        loaded.step(np.zeros((1, 1), dtype=np.float32))
        return "loaded"

    doors["VecNormalize file"] = ((tmp / "vn.zip").read_bytes(), use_vn, mutate_zip)
    kinds: dict[str, dict[str, Any]] = {
        "uniform": {},
        "uniform, memory-optimized": {"replay_buffer_kwargs": {"optimize_memory_usage": True}},
        "n-step": {"n_steps": 3},
        "PER": {"replay_buffer_class": PrioritizedReplayBuffer},
        "LAP": {"replay_buffer_class": LAPReplayBuffer},
    }
    for kind, kwargs in kinds.items():
        buffer_model = _pendulum_model(**kwargs)
        doors[f"buffer file ({kind})"] = (_buffer_bytes(buffer_model), _use_buffer(buffer_model), mutate_zip)
    her_model = TD3(
        "MultiInputPolicy",
        "BitFlipping-v0" if "BitFlipping-v0" in gym.registry else _bit_flipping(),
        replay_buffer_class=HerReplayBuffer,
        learning_starts=40,
        buffer_size=400,
        batch_size=16,
        policy_kwargs={"net_arch": [8]},
        seed=0,
    ).learn(100)
    doors["buffer file (HER, Dict)"] = (_buffer_bytes(her_model), _use_buffer(her_model), mutate_zip)
    params = model.get_parameters()

    def use_params(params_case: Any) -> str:
        try:
            model.set_parameters(params_case)
        except (ValueError, TypeError) as exc:  # documented: a dict is the caller's object, not a file
            return f"refused {type(exc).__name__}"
        model.train(gradient_steps=2, batch_size=16)
        model.predict(obs, deterministic=True)
        return "loaded"

    doors["set_parameters dict"] = (params, use_params, mutate_params)
    sb3 = _sb3_zip(tmp)
    if sb3 is not None:
        doors["SB3 zip"] = (sb3, use_model, mutate_zip)
    model.actor.save(tmp / "actor.zip")

    def use_actor(path: Any) -> str:
        Actor.load(path, device="cpu").predict(obs, deterministic=True)
        return "loaded"

    doors["actor file (Actor.load)"] = ((tmp / "actor.zip").read_bytes(), use_actor, mutate_zip)
    doors[PICKLE_DOOR] = (pickle.dumps(plain_data(), 5), use_pickle, mutate_pickle)
    return doors


def _bit_flipping() -> Any:
    from rlkit_td3.envs.bit_flipping_env import BitFlippingEnv

    return BitFlippingEnv(n_bits=4, continuous=True, max_steps=4)


def _use_buffer(model: Any) -> Callable[[Any], str]:
    def use(path: Any) -> str:
        model.load_replay_buffer(path)
        model.replay_buffer.sample(16)
        model.train(gradient_steps=1, batch_size=16)
        return "loaded"

    return use


def _sb3_zip(tmp: Path) -> bytes | None:
    try:
        import stable_baselines3 as sb3
    except ImportError:
        return None
    model = sb3.TD3("MlpPolicy", "Pendulum-v1", learning_starts=50, policy_kwargs={"net_arch": [8]}, seed=0)
    model.learn(80)
    model.save(tmp / "sb3.zip")
    return (tmp / "sb3.zip").read_bytes()


def mutate_params(rng: np.random.Generator, params: dict) -> tuple[str, dict]:
    """One corruption of a ``get_parameters()`` dict."""
    params = copy.deepcopy(params)
    kind, raw = _mutate_tensors(rng, _save(params))
    return kind, torch.load(io.BytesIO(raw), weights_only=True)


# ---------------------------------------------------------------------------- running
def run_door(
    name: str, door: Door, n: int, seed: int, tmp: Path, start: int = 0
) -> tuple[collections.Counter, list[str], float, float]:
    """``(outcomes, failures, genuine peak MiB, worst case peak MiB)`` of cases ``start`` to ``n - 1`` of one door
    (the earlier cases are drawn, not run, so case ``i`` is the same case whatever ``start`` is)."""
    genuine, use, mutate = door
    rng = np.random.default_rng(seed)
    path = tmp / "case.bin"

    def attempt(case: Any) -> Callable[[], str]:
        def run() -> str:
            try:
                return use(case)
            except ALLOWED as exc:
                return f"refused {type(exc).__name__}"

        return run

    if not isinstance(genuine, dict):
        path.write_bytes(genuine)
    attempt(genuine if isinstance(genuine, dict) else path)()  # warm up in the parent: lazy imports and inits
    if isinstance(genuine, dict):
        genuine_runs = [run_isolated(attempt(genuine), MEMORY_CAP) for _ in range(5)]
    else:
        path.write_bytes(genuine)
        genuine_runs = [run_isolated(attempt(path), MEMORY_CAP) for _ in range(5)]
    assert all(o == "loaded" for o, _ in genuine_runs), (name, genuine_runs)
    genuine_peak = max(s["peak_rss_delta"] for _, s in genuine_runs) / 2**20
    outcomes: collections.Counter = collections.Counter()
    failures: list[str] = []
    worst = 0.0
    worst_share = (0.0, -1, "", 0)  # the largest share of its documented size bound a case used
    peaks: list[tuple[float, int, str]] = []
    for i in range(n):
        kind, case = mutate(rng, genuine)
        if i < start:
            continue
        size = len(case) if isinstance(case, bytes) else None
        if isinstance(case, bytes):
            path.write_bytes(case)
            case = path
        outcome, stats = run_isolated(attempt(case), MEMORY_CAP)
        peak = stats["peak_rss_delta"] / 2**20 if stats["peak_rss_delta"] == stats["peak_rss_delta"] else 0.0
        worst = max(worst, peak)
        peaks.append((peak, i, kind))
        label = outcome.split(":")[0]
        outcomes[label] += 1
        bound = SIZE_BOUNDS[name](size) / 2**20 if name in SIZE_BOUNDS and size is not None else None
        if bound is not None and (peak - genuine_peak) / bound > worst_share[0]:
            worst_share = ((peak - genuine_peak) / bound, i, kind, size)
        if not (label == "loaded" or label.startswith("refused")):
            failures.append(f"{name} case {i} ({kind}): {outcome[:300]}")
        elif peak > genuine_peak + MEMORY_MARGIN_MIB:  # a bomb the cap stopped (its MemoryError is "refused")
            failures.append(f"{name} case {i} ({kind}): peak {peak:.0f} MiB against {genuine_peak:.0f} MiB genuine")
        elif bound is not None and peak > genuine_peak + bound:
            failures.append(
                f"{name} case {i} ({kind}): peak {peak:.1f} MiB past the genuine {genuine_peak:.1f} MiB, more than the "
                f"documented {bound:.1f} MiB for its {size} bytes"
            )
    for peak, i, kind in sorted(peaks, reverse=True)[:3]:
        print(f"  peak {peak:7.1f} MiB: case {i} ({kind})", file=sys.stderr)
    if name in SIZE_BOUNDS:
        share, i, kind, size = worst_share
        print(
            f"  worst share of the documented size bound: {share:.0%} (case {i}, {kind}, {size} bytes)", file=sys.stderr
        )
    return outcomes, failures, genuine_peak, worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1_000, help="cases per door")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=int, default=0, help="run only cases START..CASES-1 (to rerun one case)")
    parser.add_argument("--doors", default="", help="comma-separated substrings of door names (default: all)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        doors = build_doors(tmp)
        wanted = [d for d in args.doors.split(",") if d]
        failed = []
        print(
            f"{'door':36} {'cases':>6} {'loaded':>7} {'refused':>8} {'other':>6} {'signals':>8} "
            f"{'genuine MiB':>11} {'worst MiB':>9}"
        )
        for i, (name, door) in enumerate(doors.items()):
            if wanted and not any(w in name for w in wanted):
                continue
            outcomes, failures, genuine_peak, worst = run_door(name, door, args.cases, args.seed + i, tmp, args.start)
            refused = sum(v for k, v in outcomes.items() if k.startswith("refused"))
            signals = sum(v for k, v in outcomes.items() if k.startswith("SIGNAL"))
            other = sum(outcomes.values()) - outcomes["loaded"] - refused - signals
            print(
                f"{name:36} {sum(outcomes.values()):6d} {outcomes['loaded']:7d} {refused:8d} {other:6d} {signals:8d} "
                f"{genuine_peak:11.1f} {worst:9.1f}"
            )
            failed += failures
        for line in failed[:50]:
            print("FAIL", line)
        print(f"{len(failed)} cases broke a rule (signal, undocumented exception, memory cap)")
        print(f"python {sys.version.split()[0]}, torch {torch.__version__}, numpy {np.__version__}, pid {os.getpid()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""The model file format, and atomic file writes.

A saved model is one zip archive:

``metadata.json``
    JSON: format name and version, library version, algorithm class, hyperparameters, the
    observation and action spaces, counters, policy class and kwargs, schedules and noise, and the
    versions of Python, torch, numpy and gymnasium that wrote it.
``policy.pth``, ``actor_optimizer.pth``, ``critic_optimizer.pth`` (and ``encoder_optimizer.pth`` for a policy with an
encoder, TD7's)
    ``torch.save`` state dicts, read back with ``torch.load(weights_only=True)``.
``replay_buffer.npz`` (only with ``save(..., include_buffer=True)``)
    the filled part of the replay buffer and its sampler's state, as written by ``ReplayBuffer.save``
    (``numpy.load(allow_pickle=False)`` reads it back).
``pickled.pkl`` (only when needed)
    cloudpickle of the few objects JSON cannot describe (a lambda learning-rate schedule, a custom
    noise without ``to_dict``). ``load`` refuses to read it unless ``allow_pickle=True``.

Classes (activation functions, optimizers, policies, buffers) are stored by name and found again in
``torch.nn``, ``torch.optim`` or the library's registries; anything else must be passed to ``load``
through ``custom_objects``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import tempfile
import time
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch
from gymnasium import spaces

from rlkit_td3.checks.arguments import check_bool as require_bool  # the bool check of every trust switch
from rlkit_td3.fileio.file_reader import (  # the one reader; re-exported where older code imports them
    MAX_ENTRY_BYTES,
    MAX_METADATA_BYTES,
    ModelFileError,
    ZipReader,
    unpickle,
)

FORMAT_NAME = "rlkit_td3"
FORMAT_VERSION = 1
METADATA_ENTRY = "metadata.json"
PICKLE_ENTRY = "pickled.pkl"
BUFFER_ENTRY = "replay_buffer.npz"


STALE_TEMPORARY_SECONDS = 600
"""A temporary file of ours older than this (by its last write) beside a path being saved is a killed save's."""


def remove_stale_temporaries(target: Path, suffix: str = ".tmp") -> list[Path]:
    """Delete the temporary files a killed save of ``target`` left (``.<name>.<8 random characters><suffix>``,
    the names `atomic_path()` makes) whose last write is older than `STALE_TEMPORARY_SECONDS`: a save still
    running elsewhere writes its file continuously and is left alone. Returns the files deleted."""
    pattern = re.compile(rf"\.{re.escape(target.name)}\.[a-z0-9_]{{8}}{re.escape(suffix)}")
    removed = []
    now = time.time()
    with contextlib.suppress(OSError):
        for sibling in target.parent.iterdir():
            if pattern.fullmatch(sibling.name) and sibling.is_file() and not sibling.is_symlink():
                with contextlib.suppress(OSError):
                    if now - sibling.stat().st_mtime > STALE_TEMPORARY_SECONDS:
                        sibling.unlink()
                        removed.append(sibling)
    return removed


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], suffix: str = ".tmp") -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; on success it is fsynced and renamed onto ``path``.

    For writers that need a file name (video encoders); `atomic_write()` gives a file object. A crash
    leaves either the previous file or the new one under ``path``, never half of one.

    Args:
        path: the final file.
        suffix: the temporary file's suffix (writers that pick a format from it need the real one).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(target, suffix)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600 files; give the usual permissions
    try:
        yield Path(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable where the OS allows it
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """Open a temporary file beside ``path``; on success flush, fsync and rename it onto ``path``.

    A crash leaves either the previous file or the new one under ``path``, never half of one.
    """
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        yield fh
        fh.flush()


# ---------------------------------------------------------------------------- spaces
def _float_list(array: np.ndarray) -> list[Any]:
    """Flat list of floats, with infinities as the strings "inf" / "-inf" (valid JSON)."""
    return [float(x) if np.isfinite(x) else ("inf" if x > 0 else "-inf") for x in array.ravel()]


MAX_DICT_SPACE_KEYS = 64
"""Most entries a saved ``Dict`` observation space may have."""


_FLAT_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


def space_to_dict(space: spaces.Space) -> dict[str, Any]:
    """JSON description of a Box, Discrete, MultiDiscrete or MultiBinary space, or of a Dict of those
    (``{"type": "Dict", "spaces": [[key, space], ...]}``, in the Dict's order): the kinds the algorithms accept."""
    if isinstance(space, spaces.Dict) and all(isinstance(sub, _FLAT_SPACES) for sub in space.spaces.values()):
        return {"type": "Dict", "spaces": [[key, space_to_dict(sub)] for key, sub in space.spaces.items()]}
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start), "dtype": str(space.dtype)}
    if isinstance(space, spaces.MultiDiscrete):
        return {
            "type": "MultiDiscrete",
            "nvec": space.nvec.tolist(),
            "start": space.start.tolist(),
            "dtype": str(space.dtype),
        }
    if isinstance(space, spaces.MultiBinary):
        return {"type": "MultiBinary", "n": np.asarray(space.n).tolist()}
    if not isinstance(space, spaces.Box):
        raise TypeError(
            f"only Box, Discrete, MultiDiscrete and MultiBinary spaces and Dicts of those can be saved, got {space!r}"
        )
    return {
        "type": "Box",
        "shape": list(space.shape),
        "dtype": str(space.dtype),
        "low": _float_list(space.low.astype(np.float64)),
        "high": _float_list(space.high.astype(np.float64)),
    }


def _int_spec(value: Any, name: str) -> Any:
    """A JSON int, or a (nested) list of them, checked: the sizes a saved discrete space declares."""
    array = np.asarray(value)
    if array.dtype.kind not in "iu" or array.size > 4096:
        raise ModelFileError(f"a saved space's {name} must be ints (at most 4096 of them), got {value!r}")
    return value


def space_from_dict(spec: dict[str, Any]) -> spaces.Space:
    """Rebuild a Box, Discrete, MultiDiscrete or MultiBinary space, or a Dict of those, from `space_to_dict()`
    output."""
    try:
        if spec["type"] == "Dict":
            entries = spec["spaces"]
            if not isinstance(entries, list) or not 0 < len(entries) <= MAX_DICT_SPACE_KEYS:
                raise ModelFileError(f"a Dict space must list 1 to {MAX_DICT_SPACE_KEYS} entries")
            keys = [entry[0] if isinstance(entry, list) and len(entry) == 2 else None for entry in entries]
            if not all(isinstance(key, str) for key in keys) or len(set(keys)) != len(keys):
                raise ModelFileError("a Dict space's entries must be [key, space] pairs with distinct str keys")
            subs = [entry[1] for entry in entries]
            flat_types = ("Box", "Discrete", "MultiDiscrete", "MultiBinary")
            if not all(isinstance(sub, dict) and sub.get("type") in flat_types for sub in subs):
                raise ModelFileError(
                    "a Dict space's entries must be Box, Discrete, MultiDiscrete or MultiBinary spaces"
                )
            # in the saved order (gymnasium sorts the keys of a plain dict, not of an OrderedDict)
            return spaces.Dict(OrderedDict((key, space_from_dict(sub)) for key, sub in zip(keys, subs)))
        if spec["type"] == "Discrete":
            n, start = _int_spec(spec["n"], "n"), _int_spec(spec["start"], "start")
            return spaces.Discrete(n, start=start, dtype=np.dtype(spec["dtype"]))
        if spec["type"] == "MultiDiscrete":
            nvec, start = _int_spec(spec["nvec"], "nvec"), _int_spec(spec["start"], "start")
            return spaces.MultiDiscrete(nvec, dtype=np.dtype(spec["dtype"]), start=start)
        if spec["type"] == "MultiBinary":
            return spaces.MultiBinary(_int_spec(spec["n"], "n"))
        if spec["type"] != "Box":
            raise ModelFileError(f"unsupported space type {spec['type']!r}")
        dtype = np.dtype(spec["dtype"])
        shape = tuple(int(d) for d in spec["shape"])
        low = np.asarray(spec["low"], dtype=np.float64).reshape(shape).astype(dtype)
        high = np.asarray(spec["high"], dtype=np.float64).reshape(shape).astype(dtype)
        return spaces.Box(low=low, high=high, shape=shape, dtype=dtype)
    except ModelFileError:
        raise
    except (AssertionError, KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"malformed space description: {exc}") from exc


def spaces_equal(a: spaces.Space, b: spaces.Space) -> bool:
    """Same type, shape and bounds (dtype differences between float types are tolerated)."""
    if type(a) is not type(b) or a.shape != b.shape:
        return False
    if isinstance(a, spaces.Dict):
        return list(a.spaces) == list(b.spaces) and all(spaces_equal(a[key], b[key]) for key in a.spaces)
    if isinstance(a, spaces.Box):
        return bool(np.array_equal(a.low, b.low) and np.array_equal(a.high, b.high))
    return a == b


# ---------------------------------------------------------------------------- random generators
def rng_state_to_json(rng: np.random.Generator | np.random.RandomState) -> dict[str, Any]:
    """The state of a NumPy generator (``Generator`` or legacy ``RandomState``) as JSON."""
    if isinstance(rng, np.random.Generator):
        return {"kind": "Generator", "state": rng.bit_generator.state}
    if isinstance(rng, np.random.RandomState):
        state = rng.get_state(legacy=False)
        state["state"] = {"key": state["state"]["key"].tolist(), "pos": int(state["state"]["pos"])}
        return {"kind": "RandomState", "state": state}
    raise TypeError(f"rng must be a numpy Generator or RandomState, got {type(rng).__name__}")


def set_rng_state(rng: np.random.Generator | np.random.RandomState, spec: dict[str, Any]) -> None:
    """Restore `rng_state_to_json()` output into ``rng`` in place (other holders of ``rng`` see it too).

    Raises:
        ValueError: the state is of another kind of generator or malformed.
    """
    try:
        if spec["kind"] == "Generator" and isinstance(rng, np.random.Generator):
            rng.bit_generator.state = spec["state"]
            return
        if spec["kind"] == "RandomState" and isinstance(rng, np.random.RandomState):
            state = dict(spec["state"])
            inner = state["state"]
            state["state"] = {"key": np.asarray(inner["key"], dtype=np.uint32), "pos": int(inner["pos"])}
            rng.set_state(state)
            return
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"malformed generator state: {exc}") from exc
    raise ValueError(f"cannot restore a {spec.get('kind')!r} state into a {type(rng).__name__}")


# ---------------------------------------------------------------------------- classes by name
def class_to_name(cls: type, registry: dict[str, type] | None = None) -> str:
    """Name under which ``cls`` is stored: its registry key, ``torch.nn.X``/``torch.optim.X``, or
    ``module:qualname`` for user classes (which ``load`` then needs through ``custom_objects``)."""
    for name, registered in (registry or {}).items():
        if registered is cls:
            return name
    for prefix, module in (("torch.nn.", torch.nn), ("torch.optim.", torch.optim)):
        if getattr(module, cls.__name__, None) is cls:
            return prefix + cls.__name__
    return f"{cls.__module__}:{cls.__qualname__}"


# ---------------------------------------------------------------------------- zip archive
def write_model_zip(
    path: str | os.PathLike[str],
    metadata: dict[str, Any],
    tensors: dict[str, Any],
    pickled: dict[str, Any] | None = None,
    blobs: dict[str, bytes] | None = None,
) -> None:
    """Write a model archive atomically: ``metadata.json``, one ``.pth`` per tensor entry (stored, not
    deflated), the raw ``blobs`` by entry name (e.g. ``replay_buffer.npz``), and an optional ``pickled.pkl``."""
    with atomic_write(path) as fh:
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(METADATA_ENTRY, json.dumps(metadata, indent=2, allow_nan=False))
            for name, state in tensors.items():
                buf = io.BytesIO()
                torch.save(state, buf)
                # stored, as SB3 stores them: float weights barely deflate (a few %), and deflating a large
                # network takes minutes (SB3's test_save_load_large_model: 3 x 8192 layers, 6 GiB of tensors)
                archive.writestr(f"{name}.pth", buf.getbuffer(), compress_type=zipfile.ZIP_STORED)
            for name, data in (blobs or {}).items():
                archive.writestr(name, data)
            if pickled:
                import cloudpickle

                archive.writestr(PICKLE_ENTRY, cloudpickle.dumps(pickled))


_TENSOR_ENTRIES = {"policy", "actor_optimizer", "critic_optimizer", "encoder_optimizer", "training_state"}
_ALLOWED_ENTRIES = {METADATA_ENTRY, BUFFER_ENTRY, PICKLE_ENTRY} | {f"{name}.pth" for name in _TENSOR_ENTRIES}


def read_model_zip(
    path: str | os.PathLike[str],
    allow_pickle: bool = False,
    entry_limits: Callable[[dict[str, Any]], dict[str, int]] | None = None,
    entries: Collection[str] | None = None,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, bytes]]:
    """Read an archive written by `write_model_zip()`, trusting nothing in it.

    Entries are checked before anything is read: only the names a model file has, no path tricks, no
    duplicates, bounded declared sizes and compression ratios. Tensors are read with
    ``torch.load(weights_only=True)``, which refuses pickled code. The pickle entry is never read unless
    ``allow_pickle`` is true. With ``entry_limits`` (a function of the metadata, such as
    `rlkit_td3.persistence.file_checks.entry_byte_limits()`), every other entry is refused if it declares, or holds,
    more bytes than the metadata justifies; entries are read with that cap, never past it.

    Args:
        path: the model file.
        allow_pickle: read the pickle entry (must be a ``bool``; unpickling can run code).
        entry_limits: the largest size of each entry given the metadata (default: the global limits).
        entries: read only these entries (besides the metadata); the others are checked as names, never read.

    Returns:
        ``(metadata, tensors, pickled, blobs)``. ``pickled`` is empty unless ``allow_pickle`` is true, and
        the caller refuses whatever needed it. ``blobs`` holds the raw bytes of the replay buffer entry, if any.

    Raises:
        ModelFileError: whatever is wrong with the file (this is the only exception it raises for a bad file).
        TypeError: ``allow_pickle`` is not a bool.
    """
    require_bool("allow_pickle", allow_pickle)
    try:
        return _read_model_zip(path, allow_pickle, entry_limits, entries)
    except (ModelFileError, FileNotFoundError):
        raise  # a missing file is the caller's mistake, not a bad file
    except Exception as exc:  # noqa: BLE001  (anything that fails while parsing untrusted bytes)
        raise ModelFileError(f"{path}: unreadable model file ({type(exc).__name__}: {exc})") from exc


def _read_model_zip(path: Any, allow_pickle: bool, entry_limits: Any, entries: Any) -> tuple[dict, dict, dict, dict]:
    with ZipReader(path, allowed=_ALLOWED_ENTRIES) as archive:
        names = archive.names if entries is None else archive.names & ({METADATA_ENTRY} | set(entries))
        if METADATA_ENTRY not in names:
            raise ModelFileError(f"{path}: not an rlkit_td3 model file (no {METADATA_ENTRY})")
        metadata = archive.json(METADATA_ENTRY, MAX_METADATA_BYTES)
        if not isinstance(metadata, dict) or metadata.get("format") != FORMAT_NAME:
            raise ModelFileError(f"{path}: not an rlkit_td3 model file")
        if metadata.get("format_version") != FORMAT_VERSION:
            raise ModelFileError(
                f"{path}: format version {metadata.get('format_version')!r}, "
                f"this library reads version {FORMAT_VERSION}"
            )
        try:
            limits = entry_limits(metadata) if entry_limits is not None else {}
        except ModelFileError as exc:
            raise ModelFileError(f"{path}: {exc}") from exc
        tensors = {
            name[: -len(".pth")]: archive.tensors(name, limits.get(name, MAX_ENTRY_BYTES))
            for name in sorted(names)
            if name.endswith(".pth")
        }
        blobs = {
            name: archive.read(name, limits.get(name, MAX_ENTRY_BYTES)) for name in (BUFFER_ENTRY,) if name in names
        }
        pickled: dict[str, Any] = {}
        if PICKLE_ENTRY in names and allow_pickle:
            raw = archive.read(PICKLE_ENTRY, limits.get(PICKLE_ENTRY, MAX_ENTRY_BYTES))
            pickled = unpickle(raw, f"{path}: entry {PICKLE_ENTRY!r}", allow_pickle=True)
            if not isinstance(pickled, dict):
                raise ModelFileError(f"{path}: the pickle entry is not a dict")
    return metadata, tensors, pickled, blobs

"""The one reader: every byte that comes from a file passes through here before any component sees it.

Zip archives (model files, SB3 model files, policy files, VecNormalize files, the ``.npz`` replay buffer and the
``.npz`` inside a VecNormalize file), ``.npy`` members, JSON documents, torch tensor entries and pickles are all read
with the functions of this module, which enforce every limit in one place:

* **sizes**: an entry is refused if it declares more than its cap, and is never read past that cap whatever its
  header says; the caps are absolute (`MAX_ENTRY_BYTES`, `MAX_METADATA_BYTES`) or come from the caller, and a
  member of an archive inside an archive is capped again by its own header;
* **ratios**: an entry over `RATIO_FLOOR_BYTES` that expands more than its kind allows (`MAX_TENSOR_RATIO` for
  tensors and ``.npy`` members that are compressed, `MAX_COMPRESSION_RATIO` for anything else) is refused before
  it is decompressed, and decompression stops at that ratio of the bytes actually present, so a lying header
  cannot make a read larger;
* **``.npy`` headers** are read before the data: dtype, shape and byte count must be the expected ones (or, for an
  open shape, within an item cap) before anything is allocated;
* **JSON**: UTF-8, at most `MAX_JSON_DEPTH` levels of nesting (checked before parsing: no ``RecursionError``);
* **tensors**: ``torch.load(weights_only=True)`` (no code), plain containers only, no tensor larger than its
  storage (no stride tricks that inflate on first use), real dtypes, finite floating values;
* **pickle**: only when the caller passes ``allow_pickle=True`` (a real ``bool``); without it, only plain data
  (`unpickle_plain_data`: builtin containers and scalars, NumPy arrays), which builds no other object.

Whatever is wrong, a function here raises `ModelFileError` (a ``ValueError``) naming the file and the entry.
This module imports no other module of the package but `rlkit_td3.fileio.plain_pickle` (the plain-data unpickler): it is
the bottom floor. `DOORS` lists every public way
into a model and what each checks; the Security page of the docs is generated from it.
"""

from __future__ import annotations

import io
import json
import math
import os
import pickle
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

import numpy as np
import torch

from rlkit_td3.checks.errors import ModelFileError
from rlkit_td3.fileio.plain_pickle import PlainDataUnpickler

MAX_METADATA_BYTES = 8 * 2**20
"""Largest JSON document (``metadata.json``, SB3's ``data``, a VecNormalize file's settings) that is read."""
MAX_ENTRY_BYTES = 8 * 2**30
"""Largest uncompressed size of any one entry (a 1M-transition HalfCheetah buffer is about 250 MB)."""
MAX_COMPRESSION_RATIO = 2000
"""Entries other than tensors (a replay buffer, whose flags and rewards compress well) may expand at most this
many times their compressed size."""
MAX_TENSOR_RATIO = 32
"""Tensor entries (``.pth``) and compressed ``.npy`` members may expand at most this many times: weights, moments
and statistics are close to incompressible (a genuine ``policy.pth`` deflates by about 1.1)."""
RATIO_FLOOR_BYTES = 2**20
"""Entries up to this size are never refused for their ratio (small files compress well)."""
MAX_JSON_DEPTH = 64
"""Deepest nesting of ``[`` and ``{`` in a JSON document (a model's metadata needs about 10)."""
MAX_NPY_HEADER_BYTES = 65_536
"""Largest ``.npy`` header (NumPy itself refuses larger ones by default)."""
_CHUNK = 2**20
_REAL_DTYPES = frozenset(
    {
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
        torch.uint8,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.bool,
    }
)


def _require_bool(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool (True or False), got {value!r} of type {type(value).__name__}")
    return bool(value)


# ---------------------------------------------------------------------------- JSON
_JSON_CHUNK_BYTES = 1 << 16


def json_depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in ``raw`` (brackets inside strings ignored), without parsing it.

    Reads ``raw`` in chunks of 64 KiB, carrying the string state and a trailing run of backslashes from one chunk
    to the next: the memory it takes is about 40 times a chunk, whatever the document's size or its strings.
    """
    data = np.frombuffer(raw, dtype=np.uint8)
    depth = deepest = 0
    in_string = False
    backslashes = 0  # the run of backslashes that ends the previous chunk
    for start in range(0, len(data), _JSON_CHUNK_BYTES):
        chunk = data[start : start + _JSON_CHUNK_BYTES]
        index = np.arange(len(chunk))
        # the last byte at or before each position that is not a backslash (-1: the run reaches the chunk's start)
        other = np.maximum.accumulate(np.where(chunk == ord("\\"), -1, index))
        run = index - other + np.where(other < 0, backslashes, 0)  # backslashes ending at each position
        before = np.concatenate(([backslashes], run[:-1]))
        quote = (chunk == ord('"')) & (before % 2 == 0)  # an unescaped quote opens or closes a string
        inside = (np.cumsum(quote) % 2 == 1) != in_string
        step = np.isin(chunk, (ord("["), ord("{"))).astype(np.int32) - np.isin(chunk, (ord("]"), ord("}")))
        levels = depth + np.cumsum(np.where(inside, 0, step))
        deepest = max(deepest, int(levels.max()))
        depth = int(levels[-1])
        in_string = bool(inside[-1])  # the quotes so far, counted: the state after the chunk's last byte
        backslashes = int(run[-1])
    return deepest


def parse_json(raw: bytes | str, what: str, max_bytes: int = MAX_METADATA_BYTES) -> Any:
    """The JSON document ``raw`` (from the file or entry ``what``), at most ``max_bytes`` long and
    `MAX_JSON_DEPTH` deep.

    Raises:
        ModelFileError: too long, too deep, not UTF-8 or not JSON.
    """
    data = raw.encode() if isinstance(raw, str) else bytes(raw)
    if len(data) > max_bytes:
        raise ModelFileError(f"{what}: a JSON document of {len(data)} bytes, more than {max_bytes}")
    depth = json_depth(data)
    if depth > MAX_JSON_DEPTH:
        raise ModelFileError(f"{what}: JSON nested {depth} levels deep, more than {MAX_JSON_DEPTH}")
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ModelFileError(f"{what}: not valid JSON ({type(exc).__name__}: {exc})") from exc


def read_json_file(path: str | os.PathLike[str], max_bytes: int = MAX_METADATA_BYTES) -> Any:
    """A JSON file (a run's ``config.json``, a result file), read with `parse_json()`'s limits.

    Raises:
        FileNotFoundError: no such file.
        ModelFileError: larger than ``max_bytes``, too deep, or not JSON.
    """
    with open(path, "rb") as fh:
        data = fh.read(max_bytes + 1)
    return parse_json(data, os.fspath(path), max_bytes)


# ---------------------------------------------------------------------------- tensors
def check_tensor_tree(value: Any, what: str, finite: bool = True, depth: int = 0, where: str = "") -> None:
    """Every tensor in what ``torch.load`` returned: real dtype, dense, no larger than its storage, finite
    (floating point, when ``finite``); containers plain and at most 32 deep. Errors name the tensor's key path."""
    if depth > 32:
        raise ModelFileError(f"{what}: containers nested more than 32 deep")
    if isinstance(value, torch.Tensor):
        name = f"{what}: {where or 'a tensor'} (shape {tuple(value.shape)})"
        if value.layout != torch.strided or value.dtype not in _REAL_DTYPES or value.is_quantized:
            raise ModelFileError(f"{name} is a {value.dtype} / {value.layout} tensor, not a dense real one")
        if value.numel() and value.numel() * value.element_size() > value.untyped_storage().nbytes():
            raise ModelFileError(f"{name} views a storage of {value.untyped_storage().nbytes()} bytes, fewer than it")
        if finite and value.is_floating_point() and value.numel() and not bool(torch.isfinite(value).all()):
            raise ModelFileError(f"{name} holds non-finite values")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_tensor_tree(key, what, finite, depth + 1, where)
            check_tensor_tree(item, what, finite, depth + 1, f"{where}.{key}" if where else str(key)[:200])
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_tensor_tree(item, what, finite, depth + 1, f"{where}[{i}]")
    elif not isinstance(value, (str, int, float, bool, type(None), torch.Size, torch.dtype)):
        raise ModelFileError(f"{what}: {where or 'it'} holds a {type(value).__name__}, not tensors and containers")


def load_tensors(raw: bytes, what: str, finite: bool = True) -> Any:
    """The tensors of a ``torch.save`` file's bytes, read with ``weights_only=True`` onto the CPU and checked
    with `check_tensor_tree()`.

    Raises:
        ModelFileError: unreadable, or holds something other than dense real (finite) tensors and containers.
    """
    try:
        value = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001  (whatever unpickling-free loading of untrusted bytes raises)
        raise ModelFileError(f"{what}: unreadable tensors ({type(exc).__name__}: {exc})") from exc
    check_tensor_tree(value, what, finite)
    return value


# ---------------------------------------------------------------------------- pickle
def unpickle(raw: bytes | IO[bytes], what: str, allow_pickle: bool, unpickler: type | None = None) -> Any:
    """Unpickle ``raw`` (bytes or a binary stream), only if ``allow_pickle`` is ``True``: unpickling runs code
    from the file. ``unpickler`` is a ``pickle.Unpickler`` subclass to use instead of cloudpickle's loader.

    Raises:
        TypeError: ``allow_pickle`` is not a bool.
        ModelFileError: ``allow_pickle`` is false, or the pickle is unreadable.
    """
    if not _require_bool("allow_pickle", allow_pickle):
        raise ModelFileError(f"{what}: holds a pickle, which runs code when read; pass allow_pickle=True to trust it")
    stream = io.BytesIO(raw) if isinstance(raw, (bytes, bytearray)) else raw
    try:
        if unpickler is not None:
            return unpickler(stream).load()
        import cloudpickle  # noqa: F401  (cloudpickle's objects need its module importable)

        return pickle.load(stream)  # noqa: S301 - allow_pickle=True: the caller trusts the file
    except Exception as exc:  # noqa: BLE001  (whatever unpickling a file's bytes raises is the file's fault)
        raise ModelFileError(f"{what}: the pickle is unreadable ({type(exc).__name__}: {exc})") from exc


def unpickle_plain_data(raw: bytes | IO[bytes], what: str) -> Any:
    """Unpickle ``raw`` (bytes or a binary stream) if it holds plain data only: ``None``, bools, numbers, strings,
    bytes, lists, tuples, dicts, sets, ``OrderedDict``, ``deque``, NumPy arrays and scalars (not of object dtype
    with other content). Nothing else is built, so the file runs no code; what it builds is bounded by its size
    (``plain_pickle.PLAIN_DATA_COPY_FACTOR``).

    Raises:
        ModelFileError: the pickle names anything else (the message says which global), copies more than its
            size allows, or is unreadable.
    """
    data = raw if isinstance(raw, (bytes, bytearray)) else raw.read()
    return unpickle(bytes(data), what, allow_pickle=True, unpickler=PlainDataUnpickler)  # plain data: no code runs


# ---------------------------------------------------------------------------- zip archives
def _unsafe(name: str) -> bool:
    return name.startswith(("/", "\\")) or ".." in name.split("/") or "\\" in name or ":" in name


class ZipReader:
    """A zip archive (a path, a binary stream or bytes) whose entries are checked before any is read.

    On opening: no unsafe names (``..``, absolute, backslash, drive), no duplicates, only ``allowed`` names
    (when given), each declared size at most ``max_entry_bytes``, each declared compressed size at most the
    archive's length, each ratio within `MAX_COMPRESSION_RATIO`. Use as a context manager.
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | IO[bytes] | bytes,
        what: str | None = None,
        allowed: set[str] | frozenset[str] | None = None,
        max_entry_bytes: int = MAX_ENTRY_BYTES,
    ) -> None:
        self.what = what or (os.fspath(source) if isinstance(source, (str, os.PathLike)) else "archive")
        stream = io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else source
        try:
            self.archive = zipfile.ZipFile(stream)
        except FileNotFoundError:
            raise
        except Exception as exc:  # noqa: BLE001  (a damaged or non-zip file)
            raise ModelFileError(f"{self.what}: not a readable zip archive ({type(exc).__name__}: {exc})") from exc
        try:
            self.infos = self._check(allowed, max_entry_bytes)
        except BaseException:
            self.archive.close()
            raise

    def _check(self, allowed: Any, max_entry_bytes: int) -> dict[str, zipfile.ZipInfo]:
        fp = self.archive.fp
        try:
            fp.seek(0, io.SEEK_END)
            length = fp.tell()
        except (AttributeError, OSError, ValueError):  # pragma: no cover  (unseekable streams cannot be zips)
            length = MAX_ENTRY_BYTES
        infos: dict[str, zipfile.ZipInfo] = {}
        for info in self.archive.infolist():
            name = info.filename
            if _unsafe(name):
                raise ModelFileError(f"{self.what}: entry {name[:200]!r} has an unsafe path")
            if allowed is not None and name not in allowed:
                raise ModelFileError(f"{self.what}: unexpected entry {name[:200]!r}; expected only {sorted(allowed)}")
            if name in infos:
                raise ModelFileError(f"{self.what}: entry {name[:200]!r} appears twice")
            if info.file_size > max_entry_bytes:
                raise ModelFileError(
                    f"{self.what}: entry {name[:200]!r} declares {info.file_size} bytes, more than {max_entry_bytes}"
                )
            if info.compress_size > length:
                raise ModelFileError(
                    f"{self.what}: entry {name[:200]!r} declares {info.compress_size} compressed bytes in an "
                    f"archive of {length}"
                )
            self._check_ratio(info, MAX_COMPRESSION_RATIO)
            infos[name] = info
        return infos

    def _check_ratio(self, info: zipfile.ZipInfo, ratio: int) -> None:
        if info.file_size > RATIO_FLOOR_BYTES and info.file_size > ratio * max(info.compress_size, 1):
            raise ModelFileError(
                f"{self.what}: entry {info.filename[:200]!r} expands {info.file_size / max(info.compress_size, 1):.0f}"
                f" times (limit {ratio}); refusing a possible zip bomb"
            )

    def namelist(self) -> list[str]:
        """The entries' names, in the archive's order."""
        return list(self.infos)

    @property
    def names(self) -> set[str]:
        """The entries' names."""
        return set(self.infos)

    def __enter__(self) -> ZipReader:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close the archive."""
        self.archive.close()

    def _info(self, name: str) -> zipfile.ZipInfo:
        try:
            return self.infos[name]
        except KeyError:
            raise ModelFileError(f"{self.what}: no entry {name!r}") from None

    @contextmanager
    def _open(self, name: str) -> Iterator[IO[bytes]]:
        try:
            with self.archive.open(self._info(name)) as fh:
                yield fh
        except ModelFileError:
            raise
        except Exception as exc:  # noqa: BLE001  (damaged data: CRC, truncated, bad deflate stream)
            raise ModelFileError(f"{self.what}: entry {name!r} is damaged ({type(exc).__name__}: {exc})") from exc

    def read(self, name: str, limit: int = MAX_ENTRY_BYTES, ratio: int = MAX_COMPRESSION_RATIO) -> bytes:
        """Entry ``name``'s bytes: refused if it declares more than ``limit`` bytes or expands more than ``ratio``
        times, and decompressed in chunks that stop at either bound whatever the header says."""
        info = self._info(name)
        if info.file_size > limit:
            raise ModelFileError(
                f"{self.what}: entry {name!r} declares {info.file_size} bytes, more than the {limit} it may hold"
            )
        self._check_ratio(info, ratio)
        cap = min(limit, max(RATIO_FLOOR_BYTES, ratio * max(info.compress_size, 1)))
        parts, total = [], 0
        with self._open(name) as fh:
            while True:
                chunk = fh.read(min(_CHUNK, cap + 1 - total))
                if not chunk:
                    break
                parts.append(chunk)
                total += len(chunk)
                if total > cap:
                    raise ModelFileError(f"{self.what}: entry {name!r} holds more than {cap} bytes")
        return b"".join(parts)

    def json(self, name: str, limit: int = MAX_METADATA_BYTES) -> Any:
        """Entry ``name`` parsed with `parse_json()`."""
        return parse_json(self.read(name, limit), f"{self.what}: entry {name!r}", limit)

    def tensors(self, name: str, limit: int = MAX_ENTRY_BYTES, finite: bool = True) -> Any:
        """Entry ``name`` read with `load_tensors()` (at most ``limit`` bytes, `MAX_TENSOR_RATIO`)."""
        return load_tensors(self.read(name, limit, MAX_TENSOR_RATIO), f"{self.what}: entry {name!r}", finite)

    def npy(
        self,
        name: str,
        dtype: Any,
        shape: tuple[int, ...] | None,
        max_items: int | None = None,
        any_ndim: bool = False,
    ) -> np.ndarray:
        """Member ``name + '.npy'`` of an ``.npz`` archive, header first: exactly ``dtype`` (``None``: any native bool,
        int or float type) and ``shape``, or with
        ``shape=None`` 1-D (any number of dimensions up to 8 with ``any_ndim``) with at most ``max_items`` items;
        C order; the declared size and compression ratio of the member within what that shape needs. Nothing is
        allocated before the header matches. Booleans must be 0 or 1, floating values finite."""
        member = f"{name}.npy"
        if member not in self.infos:
            raise ModelFileError(f"{self.what}: lacks {member}")
        info = self.infos[member]
        with self._open(member) as fh:
            stored_shape, fortran, stored_dtype = _npy_header(fh, f"{self.what}: {member}")
            if dtype is None:  # any plain number type (bool, int, uint, float), never objects
                dtype = stored_dtype if stored_dtype.kind in "biuf" and stored_dtype.isnative else np.dtype(np.float64)
            dtype = np.dtype(dtype)
            if shape is None:
                ndim_ok = 0 <= len(stored_shape) <= 8 if any_ndim else len(stored_shape) == 1
                ok = ndim_ok and math.prod(stored_shape) <= (max_items or 0)
                shape = tuple(stored_shape)
            else:
                ok = tuple(stored_shape) == tuple(shape)
            if fortran or stored_dtype != dtype or not ok:
                cap = f" with at most {max_items} items" if max_items is not None else ""
                raise ModelFileError(
                    f"{self.what}: {member} holds {stored_dtype} of shape {tuple(stored_shape)}"
                    f"{' (Fortran order)' if fortran else ''}; expected {dtype} of shape {shape}{cap}"
                )
            nbytes = math.prod(shape) * dtype.itemsize
            if nbytes > info.file_size:
                raise ModelFileError(
                    f"{self.what}: {member} declares {nbytes} bytes of data in a member of {info.file_size}"
                )
            if info.compress_type != zipfile.ZIP_STORED:
                self._check_ratio(info, MAX_TENSOR_RATIO)
            try:
                data = fh.read(nbytes)
            except Exception as exc:  # noqa: BLE001
                raise ModelFileError(f"{self.what}: {member} is damaged ({type(exc).__name__}: {exc})") from exc
            if len(data) != nbytes:
                raise ModelFileError(
                    f"{self.what}: {member} holds {len(data)} bytes of data, its header declares {nbytes}"
                )
        array = np.frombuffer(data, dtype=np.uint8 if dtype == np.bool_ else dtype).reshape(shape)
        if dtype == np.bool_:
            if array.size and int(array.max()) > 1:
                raise ModelFileError(f"{self.what}: {member} holds booleans other than 0 and 1")
            array = array.view(np.bool_)
        elif array.dtype.kind == "f" and not bool(np.isfinite(array).all()):
            raise ModelFileError(f"{self.what}: {member} holds non-finite values")
        return array

    def npz(self, name: str, limit: int = MAX_ENTRY_BYTES, ratio: int = MAX_COMPRESSION_RATIO) -> ZipReader:
        """Entry ``name``, an ``.npz`` archive, as a `ZipReader` of its own (its members checked again)."""
        raw = self.read(name, limit, ratio)
        return ZipReader(raw, f"{self.what}: entry {name!r}", max_entry_bytes=len(raw))


def _npy_header(fh: IO[bytes], what: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    try:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            return np.lib.format.read_array_header_1_0(fh, max_header_size=MAX_NPY_HEADER_BYTES)
        if version == (2, 0):
            return np.lib.format.read_array_header_2_0(fh, max_header_size=MAX_NPY_HEADER_BYTES)
        raise ModelFileError(f"{what}: unsupported .npy version {version}")
    except ModelFileError:
        raise
    except Exception as exc:  # noqa: BLE001  (whatever a forged header breaks)
        raise ModelFileError(f"{what}: malformed .npy header ({type(exc).__name__}: {exc})") from exc


def read_npy_member(
    archive: Any, name: str, dtype: Any, shape: tuple[int, ...] | None, max_items: int | None = None
) -> np.ndarray:
    """`ZipReader.npy()` on ``archive`` (a `ZipReader`, or a ``zipfile.ZipFile`` that is wrapped first)."""
    if not isinstance(archive, ZipReader):
        raise TypeError(f"read_npy_member needs a ZipReader, got {type(archive).__name__}")
    return archive.npy(name, dtype, shape, max_items)


def read_npz_file(path: str | os.PathLike[str], names: list[str], max_items: int = 2**24) -> dict[str, np.ndarray]:
    """The members ``names`` of an ``.npz`` file of plain numbers (e.g. a run's ``evaluations.npz``), each at most
    ``max_items`` items, with `ZipReader.npy()`'s checks (any native bool, int or float type)."""
    with ZipReader(path) as archive:
        return {name: np.array(archive.npy(name, None, None, max_items, any_ndim=True)) for name in names}


# ---------------------------------------------------------------------------- the doors
DOORS: dict[str, tuple[str, str]] = {
    "TD3.load / DDPG.load (rlkit_td3 model zip)": (
        "rlkit_td3.fileio.serialization.read_model_zip",
        "entry names, duplicates, path tricks; declared and actual sizes against what the metadata's networks, "
        "n_envs and buffer_size can need (at most 8 GiB); compression ratio (tensors 32, buffer 2000); "
        "metadata JSON 8 MiB, 64 deep; tensors weights_only, dense, real, finite; pickle only with "
        "allow_pickle=True; then every part against the model (`rlkit_td3.persistence.file_checks`)",
    ),
    "TD3.load of a Stable-Baselines3 zip": (
        "rlkit_td3.persistence.sb3_zip.read_sb3_zip",
        "only SB3's entry names; `data` JSON 8 MiB, 64 deep; each tensor entry capped by the networks `data` "
        "declares, ratio 32, weights_only, finite; the cloudpickle payloads never unpickled without allow_pickle",
    ),
    "TD3Policy.load": (
        "rlkit_td3.policies.policy_file.read_policy_file",
        "the model zip rules; only `policy.pth` is read, capped by the networks the file declares "
        "(`rlkit_td3.policies.declared_size`); the allow-lists of TD3.load for "
        "activation_fn, optimizer_class, features_extractor_class; declared shapes before anything is built; "
        "then keys, shapes, dtypes, finite",
    ),
    "Actor.load (policy.actor.save)": (
        "rlkit_td3.policies.policy_file.read_policy_file",
        "the TD3Policy.load rules for the actor's tensors (exactly those, shapes declared before anything is "
        "built); the critics the file declares are never built (one without hidden layers stands in)",
    ),
    "set_parameters(path)": (
        "rlkit_td3.persistence.parameters.set_parameters",
        "the model zip rules; only the networks' and optimizers' entries are read (never a buffer), each capped "
        "by the networks the file declares, as TD3.load caps them; then exactly the checks of "
        "`set_parameters(dict)`: "
        "policy keys, shapes, dtypes, finite; optimizer state (keys, moments' shapes including 0-d, dtypes, "
        "finite, step, switches); all or nothing",
    ),
    "VecNormalize.load": (
        "rlkit_td3.vec_env.vec_normalize.VecNormalize.load",
        "exactly two entries, each at most 256 MiB and expanding at most 32 times; settings JSON 8 MiB, 64 deep; "
        "the statistics `.npz` member by member, header first: float64, at most 2**22 items each, declared size "
        "and compression ratio (32) within what the header's shape needs; running statistics finite, var >= 0, "
        "count > 0; SB3's pickle "
        "only with allow_pickle=True",
    ),
    "load_replay_buffer / ReplayBuffer.load (uniform, n-step, PER/LAP, HER, Dict)": (
        "rlkit_td3.buffers.replay_buffer.ReplayBuffer.load",
        "only the buffer's own members; each `.npy` header first: exactly the dtype and shape the buffer's "
        "spaces and stored size give; the JSON header 16 MiB, 64 deep; positions, rings, n-step links, "
        "priorities and HER episodes consistent and finite",
    ),
    "rlkit-td3 eval / train --resume": (
        "rlkit_td3.cli.main",
        "a run's `config.json` through the same JSON reader; the model through TD3.load; any refusal is one "
        "line on stderr and exit code 2, before a file is written",
    ),
    "load_from_pkl": (
        "rlkit_td3.save_util.load_from_pkl",
        "without allow_pickle=True (a real bool) only plain data: builtin containers and scalars, NumPy arrays; "
        "any other global the pickle names is refused before it is resolved; bytes only from latin-1 text (no "
        "other codec), no constructor or array sized by a number instead of data, an array's header within its "
        "data; a dtype's state checked on a scratch copy against the dtype NumPy makes from its description (its "
        "flags say whether items are object pointers), applied once and before any array uses it; constructors "
        "every object an opcode builds, its slots and every copy are charged against 64 times the file's size plus "
        "4 MiB; numpy.ndarray only as _reconstruct's class, never called",
    ),
}
"""Every public way from a file into a model: ``{door: (the function, what it checks)}``. The Security page's
table of doors is generated from this (``docs_hooks/security.py``)."""


__all__ = [
    "DOORS",
    "MAX_COMPRESSION_RATIO",
    "MAX_ENTRY_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_METADATA_BYTES",
    "MAX_TENSOR_RATIO",
    "ModelFileError",
    "ZipReader",
    "check_tensor_tree",
    "json_depth",
    "load_tensors",
    "parse_json",
    "read_json_file",
    "read_npy_member",
    "read_npz_file",
    "unpickle",
    "unpickle_plain_data",
]

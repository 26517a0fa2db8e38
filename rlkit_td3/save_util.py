"""File helpers with Stable-Baselines3's names (``stable_baselines3.common.save_util``), in their safe subset.

`open_path()` opens a path or checks an open binary stream as SB3's does (preferred suffix, parent folders made,
a folder path diverted to ``<path>_2``). `save_to_pkl()` writes a pickle (cloudpickle, as SB3). `load_from_pkl()`
reads plain data (builtin containers and scalars, NumPy arrays) and, only with ``allow_pickle=True``, anything
else: unpickling arbitrary objects runs code from the file, so unlike SB3 it is refused by default. Model files
are written and read by ``model.save`` / ``TD3.load``, which use no pickle at all.
"""

from __future__ import annotations

import io
import os
import pickle
import warnings
from pathlib import Path
from typing import IO, Any

import cloudpickle

from rlkit_td3.checks.errors import ModelFileError, UnsupportedModelError
from rlkit_td3.fileio.file_reader import unpickle, unpickle_plain_data
from rlkit_td3.fileio.serialization import remove_stale_temporaries, require_bool

_MODES = {"w": "w", "write": "w", "r": "r", "read": "r"}


def _mode(mode: Any) -> str:
    if not isinstance(mode, str) or mode.lower() not in _MODES:
        raise ValueError(f"Expected mode to be either 'w' or 'r' ('write', 'read'), got {mode!r}")
    return _MODES[mode.lower()]


def _check_stream(stream: IO[bytes], mode: str) -> IO[bytes]:
    if stream.closed:
        raise ValueError(f"File stream {stream} is closed.")
    if (mode == "w" and not stream.writable()) or (mode == "r" and not stream.readable()):
        raise ValueError(f"Expected a {'writable' if mode == 'w' else 'readable'} file, got {stream}")
    return stream


def open_path(
    path: str | os.PathLike[str] | IO[bytes], mode: str, verbose: int = 0, suffix: str | None = None
) -> IO[bytes]:
    """A binary file opened for ``mode`` (``"w"``/``"write"`` or ``"r"``/``"read"``), as SB3's ``open_path``.

    Args:
        path: a path, or an open binary stream (returned as it is once checked against ``mode``).
        mode: ``"w"`` or ``"r"`` (or ``"write"``, ``"read"``).
        verbose: 2 warns when a file is overwritten or a missing path is retried with the suffix.
        suffix: writing, added to a path without one; reading, tried when the path itself is missing.

    Writing creates missing parent folders (with a warning) and writes ``<path>_2`` when ``path`` is a folder.

    Raises:
        TypeError: ``path`` is neither a path nor a binary stream.
        ValueError: an unknown mode, or a closed stream or one that cannot be used in ``mode``.
        FileNotFoundError: reading a missing file (with and without the suffix).
    """
    if isinstance(path, io.IOBase) and not isinstance(path, io.TextIOBase):
        return _check_stream(path, _mode(mode))  # type: ignore[arg-type]
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str, a pathlib.Path or an open binary stream, got {type(path).__name__}")
    mode = _mode(mode)
    file = Path(path)
    if mode == "r":
        if not file.exists() and suffix and Path(f"{file}.{suffix}").exists():
            if verbose >= 2:
                warnings.warn(f"Path '{file}' not found. Attempting {file}.{suffix}.", stacklevel=2)
            file = Path(f"{file}.{suffix}")
        return file.open("rb")
    if file.suffix == "" and suffix:
        file = Path(f"{file}.{suffix}")
    if file.is_dir():
        warnings.warn(f"Path '{file}' is a folder. Will save instead to {file}_2", stacklevel=2)
        file = Path(f"{file}_2")
    if not file.parent.exists():
        warnings.warn(f"Path '{file.parent}' does not exist. Will create it.", stacklevel=2)
        file.parent.mkdir(parents=True, exist_ok=True)
    if file.is_file() and verbose >= 2:
        warnings.warn(f"Path '{file}' exists, will overwrite it.", stacklevel=2)
    return file.open("wb")


def save_to_pkl(path: str | os.PathLike[str] | IO[bytes], obj: Any, verbose: int = 0) -> None:
    """Pickle ``obj`` (with cloudpickle, as SB3) to ``path`` (``.pkl`` added to a path without a suffix).

    A stream passed as ``path`` is closed afterwards, as SB3's ``save_to_pkl`` does.
    """
    with open_path(path, "w", verbose=verbose, suffix="pkl") as stream:
        cloudpickle.dump(obj, stream, protocol=pickle.HIGHEST_PROTOCOL)


def load_from_pkl(path: str | os.PathLike[str] | IO[bytes], verbose: int = 0, allow_pickle: bool = False) -> Any:
    """The object pickled in ``path`` (``path.pkl`` is tried if ``path`` is missing); a stream is closed afterwards.

    Without ``allow_pickle`` only plain data is read: ``None``, bools, numbers, strings, bytes, lists, tuples,
    dicts, sets, ``OrderedDict``, ``deque`` and NumPy arrays, which builds no object that could run code (SB3
    unpickles anything). Other objects (classes, functions, cloudpickled lambdas) need ``allow_pickle=True``.

    Args:
        path: a path or an open binary stream.
        verbose: 2 warns when the suffix is tried.
        allow_pickle: unpickle anything: unpickling can run arbitrary code from the file, so only for files you
            trust. A real ``bool``.

    Raises:
        TypeError: ``allow_pickle`` is not a bool.
        ModelFileError: (a ``ValueError``) the pickle is unreadable, or names a global that plain data does not
            allow (the message names it) and ``allow_pickle`` is False.
    """
    allow_pickle = require_bool("allow_pickle", allow_pickle)
    with open_path(path, "r", verbose=verbose, suffix="pkl") as stream:
        if allow_pickle:
            return unpickle(stream, f"{path!r}", allow_pickle=True)  # the caller opted in
        return unpickle_plain_data(stream, f"{path!r}")


__all__ = [
    "ModelFileError",
    "UnsupportedModelError",
    "load_from_pkl",
    "open_path",
    "remove_stale_temporaries",
    "save_to_pkl",
]

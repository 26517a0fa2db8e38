"""The registry of model file formats and of algorithm classes by name, which `BaseAlgorithm.load` dispatches through.

It imports nothing of the package, so that `BaseAlgorithm` can load and save without knowing any file format or
any of its subclasses. The formats register themselves where they are defined (``rlkit_td3.persistence.checkpoint``:
this
library's own zip, which ``save`` writes; ``rlkit_td3.persistence.sb3_import``: Stable-Baselines3's), as do the
algorithms
(``OffPolicyAlgorithm``, ``TD3``, ``DDPG``), by their class names. See the Architecture page of the docs for
adding a format.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, NamedTuple


class FileFormat(NamedTuple):
    """A model file format: how to recognise one of its files, read it, and (for the native format) write it."""

    name: str
    load: Callable[..., Any]
    """``load(cls, path, env, device, custom_objects, print_system_info, force_reset, allow_pickle, **kwargs)``:
    the ``cls`` model a file holds (the arguments are `BaseAlgorithm.load`'s)."""
    recognises: Callable[[str | os.PathLike[str]], bool] | None = None
    """Whether a path holds a file of this format; ``None`` for the native format, read when no other claims a file
    (it also gives the errors for a missing or malformed file)."""
    save: Callable[..., None] | None = None
    """``save(model, path, include_buffer, exclude, include)``: the native format's writer; ``None`` for a format
    only read."""


FILE_FORMATS: dict[str, FileFormat] = {}
"""The registered file formats by name, in the order they were registered."""

ALGORITHMS: dict[str, type] = {}
"""The library's algorithm classes by name (``OffPolicyAlgorithm``, ``TD3``, ``DDPG``)."""


def register_format(file_format: FileFormat) -> None:
    """Add a file format (replacing one of the same name); at most one native format (``recognises=None``)."""
    native = [f.name for f in FILE_FORMATS.values() if f.recognises is None and f.name != file_format.name]
    if file_format.recognises is None and native:
        raise ValueError(f"a native file format is registered already: {native[0]!r}")
    FILE_FORMATS[file_format.name] = file_format


def format_for(path: str | os.PathLike[str]) -> FileFormat:
    """The format that claims the file at ``path``, else the native one."""
    for file_format in FILE_FORMATS.values():
        if file_format.recognises is not None and file_format.recognises(path):
            return file_format
    return native_format()


def native_format() -> FileFormat:
    """The format ``save`` writes."""
    for file_format in FILE_FORMATS.values():
        if file_format.recognises is None:
            return file_format
    raise RuntimeError("no native model file format is registered (import rlkit_td3 first)")


def register_algorithm(cls: type) -> type:
    """Enter ``cls`` by its name (a class decorator: the algorithm modules use it on their classes)."""
    ALGORITHMS[cls.__name__] = cls
    return cls


def algorithm_class(name: str) -> type:
    """The registered algorithm class called ``name``."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise RuntimeError(f"no algorithm class {name!r} is registered (import rlkit_td3 first)") from None

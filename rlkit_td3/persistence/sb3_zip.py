"""Reading a model file Stable-Baselines3 2.x TD3 or DDPG wrote (its zip archive), without unpickling: the entries,
their sizes, the ``data`` JSON and the tensors. `rlkit_td3.persistence.sb3_import` builds a model from what this
reads (its
docstring describes the format).
"""

from __future__ import annotations

import base64
import binascii
import math
import pickletools
from pathlib import Path
from typing import Any

from rlkit_td3.checks.errors import UnsupportedModelError
from rlkit_td3.checks.state import ENTRY_OVERHEAD_BYTES, TENSOR_OVERHEAD_BYTES
from rlkit_td3.fileio.file_reader import MAX_ENTRY_BYTES, MAX_METADATA_BYTES, ModelFileError, ZipReader, unpickle
from rlkit_td3.persistence.load_arguments import existing_zip_path
from rlkit_td3.policies.networks import DEFAULT_NET_ARCH, parse_net_arch

DATA_ENTRY = "data"
"""The JSON entry of an SB3 model file."""
VERSION_ENTRY = "_stable_baselines3_version"
"""The entry holding the SB3 version that wrote the file."""
_TEXT_ENTRIES = {VERSION_ENTRY: 64, "system_info.txt": 64 * 2**10}
_TENSOR_ENTRIES = ("policy.pth", "actor.optimizer.pth", "critic.optimizer.pth", "pytorch_variables.pth")
SB3_ENTRIES = frozenset({DATA_ENTRY, *_TEXT_ENTRIES, *_TENSOR_ENTRIES})
"""Every entry SB3 2.x writes for TD3 / DDPG; an archive with others is refused."""

SUPPORTED = "Stable-Baselines3 2.x TD3 or DDPG with MlpPolicy (Box observation and action spaces)"
_SB3_POLICY_MODULE = "stable_baselines3.td3.policies"
_MAX_N_ENVS = 65_536
_RUNTIME_STATE = frozenset(
    {
        "_last_obs",
        "_last_episode_starts",
        "_last_original_obs",
        "ep_info_buffer",
        "ep_success_buffer",
        "lr_schedule",
        "policy_class",
        "start_time",
    }
)
"""Pickled fields that a loaded model does not need: it resets its envs and rebuilds its schedule and policy."""


# ---------------------------------------------------------------------------- detection and reading
def is_sb3_zip(path: Any) -> bool:
    """Whether ``path`` (or ``path + ".zip"``, SB3's rule) is a zip archive laid out as SB3 writes models: a
    ``data`` entry and no ``metadata.json``. Never raises: anything else (a missing file, not a zip, a bad
    path type) is ``False``, and the caller's own loading reports it."""
    try:
        with ZipReader(existing_zip_path(path)) as archive:
            names = archive.names
    except Exception:  # noqa: BLE001  (not an SB3 zip, whatever is wrong with it)
        return False
    return DATA_ENTRY in names and "metadata.json" not in names


def _pickled(value: Any) -> bool:
    return isinstance(value, dict) and ":serialized:" in value


def _unpickle(field: str, value: dict[str, Any]) -> Any:
    """The object a ``:serialized:`` field holds (only ever called with ``allow_pickle=True``)."""
    try:
        raw = base64.b64decode(value[":serialized:"])
    except (binascii.Error, ValueError, TypeError) as exc:
        raise ModelFileError(f"{DATA_ENTRY}[{field!r}] is not base64 ({exc})") from exc
    return unpickle(raw, f"{DATA_ENTRY}[{field!r}]", allow_pickle=True)


def _pickle_scan(value: dict[str, Any]) -> tuple[list[str], list[int], list[bytes]]:
    """The strings, integers and byte strings a ``:serialized:`` payload pushes, in order, read with
    ``pickletools.genops``: the opcodes are listed, nothing is imported or built. Empty lists when the payload
    is not a readable pickle. (Its size is bounded by the ``data`` entry's.)"""
    strings: list[str] = []
    ints: list[int] = []
    blobs: list[bytes] = []
    try:
        for opcode, arg, _ in pickletools.genops(base64.b64decode(value[":serialized:"], validate=True)):
            if opcode.name in ("SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"):
                strings.append(arg)
            elif opcode.name in ("BININT", "BININT1", "BININT2", "LONG1"):
                ints.append(int(arg))
            elif opcode.name in ("SHORT_BINBYTES", "BINBYTES", "BINBYTES8", "BYTEARRAY8"):
                blobs.append(bytes(arg))
    except (binascii.Error, ValueError, TypeError, KeyError):
        return [], [], []
    return strings, ints, blobs


def _entry_limits(data: dict[str, Any]) -> dict[str, int]:
    """Largest size each tensor entry may have given the networks ``data`` declares (8 bytes per value,
    three values per parameter for an optimizer, both targets for the policy, with per-tensor slack)."""
    obs_dim, act_dim = _flat_size(data, "observation_space"), _flat_size(data, "action_space")
    pi, qf = _net_arch(data.get("policy_kwargs"))
    n_critics = _n_critics(data)
    actor = sum(a * b + b for a, b in zip([obs_dim, *pi], [*pi, act_dim]))
    critic = n_critics * sum(a * b + b for a, b in zip([obs_dim + act_dim, *qf], [*qf, 1]))
    n_tensors = 4 * (len(pi) + 1) + 4 * n_critics * (len(qf) + 1)
    slack = ENTRY_OVERHEAD_BYTES + TENSOR_OVERHEAD_BYTES * 3 * n_tensors
    limits = {
        "policy.pth": 2 * 8 * (actor + critic) + slack,
        "actor.optimizer.pth": 3 * 8 * actor + slack,
        "critic.optimizer.pth": 3 * 8 * critic + slack,
        "pytorch_variables.pth": ENTRY_OVERHEAD_BYTES,
    }
    return {name: min(limit, MAX_ENTRY_BYTES) for name, limit in limits.items()}


def read_sb3_zip(path: str | Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    """``(data, tensors, system)`` of an SB3 model archive, trusting nothing in it.

    ``data`` is the parsed ``data`` JSON, ``tensors`` the ``.pth`` entries by name, ``system`` the versions that
    wrote the file (``stable_baselines3``, ``python``, ``torch``, ... from ``system_info.txt``).

    Entries are checked before anything is read: only the names SB3 writes, no duplicates, compression ratios
    bounded, ``data`` at most `rlkit_td3.fileio.serialization.MAX_METADATA_BYTES`, each tensor entry at most what the
    networks ``data`` declares can need (read with that cap whatever its header says). Tensors are read with
    ``torch.load(weights_only=True)``. Nothing is unpickled.

    Raises:
        ModelFileError: naming the entry that is missing, unexpected, too large or unreadable.
    """
    try:
        with ZipReader(path) as archive:
            seen = archive.names
            for name in (DATA_ENTRY, "policy.pth"):
                if name not in seen:
                    raise ModelFileError(f"{path}: no {name!r} entry; an SB3 model file has one")
            data = archive.json(DATA_ENTRY, MAX_METADATA_BYTES)
            if not isinstance(data, dict):
                raise ModelFileError(f"{path}: entry {DATA_ENTRY!r} is not a JSON object")
            try:
                _check_policy_class(data)  # another algorithm's file: say so before anything else
            except UnsupportedModelError as exc:
                raise UnsupportedModelError(f"{path}: {exc}") from None
            unexpected = sorted(seen - SB3_ENTRIES)
            if unexpected:
                raise ModelFileError(
                    f"{path}: unexpected entry {unexpected[0][:200]!r}; an SB3 TD3/DDPG file holds "
                    f"{sorted(SB3_ENTRIES)}"
                )
            text = {
                name: archive.read(name, limit).decode("utf-8", "replace")
                for name, limit in _TEXT_ENTRIES.items()
                if name in seen
            }
            version = text.get(VERSION_ENTRY, "")
            system = _system_info(text.get("system_info.txt", ""))
            system.setdefault("stable_baselines3", version.strip())
            limits = _entry_limits(data)
            tensors = {name: archive.tensors(name, limits[name]) for name in _TENSOR_ENTRIES if name in seen}
    except (ModelFileError, UnsupportedModelError, FileNotFoundError):
        raise
    except Exception as exc:  # noqa: BLE001  (anything that fails while parsing untrusted bytes)
        raise ModelFileError(f"{path}: unreadable SB3 model file ({type(exc).__name__}: {exc})") from exc
    return data, tensors, system


_SYSTEM_KEYS = {"OS": "platform", "Python": "python", "PyTorch": "torch", "Numpy": "numpy", "Gymnasium": "gymnasium"}


def _system_info(text: str) -> dict[str, str]:
    """SB3's ``system_info.txt`` (``- Python: 3.11.7`` lines) under the keys ``print_system_info`` shows."""
    info = {}
    for line in text.splitlines():
        key, _, value = line.removeprefix("- ").partition(": ")
        if key in _SYSTEM_KEYS:
            info[_SYSTEM_KEYS[key]] = value.strip()
        elif key == "Stable-Baselines3":
            info["stable_baselines3"] = value.strip()
    return info


# ---------------------------------------------------------------------------- fields the reader needs
def _int(field: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ModelFileError(f"{DATA_ENTRY}[{field!r}] must be an int in [{low}, {high}], got {str(value)[:80]}")
    return value


def _number(field: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ModelFileError(f"{DATA_ENTRY}[{field!r}] must be a finite number, got {str(value)[:80]}")
    return float(value)


def _flat_size(data: dict[str, Any], key: str) -> int:
    entry = data.get(key)
    dims = entry.get("_shape") if isinstance(entry, dict) else None
    if not isinstance(dims, list) or len(dims) > 8:
        raise ModelFileError(f"{DATA_ENTRY}[{key!r}] has no readable '_shape'")
    return math.prod(_int(f"{key}._shape", d, 1, 2**31) for d in dims)


def _policy_kwargs_fields(value: Any) -> dict[str, Any]:
    """``policy_kwargs`` as stored: plain JSON, or (when it held a class) its readable fields."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ModelFileError(f"{DATA_ENTRY}['policy_kwargs'] must be an object, got {str(value)[:80]}")
    return {k: v for k, v in value.items() if k not in (":type:", ":serialized:")}


def _net_arch(policy_kwargs: Any) -> tuple[list[int], list[int]]:
    arch = _policy_kwargs_fields(policy_kwargs).get("net_arch", DEFAULT_NET_ARCH)
    try:
        return parse_net_arch(arch)
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"{DATA_ENTRY}['policy_kwargs']['net_arch']: {exc}") from exc


def _n_critics(data: dict[str, Any]) -> int:
    value = _policy_kwargs_fields(data.get("policy_kwargs")).get("n_critics", 2)
    return _int("policy_kwargs.n_critics", value, 1, 1024)


def _check_policy_class(data: dict[str, Any]) -> None:
    """Refuse anything but SB3's TD3 ``MlpPolicy`` (``TD3Policy``), read from the class's readable fields."""
    entry = data.get("policy_class")
    fields = entry if isinstance(entry, dict) else {}
    module, init = str(fields.get("__module__", "?")), str(fields.get("__init__", "?"))
    found = f"{module}, {init.split(' at ')[0].removeprefix('<function ')}"
    if module != _SB3_POLICY_MODULE:
        raise UnsupportedModelError(f"the SB3 model's policy is from {module[:100]!r}; supported: {SUPPORTED}")
    if not init.startswith("<function TD3Policy.__init__"):
        raise UnsupportedModelError(
            f"the SB3 model's policy is {found[:200]!r} (CnnPolicy or MultiInputPolicy?); {SUPPORTED}"
        )
    extractor = _policy_kwargs_fields(data.get("policy_kwargs")).get("features_extractor_class")
    if extractor is not None and "FlattenExtractor" not in str(extractor):
        raise UnsupportedModelError(
            f"the SB3 model uses features extractor {str(extractor)[:100]!r}; supported: {SUPPORTED}"
        )

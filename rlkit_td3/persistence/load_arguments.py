"""Checks of ``load()``'s own arguments (the caller's, not the file's): paths, ``custom_objects``, keyword overrides.

Used by every file format's loader (`rlkit_td3.persistence.checkpoint`, `rlkit_td3.persistence.sb3_import`). It sits
above the components:
``custom_objects`` may replace the policy or the replay buffer class, which must then be subclasses of the
library's.
"""

from __future__ import annotations

import inspect
import os
import platform
import sys
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from rlkit_td3.buffers.replay_buffer import ReplayBuffer
from rlkit_td3.policies.td3_policy import TD3Policy


class CallerArgumentError(Exception):
    """Raised (by ``load``) from a ``TypeError``/``ValueError`` caused by ``load``'s arguments, not by the file."""


CUSTOM_TO_CTOR = {"policy_class": "policy"}


_NOT_OVERRIDABLE = {"self", "policy", "env", "device", "policy_kwargs", "_init_setup_model"}


def _custom_classes() -> dict[str, type]:
    return {
        "policy_class": TD3Policy,
        "replay_buffer_class": ReplayBuffer,
        "activation_fn": torch.nn.Module,
        "optimizer_class": torch.optim.Optimizer,
        "features_extractor_class": torch.nn.Module,
    }


def _overridable(cls: type) -> set[str]:
    """Constructor hyperparameters ``load`` accepts as keyword overrides (the networks' shape excluded)."""
    params = inspect.signature(cls.__init__).parameters.values()
    return {p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)} - _NOT_OVERRIDABLE


def check_load_overrides(cls: type, overrides: dict[str, Any]) -> None:
    """``load``'s keyword overrides must be constructor hyperparameters of ``cls`` (else ``TypeError``)."""
    allowed = _overridable(cls)
    for key in overrides:
        if key not in allowed:
            why = " (the stored networks fix it)" if key in _NOT_OVERRIDABLE else ""
            raise TypeError(
                f"{cls.__name__}.load() got an unexpected keyword argument {key!r}{why}; hyperparameters "
                f"it accepts: {sorted(allowed)}"
            )


def check_same_policy_kwargs(given: Any, policy: TD3Policy) -> None:
    """``load(..., policy_kwargs=...)``: the stored networks fix the policy, so ``policy_kwargs`` is accepted only
    when each of its entries equals the loaded policy's (as in SB3, which refuses different ones).

    Raises:
        TypeError: ``given`` is not a dict.
        ValueError: an entry differs from the stored policy's, or names no policy setting.
    """
    if not isinstance(given, dict):
        raise TypeError(f"policy_kwargs must be a dict, got {given!r}")
    stored = policy.constructor_kwargs()
    differ = {}
    for key, value in given.items():
        own = stored.get(key, getattr(policy, key, _MISSING)) if isinstance(key, str) else _MISSING
        if own is _MISSING or not _equal(own, value):
            differ[key] = (value, None if own is _MISSING else own)
    if differ:
        details = ", ".join(f"{key!r}: given {v!r}, stored {o!r}" for key, (v, o) in differ.items())
        raise ValueError(
            f"load(): the specified policy_kwargs do not equal the stored policy kwargs ({details}); the saved "
            "networks fix the policy, leave policy_kwargs out to load it as saved"
        )


_MISSING = object()


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001  (arrays and tensors: compared by their values)
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))


def check_custom_objects(cls: type, custom_objects: Any) -> dict[str, Any]:
    """``load``'s ``custom_objects``: a copy holding its known entries, each checked (classes of the right kind).

    A key that names no entry of a model file is left out with a ``UserWarning`` (SB3 ignores such keys; its
    recipe for loading across versions passes keys a file may lack).
    """
    if custom_objects is None:
        return {}
    if not isinstance(custom_objects, dict):
        raise TypeError(f"custom_objects must be a dict or None, got {custom_objects!r}")
    classes = _custom_classes()
    allowed = _overridable(cls) | set(classes) | {"optimizer_kwargs"}
    unknown = sorted(str(key) for key in custom_objects if key not in allowed)
    if unknown:
        warnings.warn(
            f"custom_objects keys {unknown} name no entry of a {cls.__name__} file and are ignored; "
            f"known: {sorted(allowed)}",
            UserWarning,
            stacklevel=4,
        )
    custom_objects = {key: value for key, value in custom_objects.items() if key in allowed}
    for key, value in custom_objects.items():
        base = classes.get(key)
        if base is not None and not (isinstance(value, type) and issubclass(value, base)):
            raise TypeError(f"custom_objects[{key!r}] must be a {base.__name__} subclass, got {value!r}")
        if key == "optimizer_kwargs" and not isinstance(value, dict):
            raise TypeError(f"custom_objects['optimizer_kwargs'] must be a dict, got {value!r}")
    return dict(custom_objects)


def zip_path_for_save(path: Any) -> Path:
    """``path`` as a Path, with ``.zip`` appended when it has no suffix (Stable-Baselines3's rule for save)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {path!r}")
    path = Path(path)
    return path.with_name(path.name + ".zip") if path.suffix == "" else path


def existing_zip_path(path: Any) -> Path:
    """``path``, or ``path + ".zip"`` when only that exists (Stable-Baselines3's rule for load)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {path!r}")
    path = Path(path)
    with_zip = path.with_name(path.name + ".zip")
    return with_zip if not path.exists() and with_zip.is_file() else path


def _system_info() -> dict[str, str]:
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "gymnasium": gym.__version__,
    }


def print_system_info_of(saved: Any) -> None:
    """Print the versions that wrote a file (its ``system`` metadata) beside the current ones."""
    saved = saved if isinstance(saved, dict) else {}
    print("== system that saved the model | current system ==")
    for key, current in _system_info().items():
        print(f"{key}: {printable(str(saved.get(key, '?'))[:200])} | {current}")


def printable(text: str) -> str:
    """``text`` with every control or non-printable character (terminal escapes, newlines, NUL, bidi overrides)
    written as its escape (``\\x1b``), so that what a file says cannot drive the terminal."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


# ---------------------------------------------------------------------------- save(exclude=, include=)
EXCLUDABLE = frozenset(
    {
        "learning_rate",
        "actor_learning_rate",
        "critic_learning_rate",
        "learning_starts",
        "batch_size",
        "tau",
        "gamma",
        "train_freq",
        "gradient_steps",
        "policy_delay",
        "target_policy_noise",
        "target_noise_clip",
        "warmup_action_noise",
        "verbose",
        "seed",
        "tensorboard_log",
    }
)
"""Hyperparameters ``save(exclude=...)`` may leave out of a file; ``load`` then uses the constructor's default.

The buffer's layout (``buffer_size``, ``n_steps``, ``optimize_memory_usage``), the networks and the exploration
noise (whose state the training state restores) always stay in the file."""

NEVER_STORED = frozenset(
    {"env", "device", "rollout_buffer", "_vec_normalize_env", "_episode_storage", "_logger", "_custom_logger"}
)
"""Attributes Stable-Baselines3 leaves out of its files by default and a model file never holds either: accepted
by ``exclude`` (which they change nothing in)."""


def excludable(cls: type) -> dict[str, Any]:
    """The names ``save(exclude=...)`` accepts for a ``cls`` model, with the constructor default ``load`` uses."""
    params = inspect.signature(cls.__init__).parameters
    return {name: params[name].default for name in sorted(EXCLUDABLE) if name in params}


def _names(argument: str, value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{argument} must be a list of attribute names or None, got {value!r}")
    names = list(value)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{argument} must hold attribute names (str), got {name!r}")
    return names


def saved_exclusions(cls: type, exclude: Any, include: Any) -> tuple[list[str], bool]:
    """``save``'s ``exclude`` and ``include`` (Stable-Baselines3's arguments): the hyperparameters to leave out
    of the file (sorted) and whether ``include`` asks for the replay buffer.

    As in SB3, a name in both lists is saved (``include`` wins). ``include`` accepts the excludable names,
    ``"policy"`` (always saved) and ``"replay_buffer"`` (like ``include_buffer=True``).

    Raises:
        TypeError: an argument is not a list of names.
        ValueError: a name the file cannot leave out (``exclude``) or hold (``include``), naming what is allowed.
    """
    allowed = excludable(cls)
    excluded, included = _names("exclude", exclude), _names("include", include)
    for name in excluded:
        if name not in allowed and name not in NEVER_STORED and name not in ("policy", "replay_buffer"):
            raise ValueError(
                f"exclude: {name!r} cannot be left out of a {cls.__name__} file; names it accepts: "
                f"{sorted(allowed)} (and {sorted(NEVER_STORED | {'policy', 'replay_buffer'})}, which change nothing)"
            )
    for name in included:
        if name not in allowed and name not in ("policy", "replay_buffer"):
            raise ValueError(
                f"include: {name!r} cannot be stored in a {cls.__name__} file; names it accepts: "
                f"{sorted(allowed) + ['policy', 'replay_buffer']}"
            )
    left_out = sorted({name for name in excluded if name in allowed} - set(included))
    return left_out, "replay_buffer" in included

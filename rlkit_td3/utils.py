"""Small helpers with Stable-Baselines3's names (``stable_baselines3.common.utils``'s counterpart).

Seeding, the device, Polyak averaging, schedule constructors, ``safe_mean``, the run-id lookup of the logger
set-up, SB3's small checks (``zip_strict``, ``check_shape_equal``, ``is_vectorized_observation``,
``get_parameters_by_name``, ``get_system_info``), the argument validators the algorithms share, and the check of
torch's thread count against the CPUs.
"""

from __future__ import annotations

import os
import platform
import random
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import cloudpickle
import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from torch import nn
from torch.nn.modules import module as _torch_module

from rlkit_td3.checks.arguments import ValueAssertionError as ValueAssertionError  # noqa: F401  (public here, as before)
from rlkit_td3.checks.arguments import check_bool, check_seed
from rlkit_td3.schedules import ConstantSchedule, LinearSchedule, Schedule
from rlkit_td3.version import __version__

_TRAIN_FREQ_UNITS = ("step", "episode")


class ThreadOversubscriptionWarning(UserWarning):
    """torch's intra-op threads compete with other work for the CPUs: updates can become 10-35x slower (see the
    Tips page). Fix: ``torch.set_num_threads(1)`` (or ``OMP_NUM_THREADS=1``), one thread per run."""


class InexactResumeWarning(UserWarning):
    """A checkpoint was loaded onto an env that cannot carry on from the saved envs' random state and episode
    bookkeeping (see the Saving page, "What exact resume covers"): training goes on, but not bit for bit as the
    saved run would have. Fix: load with the env id, a freshly made env, or the gymnasium vector env itself."""


class ReplayBufferRunWarning(InexactResumeWarning):
    """`load_replay_buffer()` read a replay-buffer file written by another run (its run id is not the model's
    ``run_id``): allowed, as in Stable-Baselines3, but the model does not go on as either run would have. The message
    names both ids. The CLI's ``train --resume`` refuses such a file."""


_thread_warning_given = False


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one, else ``os.cpu_count()``)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _runnable_tasks() -> float | None:
    """Tasks runnable on the machine right now (Linux: the median of 5 readings of ``/proc/loadavg``'s
    ``running/total`` field, 2 ms apart, this process's reading thread included), or ``None`` elsewhere."""
    readings = []
    for i in range(5):
        try:
            with open("/proc/loadavg") as f:
                readings.append(int(f.read().split()[3].split("/")[0]))
        except (OSError, ValueError, IndexError):
            return None
        if i < 4:
            time.sleep(0.002)
    return float(np.median(readings))


def auto_num_threads(threads: int | None = None) -> int:
    """The torch intra-op thread count ``learn`` trains at by default (``torch_num_threads="auto"``).

    At most ``threads`` (default: torch's current count, i.e. the caller's setting) and at most the usable CPUs
    that other work leaves free, never fewer than 1. "Other work" is the number of tasks runnable right now, this
    process's reading thread excluded (Linux; elsewhere the 1-minute load average less one). On an idle machine
    it keeps the caller's count (several threads are faster there); next to other CPU-bound work it avoids the
    oversubscription cliff (threads waiting for each other at every matrix product: 10-35x slower updates on a
    loaded 2-core machine). Measured in ``benchmarks/threads.py --section learn``.
    """
    threads = torch.get_num_threads() if threads is None else int(threads)
    cpus = usable_cpus()
    runnable = _runnable_tasks()
    if runnable is not None:
        others = max(0.0, runnable - 1.0)
    else:  # no /proc: the 1-minute load average, less one CPU for this process's own recent work
        try:
            others = max(0.0, os.getloadavg()[0] - 1.0)
        except (AttributeError, OSError):  # no load average (Windows)
            others = 0.0
    free = int(cpus - others + 0.5)
    return max(1, min(threads, cpus, free))


def thread_oversubscription(threads: int | None = None) -> str | None:
    """Why ``threads`` torch intra-op threads (default: the current count) risk oversubscribing the CPUs now, or
    ``None``.

    A risk: more threads than usable CPUs, or threads plus the 1-minute load average (other work, this process's
    recent work included) above the usable CPUs by more than half a CPU. OpenMP threads wait for each other at
    every matrix product, so one descheduled thread stalls them all: on a loaded 2-core machine torch's default
    2 threads made updates 10-35x slower than 1 thread.
    """
    threads = torch.get_num_threads() if threads is None else threads
    if threads <= 1:
        return None
    cpus = usable_cpus()
    if threads > cpus:
        return f"torch uses {threads} intra-op threads on {cpus} usable CPU(s)"
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average (Windows)
        return None
    if load + threads > cpus + 0.5:
        return (
            f"torch uses {threads} intra-op threads while other work keeps the CPUs busy (1-minute load average "
            f"{load:.1f} on {cpus} usable CPU(s))"
        )
    return None


def warn_thread_oversubscription(stacklevel: int = 3) -> None:
    """Warn once per process with `ThreadOversubscriptionWarning` when `thread_oversubscription()` sees a risk;
    ``learn`` calls it after setting its thread count."""
    global _thread_warning_given
    if _thread_warning_given:
        return
    reason = thread_oversubscription()
    if reason is None:
        return
    _thread_warning_given = True
    warnings.warn(
        f"{reason}: updates can become 10-35x slower than with one thread. Call torch.set_num_threads(1) before "
        "learn() (or set OMP_NUM_THREADS=1), one thread per run (a loaded model: model.torch_num_threads = 1); "
        "see the Tips page of the docs. Shown once per process.",
        ThreadOversubscriptionWarning,
        stacklevel=stacklevel,
    )


class NonFiniteError(FloatingPointError):
    """An env returned a NaN or infinite observation (from ``reset()`` or ``step()``) or reward, or one beyond
    float32's range, or a training loss became non-finite."""


def set_random_seed(seed: int, using_cuda: bool = False) -> None:
    """Seed Python's ``random``, NumPy's global generator and torch (SB3's ``set_random_seed``).

    Args:
        seed: the seed, an int >= 0.
        using_cuda: also make cuDNN deterministic (``torch.backends.cudnn.deterministic = True``,
            ``benchmark = False``), as Stable-Baselines3 does.
    """
    seed = check_seed("seed", seed)
    using_cuda = check_bool("using_cuda", using_cuda)
    random.seed(seed)
    np.random.seed(seed % 2**32)  # noqa: NPY002  (the global generator is what SB3 seeds)
    torch.manual_seed(seed)
    if using_cuda:
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False


def polyak_update(params: Iterable[torch.Tensor], target_params: Iterable[torch.Tensor], tau: float) -> None:
    """Move every target tensor towards its source: ``target <- target + tau * (param - target)``, in place.

    Stable-Baselines3's ``polyak_update`` signature; computed with ``torch._foreach_lerp_`` as the TD3 update does
    (one fused call per list), so a model updated through this function matches the built-in update bit for bit.

    Raises:
        ValueError: the two iterables have different lengths, or ``tau`` is outside [0, 1].
    """
    tau = _check_float("tau", tau, 0.0, 1.0)
    params, target_params = list(params), list(target_params)
    if len(params) != len(target_params):
        raise ValueError(
            f"params and target_params must have the same length, got {len(params)} and {len(target_params)}"
        )
    if params:
        with torch.no_grad():
            torch._foreach_lerp_(target_params, params, tau)


def get_linear_fn(start: float, end: float, end_fraction: float) -> Schedule:
    """A schedule going linearly from ``start`` (progress remaining 1) to ``end``, reached after ``end_fraction``
    of training and kept after it (SB3's ``get_linear_fn``; a `rlkit_td3.schedules.LinearSchedule`, so it is
    saved as JSON)."""
    return LinearSchedule(start, end, end_fraction)


def constant_fn(val: float) -> Schedule:
    """A schedule that always returns ``val`` (SB3's ``constant_fn``; a `rlkit_td3.schedules.ConstantSchedule`)."""
    return ConstantSchedule(val)


def get_schedule_fn(value_schedule: Schedule | float) -> Schedule:
    """A number becomes `constant_fn` of it; a callable is returned as a schedule whose values are Python floats
    (SB3's ``get_schedule_fn``).

    Raises:
        TypeError: ``value_schedule`` is neither a number nor callable.
    """
    if isinstance(value_schedule, (ConstantSchedule, LinearSchedule)):
        return value_schedule
    if callable(value_schedule):
        schedule = value_schedule
        return lambda progress_remaining: float(schedule(progress_remaining))
    if isinstance(value_schedule, (bool, np.bool_)) or not isinstance(
        value_schedule, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"value_schedule must be a number or a callable, got {value_schedule!r}")
    return constant_fn(float(value_schedule))


class FloatSchedule:
    """A schedule (or a number, made constant) whose values are Python floats (SB3's ``FloatSchedule``).

    Args:
        value_schedule: a number or a callable of the progress remaining (1 at the start, 0 at the end).

    Raises:
        TypeError: ``value_schedule`` is neither a number nor callable.
    """

    def __init__(self, value_schedule: Schedule | float) -> None:
        if isinstance(value_schedule, FloatSchedule):
            value_schedule = value_schedule.value_schedule
        elif not callable(value_schedule):
            if isinstance(value_schedule, (bool, np.bool_)) or not isinstance(
                value_schedule, (int, float, np.integer, np.floating)
            ):
                raise TypeError(f"value_schedule must be a number or a callable, got {value_schedule!r}")
            value_schedule = ConstantSchedule(float(value_schedule))
        self.value_schedule: Schedule = value_schedule

    def __call__(self, progress_remaining: float) -> float:
        return float(self.value_schedule(progress_remaining))

    def __repr__(self) -> str:
        return f"FloatSchedule({self.value_schedule!r})"


def zip_strict(*iterables: Iterable) -> Iterator[tuple]:
    """``zip`` that raises ``ValueError`` when the iterables have different lengths (SB3's ``zip_strict``)."""
    return zip(*iterables, strict=True)


def check_shape_equal(space1: spaces.Space, space2: spaces.Space) -> None:
    """Raise ``AssertionError`` unless the two spaces have the same shape (key by key for Dict spaces), as SB3's
    ``check_shape_equal`` does."""
    if isinstance(space1, spaces.Dict):
        assert isinstance(space2, spaces.Dict), f"spaces must both be Dict spaces, got {space1} and {space2}"
        assert space1.spaces.keys() == space2.spaces.keys(), (
            f"spaces must have the same keys, got {list(space1.spaces)} and {list(space2.spaces)}"
        )
        for key in space1.spaces:
            check_shape_equal(space1[key], space2[key])
    elif isinstance(space1, spaces.Box):
        assert space1.shape == space2.shape, f"spaces must have the same shape, got {space1.shape} and {space2.shape}"


def _vectorized(observation: np.ndarray, space: spaces.Space) -> bool:
    """Whether one observation of a non-Dict space carries a leading batch axis (see `is_vectorized_observation`)."""
    shape = np.shape(observation)
    if isinstance(space, spaces.Discrete):
        single, what = (), "() or (n_env,)"
    elif isinstance(space, spaces.MultiDiscrete):
        single, what = (len(space.nvec),), f"({len(space.nvec)},) or (n_env, {len(space.nvec)})"
    elif isinstance(space, (spaces.Box, spaces.MultiBinary)):
        single, what = tuple(space.shape), f"{tuple(space.shape)} or (n_env, {', '.join(map(str, space.shape))})"
    else:
        raise ValueError(f"is_vectorized_observation does not support the space {space}")
    if shape == single:
        return False
    if len(shape) == len(single) + 1 and tuple(shape[1:]) == single:
        return True
    raise ValueError(f"Error: Unexpected observation shape {shape} for {space}; expected {what}")


def is_vectorized_observation(
    observation: np.ndarray | Mapping[str, np.ndarray], observation_space: spaces.Space
) -> bool:
    """Whether ``observation`` is a batch (one row per env) of ``observation_space``'s observations (SB3's
    ``is_vectorized_observation``). A Dict observation is a batch when every key's value is one.

    Raises:
        ValueError: the shape fits neither a single observation nor a batch, or a Dict observation mixes the two.
    """
    if not isinstance(observation_space, spaces.Dict):
        return _vectorized(observation, observation_space)
    if not isinstance(observation, Mapping):
        raise ValueError(f"observation must be a dict for the Dict space {observation_space}, got {type(observation)}")
    answers = {key: _vectorized(observation[key], space) for key, space in observation_space.spaces.items()}
    if len(set(answers.values())) > 1:
        shapes = {key: np.shape(value) for key, value in observation.items()}
        raise ValueError(
            "There seems to be a mix of vectorized and non-vectorized observations. "
            f"Unexpected observation shape {shapes} for {observation_space}"
        )
    return all(answers.values())


def get_parameters_by_name(model: torch.nn.Module, included_names: Iterable[str]) -> list[torch.Tensor]:
    """The tensors of ``model.state_dict()`` whose name contains one of ``included_names`` (e.g. ``"running_"``
    for BatchNorm statistics), in ``state_dict`` order (SB3's ``get_parameters_by_name``)."""
    included = list(included_names)
    return [tensor for name, tensor in model.state_dict().items() if any(key in name for key in included)]


def get_latest_run_id(log_path: str | os.PathLike[str] = "", log_name: str = "") -> int:
    """The largest ``N`` among the folders ``<log_name>_<N>`` in ``log_path`` (0 if none), as SB3's function."""
    return _latest_run_id(Path(log_path), log_name)


def get_system_info(print_info: bool = True) -> tuple[dict[str, str], str]:
    """The versions a bug report needs, as a dict and as ``- key: value`` lines (SB3's ``get_system_info``; this
    library's version is under ``"rlkit_td3"``, where SB3 has ``"Stable-Baselines3"``).

    Args:
        print_info: also print the lines.
    """
    info = {
        "OS": f"{platform.platform()} {platform.version()}",
        "Python": platform.python_version(),
        "rlkit_td3": __version__,
        "PyTorch": torch.__version__,
        "GPU Enabled": str(torch.cuda.is_available()),
        "Numpy": np.__version__,
        "Cloudpickle": cloudpickle.__version__,
        "Gymnasium": gym.__version__,
    }
    text = "".join(f"- {key}: {value}\n" for key, value in info.items())
    if print_info:
        print(text)
    return info, text


def safe_mean(arr: Any) -> float:
    """The mean of ``arr``, or NaN when it is empty (SB3's ``safe_mean``, used for logging)."""
    values = np.asarray(list(arr) if not isinstance(arr, np.ndarray) else arr)
    return float("nan") if values.size == 0 else float(np.mean(values))


def _latest_run_id(folder: Path, name: str) -> int:
    """The largest ``N`` among the sub-folders ``<name>_<N>`` of ``folder`` (0 if none)."""
    ids = [0]
    if folder.is_dir():
        for child in folder.iterdir():
            prefix, _, suffix = child.name.rpartition("_")
            if child.is_dir() and prefix == name and suffix.isdigit():
                ids.append(int(suffix))
    return max(ids)


def _check_int(name: str, value: Any, minimum: int, integral_float: bool = False) -> int:
    if integral_float and isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = int(value)  # e.g. learn(1e5), as SB3 accepts
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return int(value)


def _check_float(name: str, value: Any, low: float, high: float, low_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    value = float(value)
    ok = (value > low if low_open else value >= low) and value <= high
    if not ok:
        interval = f"{'(' if low_open else '['}{low}, {high}]"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return value


def _parse_train_freq(train_freq: Any) -> tuple[int, str]:
    if isinstance(train_freq, (tuple, list)):
        if len(train_freq) != 2 or train_freq[1] not in _TRAIN_FREQ_UNITS:
            raise ValueError(f"train_freq must be an int or a tuple (n, 'step'|'episode'), got {train_freq!r}")
        return _check_int("train_freq", train_freq[0], 1), str(train_freq[1])
    return _check_int("train_freq", train_freq, 1), "step"


def get_device(device: torch.device | str = "auto") -> torch.device:
    """``"auto"`` → CUDA when available, else CPU; anything else is passed to ``torch.device``, except that CUDA
    asked for on a machine without it gives the CPU (as SB3's ``get_device``)."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    chosen = torch.device(device)
    if chosen.type == "cuda" and not torch.cuda.is_available():
        return torch.device("cpu")
    return chosen


def _check_device(device: Any) -> torch.device:
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"device must be a str or torch.device, got {device!r}")
    try:
        return get_device(device)
    except RuntimeError as exc:
        raise ValueError(f"device {device!r} is not a valid torch device ({exc})") from exc


def module_has_hooks(module: nn.Module) -> bool:
    """Whether ``module`` has its own forward or backward hooks: code that calls a module's layers directly (the
    fused update, SALE's joined first layers) falls back to calling the module when it has."""
    return bool(
        module._forward_hooks or module._forward_pre_hooks or module._backward_hooks or module._backward_pre_hooks
    )


def global_module_hooks() -> bool:
    """Whether a global module hook (``torch.nn.modules.module.register_module_forward_hook`` and its kin) is set:
    then every module must be called as a module."""
    return bool(
        getattr(_torch_module, "_global_forward_hooks", None)
        or getattr(_torch_module, "_global_forward_pre_hooks", None)
        or getattr(_torch_module, "_global_backward_hooks", None)
        or getattr(_torch_module, "_global_backward_pre_hooks", None)
    )

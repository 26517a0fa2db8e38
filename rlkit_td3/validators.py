"""Generic checks of what a file holds: numbers in range, random generator states, memory, ``.npy`` members.

The bottom floor with `rlkit_td3.serialization`: it imports no component. Every component checks its own state
with these (see the Architecture page of the docs); each raises `ModelFileError` naming the entry.
"""

from __future__ import annotations

import math
import os
import resource
from typing import Any

import numpy as np
import torch

from rlkit_td3.serialization import ModelFileError, class_from_name

MAX_COUNTER = 2**62
"""Largest value of a counter (``num_timesteps``, ``n_updates``, ``episode_num``, noise draws) in a file."""


ENTRY_OVERHEAD_BYTES = 1 * 2**20
"""Slack allowed for each entry's container format on top of the bytes its tensors need."""


TENSOR_OVERHEAD_BYTES = 4096
"""Slack per tensor of a ``.pth`` entry (its pickle record and alignment)."""


def allowed_class(name: Any, allowed: Any, what: str) -> type:
    """The class a file names, if ``name`` is in ``allowed`` (a registry dict or a set of torch names)."""
    if not isinstance(name, str) or name not in allowed:
        raise ModelFileError(
            f"the file names {what} {str(name)[:200]!r}, which is not one a model file may name "
            f"({sorted(allowed)}); pass it to load() through custom_objects"
        )
    return class_from_name(name, allowed if isinstance(allowed, dict) else None, what)


def _int(entry: str, value: Any, low: int = 0, high: int = MAX_COUNTER) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise ModelFileError(f"{entry} must be an int in [{low}, {high}], got {value!r}")
    return int(value)


def _number(entry: str, value: Any, low: float = -math.inf, high: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ModelFileError(f"{entry} must be a number, got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and low <= value <= high):
        raise ModelFileError(f"{entry} must be a finite number in [{low}, {high}], got {value!r}")
    return value


def _available_bytes() -> int:
    """Memory this process may still allocate: physical memory, or less under an address-space limit."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover  (platforms without sysconf)
        physical = 2**62
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return physical
    try:
        with open("/proc/self/statm") as fh:
            used = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # pragma: no cover
        used = 0
    return max(0, min(physical, soft - used))


def check_allocation(what: str, nbytes: int) -> None:
    """Refuse, before allocating, ``nbytes`` that this process could not hold.

    Raises:
        ModelFileError: more than the physical memory (or the address-space limit left to the process).
    """
    available = _available_bytes()
    if nbytes > available:
        raise ModelFileError(
            f"{what} needs {nbytes / 2**30:.2f} GiB, more than the {available / 2**30:.2f} GiB this process can use"
        )


def check_numpy_rng_state(entry: str, spec: Any) -> None:
    """A NumPy ``PCG64`` bit-generator state, as ``Generator.bit_generator.state`` returns it."""
    if (
        not isinstance(spec, dict)
        or spec.get("bit_generator") != "PCG64"
        or set(spec)
        != {
            "bit_generator",
            "state",
            "has_uint32",
            "uinteger",
        }
    ):
        raise ModelFileError(f"{entry} is not a PCG64 generator state: {str(spec)[:200]}")
    inner = spec["state"]
    if not isinstance(inner, dict) or set(inner) != {"state", "inc"}:
        raise ModelFileError(f"{entry}.state must hold 'state' and 'inc'")
    _int(f"{entry}.state.state", inner["state"], 0, 2**128 - 1)
    _int(f"{entry}.state.inc", inner["inc"], 0, 2**128 - 1)
    _int(f"{entry}.has_uint32", spec["has_uint32"], 0, 1)
    _int(f"{entry}.uinteger", spec["uinteger"], 0, 2**32 - 1)


def check_rng_json(entry: str, spec: Any) -> None:
    """Output of `rng_state_to_json()` (``Generator`` or ``RandomState``)."""
    if not isinstance(spec, dict) or spec.get("kind") not in ("Generator", "RandomState"):
        raise ModelFileError(f"{entry} is not a generator state: {str(spec)[:200]}")
    state = spec.get("state")
    if spec["kind"] == "Generator":
        check_numpy_rng_state(f"{entry}.state", state)
        return
    inner = state.get("state") if isinstance(state, dict) else None
    key = inner.get("key") if isinstance(inner, dict) else None
    if state.get("bit_generator") != "MT19937" or not isinstance(key, list) or len(key) != 624:
        raise ModelFileError(f"{entry} is not an MT19937 state")
    for value in key:
        _int(f"{entry}.state.key", value, 0, 2**32 - 1)
    _int(f"{entry}.state.pos", inner.get("pos"), 0, 624)


GENERATOR_STATE_BYTES = {"cpu": 5056, "cuda": 16}
"""Sizes of ``torch.Generator.get_state()`` by device type: the CPU's MT19937 state, CUDA's Philox seed and offset."""


def check_torch_generator_state(entry: str, state: Any, device: torch.device) -> None:
    """A ``torch.Generator.get_state()`` byte tensor of the size a generator on ``device`` has, or of the size a CPU or
    CUDA generator has (a model saved on the GPU and loaded on the CPU, or back: `load` re-seeds from such a
    state instead of restoring it)."""
    expected = torch.Generator(device=device).get_state()
    sizes = sorted({expected.numel(), *GENERATOR_STATE_BYTES.values()})
    if not (
        isinstance(state, torch.Tensor) and state.dtype == torch.uint8 and state.dim() == 1 and state.numel() in sizes
    ):
        got = (state.dtype, tuple(state.shape)) if isinstance(state, torch.Tensor) else type(state).__name__
        raise ModelFileError(
            f"{entry} must be a uint8 tensor of shape {tuple(expected.shape)} (a generator on {device}; one saved on "
            f"another device: {' or '.join(f'({n},)' for n in sizes if n != expected.numel())}), got {got}"
        )


MAX_BUFFER_META_BYTES = 16 * 2**20
"""Largest JSON description (positions, sampler state) a replay buffer file may hold."""

"""The checks of a component's state, whether it comes from a file or from the caller.

Numbers and counters in range, random generator states, run ids (`check_run_id`), memory for what a state asks to
allocate, ``.npy`` members, replay buffer file headers (`check_buffer_meta`), the classes a file may name
(`class_from_name`, through an allow-list), and the policy's and optimizers' state (`check_policy_state`,
`check_optimizer_state`). It imports nothing of the package but `rlkit_td3.checks.errors`, so every component can
check its own state with these (see the Architecture page); each
raises `ModelFileError` naming the entry.
"""

from __future__ import annotations

import math
import os
import resource
import secrets
from typing import Any

import numpy as np
import torch

from rlkit_td3.checks.errors import ModelFileError


def class_from_name(name: str, registry: dict[str, type] | None = None, what: str = "class") -> type:
    """Inverse of `class_to_name()` for registered names and torch classes.

    Raises:
        ModelFileError: the name is not a registered or torch class; user classes are not imported.
    """
    if not isinstance(name, str):
        raise ModelFileError(f"{what} must be stored as a name, got {name!r}")
    if registry and name in registry:
        return registry[name]
    for prefix, module in (("torch.nn.", torch.nn), ("torch.optim.", torch.optim)):
        if name.startswith(prefix):
            cls = getattr(module, name[len(prefix) :], None)
            if isinstance(cls, type):
                return cls
    raise ModelFileError(
        f"the file names {what} {name!r}, which is neither built in nor registered; "
        f"pass it to load() through custom_objects"
    )


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


RUN_ID_HEX_DIGITS = 32
"""A run id: 128 random bits as lowercase hex (`new_run_id`)."""


def new_run_id() -> str:
    """A fresh run id: 128 bits from `secrets`, as 32 lowercase hex digits."""
    return secrets.token_hex(RUN_ID_HEX_DIGITS // 2)


def run_id_meta(run_id: str | None) -> dict[str, str]:
    """The header entry that carries a buffer's run id: ``{"run_id": run_id}``, or nothing for ``None``."""
    return {} if run_id is None else {"run_id": run_id}


def check_run_id(entry: str, value: Any) -> str:
    """A run id read from a file: a string of exactly 32 lowercase hex digits.

    Raises:
        ModelFileError: naming ``entry`` and the value (cut to 80 characters).
    """
    if not isinstance(value, str) or len(value) != RUN_ID_HEX_DIGITS or any(c not in "0123456789abcdef" for c in value):
        raise ModelFileError(
            f"{entry} must be a run id of {RUN_ID_HEX_DIGITS} lowercase hex digits, got {str(value)[:80]!r} "
            f"({type(value).__name__})"
        )
    return value


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


# ---------------------------------------------------------------------------- the policy's and optimizers' state
# The validators of the policy's and the optimizers' state, whether it comes from a model file or a dict.
#
# `load()`, `set_parameters()` (a dict or a file) and `TD3Policy.load` hand what they were given to
# `check_policy_state` and `check_optimizer_state` before anything is loaded: a tensor an optimizer will hand to a
# kernel must have the shape and dtype of its parameter (a 0-d moment corrupts the heap in the next step), every
# number must be finite and in range, and every switch must be the model's own. The allow-lists of the activation
# and optimizer classes a file may name are here too. Each raises `ModelFileError` naming the entry.

ACTIVATIONS = frozenset(
    f"torch.nn.{name}"
    for name in (
        "ReLU",
        "Tanh",
        "ELU",
        "LeakyReLU",
        "GELU",
        "SiLU",
        "Sigmoid",
        "Softplus",
        "Mish",
        "SELU",
        "CELU",
        "ReLU6",
        "Hardtanh",
        "Hardswish",
        "Hardsigmoid",
        "Softsign",
        "Tanhshrink",
        "LogSigmoid",
        "Identity",
    )
)
"""Activation classes a model file may name (cheap, parameter-free modules); others need ``custom_objects``."""

OPTIMIZERS = frozenset(f"torch.optim.{name}" for name in ("Adam", "AdamW", "SGD", "RMSprop"))
"""Optimizer classes a model file may name; others need ``custom_objects``."""

_OPTIMIZER_STATE_KEYS: dict[type, Any] = {
    torch.optim.Adam: lambda g: {"step", "exp_avg", "exp_avg_sq"} | ({"max_exp_avg_sq"} if g.get("amsgrad") else set()),
    torch.optim.AdamW: lambda g: (
        {"step", "exp_avg", "exp_avg_sq"} | ({"max_exp_avg_sq"} if g.get("amsgrad") else set())
    ),
    torch.optim.SGD: lambda g: {"momentum_buffer"},
    torch.optim.RMSprop: lambda g: (
        {"step", "square_avg"}
        | ({"momentum_buffer"} if g.get("momentum", 0) > 0 else set())
        | ({"grad_avg"} if g.get("centered") else set())
    ),
}
_NON_NEGATIVE_STATE = {"exp_avg_sq", "max_exp_avg_sq", "square_avg"}
_SCALAR_STATE = {"step", "mu_product"}
_MAX_STEP = 2**53
_HYPERPARAMETER_RANGES: dict[str, tuple[float, float]] = {
    "lr": (0.0, math.inf),
    "initial_lr": (0.0, math.inf),
    "eps": (0.0, math.inf),
    "weight_decay": (0.0, math.inf),
    "momentum": (0.0, math.inf),
    "dampening": (0.0, math.inf),
    "alpha": (0.0, 1.0),
}


def check_policy_state(entry: str, state: Any, policy: torch.nn.Module) -> None:
    """The stored state dict has exactly the model's keys, each tensor with its shape and dtype, finite."""
    expected = policy.state_dict()
    if not isinstance(state, dict):
        raise ModelFileError(f"{entry} must be a state dict, got {type(state).__name__}")
    if set(state) != set(expected):
        missing, unknown = sorted(set(expected) - set(state)), sorted(map(str, set(state) - set(expected)))
        raise ModelFileError(f"{entry} lacks {missing} and has unknown keys {unknown[:10]}")
    for key, reference in expected.items():
        tensor = state[key]
        if not isinstance(tensor, torch.Tensor) or tensor.shape != reference.shape or tensor.dtype != reference.dtype:
            got = (tuple(tensor.shape), tensor.dtype) if isinstance(tensor, torch.Tensor) else type(tensor).__name__
            raise ModelFileError(
                f"{entry}[{key!r}] is {got}, the model has {(tuple(reference.shape), reference.dtype)}"
            )
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise ModelFileError(f"{entry}[{key!r}] holds non-finite values")


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _check_group(entry: str, stored: Any, built: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(stored, dict):
        raise ModelFileError(f"{entry} must be a dict, got {type(stored).__name__}")
    unknown = set(stored) - set(built)
    if unknown:
        raise ModelFileError(f"{entry} has keys {sorted(map(str, unknown))} this optimizer does not have")
    if stored.get("params") != built["params"]:
        raise ModelFileError(
            f"{entry}.params is {str(stored.get('params'))[:200]}, the model's optimizer has {built['params']}"
        )
    group = dict(built)
    for key, value in stored.items():
        if key == "params":
            continue
        reference = built[key]
        where = f"{entry}[{key!r}]"
        if key == "betas":
            if not isinstance(value, (list, tuple)) or len(value) != len(reference):
                raise ModelFileError(f"{where} must be a pair of numbers, got {value!r}")
            value = tuple(_number(where, beta, 0.0, 1.0) for beta in value)
            if max(value) >= 1.0:
                raise ModelFileError(f"{where} must be in [0, 1), got {value!r}")
        elif key in _HYPERPARAMETER_RANGES:
            low, high = _HYPERPARAMETER_RANGES[key]
            value = _number(where, value, low, high)
            if key == "eps" and value <= 0.0:
                raise ModelFileError(f"{where} must be > 0, got {value!r}")
        elif not _same_value(value, reference):
            # switches (fused, foreach, amsgrad, capturable, ...) select kernels and the state they need:
            # they must be what the model's own optimizer (built from the metadata) uses
            raise ModelFileError(f"{where} is {value!r}, the model's optimizer has {reference!r}")
        group[key] = value
    return group


def check_optimizer_state(entry: str, state: Any, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """Check an optimizer state dict against the model's freshly built ``optimizer``; return what to load.

    Parameter groups: the same number, the same parameter ids, no unknown keys, numeric hyperparameters
    finite and in range, switches equal to the model's own. State: only ids of those parameters, for a known
    optimizer exactly the keys it keeps, every moment of the parameter's shape and dtype and finite (second
    moments non-negative), step counts finite, non-negative, 0-d tensors.
    """
    if not isinstance(state, dict) or set(state) != {"state", "param_groups"}:
        raise ModelFileError(f"{entry} must be a dict with 'state' and 'param_groups'")
    built = optimizer.state_dict()["param_groups"]
    groups = state["param_groups"]
    if not isinstance(groups, list) or len(groups) != len(built):
        n = len(groups) if isinstance(groups, list) else type(groups).__name__
        raise ModelFileError(f"{entry} has {n} param groups, the model's optimizer has {len(built)}")
    checked_groups = [_check_group(f"{entry}.param_groups[{i}]", g, b) for i, (g, b) in enumerate(zip(groups, built))]
    params: dict[int, tuple[torch.Tensor, dict[str, Any]]] = {}
    for group, live in zip(checked_groups, optimizer.param_groups):
        for pid, param in zip(group["params"], live["params"]):
            params[pid] = (param, group)
    per_param = state["state"]
    if not isinstance(per_param, dict):
        raise ModelFileError(f"{entry}.state must be a dict")
    schema = _OPTIMIZER_STATE_KEYS.get(type(optimizer))
    for pid, entries in per_param.items():
        where = f"{entry}.state[{pid!r}]"
        if isinstance(pid, bool) or pid not in params:
            raise ModelFileError(f"{where}: no such parameter (the optimizer has ids {sorted(params)})")
        param, group = params[pid]
        if not isinstance(entries, dict) or not all(isinstance(k, str) for k in entries):
            raise ModelFileError(f"{where} must be a dict of named tensors")
        if schema is not None and set(entries) != schema(group):
            raise ModelFileError(
                f"{where} has {sorted(entries)}, {type(optimizer).__name__} keeps {sorted(schema(group))}"
            )
        for key, value in entries.items():
            if key in _SCALAR_STATE:
                if not isinstance(value, torch.Tensor) or value.dim() != 0 or not value.dtype.is_floating_point:
                    raise ModelFileError(f"{where}[{key!r}] must be a 0-d float tensor, got {str(value)[:100]}")
                _number(f"{where}[{key!r}]", value.item(), 0.0, _MAX_STEP)
            elif value is None and key == "momentum_buffer":
                continue
            elif isinstance(value, torch.Tensor):
                if value.shape != param.shape or value.dtype != param.dtype:
                    raise ModelFileError(
                        f"{where}[{key!r}] has shape {tuple(value.shape)} and dtype {value.dtype}; its parameter "
                        f"has {tuple(param.shape)} and {param.dtype}"
                    )
                if not bool(torch.isfinite(value).all()):
                    raise ModelFileError(f"{where}[{key!r}] holds non-finite values")
                if key in _NON_NEGATIVE_STATE and bool((value < 0).any()):
                    raise ModelFileError(f"{where}[{key!r}] holds negative values")
            else:
                raise ModelFileError(f"{where}[{key!r}] must be a tensor, got {type(value).__name__}")
    return {"state": per_param, "param_groups": checked_groups}


# ---------------------------------------------------------------------------- checks of a replay buffer file
# (used by every buffer kind, `rlkit_td3.buffers`; importable from `rlkit_td3.buffers.replay_buffer` too)
def check_buffer_meta(
    meta: Any,
    *,
    obs_shape: tuple[int, ...] | dict[str, tuple[int, ...]],
    action_dim: int,
    n_envs: int,
    optimize_memory_usage: bool,
) -> dict[str, Any]:
    """The JSON header of a replay buffer file: types, layout and shapes against the buffer's, ``n_envs`` (which
    must match for the memory-optimized layout's per-env rings), sampler state.

    ``obs_shape`` is a dict ``{key: shape}`` for a buffer of Dict observations: the file must hold the same keys
    in the same order (its per-key members are numbered in that order)."""
    if not isinstance(meta, dict):
        raise ModelFileError("the replay buffer file's meta is not a JSON object")
    try:
        for key in ("full", "optimize_memory_usage"):
            if not isinstance(meta.get(key), bool):
                raise ModelFileError(f"replay buffer {key} must be a bool, got {meta.get(key)!r}")
        if meta["optimize_memory_usage"] != optimize_memory_usage:
            raise ModelFileError(
                f"replay buffer file was saved with optimize_memory_usage={meta['optimize_memory_usage']}, "
                f"this buffer has optimize_memory_usage={optimize_memory_usage}"
            )
        file_obs = meta["obs_shape"]
        if isinstance(obs_shape, dict):
            expected: Any = {key: list(shape) for key, shape in obs_shape.items()}
            same_obs = isinstance(file_obs, dict) and list(file_obs.items()) == list(expected.items())
        else:
            same_obs = isinstance(file_obs, list) and tuple(file_obs) == tuple(obs_shape)
        if not same_obs or meta["action_dim"] != action_dim:
            raise ModelFileError(
                f"replay buffer file has obs shape {file_obs} and action dim {meta['action_dim']!r}, "
                f"this buffer has {obs_shape} and {action_dim}"
            )
        if _int("replay buffer n_envs", meta["n_envs"], 1, 2**16) != n_envs and optimize_memory_usage:
            raise ModelFileError(f"replay buffer file has n_envs={meta['n_envs']}, this buffer has n_envs={n_envs}")
        _int("replay buffer buffer_size", meta["buffer_size"], 1, 2**40)
        _int("replay buffer size", meta["size"], 0, meta["buffer_size"])
        _int("replay buffer pos", meta["pos"], 0, meta["buffer_size"] - 1)
        check_numpy_rng_state("replay buffer rng_state", meta["rng_state"])
        if "run_id" in meta:  # absent from older files
            check_run_id("replay buffer run_id", meta["run_id"])
    except KeyError as exc:
        raise ModelFileError(f"the replay buffer file's meta lacks {exc}") from exc
    return meta


def check_buffer_rings(meta: dict[str, Any], n_envs: int) -> np.ndarray:
    """Per-env ring positions of a memory-optimized buffer file; returns the filled rows of each env."""
    try:
        n_slots = _int("replay buffer n_slots", meta["n_slots"], 2, meta["buffer_size"])
        lists = {key: meta[key] for key in ("env_pos", "env_full", "env_has_next", "env_filled")}
    except KeyError as exc:
        raise ModelFileError(f"the replay buffer file's meta lacks {exc}") from exc
    for key, value in lists.items():
        if not isinstance(value, list) or len(value) != n_envs:
            raise ModelFileError(f"replay buffer {key} must be a list of {n_envs} entries")
    filled = []
    for e in range(n_envs):
        pos = _int(f"replay buffer env_pos[{e}]", lists["env_pos"][e], 0, n_slots - 1)
        full, has_next = lists["env_full"][e], lists["env_has_next"][e]
        if not isinstance(full, bool) or not isinstance(has_next, bool):
            raise ModelFileError(f"replay buffer env_full[{e}] and env_has_next[{e}] must be bools")
        expected = n_slots if full else pos + int(has_next)
        if has_next != (full or pos > 0) or lists["env_filled"][e] != expected:
            raise ModelFileError(
                f"replay buffer ring {e} is inconsistent: pos={pos}, full={full}, has_next={has_next}, "
                f"filled={lists['env_filled'][e]!r}"
            )
        filled.append(expected)
    return np.asarray(filled, dtype=np.int64)

"""Checks that the parts of a model file agree with each other and with the model, before anything uses them.

`load()` reads a file's entries (see `rlkit_td3.serialization`)
and calls these functions on them: every tensor an optimizer will hand to a kernel must have the shape and
dtype of the parameter it belongs to, every count must be in range and consistent with the arrays that back
it, every random generator state must be well formed, and every entry must stay within a size that the
metadata justifies. Each raises `ModelFileError` naming the entry.

The limits are listed on the Security page of the docs.
"""

from __future__ import annotations

import math
import os
import platform
import resource
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlkit_td3.serialization import (
    BUFFER_ENTRY,
    MAX_ENTRY_BYTES,
    METADATA_ENTRY,
    PICKLE_ENTRY,
    ModelFileError,
    class_from_name,
    require_bool,
)

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
MAX_COUNTER = 2**62
"""Largest value of a counter (``num_timesteps``, ``n_updates``, ``episode_num``, noise draws) in a file."""
MAX_EPISODE_INFOS = 100
"""Most recent-episode records a training state may hold (the statistics window)."""
__all__ = ["require_bool"]  # re-exported: the bool check of every trust switch

ENTRY_OVERHEAD_BYTES = 1 * 2**20
"""Slack allowed for each entry's container format on top of the bytes its tensors need."""
TENSOR_OVERHEAD_BYTES = 4096
"""Slack per tensor of a ``.pth`` entry (its pickle record and alignment)."""


# ---------------------------------------------------------------------------- load()'s own arguments
class CallerArgumentError(Exception):
    """Raised (by ``load``) from a ``TypeError``/``ValueError`` caused by ``load``'s arguments, not by the file."""


CUSTOM_TO_CTOR = {"policy_class": "policy"}
_NOT_OVERRIDABLE = {"self", "policy", "env", "device", "policy_kwargs", "_init_setup_model"}


def _custom_classes() -> dict[str, type]:
    from rlkit_td3.buffers import ReplayBuffer
    from rlkit_td3.policies import TD3Policy

    return {
        "policy_class": TD3Policy,
        "replay_buffer_class": ReplayBuffer,
        "activation_fn": torch.nn.Module,
        "optimizer_class": torch.optim.Optimizer,
        "features_extractor_class": torch.nn.Module,
    }


def _overridable(cls: type) -> set[str]:
    """Constructor hyperparameters ``load`` accepts as keyword overrides (the networks' shape excluded)."""
    import inspect

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
    import gymnasium as gym

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
        print(f"{key}: {str(saved.get(key, '?'))[:200]} | {current}")


def allowed_class(name: Any, allowed: Any, what: str) -> type:
    """The class a file names, if ``name`` is in ``allowed`` (a registry dict or a set of torch names)."""
    if not isinstance(name, str) or name not in allowed:
        raise ModelFileError(
            f"the file names {what} {str(name)[:200]!r}, which is not one a model file may name "
            f"({sorted(allowed)}); pass it to load() through custom_objects"
        )
    return class_from_name(name, allowed if isinstance(allowed, dict) else None, what)


# ---------------------------------------------------------------------------- scalars
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


# ---------------------------------------------------------------------------- sizes
def _box_size(metadata: dict[str, Any], key: str) -> int:
    spec = metadata.get(key)
    if isinstance(spec, dict) and spec.get("type") == "Dict":  # a Dict observation space: its entries' sizes
        entries = spec.get("spaces")
        if not isinstance(entries, list) or not entries or len(entries) > 64:
            raise ModelFileError(f"{METADATA_ENTRY}: {key} is a Dict without valid entries")
        return sum(
            _box_size({key: entry[1] if isinstance(entry, list) and len(entry) == 2 else None}, key)
            for entry in entries
        )
    shape = spec.get("shape") if isinstance(spec, dict) else None
    if not isinstance(shape, list) or len(shape) > 8:
        raise ModelFileError(f"{METADATA_ENTRY}: {key} has no valid shape")
    dims = [_int(f"{key}.shape", d, 1, 2**31) for d in shape]
    size = math.prod(dims)
    low = spec.get("low")
    if not isinstance(low, list) or len(low) != size:
        raise ModelFileError(f"{METADATA_ENTRY}: {key} has shape {dims} but {len(low or [])} bounds")
    return size


def _mlp_params(sizes: list[int]) -> int:
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


def network_sizes(metadata: dict[str, Any]) -> tuple[int, int, int]:
    """``(actor parameters, critic parameters, tensors per network pair)`` of an ``MlpPolicy`` the metadata
    declares (one actor, all critics; the targets are copies)."""
    from rlkit_td3.policies.td3_policy import parse_net_arch

    obs_dim, act_dim = _box_size(metadata, "observation_space"), _box_size(metadata, "action_space")
    kwargs = metadata["policy"]["kwargs"]
    try:
        pi, qf = parse_net_arch(kwargs.get("net_arch", [400, 300]))
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"{METADATA_ENTRY}: policy.kwargs.net_arch: {exc}") from exc
    n_critics = _int("policy.kwargs.n_critics", kwargs.get("n_critics", 2), 1, 1024)
    actor = _mlp_params([obs_dim, *pi, act_dim])
    critic = n_critics * _mlp_params([obs_dim + act_dim, *qf, 1])
    return actor, critic, 2 * (len(pi) + len(qf) + 2)


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


def entry_byte_limits(metadata: dict[str, Any]) -> dict[str, int]:
    """Largest uncompressed size of each entry that the metadata justifies.

    The tensors of ``policy.pth`` and the two optimizers cannot need more than 8 bytes per declared parameter
    (float64; three moments for the optimizers), ``training_state.pth`` holds a generator and one
    observation per env, and the replay buffer one row per transition of its declared capacity; each gets
    `ENTRY_OVERHEAD_BYTES` and `TENSOR_OVERHEAD_BYTES` per tensor of slack. A policy class other
    than ``MlpPolicy`` (a registered one) falls back to
    `MAX_ENTRY_BYTES` for its networks.
    """
    if metadata.get("content") == "policy":  # written by TD3Policy.save: a policy on its own, not a model
        raise ModelFileError(
            f"{METADATA_ENTRY}: the file holds a {metadata.get('algorithm')} model (a policy on its own): load it "
            "with that policy class's load()"
        )
    try:
        obs_dim, act_dim = _box_size(metadata, "observation_space"), _box_size(metadata, "action_space")
        n_envs = _int("n_envs", metadata.get("n_envs", 1), 1, 2**16)
        hyper = metadata["hyperparameters"]
        buffer_size = _int("hyperparameters.buffer_size", hyper["buffer_size"], 1, 2**40)
        policy_class = metadata["policy"]["class"]
    except (KeyError, TypeError, AttributeError) as exc:
        raise ModelFileError(f"{METADATA_ENTRY}: malformed ({type(exc).__name__}: {exc})") from exc
    limits = {METADATA_ENTRY: MAX_ENTRY_BYTES, PICKLE_ENTRY: MAX_ENTRY_BYTES}
    extractor_keys = {"features_extractor_class", "features_extractor_kwargs", "critic_layer_norm", "normalize_obs"}
    if policy_class == "MlpPolicy" and not extractor_keys & set(metadata["policy"].get("kwargs") or {}):
        actor, critic, n_tensors = network_sizes(metadata)
        slack = ENTRY_OVERHEAD_BYTES + TENSOR_OVERHEAD_BYTES * 3 * n_tensors
        limits["policy.pth"] = 2 * 8 * (actor + critic) + slack
        limits["actor_optimizer.pth"] = 3 * 8 * actor + slack
        limits["critic_optimizer.pth"] = 3 * 8 * critic + slack
    else:
        limits.update(dict.fromkeys(("policy.pth", "actor_optimizer.pth", "critic_optimizer.pth"), MAX_ENTRY_BYTES))
    limits["training_state.pth"] = ENTRY_OVERHEAD_BYTES + 8 * n_envs * obs_dim
    row = 4 * (3 * obs_dim + act_dim + 1) + 2 + 8 + 32  # + 32: n-step link and priority, or HER's episode start/length
    limits[BUFFER_ENTRY] = ENTRY_OVERHEAD_BYTES + (buffer_size + n_envs) * row + 64 * n_envs
    return {name: min(limit, MAX_ENTRY_BYTES) for name, limit in limits.items()}


# ---------------------------------------------------------------------------- random generators
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


# ---------------------------------------------------------------------------- schedules and noise
def check_schedule_spec(entry: str, spec: Any) -> None:
    """A built-in schedule's JSON: numbers, not strings or booleans; positive finite values."""
    if spec is None or (isinstance(spec, dict) and spec.get("pickled") is True and len(spec) == 1):
        return
    if not isinstance(spec, dict):
        raise ModelFileError(f"{entry} must be a schedule description, got {spec!r}")
    kind = spec.get("type")
    if kind == "constant" and set(spec) == {"type", "value"}:
        _number(f"{entry}.value", spec["value"], 0.0)
        if spec["value"] <= 0:
            raise ModelFileError(f"{entry}.value must be > 0, got {spec['value']!r}")
        return
    if kind == "linear" and set(spec) == {"type", "start", "end", "end_fraction"}:
        _number(f"{entry}.start", spec["start"], 0.0)
        _number(f"{entry}.end", spec["end"], 0.0)
        _number(f"{entry}.end_fraction", spec["end_fraction"], 0.0, 1.0)
        if spec["end_fraction"] <= 0:
            raise ModelFileError(f"{entry}.end_fraction must be > 0")
        return
    raise ModelFileError(f"{entry} is not a constant or linear schedule: {str(spec)[:200]}")


_NOISE_KEYS = {
    "NormalActionNoise": ({"type", "mean", "sigma"}, {"decay", "min_sigma"}),
    "OrnsteinUhlenbeckActionNoise": ({"type", "mean", "sigma"}, {"decay", "min_sigma", "theta", "dt", "initial_noise"}),
}


def check_noise_spec(entry: str, spec: Any, action_dim: int, n_envs: int) -> None:
    """A built-in noise's JSON: vectors of the action's dimension, finite numbers, ``n_envs`` copies."""
    if spec is None or (isinstance(spec, dict) and spec.get("pickled") is True and len(spec) == 1):
        return
    if not isinstance(spec, dict):
        raise ModelFileError(f"{entry} must be a noise description, got {str(spec)[:200]}")
    if spec.get("type") == "VectorizedActionNoise":
        if set(spec) != {"type", "base_noise", "n_envs"}:
            raise ModelFileError(f"{entry} has keys {sorted(spec)}")
        if _int(f"{entry}.n_envs", spec["n_envs"], 1, 2**16) != n_envs:
            raise ModelFileError(f"{entry}.n_envs is {spec['n_envs']}, the model has n_envs={n_envs}")
        check_noise_spec(f"{entry}.base_noise", spec["base_noise"], action_dim, 1)
        if isinstance(spec["base_noise"], dict) and spec["base_noise"].get("type") == "VectorizedActionNoise":
            raise ModelFileError(f"{entry}.base_noise cannot be vectorized itself")
        return
    keys = _NOISE_KEYS.get(spec.get("type"))
    if keys is None:
        raise ModelFileError(f"{entry} has unknown type {spec.get('type')!r}")
    required, optional = keys
    if not required <= set(spec) <= required | optional:
        raise ModelFileError(
            f"{entry} has keys {sorted(spec)}, expected {sorted(required)} and some of {sorted(optional)}"
        )
    if n_envs != 1:
        raise ModelFileError(f"{entry} is a single-env noise but the model has n_envs={n_envs}")
    for name in ("mean", "sigma", "initial_noise"):
        value = spec.get(name)
        if value is None and name == "initial_noise":
            continue
        if not isinstance(value, list) or len(value) != action_dim:
            raise ModelFileError(f"{entry}.{name} must be a list of {action_dim} numbers (the action dimension)")
        for x in value:
            _number(f"{entry}.{name}", x, 0.0 if name == "sigma" else -math.inf)
    if "decay" in spec:
        _number(f"{entry}.decay", spec["decay"], 1e-12, 1.0)
    if "min_sigma" in spec:
        _number(f"{entry}.min_sigma", spec["min_sigma"], 0.0)
    for name in ("theta", "dt"):
        if name in spec and _number(f"{entry}.{name}", spec[name], 0.0) <= 0:
            raise ModelFileError(f"{entry}.{name} must be > 0")


def check_noise_state(entry: str, state: Any, noise: Any) -> None:
    """A noise's ``get_state()`` output against the (built) noise it is restored into."""
    from rlkit_td3.noise import OrnsteinUhlenbeckActionNoise, VectorizedActionNoise, _DecayingSigma

    if noise is None:
        return
    if state is None:
        return
    if not isinstance(state, dict):
        raise ModelFileError(f"{entry} must be a dict, got {str(state)[:200]}")
    if isinstance(noise, VectorizedActionNoise):
        copies = state.get("noises")
        if set(state) != {"noises"} or not isinstance(copies, list) or len(copies) != noise.n_envs:
            raise ModelFileError(f"{entry} must hold {noise.n_envs} noise states (one per env)")
        for i, (sub, sub_noise) in enumerate(zip(copies, noise.noises)):
            check_noise_state(f"{entry}.noises[{i}]", sub, sub_noise)
        return
    if not isinstance(noise, _DecayingSigma):
        return  # a user's noise (given through custom_objects or pickle) checks its own state
    check_numpy_rng_state(f"{entry}.rng", state.get("rng"))
    if isinstance(noise, _DecayingSigma):
        _int(f"{entry}.n_draws", state.get("n_draws"), 0)
    if isinstance(noise, OrnsteinUhlenbeckActionNoise):
        x = state.get("x")
        if not isinstance(x, list) or len(x) != noise.mean.size:
            raise ModelFileError(f"{entry}.x must be a list of {noise.mean.size} numbers (the action dimension)")
        for value in x:
            _number(f"{entry}.x", value)


# ---------------------------------------------------------------------------- networks and optimizers
def check_policy_state(entry: str, state: Any, policy: torch.nn.Module) -> None:
    """The stored state dict has exactly the model's keys, each tensor with its shape and dtype, finite."""
    expected = policy.state_dict()
    if not isinstance(state, dict) or set(state) != set(expected):
        keys = sorted(state) if isinstance(state, dict) else type(state).__name__
        raise ModelFileError(f"{entry} holds {keys}, the model has {sorted(expected)}")
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


# ---------------------------------------------------------------------------- training state
def check_counters(counters: Any) -> tuple[int, int, int]:
    """``(num_timesteps, n_updates, episode_num)``: non-negative ints; never more episodes than steps."""
    if not isinstance(counters, dict):
        raise ModelFileError("counters must be a dict")
    try:
        num_timesteps = _int("counters.num_timesteps", counters["num_timesteps"])
        n_updates = _int("counters.n_updates", counters["n_updates"])
        episode_num = _int("counters.episode_num", counters["episode_num"])
    except KeyError as exc:
        raise ModelFileError(f"counters lack {exc}") from exc
    if episode_num > num_timesteps:
        raise ModelFileError(f"counters: {episode_num} episodes in {num_timesteps} steps")
    return num_timesteps, n_updates, episode_num


def check_n_envs(metadata: dict[str, Any], tensors: dict[str, Any], max_n_envs: int) -> int:
    """``n_envs`` in range and equal to the number of rows of the stored last observations and env generators."""
    n_envs = _int("n_envs", metadata.get("n_envs", 1), 1, max_n_envs)
    last_obs = (
        tensors.get("training_state", {}).get("last_obs") if isinstance(tensors.get("training_state"), dict) else None
    )
    if isinstance(last_obs, torch.Tensor) and (last_obs.dim() == 0 or last_obs.shape[0] != n_envs):
        raise ModelFileError(f"training_state.last_obs has shape {tuple(last_obs.shape)}, n_envs is {n_envs}")
    state = metadata.get("training_state")
    env_rngs = state.get("env_rngs") if isinstance(state, dict) else None
    if isinstance(env_rngs, list) and len(env_rngs) != n_envs:
        raise ModelFileError(f"training_state.env_rngs holds {len(env_rngs)} generators, n_envs is {n_envs}")
    return n_envs


def check_training_state(
    state: Any,
    tensors: Any,
    *,
    n_envs: int,
    observation_shape: tuple[int, ...] | dict[str, tuple[int, ...]],
    action_noise: Any,
    device: torch.device,
) -> None:
    """The ``training_state`` metadata and tensors against the model (fields read by ``_restore_training_state``)."""
    if not isinstance(state, dict):
        raise ModelFileError("training_state must be a dict")
    if not isinstance(tensors, dict):
        raise ModelFileError("training_state.pth must hold a dict")
    unknown = set(tensors) - {"smoothing_rng", "last_obs"}
    if unknown:
        raise ModelFileError(f"training_state.pth has unknown entries {sorted(map(str, unknown))}")
    try:
        rollout = state["rollout"]
        progress = state["progress_remaining"]
        env_seeded = state["env_seeded"]
        episode_infos = state["episode_infos"]
        warmup_rng = state["warmup_rng"]
        noise_state = state["action_noise"]
    except KeyError as exc:
        raise ModelFileError(f"training_state lacks {exc}") from exc
    if rollout is not None:
        if not isinstance(rollout, dict) or set(rollout) != {"calls", "episodes", "collected"}:
            raise ModelFileError(f"training_state.rollout must be None or hold calls, episodes, collected: {rollout!r}")
        for key, value in rollout.items():
            _int(f"training_state.rollout.{key}", value)
    _number("training_state.progress_remaining", progress, 0.0, 1.0)
    if not isinstance(env_seeded, bool):
        raise ModelFileError(f"training_state.env_seeded must be a bool, got {env_seeded!r}")
    if not isinstance(episode_infos, list) or len(episode_infos) > MAX_EPISODE_INFOS:
        raise ModelFileError(f"training_state.episode_infos must be a list of at most {MAX_EPISODE_INFOS} records")
    for record in episode_infos:
        if not isinstance(record, list) or len(record) != 2:
            raise ModelFileError(f"training_state.episode_infos holds {str(record)[:100]}, not [return, length]")
        _number("training_state.episode_infos return", record[0])
        _int("training_state.episode_infos length", record[1], 1)
    check_rng_json("training_state.warmup_rng", warmup_rng)
    check_noise_state("training_state.action_noise", noise_state, action_noise)
    env_rngs = state.get("env_rngs")
    if env_rngs is not None:
        if not isinstance(env_rngs, list) or len(env_rngs) != n_envs:
            raise ModelFileError(f"training_state.env_rngs must be a list of {n_envs} generator states")
        for i, spec in enumerate(env_rngs):
            check_rng_json(f"training_state.env_rngs[{i}]", spec)
    if "smoothing_rng" not in tensors:
        raise ModelFileError("training_state.pth lacks smoothing_rng")
    check_torch_generator_state("training_state.smoothing_rng", tensors["smoothing_rng"], device)
    last_obs = tensors.get("last_obs")
    if isinstance(observation_shape, dict) and last_obs is not None:  # Dict observations: one tensor per key
        if not isinstance(last_obs, dict) or list(last_obs) != list(observation_shape):
            got = list(last_obs) if isinstance(last_obs, dict) else type(last_obs).__name__
            raise ModelFileError(f"training_state.last_obs must hold the keys {list(observation_shape)}, got {got}")
        for key, shape in observation_shape.items():
            _check_last_obs(f"training_state.last_obs[{key!r}]", last_obs[key], (n_envs, *shape))
    elif last_obs is not None:
        _check_last_obs("training_state.last_obs", last_obs, (n_envs, *observation_shape))


def _check_last_obs(entry: str, last_obs: Any, expected: tuple[int, ...]) -> None:
    if not isinstance(last_obs, torch.Tensor) or tuple(last_obs.shape) != expected:
        got = tuple(last_obs.shape) if isinstance(last_obs, torch.Tensor) else type(last_obs).__name__
        raise ModelFileError(f"{entry} has shape {got}, the model needs {expected}")
    if last_obs.dtype.is_complex:
        raise ModelFileError(f"{entry} must be real numbers, got {last_obs.dtype}")
    if last_obs.is_floating_point() and not bool(torch.isfinite(last_obs).all()):
        raise ModelFileError(f"{entry} holds non-finite values")


# ---------------------------------------------------------------------------- replay buffer files
MAX_BUFFER_META_BYTES = 16 * 2**20
"""Largest JSON description (positions, sampler state) a replay buffer file may hold."""


def read_npy_member(
    archive: Any, name: str, dtype: np.dtype, shape: tuple[int, ...] | None, max_items: int | None = None
) -> np.ndarray:
    """Read ``name.npy`` from an ``.npz`` archive after checking its header: exactly ``dtype`` and ``shape``
    (or, with ``shape=None``, 1-D with at most ``max_items`` items), C order, and exactly that many bytes.

    Nothing is allocated from what the header claims before it matches what the caller expects.
    """
    member = f"{name}.npy"
    try:
        info = archive.getinfo(member)
    except KeyError:
        raise ModelFileError(f"the replay buffer file lacks {member}") from None
    with archive.open(info) as fh:
        try:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                stored_shape, fortran, stored_dtype = np.lib.format.read_array_header_1_0(fh)
            elif version == (2, 0):
                stored_shape, fortran, stored_dtype = np.lib.format.read_array_header_2_0(fh)
            else:
                raise ModelFileError(f"{member}: unsupported .npy version {version}")
        except ModelFileError:
            raise
        except Exception as exc:  # noqa: BLE001  (whatever a forged header breaks)
            raise ModelFileError(f"{member}: malformed .npy header ({exc})") from exc
        if shape is None:
            ok = len(stored_shape) == 1 and stored_shape[0] <= (max_items or 0)
            shape = tuple(stored_shape)
        else:
            ok = tuple(stored_shape) == tuple(shape)
        if fortran or stored_dtype != np.dtype(dtype) or not ok:
            raise ModelFileError(
                f"{member} holds {stored_dtype} of shape {tuple(stored_shape)}"
                f"{' (Fortran order)' if fortran else ''}; expected {np.dtype(dtype)} of shape {shape}"
            )
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        data = fh.read(nbytes)
        if len(data) != nbytes:
            raise ModelFileError(f"{member} holds {len(data)} bytes of data, its header declares {nbytes}")
    array = np.frombuffer(data, dtype=np.uint8 if np.dtype(dtype) == np.bool_ else dtype).reshape(shape)
    if np.dtype(dtype) == np.bool_:
        if array.size and int(array.max()) > 1:
            raise ModelFileError(f"{member} holds booleans other than 0 and 1")
        array = array.view(np.bool_)
    elif array.dtype.kind == "f" and not bool(np.isfinite(array).all()):
        raise ModelFileError(f"{member} holds non-finite values")
    return array


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
    except KeyError as exc:
        raise ModelFileError(f"the replay buffer file's meta lacks {exc}") from exc
    return meta


def check_dict_obs_dtypes(meta: dict[str, Any], dtypes: dict[str, str]) -> None:
    """The per-key storage dtypes of a Dict-observation buffer file (``obs_dtype``, NumPy dtype strings) must be
    the buffer's, key for key and in order."""
    file_dtypes = meta.get("obs_dtype")
    if not isinstance(file_dtypes, dict) or list(file_dtypes.items()) != list(dtypes.items()):
        raise ModelFileError(
            f"replay buffer file has observation dtypes {str(file_dtypes)[:200]}, this buffer has {dtypes}"
        )


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


def check_her_state(meta: dict[str, Any], *, n_envs: int, n_slots: int) -> dict[str, np.ndarray]:
    """The per-env rings and running episodes of a `HerReplayBuffer` file (same ``n_envs`` and ring length as
    the buffer); returns them as arrays, with ``filled`` (the filled rows of each ring)."""
    try:
        file_envs, file_slots = meta["n_envs"], meta["n_slots"]
        lists = {key: meta[key] for key in ("env_pos", "env_full", "current_ep_start", "current_ep_length")}
    except KeyError as exc:
        raise ModelFileError(f"the replay buffer file's meta lacks {exc}") from exc
    if file_envs != n_envs or file_slots != n_slots:
        raise ModelFileError(
            f"replay buffer file has n_envs={file_envs!r} rings of {file_slots!r} rows; this buffer has "
            f"n_envs={n_envs} rings of {n_slots} rows"
        )
    for key, value in lists.items():
        if not isinstance(value, list) or len(value) != n_envs:
            raise ModelFileError(f"replay buffer {key} must be a list of {n_envs} entries")
    for e in range(n_envs):
        pos = _int(f"replay buffer env_pos[{e}]", lists["env_pos"][e], 0, n_slots - 1)
        start = _int(f"replay buffer current_ep_start[{e}]", lists["current_ep_start"][e], 0, n_slots - 1)
        length = _int(f"replay buffer current_ep_length[{e}]", lists["current_ep_length"][e], 0, n_slots)
        full = lists["env_full"][e]
        if not isinstance(full, bool):
            raise ModelFileError(f"replay buffer env_full[{e}] must be a bool")
        if (start + length) % n_slots != pos or (not full and start + length != pos):
            raise ModelFileError(
                f"replay buffer ring {e} is inconsistent: pos={pos}, full={full}, running episode of {length} "
                f"rows from {start}"
            )
    state = {key: np.asarray(value, dtype=bool if key == "env_full" else np.int64) for key, value in lists.items()}
    state["filled"] = np.where(state["env_full"], n_slots, state["env_pos"])
    if meta["size"] != int(state["filled"].sum()) or meta["full"] != bool(state["env_full"].all()):
        raise ModelFileError(f"replay buffer size={meta['size']!r}, full={meta['full']!r} disagree with its rings")
    return state


def check_her_episodes(
    rows: np.ndarray, ep_start: np.ndarray, ep_length: np.ndarray, state: dict[str, Any], n_slots: int
) -> None:
    """The episode bookkeeping of a `HerReplayBuffer` file: every ended episode lies in filled rows of one ring,
    its first and last rows agree on where it starts and how long it is, and no row of a running episode is
    marked as ended (so every goal the buffer can draw comes from a stored step of the same episode).

    Raises:
        ModelFileError: naming what is inconsistent.
    """
    if np.any(ep_start < 0) or np.any(ep_start >= n_slots) or np.any(ep_length < 0) or np.any(ep_length > n_slots):
        raise ModelFileError(f"replay buffer ep_start must be in [0, {n_slots}) and ep_length in [0, {n_slots}]")
    env, slot = rows // n_slots, rows % n_slots
    ended = ep_length > 0
    offset = (slot - ep_start) % n_slots
    pos, full = state["env_pos"][env], state["env_full"][env]
    # In a ring that has not wrapped, the filled slots are [0, pos): an episode must not wrap.
    if np.any(ended & ((offset >= ep_length) | (~full & (ep_start + ep_length > pos)))):
        raise ModelFileError("replay buffer episodes must cover their own rows within the filled part of the ring")
    index = np.full(len(state["env_pos"]) * n_slots, -1, dtype=np.int64)
    index[rows] = np.arange(len(rows))
    for edge in (ep_start, ep_start + ep_length - 1):
        other = index[env * n_slots + edge % n_slots]
        if np.any(ended & ((other < 0) | (ep_start[other] != ep_start) | (ep_length[other] != ep_length))):
            raise ModelFileError("replay buffer episodes must start and end with rows of the same episode")
    cur_start, cur_len = state["current_ep_start"][env], state["current_ep_length"][env]
    if np.any(ended & ((slot - cur_start) % n_slots < cur_len)):
        raise ModelFileError("replay buffer rows of a running episode must not be marked as ended")

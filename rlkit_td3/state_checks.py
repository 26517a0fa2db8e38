"""The validators of the policy's and the optimizers' state, whether it comes from a model file or a dict.

`load()`, `set_parameters()` (a dict or a file) and `TD3Policy.load` hand what they were given to
`check_policy_state` and `check_optimizer_state` before anything is loaded: a tensor an optimizer will hand to a
kernel must have the shape and dtype of its parameter (a 0-d moment corrupts the heap in the next step), every
number must be finite and in range, and every switch must be the model's own. The allow-lists of the activation
and optimizer classes a file may name are here too. Each raises `ModelFileError` naming the entry.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from rlkit_td3.serialization import ModelFileError
from rlkit_td3.validators import _number

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

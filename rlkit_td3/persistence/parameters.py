"""A model's parameters by Stable-Baselines3's names: the bodies of `BaseAlgorithm.get_parameters()` and
`BaseAlgorithm.set_parameters()` (the policy's and its optimizers' state dicts, from a dict or a model file).

A dict goes through exactly the checks a model file's networks and optimizers get
(`rlkit_td3.checks.state`), all before anything is loaded; the states are copied, so the model never shares a
tensor with the caller.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import torch

from rlkit_td3.checks.arguments import StateDictMismatchError
from rlkit_td3.checks.state import check_optimizer_state, check_policy_state
from rlkit_td3.fileio.serialization import read_model_zip
from rlkit_td3.policies.declared_size import NETWORK_ENTRIES, network_byte_limits
from rlkit_td3.utils import get_device


def _parameter_objects(model: Any) -> dict[str, torch.nn.Module | torch.optim.Optimizer]:
    """The objects behind ``get_parameters``' keys (Stable-Baselines3's names for TD3's)."""
    objects: dict[str, torch.nn.Module | torch.optim.Optimizer] = {"policy": model.policy}
    for name in model.policy.optimizer_names:  # actor_optimizer -> "actor.optimizer"
        objects[_sb3_name(name)] = getattr(model.policy, name)
    return objects


def _sb3_name(attribute: str) -> str:
    """SB3's parameter name of a policy's optimizer attribute: ``actor_optimizer`` -> ``actor.optimizer``."""
    return attribute[: -len("_optimizer")] + ".optimizer" if attribute.endswith("_optimizer") else attribute


def get_parameters(model: Any) -> dict[str, dict[str, Any]]:
    """The body of `BaseAlgorithm.get_parameters()`: copies of the policy's and optimizers' state dicts."""
    return {name: copy.deepcopy(obj.state_dict()) for name, obj in _parameter_objects(model).items()}


def set_parameters(
    model: Any,
    load_path_or_dict: str | os.PathLike[str] | dict[str, dict[str, Any]],
    exact_match: bool = True,
    device: torch.device | str = "auto",
) -> None:
    """The body of `BaseAlgorithm.set_parameters()`: check everything given, then load it all or nothing."""
    if isinstance(load_path_or_dict, dict):
        params = load_path_or_dict
    elif isinstance(load_path_or_dict, (str, os.PathLike)):
        # the networks' entries only (never a buffer), each bounded by the net the file declares
        _, tensors, _, _ = read_model_zip(load_path_or_dict, entry_limits=network_byte_limits, entries=NETWORK_ENTRIES)
        target = get_device(device)
        params = {
            name: _tensors_to(tensors[key], target)
            for name, key in (("policy", "policy"), *((_sb3_name(n), n) for n in model.policy.optimizer_names))
            if key in tensors
        }
    else:
        raise TypeError(f"load_path_or_dict must be a dict or a model file path, got {load_path_or_dict!r}")
    objects = _parameter_objects(model)
    _check_names("names", params, objects, exact_match, "the parameters")
    for name, state in params.items():
        if not isinstance(state, dict):
            raise TypeError(f"set_parameters: {name!r} must be a state dict, got {type(state).__name__}")
    # exactly the checks a model file gets; the states are copied, so the model never aliases the caller's tensors
    checked: dict[str, dict[str, Any]] = {}
    if "policy" in params:
        _check_names("keys", params["policy"], model.policy.state_dict(), exact_match, "the policy state dict")
        check_policy_state("policy", {**model.policy.state_dict(), **params["policy"]}, model.policy)
        checked["policy"] = params["policy"]
    for name in (_sb3_name(n) for n in model.policy.optimizer_names):
        if name in params:
            checked[name] = copy.deepcopy(check_optimizer_state(name, params[name], objects[name]))  # type: ignore[arg-type]
    params = checked
    backup = {name: copy.deepcopy(objects[name].state_dict()) for name in params}
    attempted: list[str] = []
    try:
        for name, state in params.items():
            attempted.append(name)
            obj = objects[name]
            if isinstance(obj, torch.optim.Optimizer):
                obj.load_state_dict(state)
            else:
                obj.load_state_dict(state, strict=exact_match)
    except Exception as exc:
        for name in attempted:
            objects[name].load_state_dict(backup[name])
        raise StateDictMismatchError(
            f"set_parameters: could not load the parameters, nothing was changed ({exc})"
        ) from exc


def _check_names(kind: str, given: Any, own: Any, exact_match: bool, whose: str) -> None:
    """``set_parameters``' check of ``given``'s names (or keys) against the model's ``own``: none unknown, and with
    ``exact_match`` none missing; the message lists them."""
    error = StateDictMismatchError if kind == "keys" else ValueError  # a state dict's keys: torch's RuntimeError too
    unknown = sorted(set(given) - set(own))
    if unknown:
        raise error(f"set_parameters: unknown {kind} {unknown} in {whose}; the model's are {sorted(own)}")
    missing = sorted(set(own) - set(given))
    if exact_match and missing:
        raise error(
            f"set_parameters: missing {kind} {missing} in {whose} (exact_match=True needs all of them; "
            "pass exact_match=False to load a part)"
        )


def _tensors_to(state: Any, device: torch.device) -> Any:
    """``state`` (nested dicts and lists of tensors) with its tensors on ``device``."""
    if isinstance(state, torch.Tensor):
        return state.to(device)
    if isinstance(state, dict):
        return {key: _tensors_to(value, device) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(_tensors_to(value, device) for value in state)
    return state

"""Policy files: a policy (``TD3Policy.save``) or its actor alone (``policy.actor.save``, as SB3's
``actor.save``) in one zip, ``metadata.json`` (JSON) and ``policy.pth`` (tensors), no pickle.

The policy class is passed in by the caller (`rlkit_td3.policies.td3_policy`), so this module knows none.
"""

from __future__ import annotations

import os
import platform
import sys
from typing import Any

import numpy as np
import torch
from torch import nn

from rlkit_td3.checks.state import ACTIVATIONS, OPTIMIZERS, allowed_class, class_from_name
from rlkit_td3.fileio.serialization import (
    FORMAT_NAME,
    FORMAT_VERSION,
    ModelFileError,
    class_to_name,
    read_model_zip,
    space_from_dict,
    space_to_dict,
    write_model_zip,
)
from rlkit_td3.policies.declared_size import network_byte_limits
from rlkit_td3.policies.networks import DEFAULT_NET_ARCH, parse_net_arch
from rlkit_td3.policies.registry import POLICY_ALIASES
from rlkit_td3.torch_layers import FEATURES_EXTRACTORS
from rlkit_td3.version import __version__

POLICY_CONTENT = "policy"
"""``metadata["content"]`` of a file written by `TD3Policy.save()` (whole-model files have none)."""
ACTOR_CONTENT = "actor"
"""``metadata["content"]`` of a file written by ``policy.actor.save()``: the actor's tensors (and the observation
statistics with ``normalize_obs``) with the policy's spaces and settings."""
ACTOR_PREFIXES = ("actor.", "obs_normalizer.")
"""The policy's tensors an actor file holds."""


def policy_class_from_file(cls: type, name: Any) -> type:
    """The policy class a file names: a registered alias, or ``cls`` itself when the file names it."""
    if isinstance(name, str) and name == class_to_name(cls, POLICY_ALIASES):
        return cls
    found = class_from_name(name, POLICY_ALIASES, "policy")
    if not issubclass(found, cls):
        raise ModelFileError(f"the file holds a {found.__name__}, which is not a {cls.__name__}")
    return found


def write_policy_file(policy: Any, path: str | os.PathLike[str], content: str = POLICY_CONTENT) -> None:
    """Write ``policy`` (``content="policy"``) or its actor (``"actor"``) to ``path``, atomically.

    Raises:
        TypeError: a user-defined activation, optimizer or features extractor class (a policy file names only
            ``torch.nn`` / ``torch.optim`` classes and the built-in extractors).
    """
    kwargs = policy.constructor_kwargs()
    if "features_extractor_class" in kwargs:
        extractor = kwargs["features_extractor_class"]
        name = class_to_name(extractor, FEATURES_EXTRACTORS)
        if name not in FEATURES_EXTRACTORS:
            raise TypeError(
                f"features_extractor_class={extractor!r} is not a built-in extractor "
                f"({sorted(FEATURES_EXTRACTORS)}); policy files name only those"
            )
        kwargs["features_extractor_class"] = name
    for key in ("activation_fn", "optimizer_class"):
        name = class_to_name(kwargs[key])
        if ":" in name:
            raise TypeError(
                f"{key}={kwargs[key]!r} is not a torch.nn / torch.optim class; policy files name only those"
            )
        kwargs[key] = name
    kwargs["actor_learning_rate"] = float(policy.actor_optimizer.param_groups[0]["lr"])
    kwargs["critic_learning_rate"] = float(policy.critic_optimizer.param_groups[0]["lr"])
    metadata = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "algorithm": type(policy).__name__,
        "content": content,
        "policy": {"class": class_to_name(type(policy), POLICY_ALIASES), "kwargs": kwargs},
        "observation_space": space_to_dict(policy.observation_space),
        "action_space": space_to_dict(policy.action_space),
        "system": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "torch": torch.__version__,
            "numpy": np.__version__,
        },
    }
    state = {name: tensor.detach().cpu() for name, tensor in policy.state_dict().items()}
    if content == ACTOR_CONTENT:
        state = {name: tensor for name, tensor in state.items() if name.startswith(ACTOR_PREFIXES)}
    write_model_zip(path, metadata, {"policy": state})


def _actor_only(kwargs: dict[str, Any]) -> dict[str, Any]:
    """An actor file's settings with the smallest critic (one, no hidden layer): the file holds no critic, so
    nothing it declares for one is built."""
    pi, _ = parse_net_arch(kwargs.get("net_arch", DEFAULT_NET_ARCH))
    return {**kwargs, "net_arch": {"pi": pi, "qf": []}, "n_critics": 1}


def read_policy_file(cls: type, path: str | os.PathLike[str], content: str = POLICY_CONTENT) -> nn.Module:
    """The policy a policy file holds, or (``content="actor"``) the policy built around an actor file's actor
    (its critics fresh and minimal, its target actor a copy of the actor), on the CPU.

    Raises:
        ModelFileError: the file is unreadable, holds another content, names an unknown class, or its tensors do
            not match its declared architecture.
    """
    from rlkit_td3.vec_env.training_env import check_action_space

    # only the networks' entry, bounded by the networks the file declares (as TD3.load bounds a model file's)
    metadata, tensors, _, _ = read_model_zip(path, entry_limits=network_byte_limits, entries=("policy.pth",))
    try:
        found = metadata.get("content")
        wanted = "a policy" if content == POLICY_CONTENT else "an actor"
        if found not in (POLICY_CONTENT, ACTOR_CONTENT):
            algorithm = metadata.get("algorithm")
            raise ModelFileError(
                f"it holds a whole {algorithm} model, not {wanted}: load it with {algorithm}.load(path) and use "
                "model.policy"
            )
        if found != content:
            raise ModelFileError(
                f"it holds {'a policy' if found == POLICY_CONTENT else 'an actor'}, not {wanted}: load it with "
                f"{'TD3Policy.load(path)' if found == POLICY_CONTENT else 'Actor.load(path)'}"
            )
        policy_cls = policy_class_from_file(cls, metadata["policy"]["class"])
        kwargs = dict(metadata["policy"]["kwargs"])
        # the allow-lists of TD3.load: a file never names an arbitrary torch class
        kwargs["activation_fn"] = allowed_class(kwargs["activation_fn"], ACTIVATIONS, "activation_fn")
        kwargs["optimizer_class"] = allowed_class(kwargs["optimizer_class"], OPTIMIZERS, "optimizer_class")
        if "features_extractor_class" in kwargs:
            kwargs["features_extractor_class"] = allowed_class(
                kwargs["features_extractor_class"], FEATURES_EXTRACTORS, "features_extractor_class"
            )
        observation_space = space_from_dict(metadata["observation_space"])
        action_space = check_action_space(space_from_dict(metadata["action_space"]))
        state = tensors.get("policy")
        if content == ACTOR_CONTENT:
            kwargs = _actor_only(kwargs)
            policy_cls.check_saved_state(
                observation_space, action_space, kwargs, state, model_file=False, only=ACTOR_PREFIXES
            )
            policy = policy_cls(observation_space, action_space, **kwargs)
            full = policy.state_dict()
            full.update(state)
            full.update({"actor_target." + k[len("actor.") :]: v for k, v in state.items() if k.startswith("actor.")})
            state = full
        else:
            policy_cls.check_saved_state(observation_space, action_space, kwargs, state, model_file=False)
            policy = policy_cls(observation_space, action_space, **kwargs)
        policy.load_state_dict(state, entry="policy.pth")  # TD3.load's check: keys, shapes, dtypes, finite
    except ModelFileError as exc:
        raise ModelFileError(f"{path}: {exc}") from exc
    except Exception as exc:  # noqa: BLE001  (whatever the file's content breaks is the file's fault)
        raise ModelFileError(f"{path}: malformed policy file ({type(exc).__name__}: {exc})") from exc
    return policy

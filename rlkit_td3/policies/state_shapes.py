"""The tensors a `TD3Policy` holds, from its architecture alone (built on the ``meta`` device: nothing is allocated),
which lets loading refuse a file whose declared networks do not match its stored tensors before building them; and
the check of an observation space against a features extractor.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from rlkit_td3.fileio.serialization import ModelFileError
from rlkit_td3.policies.declared_size import declared_n_critics
from rlkit_td3.policies.networks import DEFAULT_NET_ARCH, parse_net_arch
from rlkit_td3.preprocessing import OBSERVATION_SPACES, get_flattened_obs_dim, is_image_space
from rlkit_td3.torch_layers import CombinedExtractor, FlattenExtractor, NatureCNN


def _check_observation_space(observation_space: spaces.Space, extractor: type[nn.Module]) -> None:
    """Refuse an observation space the extractor cannot take, naming the policy alias that fits."""
    if isinstance(observation_space, spaces.Dict):
        if extractor is FlattenExtractor or extractor is NatureCNN:
            raise TypeError(
                f"observation_space is a Dict ({observation_space!r}): use policy='MultiInputPolicy' "
                "(CombinedExtractor), not MlpPolicy or CnnPolicy"
            )
        return
    if not isinstance(observation_space, OBSERVATION_SPACES):
        raise TypeError(
            f"observation_space must be a gymnasium.spaces.Box, Discrete, MultiDiscrete or MultiBinary (or a Dict "
            f"with MultiInputPolicy), got {observation_space!r}"
        )
    if extractor is FlattenExtractor and is_image_space(observation_space):
        raise TypeError(
            f"observation_space {observation_space!r} holds uint8 images: use policy='CnnPolicy' (NatureCNN), or "
            "pass a features_extractor_class of your own to flatten them"
        )
    if extractor is CombinedExtractor:
        raise TypeError(
            f"MultiInputPolicy (CombinedExtractor) takes a Dict observation space, got {observation_space!r}: use "
            "policy='MlpPolicy' or 'CnnPolicy'"
        )


def extractor_kwargs_for(
    extractor: type[nn.Module], extractor_kwargs: dict[str, Any], normalize_images: bool
) -> dict[str, Any]:
    """The keyword arguments the features extractor is built with: the given ones, plus
    ``normalized_image=True`` for `NatureCNN` / `CombinedExtractor` (and subclasses) when the policy does not scale
    images (``normalize_images=False``) and the caller did not say, as SB3 does: such observations are taken as
    already scaled, so image-like float observations go to the CNN."""
    kwargs = dict(extractor_kwargs)
    if not normalize_images and issubclass(extractor, (NatureCNN, CombinedExtractor)):
        kwargs.setdefault("normalized_image", True)
    return kwargs


def extractor_state_shapes(
    extractor_class: type[nn.Module], observation_space: spaces.Space, extractor_kwargs: dict[str, Any] | None = None
) -> tuple[int, dict[str, tuple[int, ...]]]:
    """``(features_dim, {name: shape})`` of a features extractor's state dict, found by building it on the
    ``meta`` device (no memory is allocated, whatever sizes the arguments ask for)."""
    with torch.device("meta"):
        extractor = extractor_class(observation_space, **(extractor_kwargs or {}))
    return int(extractor.features_dim), {name: tuple(t.shape) for name, t in extractor.state_dict().items()}


def expected_state_shapes(
    obs_dim: int,
    action_dim: int,
    net_arch: Any,
    n_critics: int,
    extractor_shapes: dict[str, tuple[int, ...]] | None = None,
    share_features_extractor: bool = False,
    critic_layer_norm: bool = False,
) -> dict[str, tuple[int, ...]]:
    """The name and shape of every tensor in a `TD3Policy`'s ``state_dict``, from its architecture
    alone (nothing is allocated).

    ``obs_dim`` is the features extractor's ``features_dim``; ``extractor_shapes`` the extractor's own tensors
    (see `extractor_state_shapes`; none for the default flatten), held by the actors, and by the critics unless
    ``share_features_extractor``; ``critic_layer_norm`` adds the critics' LayerNorm gains and biases.
    """
    pi, qf = parse_net_arch(net_arch)
    shapes: dict[str, tuple[int, ...]] = {}
    for prefix in ("actor", "actor_target"):
        for name, shape in (extractor_shapes or {}).items():
            shapes[f"{prefix}.features_extractor.{name}"] = shape
        sizes = [obs_dim, *pi, action_dim]
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            shapes[f"{prefix}.mu.{2 * i}.weight"] = (fan_out, fan_in)
            shapes[f"{prefix}.mu.{2 * i}.bias"] = (fan_out,)
    for prefix in ("critic", "critic_target"):
        if not share_features_extractor:
            for name, shape in (extractor_shapes or {}).items():
                shapes[f"{prefix}.features_extractor.{name}"] = shape
        sizes = [obs_dim + action_dim, *qf, 1]
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            shapes[f"{prefix}.weights.{i}"] = (n_critics, fan_in, fan_out)
            shapes[f"{prefix}.biases.{i}"] = (n_critics, 1, fan_out)
        if critic_layer_norm:
            for i, width in enumerate(qf):
                shapes[f"{prefix}.norm_weights.{i}"] = (n_critics, 1, width)
                shapes[f"{prefix}.norm_biases.{i}"] = (n_critics, 1, width)
    return shapes


def _few(names: set[str], limit: int = 6) -> str:
    """Sorted names for an error message, at most ``limit`` of them and a count of the rest."""
    shown = sorted(names)[:limit]
    return str(shown) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def check_state_shapes(
    policy_cls: type[nn.Module],
    observation_space: spaces.Space,
    action_space: spaces.Space,
    kwargs: dict[str, Any],
    state: Any,
    exact: bool = True,
    only: tuple[str, ...] | None = None,
) -> None:
    """Refuse stored tensors that are not exactly those of the declared architecture, before building it.

    Without this a forged ``net_arch`` (or extractor size) could make loading allocate huge networks.
    Registered subclasses may add networks of their own: for them (``exact=False``) the check covers the
    `TD3Policy` part, and ``load_state_dict`` (strict) the rest. ``only`` (name prefixes, e.g. an actor file's
    ``("actor.", "obs_normalizer.")``) restricts the expected tensors to those.
    """
    if not isinstance(state, dict) or not all(isinstance(t, torch.Tensor) for t in state.values()):
        raise ModelFileError("the policy entry is not a state dict of tensors")
    n_critics = declared_n_critics(kwargs)
    if not (isinstance(observation_space, (*OBSERVATION_SPACES, spaces.Dict)) and isinstance(action_space, spaces.Box)):
        raise ModelFileError(
            "a TD3Policy file must declare a Box action space and a Box, Discrete, MultiDiscrete, MultiBinary or "
            "Dict observation space"
        )
    action_dim = int(np.prod(action_space.shape))
    extractor = kwargs.get("features_extractor_class", policy_cls.default_features_extractor_class)
    extractor_kwargs = kwargs.get("features_extractor_kwargs") or {}
    if not isinstance(extractor_kwargs, dict):
        raise ModelFileError(f"features_extractor_kwargs must be a dict, got {extractor_kwargs!r}")
    share = kwargs.get("share_features_extractor", False)
    if not isinstance(share, bool):
        raise ModelFileError(f"share_features_extractor must be a bool, got {share!r}")
    layer_norm = kwargs.get("critic_layer_norm", False)
    if not isinstance(layer_norm, bool):
        raise ModelFileError(f"critic_layer_norm must be a bool, got {layer_norm!r}")
    normalize_obs = kwargs.get("normalize_obs", False)
    if not isinstance(normalize_obs, bool):
        raise ModelFileError(f"normalize_obs must be a bool, got {normalize_obs!r}")
    try:
        _check_observation_space(observation_space, extractor)
        normalize_images = kwargs.get("normalize_images", True) is not False
        extractor_kwargs = extractor_kwargs_for(extractor, extractor_kwargs, normalize_images)
        features_dim, extractor_shapes = extractor_state_shapes(extractor, observation_space, extractor_kwargs)
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"the declared features extractor cannot be built: {exc}") from exc
    expected = expected_state_shapes(
        features_dim,
        action_dim,
        kwargs.get("net_arch", DEFAULT_NET_ARCH),
        n_critics,
        extractor_shapes,
        share,
        layer_norm,
    )
    if normalize_obs and isinstance(observation_space, spaces.Box):  # the statistics: mean, var, count
        shape = tuple(observation_space.shape)
        expected.update({"obs_normalizer.mean": shape, "obs_normalizer.var": shape, "obs_normalizer.count": ()})
    if only is not None:
        expected = {name: shape for name, shape in expected.items() if name.startswith(only)}
    stored = {name: tuple(tensor.shape) for name, tensor in state.items()}
    if exact and set(stored) != set(expected):
        missing, extra = _few(set(expected) - set(stored)), _few(set(stored) - set(expected))
        raise ModelFileError(f"the stored tensors do not match the declared networks: missing {missing}, extra {extra}")
    for name, shape in expected.items():
        if stored.get(name) != shape:
            raise ModelFileError(
                f"tensor {name!r} has shape {stored.get(name)}, the declared networks need {shape} "
                f"(net_arch={kwargs.get('net_arch')!r}, n_critics={n_critics}, "
                f"features_extractor_class={getattr(extractor, '__name__', extractor)})"
            )


def check_mlp_state_size(
    observation_space: spaces.Box, action_space: spaces.Box, policy_kwargs: dict[str, Any], state: Any
) -> None:
    """Refuse stored tensors whose total size is not that of the ``MlpPolicy`` networks ``policy_kwargs`` declare
    (the cheap check of a plain ``MlpPolicy`` file), before building anything.

    Without this a forged ``net_arch`` could make loading allocate and initialise huge networks.
    """
    pi, qf = parse_net_arch(policy_kwargs.get("net_arch", DEFAULT_NET_ARCH))
    n_critics = declared_n_critics(policy_kwargs)
    obs_dim, act_dim = get_flattened_obs_dim(observation_space), int(np.prod(action_space.shape))

    def count(sizes: list[int]) -> int:
        return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))

    expected = 2 * count([obs_dim, *pi, act_dim]) + 2 * n_critics * count([obs_dim + act_dim, *qf, 1])
    if not isinstance(state, dict) or not all(isinstance(t, torch.Tensor) for t in state.values()):
        raise ModelFileError("the policy entry is not a state dict of tensors")
    stored = sum(t.numel() for t in state.values())
    if stored != expected:
        raise ModelFileError(f"the networks the metadata declares have {expected} parameters, the file stores {stored}")

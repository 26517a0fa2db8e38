"""The tensors a `TD3Policy` holds, from its architecture alone (built on the ``meta`` device: nothing is allocated),
which lets loading refuse a file whose declared networks do not match its stored tensors before building them; and
the check of an observation space against a features extractor.
"""

from __future__ import annotations

from typing import Any

import torch
from gymnasium import spaces
from torch import nn

from rlkit_td3.policies.networks import parse_net_arch
from rlkit_td3.preprocessing import OBSERVATION_SPACES, is_image_space
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

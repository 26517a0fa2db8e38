"""Observation-space helpers for policies: image detection, flattened sizes and tensor preprocessing.

The names, signatures and rules follow Stable-Baselines3's ``common/preprocessing.py``: an *image* is a
``uint8`` `Box` with three dimensions, bounds 0 and 255 (unless ``normalized_image``) and 1, 3 or 4 channels
first or last; the channel axis is the smallest of the three.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from gymnasium import spaces
from torch.nn import functional as F

OBSERVATION_SPACES: tuple[type[spaces.Space], ...] = (
    spaces.Box,
    spaces.Discrete,
    spaces.MultiDiscrete,
    spaces.MultiBinary,
)
"""The observation spaces the policies take (and a `Dict` of them, with MultiInputPolicy): as in SB3, a
``Discrete`` / ``MultiDiscrete`` observation is one-hot encoded and a ``MultiBinary`` one cast to float."""


def is_image_space_channels_first(observation_space: spaces.Box) -> bool:
    """Whether an image space is channels-first ``(C, H, W)``: its smallest dimension is the first.

    A space whose smallest dimension is the middle one is treated as channels-last, with a warning (as SB3).
    """
    smallest = int(np.argmin(observation_space.shape))
    if smallest == 1:
        warnings.warn(
            f"treating the image space {observation_space.shape} as channels-last, though its middle dimension "
            "is the smallest",
            stacklevel=2,
        )
    return smallest == 0


def is_image_space(
    observation_space: spaces.Space, check_channels: bool = False, normalized_image: bool = False
) -> bool:
    """Whether ``observation_space`` holds images a CNN can take.

    Args:
        observation_space: any space; only a three-dimensional `Box` can be an image.
        check_channels: also require 1, 3 or 4 channels (first or last).
        normalized_image: accept any dtype and bounds (images already scaled by the user); otherwise the space
            must be ``uint8`` with bounds exactly 0 and 255.
    """
    if not (isinstance(observation_space, spaces.Box) and len(observation_space.shape) == 3):
        return False
    if not normalized_image:
        if observation_space.dtype != np.uint8:
            return False
        if np.any(observation_space.low != 0) or np.any(observation_space.high != 255):
            return False
    if not check_channels:
        return True
    shape = observation_space.shape
    channels = shape[0] if is_image_space_channels_first(observation_space) else shape[-1]
    return channels in (1, 3, 4)


def get_flattened_obs_dim(observation_space: spaces.Space) -> int:
    """Size of an observation once flattened (a `Discrete` counts its one-hot width, as in SB3).

    Raises:
        TypeError: a space that cannot be flattened (a `Dict` is handled by `CombinedExtractor`, key by key).
    """
    if isinstance(observation_space, spaces.Box):
        return int(np.prod(observation_space.shape))
    if isinstance(observation_space, spaces.Discrete):
        return int(observation_space.n)
    if isinstance(observation_space, spaces.MultiDiscrete):
        return int(np.sum(observation_space.nvec))
    if isinstance(observation_space, spaces.MultiBinary):
        return int(np.prod(observation_space.shape))
    raise TypeError(
        f"observation_space {observation_space!r} cannot be flattened: use a Box, Discrete, MultiDiscrete or "
        "MultiBinary space (a Dict goes through CombinedExtractor / MultiInputPolicy)"
    )


def preprocess_obs(
    obs: torch.Tensor | dict[str, torch.Tensor],
    observation_space: spaces.Space,
    normalize_images: bool = True,
) -> torch.Tensor | dict[str, torch.Tensor]:
    """A batch of observations as float tensors a network takes.

    Images are scaled to [0, 1] when ``normalize_images``; other `Box` observations are cast to float (a
    float32 tensor is returned as is); `Discrete` / `MultiDiscrete` become one-hot; a `Dict` is processed key
    by key.

    Raises:
        TypeError: an unsupported space, or a `Dict` space whose observation is not a dict.
    """
    if isinstance(observation_space, spaces.Dict):
        if not isinstance(obs, dict):
            raise TypeError(f"a Dict observation space needs a dict of tensors, got {type(obs).__name__}")
        return {key: preprocess_obs(obs[key], sub, normalize_images) for key, sub in observation_space.spaces.items()}
    assert isinstance(obs, torch.Tensor)
    if isinstance(observation_space, spaces.Box):
        if normalize_images and is_image_space(observation_space):
            return obs.float() / 255.0
        return obs.float()
    if isinstance(observation_space, spaces.Discrete):
        return F.one_hot(obs.long().reshape(-1), num_classes=int(observation_space.n)).float()
    if isinstance(observation_space, spaces.MultiDiscrete):
        columns = obs.long().reshape(obs.shape[0], -1).split(1, dim=1)
        return torch.cat(
            [F.one_hot(col.reshape(-1), int(n)).float() for col, n in zip(columns, observation_space.nvec.ravel())],
            dim=1,
        )
    if isinstance(observation_space, spaces.MultiBinary):
        return obs.float()
    raise TypeError(f"observation_space {observation_space!r} is not supported by the policies")


def get_obs_shape(observation_space: spaces.Space) -> tuple[int, ...] | dict[str, tuple[int, ...]]:
    """The shape one observation is stored with (SB3's ``get_obs_shape``): a Box's or MultiBinary's shape,
    ``(1,)`` for Discrete, ``(len(nvec),)`` for MultiDiscrete, and a dict of those for a Dict space.

    Raises:
        NotImplementedError: another space.
    """
    if isinstance(observation_space, (spaces.Box, spaces.MultiBinary)):
        return tuple(observation_space.shape)
    if isinstance(observation_space, spaces.Discrete):
        return (1,)
    if isinstance(observation_space, spaces.MultiDiscrete):
        return (len(observation_space.nvec),)
    if isinstance(observation_space, spaces.Dict):
        return {key: get_obs_shape(space) for key, space in observation_space.spaces.items()}  # type: ignore[misc]
    raise NotImplementedError(f"{observation_space} observation space is not supported")


__all__ = [
    "OBSERVATION_SPACES",
    "get_flattened_obs_dim",
    "get_obs_shape",
    "is_image_space",
    "is_image_space_channels_first",
    "preprocess_obs",
]

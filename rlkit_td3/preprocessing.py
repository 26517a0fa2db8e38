"""Observation-space helpers for policies: image detection, flattened sizes and tensor preprocessing.

The names, signatures and rules follow Stable-Baselines3's ``common/preprocessing.py``: an *image* is a
``uint8`` `Box` with three dimensions, bounds 0 and 255 (unless ``normalized_image``) and 1, 3 or 4 channels
first or last; the channel axis is the smallest of the three.
"""

from __future__ import annotations

import warnings
from typing import Any

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


# ---------------------------------------------------------------------------- batches of observations
# Batches of observations that are either arrays or dicts of arrays (Dict observation spaces).
#
# The training loop handles one batch of observations per step (one row per env). With a Dict observation space
# that batch is ``{key: (n_envs, *shape)}``; these functions do the few row operations the loop needs on either
# form, so the loop reads the same for both.

Obs = Any
"""An array ``(n, *shape)`` or a dict of such arrays."""


def obs_rows(obs: Obs, rows: Any) -> Obs:
    """``obs[rows]``, key by key for a dict."""
    if isinstance(obs, dict):
        return {key: value[rows] for key, value in obs.items()}
    return obs[rows]


def obs_len(obs: Obs) -> int:
    """Rows of the batch."""
    if isinstance(obs, dict):
        return len(next(iter(obs.values())))
    return len(obs)


def obs_copy(obs: Obs) -> Obs:
    """A copy of the batch (each key's array copied for a dict)."""
    if isinstance(obs, dict):
        return {key: np.array(value, copy=True) for key, value in obs.items()}
    return np.array(obs, copy=True)


def obs_set_row(obs: Obs, row: int, value: Obs) -> None:
    """``obs[row] = value`` in place, key by key for a dict."""
    if isinstance(obs, dict):
        for key in obs:
            obs[key][row] = value[key]
    else:
        obs[row] = value


def obs_where(mask: np.ndarray, new: Obs, old: Obs) -> Obs:
    """Row ``i`` from ``new`` where ``mask[i]``, else from ``old``."""
    if isinstance(new, dict):
        return {key: obs_where(mask, new[key], old[key]) for key in new}
    new = np.asarray(new)
    return np.where(mask.reshape(-1, *([1] * (new.ndim - 1))), new, old)


def obs_flat_rows(obs: Obs, n: int) -> np.ndarray:
    """The batch as one ``(n, features)`` array (a dict's keys side by side, in order); for value checks."""
    if isinstance(obs, dict):
        return np.concatenate([np.reshape(np.asarray(value), (n, -1)) for value in obs.values()], axis=1)
    return np.reshape(np.asarray(obs), (n, -1))


def dict_obs_batch(observation: Any, space: Any) -> tuple[dict[str, np.ndarray], bool]:
    """One Dict observation or a batch of them as ``({key: (batch, *shape)}, single)``.

    ``observation`` maps every key of ``space`` (a ``gymnasium.spaces.Dict``) to one observation of that key
    (``single``) or to a batch of them; every key must agree.

    Raises:
        TypeError: ``observation`` is not a dict (e.g. the ``(obs, info)`` tuple of ``reset()``).
        ValueError: its keys differ from the space's, or a key's shape matches neither one observation nor a
            batch, or the keys' batch sizes differ.
    """
    if not isinstance(observation, dict):
        raise TypeError(f"observation must be a dict with keys {list(space.spaces)}, got {type(observation).__name__}")
    if set(observation) != set(space.spaces):
        raise ValueError(f"observation has keys {sorted(observation)}; expected {sorted(space.spaces)}")
    batch, singles, sizes = {}, set(), set()
    for key, sub in space.spaces.items():
        array = np.asarray(observation[key])
        if array.shape == sub.shape:
            singles.add(True)
            array = array[None]
        elif array.shape[1:] == sub.shape and array.ndim == len(sub.shape) + 1:
            singles.add(False)
        else:
            raise ValueError(
                f"observation[{key!r}] has shape {array.shape}; expected {sub.shape} or (batch, *{sub.shape})"
            )
        sizes.add(len(array))
        batch[key] = array
    if len(singles) > 1 or len(sizes) > 1:
        raise ValueError(
            "observation's keys disagree: give every key one observation or every key a batch of the same size"
        )
    return batch, singles.pop()


def flat_obs_dim(space: Any) -> int:
    """Elements of one observation of a Box space, or of all entries of a Dict space together."""
    if hasattr(space, "spaces") and isinstance(space.spaces, dict):
        return sum(flat_obs_dim(sub) for sub in space.spaces.values())
    return int(np.prod(space.shape))


def obs_shapes(space: Any) -> tuple[int, ...] | dict[str, tuple[int, ...]]:
    """The shape of one observation, or ``{key: shape}`` for a Dict space."""
    if hasattr(space, "spaces") and isinstance(space.spaces, dict):
        return {key: tuple(sub.shape) for key, sub in space.spaces.items()}
    return tuple(space.shape)


def stack_obs(observations: list[Obs], space: Any) -> Obs:
    """One observation per env stacked into a batch, in the space's dtype(s)."""
    if hasattr(space, "spaces") and isinstance(space.spaces, dict):
        return {key: stack_obs([obs[key] for obs in observations], sub) for key, sub in space.spaces.items()}
    return np.asarray(np.stack(observations), dtype=space.dtype)


def obs_to_tensors(obs: Obs) -> Any:
    """The batch as a tensor, or a dict of tensors (how a checkpoint stores the envs' last observations)."""
    import torch

    if isinstance(obs, dict):
        return {key: torch.as_tensor(np.asarray(value)) for key, value in obs.items()}
    return torch.as_tensor(np.asarray(obs))


def obs_from_tensors(tensors: Any) -> Obs:
    """`obs_to_tensors()` undone."""
    if isinstance(tensors, dict):
        return {key: value.numpy() for key, value in tensors.items()}
    return tensors.numpy()


def check_dict_space(observation_space: spaces.Space) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """``{key: (shape, storage dtype)}`` of a Dict observation space whose entries are Box, Discrete,
    MultiDiscrete or MultiBinary spaces (shapes as `rlkit_td3.preprocessing.get_obs_shape`: ``(1,)`` for a
    Discrete entry).

    Raises:
        TypeError: the space is not a ``gymnasium.spaces.Dict`` of such spaces, or a key is not a str.
        ValueError: the Dict is empty or an entry has no elements.
    """
    if not isinstance(observation_space, spaces.Dict):
        raise TypeError(f"observation_space must be a gymnasium.spaces.Dict, got {observation_space!r}")
    if len(observation_space.spaces) == 0:
        raise ValueError("observation_space must be a non-empty gymnasium.spaces.Dict")
    layout = {}
    for key, space in observation_space.spaces.items():
        if not isinstance(key, str):
            raise TypeError(f"observation_space keys must be str, got {key!r}")
        if not isinstance(space, OBSERVATION_SPACES):
            raise TypeError(
                f"observation_space[{key!r}] must be a gymnasium.spaces.Box, Discrete, MultiDiscrete or "
                f"MultiBinary, got {space!r}"
            )
        shape = tuple(int(d) for d in get_obs_shape(space))
        if int(np.prod(shape)) == 0:
            raise ValueError(f"observation_space[{key!r}] must have at least one element, got shape {shape}")
        dtype = np.dtype(space.dtype)
        layout[key] = (shape, np.dtype(np.float32) if dtype.kind == "f" else dtype)
    return layout

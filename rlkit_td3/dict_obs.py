"""Batches of observations that are either arrays or dicts of arrays (Dict observation spaces).

The training loop handles one batch of observations per step (one row per env). With a Dict observation space
that batch is ``{key: (n_envs, *shape)}``; these functions do the few row operations the loop needs on either
form, so the loop reads the same for both.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from rlkit_td3.preprocessing import OBSERVATION_SPACES, get_obs_shape

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

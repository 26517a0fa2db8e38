"""Observation buffers for vectorized envs (``stable_baselines3.common.vec_env.util``'s counterpart).

A vectorized observation is one array with a leading env axis, a dict of such arrays (``Dict`` spaces) or a
tuple of them (``Tuple`` spaces). Internally the envs store all three as a dict keyed by the dict key, the
tuple index, or ``None`` for a plain space.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


def obs_space_info(obs_space: spaces.Space) -> tuple[list[Any], dict[Any, tuple[int, ...]], dict[Any, np.dtype]]:
    """The buffer keys, the per-key shape of one observation, and the per-key dtype of ``obs_space``.

    Keys are the ``Dict`` keys, the ``Tuple`` indices, or ``[None]`` for any other space.

    Raises:
        ValueError: a nested ``Dict``/``Tuple`` space (not supported, as in SB3).
    """
    if isinstance(obs_space, spaces.Dict):
        subspaces: dict[Any, spaces.Space] = dict(obs_space.spaces)
    elif isinstance(obs_space, spaces.Tuple):
        subspaces = dict(enumerate(obs_space.spaces))
    else:
        subspaces = {None: obs_space}
    for key, space in subspaces.items():
        if isinstance(space, (spaces.Dict, spaces.Tuple)):
            raise ValueError(f"nested observation spaces are not supported (key {key!r} is a {type(space).__name__})")
    keys = list(subspaces)
    shapes = {key: tuple(space.shape or ()) for key, space in subspaces.items()}
    dtypes = {key: space.dtype for key, space in subspaces.items()}
    return keys, shapes, dtypes


def copy_obs_dict(obs: dict[Any, np.ndarray]) -> dict[Any, np.ndarray]:
    """A copy of a buffer dict with every array copied."""
    return OrderedDict((key, np.copy(value)) for key, value in obs.items())


def dict_to_obs(obs_space: spaces.Space, obs_dict: dict[Any, np.ndarray]) -> Any:
    """Turn a buffer dict back into the shape of ``obs_space``: a dict, a tuple, or the ``None`` entry."""
    if isinstance(obs_space, spaces.Dict):
        return dict(obs_dict)
    if isinstance(obs_space, spaces.Tuple):
        return tuple(obs_dict[i] for i in range(len(obs_space.spaces)))
    return obs_dict[None]


def obs_to_dict(obs_space: spaces.Space, obs: Any) -> dict[Any, Any]:
    """Inverse of `dict_to_obs()` for one (or a batch of) observation(s)."""
    if isinstance(obs_space, spaces.Dict):
        return {key: obs[key] for key in obs_space.spaces}
    if isinstance(obs_space, spaces.Tuple):
        return {i: obs[i] for i in range(len(obs_space.spaces))}
    return {None: obs}


def map_obs(obs: Any, fn: Any) -> Any:
    """Apply ``fn`` to every array of a (possibly dict or tuple) observation."""
    if isinstance(obs, dict):
        return {key: fn(value) for key, value in obs.items()}
    if isinstance(obs, tuple):
        return tuple(fn(value) for value in obs)
    return fn(obs)


def unwrap_wrapper(env: gym.Env, wrapper_class: type[gym.Wrapper]) -> gym.Wrapper | None:
    """The outermost ``wrapper_class`` wrapper in ``env``'s chain, or ``None``."""
    current: Any = env
    while isinstance(current, gym.Wrapper):
        if isinstance(current, wrapper_class):
            return current
        current = current.env
    return None


def is_wrapped(env: gym.Env, wrapper_class: type[gym.Wrapper]) -> bool:
    """Whether ``env`` has a ``wrapper_class`` wrapper anywhere in its chain."""
    return unwrap_wrapper(env, wrapper_class) is not None


__all__ = [
    "copy_obs_dict",
    "dict_to_obs",
    "is_wrapped",
    "map_obs",
    "obs_space_info",
    "obs_to_dict",
    "unwrap_wrapper",
]

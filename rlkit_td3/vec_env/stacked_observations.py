"""``StackedObservations``: the last ``n_stack`` observations of each env, concatenated (used by ``VecFrameStack``).

Observations are concatenated along the channel axis: the last one (``channels_order="last"``, the default
for non-image spaces and channel-last images) or the first one of an observation (``"first"``). The newest
observation comes last. After a reset an env's older slots are zeros.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from rlkit_td3.utils import ValueAssertionError
from rlkit_td3.vec_env.vec_normalize import is_image_space

_ORDERS = ("first", "last")


def _channels_first(space: spaces.Box) -> bool:
    """An image whose smallest axis is the first one is taken as channels-first (as SB3 guesses)."""
    return is_image_space(space) and int(np.argmin(space.shape)) == 0


class StackedObservations:
    """Keeps the stack of one Box or Dict observation space for ``num_envs`` envs.

    Args:
        num_envs: number of envs.
        n_stack: number of observations stacked (at least 1).
        observation_space: the space of one observation (Box, or Dict of Boxes).
        channels_order: ``"first"``, ``"last"``, ``None`` (guess from the space), or for Dict spaces a dict of
            these by key.

    Raises:
        ValueError: a bad ``n_stack``/``channels_order``, or an unsupported space.
    """

    def __init__(
        self,
        num_envs: int,
        n_stack: int,
        observation_space: spaces.Box | spaces.Dict,
        channels_order: str | Mapping[str, str | None] | None = None,
    ) -> None:
        if isinstance(n_stack, bool) or not isinstance(n_stack, (int, np.integer)) or n_stack < 1:
            raise ValueError(f"n_stack must be a positive int, got {n_stack!r}")
        self.n_stack = int(n_stack)
        self.num_envs = num_envs
        self.observation_space = observation_space
        if isinstance(observation_space, spaces.Dict):
            orders = channels_order if isinstance(channels_order, Mapping) else {}
            if channels_order is not None and not isinstance(channels_order, Mapping):
                orders = {key: channels_order for key in observation_space.spaces}
            self.sub_stacks: dict[str, StackedObservations] | None = {
                key: StackedObservations(num_envs, n_stack, space, orders.get(key))  # type: ignore[arg-type]
                for key, space in observation_space.spaces.items()
            }
            self.stacked_observation_space: spaces.Space = spaces.Dict(
                {key: sub.stacked_observation_space for key, sub in self.sub_stacks.items()}
            )
            return
        self.sub_stacks = None
        if not isinstance(observation_space, spaces.Box):
            raise ValueError(f"frame stacking needs a Box or Dict observation space, got {observation_space}")
        self.channels_first, _, _, self.stack_axis = self.compute_stacking(
            self.n_stack, observation_space, channels_order
        )
        if observation_space.shape == ():
            raise ValueError("frame stacking needs observations with at least one axis")
        low = np.concatenate([observation_space.low] * self.n_stack, axis=self.stack_axis)
        high = np.concatenate([observation_space.high] * self.n_stack, axis=self.stack_axis)
        self.stacked_observation_space = spaces.Box(low=low, high=high, dtype=observation_space.dtype)
        self.stacked_obs = np.zeros((num_envs, *self.stacked_observation_space.shape), dtype=observation_space.dtype)
        self._width = observation_space.shape[self.stack_axis]

    @staticmethod
    def compute_stacking(
        n_stack: int, observation_space: spaces.Box, channels_order: str | None = None
    ) -> tuple[bool, int, tuple[int, ...], int]:
        """Where the frames of a Box space are stacked (SB3's function, same return values).

        Args:
            n_stack: the number of frames.
            observation_space: one frame's space.
            channels_order: ``"first"``, ``"last"`` or ``None`` (an image whose smallest axis is the first is
                channels-first; anything else is stacked on its last axis).

        Returns:
            ``(channels_first, stack_dimension, stacked_shape, repeat_axis)``: the stacking axis of a batch
            (1 or -1), the stacked frame's shape and the stacking axis of one frame (0 or -1).

        Raises:
            ValueAssertionError: ``channels_order`` is not one of those (a ``ValueError``, and an
                ``AssertionError`` as SB3 raises).
        """
        if channels_order is None:
            channels_order = "first" if _channels_first(observation_space) else "last"
        if channels_order not in _ORDERS:
            raise ValueAssertionError(f"channels_order must be 'first', 'last' or None, got {channels_order!r}")
        channels_first = channels_order == "first"
        repeat_axis = 0 if channels_first else -1
        stacked_shape = list(observation_space.shape)
        if stacked_shape:
            stacked_shape[repeat_axis] *= n_stack
        return channels_first, 1 if channels_first else -1, tuple(stacked_shape), repeat_axis

    def _newest_slice(self) -> tuple[Any, ...]:
        # the last `width` entries of the channel axis, for every env
        newest = slice(-self._width, None)
        return (slice(None), newest) if self.channels_first else (Ellipsis, newest)

    def reset(self, observation: Any) -> Any:
        """Zero every stack, put ``observation`` (a batch) in the newest slot, and return the stacks."""
        if self.sub_stacks is not None:
            return {key: sub.reset(observation[key]) for key, sub in self.sub_stacks.items()}
        self.stacked_obs[...] = 0
        self.stacked_obs[self._newest_slice()] = observation
        return self.stacked_obs.copy()

    def update(
        self, observations: Any, dones: np.ndarray, infos: list[dict[str, Any]]
    ) -> tuple[Any, list[dict[str, Any]]]:
        """Shift in the new observations; the stack of an env whose episode ended starts again from zeros.

        The ``terminal_observation`` of such an env is replaced by its full stack (previous frames + the
        terminal one).

        Returns:
            The stacks and the (updated) infos.
        """
        if self.sub_stacks is not None:
            stacked = {}
            ended = [i for i, info in enumerate(infos) if "terminal_observation" in info]
            terminal: dict[int, dict[str, Any]] = {i: {} for i in ended}
            for key, sub in self.sub_stacks.items():
                key_infos = [{} for _ in infos]
                for i in ended:
                    key_infos[i]["terminal_observation"] = infos[i]["terminal_observation"][key]
                stacked[key], key_infos = sub.update(observations[key], dones, key_infos)
                for i in ended:
                    terminal[i][key] = key_infos[i]["terminal_observation"]
            for i in ended:
                infos[i]["terminal_observation"] = terminal[i]
            return stacked, infos
        env_axis = 0 if self.channels_first else -1  # the channel axis of one env's stack
        batch_axis = 1 if self.channels_first else -1  # the same axis in the batch of stacks
        self.stacked_obs = np.roll(self.stacked_obs, shift=-self._width, axis=batch_axis)
        kept = self.stacked_obs.shape[batch_axis] - self._width
        for index in np.flatnonzero(dones):
            if "terminal_observation" in infos[index]:
                older = np.take(self.stacked_obs[index], np.arange(kept), axis=env_axis)
                terminal_obs = np.asarray(infos[index]["terminal_observation"], dtype=self.stacked_obs.dtype)
                infos[index]["terminal_observation"] = np.concatenate((older, terminal_obs), axis=env_axis)
            else:
                warnings.warn("an episode ended without a terminal_observation in its info", stacklevel=2)
            self.stacked_obs[index] = 0
        self.stacked_obs[self._newest_slice()] = observations
        return self.stacked_obs.copy(), infos


__all__ = ["StackedObservations"]

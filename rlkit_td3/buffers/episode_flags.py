"""Stable-Baselines3's ``buffer.dones`` / ``buffer.timeouts`` over a buffer that stores ``terminated`` and
``truncated``.

SB3 keeps two flags per stored transition: ``dones`` (the episode ended, either way) and ``timeouts`` (it was cut
by a time limit); a transition terminated where ``dones and not timeouts``. rlkit_td3 stores the two outcomes
apart (``terminated``, ``truncated``, one row per transition). `EpisodeFlags` shows either SB3 flag in SB3's
``[step, env]`` layout and writes what is assigned to it back into the buffer, with SB3's meaning:

- ``dones[i] = True``: the episode ends at ``i`` (a termination, unless ``i`` is a time-limit truncation);
- ``dones[i] = False``: ``i`` is no termination (a truncation at ``i`` stays, as SB3's ``timeouts`` would);
- ``timeouts[i] = True``: ``i`` is a time-limit truncation (no longer a termination);
- ``timeouts[i] = False``: ``i`` is no truncation; an episode that ended there ends as a termination.

Reading gives plain NumPy arrays (copies); only item assignment on the object itself writes through.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin


class EpisodeFlags(NDArrayOperatorsMixin):
    """SB3's ``dones`` or ``timeouts`` of a replay buffer as a ``[step, env]`` boolean array that writes through.

    Args:
        buffer: a replay buffer with row-indexed ``terminated`` and ``truncated`` arrays and ``_per_env`` (the
            row-to-``[step, env]`` layout).
        kind: ``"dones"`` or ``"timeouts"``.

    It behaves as a read-only NumPy array for reading (indexing, ``np.asarray``, arithmetic, ``shape``, ``sum``
    ...); ``flags[index] = value`` updates the buffer's ``terminated`` / ``truncated`` (see the module notes).
    """

    def __init__(self, buffer: Any, kind: Literal["dones", "timeouts"]) -> None:
        if kind not in ("dones", "timeouts"):
            raise ValueError(f"kind must be 'dones' or 'timeouts', got {kind!r}")
        self._buffer = buffer
        self._kind = kind

    def _rows(self) -> np.ndarray:
        return self._buffer._per_env(np.arange(len(self._buffer.terminated)))

    def _values(self) -> np.ndarray:
        buffer = self._buffer
        flat = buffer.truncated if self._kind == "timeouts" else buffer.terminated | buffer.truncated
        return np.array(buffer._per_env(flat))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        values = self._values()
        return values if dtype is None else values.astype(dtype)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if any(isinstance(out, EpisodeFlags) for out in kwargs.get("out", ())):
            raise TypeError(f"buffer.{self._kind} cannot be an ufunc's out=; assign to buffer.{self._kind}[...]")
        inputs = tuple(np.asarray(x) if isinstance(x, EpisodeFlags) else x for x in inputs)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __getitem__(self, index: Any) -> Any:
        return self._values()[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        rows = np.asarray(self._rows()[index])
        new = np.broadcast_to(np.asarray(value).astype(bool), rows.shape).reshape(-1)
        rows = rows.reshape(-1)
        terminated, truncated = self._buffer.terminated, self._buffer.truncated
        if self._kind == "dones":
            terminated[rows] = new & ~truncated[rows]
        else:
            ended = terminated[rows] | truncated[rows]
            truncated[rows] = new
            terminated[rows] = ended & ~new

    def __len__(self) -> int:
        return len(self._values())

    def __iter__(self) -> Any:
        return iter(self._values())

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._values(), name)

    def __repr__(self) -> str:
        return f"EpisodeFlags({self._kind}, {self._values()!r})"

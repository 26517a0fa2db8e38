"""The uniform replay buffer.

Storage is preallocated float32 NumPy arrays (booleans for the two episode-end flags), one row per
transition, used as a ring. ``add`` writes the transitions of one vector-env step (one row per env
whose transition is valid) and ``sample`` draws uniform indices from the buffer's own seeded
generator; both are O(batch), independent of how full the buffer is.

Actions are stored in the policy's normalised units ([-1, 1]). ``terminated`` and ``truncated`` are
kept apart: the TD3 target bootstraps through a time-limit truncation and stops only at termination.
"""

from __future__ import annotations

import io
import json
import os
from typing import NamedTuple

import numpy as np
import torch
from gymnasium import spaces

from rlkit_td3.serialization import atomic_write


class ReplayBufferSamples(NamedTuple):
    """A batch of transitions as tensors on the buffer's device (rewards and flags have shape ``(B,)``)."""

    observations: torch.Tensor
    actions: torch.Tensor
    next_observations: torch.Tensor
    rewards: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor


def _flat_box_dim(space: spaces.Space, name: str) -> tuple[int, ...]:
    if not isinstance(space, spaces.Box):
        raise TypeError(f"{name} must be a gymnasium.spaces.Box, got {space!r}")
    return tuple(int(d) for d in space.shape)


class ReplayBuffer:
    """Uniform-sampling ring buffer of transitions.

    Args:
        buffer_size: capacity in transitions (over all envs together).
        observation_space: Box space of one env's observations.
        action_space: Box space of one env's actions (stored normalised to [-1, 1]).
        device: where sampled batches are put.
        n_envs: the number of envs feeding the buffer; ``add`` accepts up to this many rows.
        seed: seed of the buffer's own sampling generator.
    """

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        device: torch.device | str = "cpu",
        n_envs: int = 1,
        seed: int | None = None,
    ) -> None:
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, (int, np.integer)) or buffer_size < 1:
            raise ValueError(f"buffer_size must be a positive int, got {buffer_size!r}")
        if isinstance(n_envs, bool) or not isinstance(n_envs, int) or n_envs < 1:
            raise ValueError(f"n_envs must be a positive int, got {n_envs!r}")
        self.buffer_size = int(buffer_size)
        self.observation_space = observation_space
        self.action_space = action_space
        self.obs_shape = _flat_box_dim(observation_space, "observation_space")
        self.action_dim = int(np.prod(_flat_box_dim(action_space, "action_space")))
        self.device = torch.device(device)
        self.n_envs = n_envs
        self.pos = 0
        self.full = False
        self._rng = np.random.default_rng(seed)

        n = self.buffer_size
        self.observations = np.zeros((n, *self.obs_shape), dtype=np.float32)
        self.next_observations = np.zeros((n, *self.obs_shape), dtype=np.float32)
        self.actions = np.zeros((n, self.action_dim), dtype=np.float32)
        self.rewards = np.zeros(n, dtype=np.float32)
        self.terminated = np.zeros(n, dtype=bool)
        self.truncated = np.zeros(n, dtype=bool)

    # ------------------------------------------------------------------ size
    def size(self) -> int:
        """Number of transitions stored."""
        return self.buffer_size if self.full else self.pos

    def __len__(self) -> int:
        return self.size()

    @property
    def nbytes(self) -> int:
        """Bytes held by the preallocated storage."""
        return sum(a.nbytes for a in self._arrays().values())

    def _arrays(self) -> dict[str, np.ndarray]:
        return {
            "observations": self.observations,
            "next_observations": self.next_observations,
            "actions": self.actions,
            "rewards": self.rewards,
            "terminated": self.terminated,
            "truncated": self.truncated,
        }

    def seed(self, seed: int | None) -> None:
        """Re-seed the sampling generator."""
        self._rng = np.random.default_rng(seed)

    # ------------------------------------------------------------------ add / sample
    def add(
        self,
        obs: np.ndarray,
        next_obs: np.ndarray,
        action: np.ndarray,
        reward: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
    ) -> None:
        """Store ``k`` transitions (``1 <= k <= n_envs``), each argument with leading dimension ``k``.

        ``action`` is in normalised units; ``next_obs`` must be the true next observation (the final
        observation for an episode that ended, never the first observation of the next episode).
        """
        k = len(reward)
        if k == 0:
            return
        if k > self.n_envs:
            raise ValueError(f"add() got {k} transitions but the buffer was built for n_envs={self.n_envs}")
        end = self.pos + k
        if end <= self.buffer_size:
            idx: slice | np.ndarray = slice(self.pos, end)
        else:
            idx = np.arange(self.pos, end) % self.buffer_size
        self.observations[idx] = np.reshape(obs, (k, *self.obs_shape))
        self.next_observations[idx] = np.reshape(next_obs, (k, *self.obs_shape))
        self.actions[idx] = np.reshape(action, (k, self.action_dim))
        self.rewards[idx] = reward
        self.terminated[idx] = terminated
        self.truncated[idx] = truncated
        if end >= self.buffer_size:
            self.full = True
        self.pos = end % self.buffer_size

    def sample(self, batch_size: int) -> ReplayBufferSamples:
        """Draw ``batch_size`` transitions uniformly, with replacement.

        Raises:
            ValueError: the buffer is empty or ``batch_size`` is not positive.
        """
        size = self.size()
        if size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size!r}")
        idx = self._rng.integers(0, size, size=batch_size)
        return self._get_samples(idx)

    def _get_samples(self, idx: np.ndarray) -> ReplayBufferSamples:
        def to_tensor(array: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(array).to(self.device, non_blocking=True)

        return ReplayBufferSamples(
            observations=to_tensor(self.observations[idx]),
            actions=to_tensor(self.actions[idx]),
            next_observations=to_tensor(self.next_observations[idx]),
            rewards=to_tensor(self.rewards[idx]),
            terminated=to_tensor(self.terminated[idx].astype(np.float32)),
            truncated=to_tensor(self.truncated[idx].astype(np.float32)),
        )

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the filled part of the buffer, its position and its RNG state to an ``.npz`` file.

        The file is written atomically and holds no pickled objects.
        """
        size = self.size()
        meta = {
            "buffer_size": self.buffer_size,
            "pos": self.pos,
            "full": self.full,
            "size": size,
            "obs_shape": list(self.obs_shape),
            "action_dim": self.action_dim,
            "rng_state": self._rng.bit_generator.state,
        }
        arrays = {name: array[:size] for name, array in self._arrays().items()}
        buf = io.BytesIO()
        np.savez(buf, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
        with atomic_write(path) as fh:
            fh.write(buf.getvalue())

    def load(self, path: str | os.PathLike[str]) -> None:
        """Restore a buffer written by :meth:`save` into this buffer (same shapes, same capacity or larger).

        Raises:
            ValueError: the file does not match this buffer's shapes or does not fit.
        """
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(bytes(data["meta"]).decode())
            if tuple(meta["obs_shape"]) != self.obs_shape or meta["action_dim"] != self.action_dim:
                raise ValueError(
                    f"replay buffer file has obs shape {tuple(meta['obs_shape'])} and action dim "
                    f"{meta['action_dim']}, this buffer has {self.obs_shape} and {self.action_dim}"
                )
            size = int(meta["size"])
            if size > self.buffer_size or (meta["full"] and meta["buffer_size"] != self.buffer_size):
                raise ValueError(
                    f"replay buffer file holds {size} transitions of a buffer of {meta['buffer_size']}; "
                    f"this buffer has buffer_size={self.buffer_size}"
                )
            for name, array in self._arrays().items():
                array[:size] = data[name]
        self.pos = int(meta["pos"])
        self.full = bool(meta["full"])
        rng = np.random.default_rng()
        rng.bit_generator.state = meta["rng_state"]
        self._rng = rng

    def __repr__(self) -> str:
        return f"ReplayBuffer(size={self.size()}, buffer_size={self.buffer_size}, n_envs={self.n_envs})"

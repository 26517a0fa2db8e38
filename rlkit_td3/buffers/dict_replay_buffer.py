"""The replay buffer for Dict observations (goal-conditioned envs, several sensors).

Each key of the observation space gets its own preallocated arrays (observation and next observation), with
the key's shape. Floating-point keys are stored as float32 (what the networks compute in); integer keys (uint8
images) keep their dtype, so an image costs one byte per pixel. Actions, rewards and the two episode-end flags
are stored as in `ReplayBuffer`: actions normalised to [-1, 1], ``terminated`` and ``truncated`` apart.

The layout is the uniform buffer's: one row per transition, used as a ring over all envs together. The
memory-optimised layout (``optimize_memory_usage=True``) is not available for Dict observations (neither is it
in Stable-Baselines3): the constructor says so.
"""

from __future__ import annotations

import os
from typing import IO, Any, NamedTuple

import numpy as np
import torch
from gymnasium import spaces

from rlkit_td3.buffers.replay_buffer import (
    ReplayBuffer,
    check_buffer_meta,
    normalize_samples,
    sb3_episode_flags,
    timeouts_as_terminations,
)
from rlkit_td3.checks.arguments import check_bool
from rlkit_td3.checks.state import MAX_BUFFER_META_BYTES, run_id_meta
from rlkit_td3.fileio.file_reader import ZipReader, parse_json, read_npy_member
from rlkit_td3.fileio.serialization import ModelFileError, atomic_write
from rlkit_td3.preprocessing import check_dict_space
from rlkit_td3.utils import get_device


class DictReplayBufferSamples(NamedTuple):
    """A batch of transitions; ``observations`` and ``next_observations`` map each key to a ``(B, *shape)``
    tensor (rewards and flags have shape ``(B,)``)."""

    observations: dict[str, torch.Tensor]
    actions: torch.Tensor
    next_observations: dict[str, torch.Tensor]
    rewards: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor

    @property
    def dones(self) -> torch.Tensor:
        """SB3's ``dones`` of a sample: 1 where the transition terminated (a time-limit truncation is 0)."""
        return self.terminated


class DictReplayBuffer(ReplayBuffer):
    """Uniform-sampling ring buffer of transitions with Dict observations.

    Same interface as `ReplayBuffer` (``add``, ``sample``, ``size``, ``save``, ``load``, ``to_bytes``,
    ``seed``), except that observations are dicts of arrays: ``add`` takes ``{key: (k, *shape)}`` for ``obs``
    and ``next_obs`` and ``sample`` returns a `DictReplayBufferSamples`.

    Args:
        buffer_size: capacity in transitions (over all envs together).
        observation_space: a ``gymnasium.spaces.Dict`` of Box spaces.
        action_space: Box space of one env's actions (stored normalised to [-1, 1]).
        device: where sampled batches are put.
        n_envs: the number of envs feeding the buffer; ``add`` accepts up to this many rows.
        seed: seed of the buffer's own sampling generator.
        optimize_memory_usage: must be False (not available for Dict observations).
        handle_timeout_termination: as in `ReplayBuffer`.
    """

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        device: torch.device | str = "cpu",
        n_envs: int = 1,
        seed: int | None = None,
        optimize_memory_usage: bool = False,
        handle_timeout_termination: bool = True,
    ) -> None:
        self.handle_timeout_termination = check_bool("handle_timeout_termination", handle_timeout_termination)
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, (int, np.integer)) or buffer_size < 1:
            raise ValueError(f"buffer_size must be a positive int, got {buffer_size!r}")
        if isinstance(n_envs, (bool, np.bool_)) or not isinstance(n_envs, (int, np.integer)) or n_envs < 1:
            raise ValueError(f"n_envs must be a positive int, got {n_envs!r}")
        check_bool("optimize_memory_usage", optimize_memory_usage)
        if optimize_memory_usage:
            raise ValueError(
                f"optimize_memory_usage=True is not available with Dict observations ({type(self).__name__}); "
                "use optimize_memory_usage=False"
            )
        self.buffer_size = int(buffer_size)
        self.n_envs = int(n_envs)
        self.observation_space = observation_space
        self.action_space = action_space
        self.obs_layout = check_dict_space(observation_space)
        self.obs_shape = {key: shape for key, (shape, _) in self.obs_layout.items()}
        if not isinstance(action_space, spaces.Box):
            raise TypeError(f"action_space must be a gymnasium.spaces.Box, got {action_space!r}")
        self.action_dim = int(np.prod(action_space.shape))
        self.device = get_device(device)
        self.optimize_memory_usage = False
        self.pos = 0
        self.full = False
        self._rng = np.random.default_rng(seed)

        n = self._n_rows()
        self.observations = {key: np.zeros((n, *shape), dtype=dtype) for key, (shape, dtype) in self.obs_layout.items()}
        self.next_observations = {
            key: np.zeros((n, *shape), dtype=dtype) for key, (shape, dtype) in self.obs_layout.items()
        }
        self.actions = np.zeros((n, self.action_dim), dtype=np.float32)
        self.rewards = np.zeros(n, dtype=np.float32)
        self.terminated = np.zeros(n, dtype=bool)
        self.truncated = np.zeros(n, dtype=bool)

    def _n_rows(self) -> int:
        return self.buffer_size

    # ------------------------------------------------------------------ size
    def size(self) -> int:
        """Number of transitions stored."""
        return self.buffer_size if self.full else self.pos

    @property
    def nbytes(self) -> int:
        """Bytes held by the storage."""
        return sum(a.nbytes for a in self._arrays().values())

    def _arrays(self) -> dict[str, np.ndarray]:
        """Every stored array by its file member name (observation keys by position: ``observations.0``...)."""
        arrays = {}
        for i, key in enumerate(self.obs_layout):
            arrays[f"observations.{i}"] = self.observations[key]
            arrays[f"next_observations.{i}"] = self.next_observations[key]
        arrays.update(actions=self.actions, rewards=self.rewards, terminated=self.terminated, truncated=self.truncated)
        return arrays

    # ------------------------------------------------------------------ add / sample
    def _obs_rows(self, obs: dict[str, np.ndarray], k: int, name: str) -> dict[str, np.ndarray]:
        if not isinstance(obs, dict) or set(obs) != set(self.obs_layout):
            got = sorted(obs) if isinstance(obs, dict) else type(obs).__name__
            raise ValueError(f"{name} must be a dict with keys {sorted(self.obs_layout)}, got {got}")
        return {key: np.reshape(obs[key], (k, *shape)) for key, (shape, _) in self.obs_layout.items()}

    def _write(
        self,
        rows: slice | np.ndarray,
        obs: dict[str, np.ndarray],
        next_obs: dict[str, np.ndarray],
        action: np.ndarray,
        reward: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        k: int,
    ) -> None:
        """Write ``k`` rows (``obs`` and ``next_obs`` already shaped by `_obs_rows()`)."""
        for key in self.obs_layout:
            self.observations[key][rows] = obs[key]
            self.next_observations[key][rows] = next_obs[key]
        self.actions[rows] = np.reshape(action, (k, self.action_dim))
        self.rewards[rows] = np.reshape(reward, k)
        self.terminated[rows] = np.reshape(terminated, k)
        self.truncated[rows] = np.reshape(truncated, k)

    def add(
        self,
        obs: dict[str, np.ndarray],
        next_obs: dict[str, np.ndarray],
        action: np.ndarray,
        reward: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray | list[dict[str, Any]],
        env_indices: np.ndarray | None = None,
    ) -> None:
        """Store ``k`` transitions (``1 <= k <= n_envs``); ``obs`` and ``next_obs`` map each key to a
        ``(k, *shape)`` array, the other arguments have leading dimension ``k``.

        ``next_obs`` must be the true next observation (the final observation of an episode that ended).
        ``env_indices`` (which env each row comes from) is accepted for `ReplayBuffer`'s interface and unused.
        Stable-Baselines3's ``add(obs, next_obs, action, reward, done, infos)`` is understood as in `ReplayBuffer`.
        """
        k = len(reward)
        if k == 0:
            return
        if isinstance(truncated, (list, tuple, dict)):
            terminated, truncated = sb3_episode_flags(terminated, truncated, k)
        if not self.handle_timeout_termination:
            terminated, truncated = timeouts_as_terminations(terminated, truncated, k)
        if k > self.n_envs:
            raise ValueError(f"add() got {k} transitions but the buffer was built for n_envs={self.n_envs}")
        end = self.pos + k
        rows: slice | np.ndarray = slice(self.pos, end) if end <= self.buffer_size else np.arange(self.pos, end)
        if isinstance(rows, np.ndarray):
            rows %= self.buffer_size
        obs, next_obs = self._obs_rows(obs, k, "obs"), self._obs_rows(next_obs, k, "next_obs")
        self._write(rows, obs, next_obs, action, reward, terminated, truncated, k)
        if end >= self.buffer_size:
            self.full = True
        self.pos = end % self.buffer_size

    def sample(self, batch_size: int, env: Any = None) -> DictReplayBufferSamples:  # type: ignore[override]
        """Draw ``batch_size`` transitions uniformly, with replacement; ``env`` (a `VecNormalize`) normalises
        the batch as in `ReplayBuffer.sample`.

        Raises:
            ValueError: the buffer is empty or ``batch_size`` is not positive.
        """
        if env is not None:
            return normalize_samples(self.sample(batch_size), env)
        size = self.size()
        if size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size!r}")
        return self._get_samples(self._rng.integers(0, size, size=batch_size))

    def _to_tensor(self, array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array)).to(self.device, non_blocking=True)

    def _get_samples(self, rows: np.ndarray) -> DictReplayBufferSamples:  # type: ignore[override]
        return DictReplayBufferSamples(
            observations={key: self._to_tensor(array[rows]) for key, array in self.observations.items()},
            actions=self._to_tensor(self.actions[rows]),
            next_observations={key: self._to_tensor(array[rows]) for key, array in self.next_observations.items()},
            rewards=self._to_tensor(self.rewards[rows]),
            terminated=self._to_tensor(self.terminated[rows].astype(np.float32)),
            truncated=self._to_tensor(self.truncated[rows].astype(np.float32)),
        )

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the filled part of the buffer, its position and its RNG state to an ``.npz`` file.

        The file is written atomically and holds no pickled objects.
        """
        data = self.to_bytes()
        with atomic_write(path) as fh:
            fh.write(data)

    def _meta(self) -> dict:
        return {
            "buffer_size": self.buffer_size,
            "pos": self.pos,
            "full": self.full,
            "size": self.size(),
            "obs_shape": {key: list(shape) for key, shape in self.obs_shape.items()},
            "obs_dtype": {key: dtype.str for key, (_, dtype) in self.obs_layout.items()},
            "action_dim": self.action_dim,
            "rng_state": self._rng.bit_generator.state,
            "optimize_memory_usage": False,
            "n_envs": self.n_envs,
            **run_id_meta(self.run_id),
        }

    def _saved_rows(self) -> np.ndarray | slice:
        return slice(0, self.size())

    def _extra_arrays(self) -> dict[str, np.ndarray]:
        return {}

    def _state_members(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The header and arrays of `to_bytes()` / `state_dict()`: the filled rows of every array, positions,
        sampler state."""
        rows = self._saved_rows()
        arrays = {name: array[rows] for name, array in self._arrays().items()}
        arrays.update(self._extra_arrays())
        return self._meta(), arrays

    def load(self, path: str | os.PathLike[str] | IO[bytes]) -> None:
        """Restore a buffer written by `save()` into this buffer (same keys, shapes and dtypes).

        ``path`` may also be a binary file object. Every member is checked (dtype, shape, finite values,
        positions within capacity) before anything in this buffer changes.

        Raises:
            ModelFileError: (a ``ValueError``) the file is malformed or does not match this buffer.
        """
        try:
            with ZipReader(path, "replay buffer file") as archive:
                self._load_checked(archive)
        except (ModelFileError, FileNotFoundError):
            raise
        except Exception as exc:  # noqa: BLE001  (anything that fails while parsing untrusted bytes)
            raise ModelFileError(f"unreadable replay buffer file ({type(exc).__name__}: {exc})") from exc

    def _allowed_members(self) -> set[str]:
        return {"meta.npy", *(f"{name}.npy" for name in self._arrays())}

    def _load_checked(self, archive: ZipReader) -> None:
        names = set(archive.namelist())
        allowed = self._allowed_members()
        if not names <= allowed:
            raise ModelFileError(f"the replay buffer file has unexpected entries {sorted(names - allowed)}")
        raw = read_npy_member(archive, "meta", np.uint8, None, max_items=MAX_BUFFER_META_BYTES)
        meta = check_buffer_meta(
            parse_json(raw.tobytes(), "replay buffer meta", MAX_BUFFER_META_BYTES),
            obs_shape=self.obs_shape,
            action_dim=self.action_dim,
            n_envs=self.n_envs,
            optimize_memory_usage=False,
        )
        check_dict_obs_dtypes(meta, {key: dtype.str for key, (_, dtype) in self.obs_layout.items()})
        rows, restore = self._check_positions(meta, archive)
        count = len(range(self._n_rows())[rows]) if isinstance(rows, slice) else len(rows)
        arrays = {
            name: read_npy_member(archive, name, array.dtype, (count, *array.shape[1:]))
            for name, array in self._arrays().items()
        }
        for name, array in self._arrays().items():
            array[rows] = arrays[name]
        restore()
        rng = np.random.default_rng()
        rng.bit_generator.state = meta["rng_state"]
        self._rng = rng
        self.file_run_id = meta.get("run_id")

    def _check_positions(self, meta: dict, archive: ZipReader):  # noqa: ANN202
        """The rows the file fills and a function that restores the positions (called once the rows are in)."""
        size, pos, full = meta["size"], meta["pos"], meta["full"]
        if size > self.buffer_size or (full and meta["buffer_size"] != self.buffer_size):
            raise ModelFileError(
                f"replay buffer file holds {size} transitions of a buffer of {meta['buffer_size']}; "
                f"this buffer has buffer_size={self.buffer_size}"
            )
        if size != (meta["buffer_size"] if full else pos):
            raise ModelFileError(
                f"replay buffer file is inconsistent: size={size}, pos={pos}, full={full}, "
                f"buffer_size={meta['buffer_size']}"
            )

        def restore() -> None:
            self.full = full or size == self.buffer_size
            self.pos = pos if full else size % self.buffer_size

        return slice(0, size), restore

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(size={self.size()}, buffer_size={self.buffer_size}, n_envs={self.n_envs}, "
            f"keys={list(self.obs_layout)})"
        )


def check_dict_obs_dtypes(meta: dict[str, Any], dtypes: dict[str, str]) -> None:
    """The per-key storage dtypes of a Dict-observation buffer file (``obs_dtype``, NumPy dtype strings) must be
    the buffer's, key for key and in order."""
    file_dtypes = meta.get("obs_dtype")
    if not isinstance(file_dtypes, dict) or list(file_dtypes.items()) != list(dtypes.items()):
        raise ModelFileError(
            f"replay buffer file has observation dtypes {str(file_dtypes)[:200]}, this buffer has {dtypes}"
        )

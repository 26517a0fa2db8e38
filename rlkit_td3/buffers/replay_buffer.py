"""The uniform replay buffer.

Storage is preallocated float32 NumPy arrays (uint8 for image observations, booleans for the two
episode-end flags), one row per transition, used as a ring. ``add`` writes the transitions of one
vector-env step (one row per env whose transition is valid) and ``sample`` draws uniform indices from
the buffer's own seeded generator; both are O(batch), independent of how full the buffer is.

Actions are stored in the policy's normalised units ([-1, 1]). ``terminated`` and ``truncated`` are
kept apart: the TD3 target bootstraps through a time-limit truncation and stops only at termination.

With ``optimize_memory_usage=True`` each observation is stored once: every env gets its own ring of
``buffer_size // n_envs`` rows, and the next observation of a transition is the observation of the next row
of the same env. Where that is not the true next observation (the transition ended an episode, whatever the
reason, or the caller's data jumps), the true one is kept in a small side table, so terminations and
truncations are handled exactly. One row per env holds the newest next observation instead of a transition,
so the capacity is ``n_envs * (buffer_size // n_envs - 1)`` transitions. (Stable-Baselines3 refuses this
option together with time-limit handling, SB3#934.)
"""

from __future__ import annotations

import copy
import io
import json
import os
from typing import IO, Any, NamedTuple

import numpy as np
import torch
from gymnasium import spaces

from rlkit_td3.buffers.episode_flags import EpisodeFlags
from rlkit_td3.checks.arguments import check_bool
from rlkit_td3.checks.state import (  # check_buffer_meta, check_buffer_rings: also importable from here
    MAX_BUFFER_META_BYTES,
    check_allocation,
    check_buffer_meta,
    check_buffer_rings,
    run_id_meta,
)
from rlkit_td3.fileio.file_reader import ZipReader, parse_json, read_npy_member
from rlkit_td3.fileio.serialization import ModelFileError, atomic_write
from rlkit_td3.preprocessing import OBSERVATION_SPACES, flat_obs_dim, get_obs_shape, is_image_space
from rlkit_td3.utils import get_device


class ReplayBufferSamples(NamedTuple):
    """A batch of transitions as tensors on the buffer's device (rewards and flags have shape ``(B,)``).

    ``dones`` (Stable-Baselines3's name) is ``terminated``: the flag that stops the bootstrap.
    """

    observations: torch.Tensor
    actions: torch.Tensor
    next_observations: torch.Tensor
    rewards: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor

    @property
    def dones(self) -> torch.Tensor:
        """SB3's ``dones`` of a sample: 1 where the transition terminated (a time-limit truncation is 0)."""
        return self.terminated


def episode_flag_array(name: str, values: Any, k: int) -> np.ndarray:
    """``values`` as ``k`` episode flags: booleans (Python's or NumPy's) or the numbers 0 and 1; anything else
    (the string ``"False"``, ``None``, ``0.5``) is refused, as Stable-Baselines3's buffers refuse it.

    Raises:
        ValueError: a value that is not a flag, or not ``k`` of them.
    """
    array = np.asarray(values)
    if array.dtype != bool:
        numeric = array.dtype.kind in "iuf" and array.size and np.all((array == 0) | (array == 1))
        if not (numeric or (array.dtype.kind in "iuf" and not array.size)):
            raise ValueError(
                f"{name} must be booleans (or the numbers 0 and 1), got {values!r:.200} of dtype {array.dtype}"
            )
    if array.size != k:
        raise ValueError(f"{name} must hold one flag per transition ({k}), got {array.size}")
    return array.reshape(k).astype(bool)


def sb3_episode_flags(done: Any, infos: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(terminated, truncated)`` from Stable-Baselines3's ``add(..., done, infos)`` arguments.

    ``infos`` is one info dict per row; ``infos[i]["TimeLimit.truncated"]`` marks a time-limit truncation
    (SB3's VecEnvs set it on the step that ends an episode by its time limit; SB3's buffer stores it as
    ``timeouts`` whatever ``done`` says), any other ``done`` is a termination. Every flag (``done``, the infos'
    ``"TimeLimit.truncated"``) must be a boolean or the number 0 or 1 (`episode_flag_array`).

    Raises:
        TypeError: ``infos`` is a dict (a gymnasium vector env's infos) or mixes dicts and flags.
        ValueError: ``infos`` does not hold one dict per row, or a flag is not a boolean (``"False"``).
    """
    if isinstance(infos, dict):
        raise TypeError(
            "add() got a dict as its 6th argument: pass truncated flags (terminated, truncated), or "
            "Stable-Baselines3's (done, infos) with infos a list of one info dict per env"
        )
    if not all(isinstance(info, dict) for info in infos):
        if any(isinstance(info, dict) for info in infos):
            raise TypeError(f"infos must be a list of {k} dicts (SB3's add(..., done, infos)), got {infos!r}")
        return episode_flag_array("terminated", done, k), episode_flag_array("truncated", infos, k)
    if len(infos) != k:
        raise ValueError(f"infos must hold one dict per transition ({k}), got {len(infos)}")
    done = episode_flag_array("done", done, k)
    timeout = episode_flag_array(
        'infos[i]["TimeLimit.truncated"]', [info.get("TimeLimit.truncated", False) for info in infos], k
    )
    return done & ~timeout, timeout


def timeouts_as_terminations(terminated: Any, truncated: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(terminated | truncated, all False)``: how a buffer built with ``handle_timeout_termination=False``
    stores episode ends (SB3's switch): a time-limit truncation becomes a termination, so the learner does not
    bootstrap past it."""
    ended = np.asarray(terminated).reshape(k).astype(bool) | np.asarray(truncated).reshape(k).astype(bool)
    return ended, np.zeros(k, dtype=bool)


def normalize_samples(samples: Any, env: Any) -> Any:
    """``samples`` with observations and rewards passed through ``env.normalize_obs`` / ``env.normalize_reward``
    (a `VecNormalize`), as Stable-Baselines3's ``sample(batch_size, env)`` does; unchanged for ``env=None``."""
    if env is None:
        return samples

    def tensor(array: Any, like: torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(np.asarray(array, dtype=np.float32)).to(like.device)

    def obs(value: Any) -> Any:
        if isinstance(value, dict):
            normalized = env.normalize_obs({key: item.cpu().numpy() for key, item in value.items()})
            return {key: tensor(normalized[key], value[key]) for key in value}
        return tensor(env.normalize_obs(value.cpu().numpy()), value)

    return samples._replace(
        observations=obs(samples.observations),
        next_observations=obs(samples.next_observations),
        rewards=tensor(env.normalize_reward(samples.rewards.cpu().numpy()), samples.rewards),
    )


def _flat_box_dim(space: spaces.Space, name: str) -> tuple[int, ...]:
    if not isinstance(space, spaces.Box):
        raise TypeError(f"{name} must be a gymnasium.spaces.Box, got {space!r}")
    return tuple(int(d) for d in space.shape)


class ReplayBuffer:
    """Uniform-sampling ring buffer of transitions.

    Args:
        buffer_size: capacity in transitions (over all envs together).
        observation_space: one env's observation space (Box, Discrete, MultiDiscrete or MultiBinary).
        action_space: Box space of one env's actions (stored normalised to [-1, 1]).
        device: where sampled batches are put (``"auto"``: CUDA when available).
        n_envs: the number of envs feeding the buffer; ``add`` accepts up to this many rows.
        seed: seed of the buffer's own sampling generator.
        optimize_memory_usage: store each observation once (no ``next_observations`` array); about half the
            memory for observation-dominated data. Sampled batches are the same transitions.
        handle_timeout_termination: keep time-limit truncations apart from terminations (the default, as SB3's);
            ``False`` stores a truncated transition as terminal (`timeouts_as_terminations`).

    ``add`` also takes Stable-Baselines3's arguments, ``add(obs, next_obs, action, reward, done, infos)``
    (see `sb3_episode_flags`), and ``sample(batch_size, env)`` normalises with a `VecNormalize` as SB3 does.
    """

    run_id: str | None = None
    """The run whose buffer this is (the owning model's ``run_id``, which the model sets), written into the file's
    header; ``None`` (a buffer of no model): its files carry no run id."""
    file_run_id: str | None = None
    """The run id of the file `load()` last read (``None`` for a file without one: older files)."""

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
        n_envs = int(n_envs)
        self.buffer_size = int(buffer_size)
        self.observation_space = observation_space
        self.action_space = action_space
        if not isinstance(observation_space, OBSERVATION_SPACES):
            raise TypeError(
                "observation_space must be a gymnasium.spaces.Box, Discrete, MultiDiscrete or MultiBinary, got "
                f"{observation_space!r}"
            )
        self.obs_shape = tuple(int(d) for d in get_obs_shape(observation_space))  # (1,) for Discrete, as SB3
        self.action_dim = int(np.prod(_flat_box_dim(action_space, "action_space")))
        self.device = get_device(device)
        self.n_envs = n_envs
        check_bool("optimize_memory_usage", optimize_memory_usage)
        self.optimize_memory_usage = bool(optimize_memory_usage)
        self.pos = 0
        self.full = False
        self._rng = np.random.default_rng(seed)

        n = self.buffer_size
        try:
            type(self).check_memory(n, observation_space, action_space, self.optimize_memory_usage)
        except ModelFileError as exc:  # the caller's argument: a ValueError naming it, not a file's error
            raise ValueError(f"buffer_size={n} does not fit in this machine's memory: {exc}") from None
        if optimize_memory_usage:
            self._n_slots = n // n_envs
            if self._n_slots < 2:
                raise ValueError(
                    f"buffer_size must be >= 2 * n_envs ({2 * n_envs}) with optimize_memory_usage=True, got {n}"
                )
            n = self._n_slots * n_envs
            self._env_pos = np.zeros(n_envs, dtype=np.int64)
            self._env_full = np.zeros(n_envs, dtype=bool)
            self._env_has_next = np.zeros(n_envs, dtype=bool)
            self._final_obs: dict[int, np.ndarray] = {}  # row -> its true next observation
        # Images (uint8 Box spaces, see rlkit_td3.preprocessing.is_image_space) are stored as uint8, a quarter
        # of float32's bytes; every other observation as float32. Sampled batches are float32 either way.
        self.obs_dtype = np.dtype(np.uint8) if is_image_space(observation_space) else np.dtype(np.float32)
        self.observations = np.zeros((n, *self.obs_shape), dtype=self.obs_dtype)
        self.next_observations: np.ndarray | None = (
            None if optimize_memory_usage else np.zeros((n, *self.obs_shape), dtype=self.obs_dtype)
        )
        self.actions = np.zeros((n, self.action_dim), dtype=np.float32)
        self.rewards = np.zeros(n, dtype=np.float32)
        self.terminated = np.zeros(n, dtype=bool)
        self.truncated = np.zeros(n, dtype=bool)

    # ------------------------------------------------------------------ size
    def size(self) -> int:
        """Number of transitions stored."""
        if self.optimize_memory_usage:
            return int(self._env_sizes().sum())
        return self.buffer_size if self.full else self.pos

    def _env_sizes(self) -> np.ndarray:
        # Optimized layout: while an env's ring is not full its transitions are rows [0, pos); once full,
        # every row but ``pos`` (which holds the newest next observation).
        return np.where(self._env_full, self._n_slots - 1, self._env_pos)

    def __len__(self) -> int:
        return self.size()

    @property
    def nbytes(self) -> int:
        """Bytes held by the storage (with ``optimize_memory_usage``, the side table's entries included)."""
        total = sum(a.nbytes for a in self._arrays().values())
        if self.optimize_memory_usage:
            total += sum(a.nbytes for a in self._final_obs.values())
        return total

    def _arrays(self) -> dict[str, np.ndarray]:
        arrays = {
            "observations": self.observations,
            "next_observations": self.next_observations,
            "actions": self.actions,
            "rewards": self.rewards,
            "terminated": self.terminated,
            "truncated": self.truncated,
        }
        return {name: array for name, array in arrays.items() if array is not None}

    def _per_env(self, flat: np.ndarray) -> np.ndarray:
        """A row-indexed array as Stable-Baselines3 lays it out, ``[step, env]`` (``buffer_size // n_envs``
        steps); with ``n_envs=1``, ``[row, 0]``."""
        if self.optimize_memory_usage:
            return flat.reshape(self.n_envs, -1).T
        rows = len(flat) // self.n_envs * self.n_envs
        return flat[:rows].reshape(-1, self.n_envs)

    @property
    def dones(self) -> EpisodeFlags:
        """SB3's stored ``dones`` (episode ended, either way) in SB3's ``[step, env]`` layout: reads give
        ``terminated | truncated``; ``buffer.dones[i] = flag`` writes through with SB3's meaning
        (`rlkit_td3.buffers.episode_flags`)."""
        return EpisodeFlags(self, "dones")

    @property
    def timeouts(self) -> EpisodeFlags:
        """SB3's stored ``timeouts`` (episode cut by a time limit) in SB3's ``[step, env]`` layout: reads give
        ``truncated``; ``buffer.timeouts[i] = flag`` writes through (`rlkit_td3.buffers.episode_flags`)."""
        return EpisodeFlags(self, "timeouts")

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
        truncated: np.ndarray | list[dict[str, Any]],
        env_indices: np.ndarray | None = None,
    ) -> None:
        """Store ``k`` transitions (``1 <= k <= n_envs``), each argument with leading dimension ``k``.

        ``action`` is in normalised units; ``next_obs`` must be the true next observation (the final
        observation for an episode that ended, never the first observation of the next episode).
        ``env_indices`` says which env each row comes from (default ``0 .. k-1``); only the
        memory-optimized layout uses it.

        Stable-Baselines3's call ``add(obs, next_obs, action, reward, done, infos)`` is understood too: when
        the 6th argument is a list of info dicts, ``done`` is split by ``infos[i]["TimeLimit.truncated"]``
        (`sb3_episode_flags`).
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
        if self.optimize_memory_usage:
            self._add_per_env(obs, next_obs, action, reward, terminated, truncated, env_indices, k)
            return
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

    def extend(self, *args: Any, **kwargs: Any) -> None:
        """Store many steps at once (SB3's ``extend``): each argument of `add()` with one more leading dimension,
        the steps, and `add()` called for each step in order (e.g. ``extend(obs, next_obs, actions, rewards, dones,
        infos)`` with ``infos[t]`` the list of info dicts of step ``t``). A step whose reward is a scalar is one
        transition (e.g. rows of this buffer's own arrays).

        Raises:
            ValueError: the arguments do not hold the same number of steps.
        """
        names = list(kwargs)
        columns = [*args, *kwargs.values()]
        steps = {len(column) for column in columns}
        if len(steps) > 1:
            raise ValueError(f"extend() needs the same number of steps in every argument, got lengths {sorted(steps)}")
        for row in zip(*columns):
            step = list(row)
            reward = step[3] if len(args) > 3 else dict(zip(names, row[len(args) :])).get("reward")
            if np.ndim(reward) == 0:  # one transition per step (the buffer's own flat arrays): a batch of one
                step = [value if isinstance(value, (list, tuple)) else np.asarray(value)[None] for value in step]
            self.add(*step[: len(args)], **dict(zip(names, step[len(args) :])))

    def _add_per_env(
        self,
        obs: np.ndarray,
        next_obs: np.ndarray,
        action: np.ndarray,
        reward: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        env_indices: np.ndarray | None,
        k: int,
    ) -> None:
        envs = range(k) if env_indices is None else [int(e) for e in np.asarray(env_indices).reshape(k)]
        obs = np.reshape(obs, (k, *self.obs_shape))
        next_obs = np.reshape(next_obs, (k, *self.obs_shape))
        action = np.reshape(action, (k, self.action_dim))
        reward, terminated, truncated = np.reshape(reward, k), np.reshape(terminated, k), np.reshape(truncated, k)
        slots, table = self._n_slots, self._final_obs
        for i, env in enumerate(envs):
            if not 0 <= env < self.n_envs:
                raise ValueError(f"env_indices must be in [0, {self.n_envs}), got {env}")
            pos = int(self._env_pos[env])
            row = env * slots + pos
            # This row holds the next observation of the env's previous transition. If the new transition
            # does not start from it (an episode ended, or the data jumps), keep it in the side table.
            if self._env_has_next[env]:
                prev = env * slots + (pos - 1) % slots
                if prev not in table and not np.array_equal(self.observations[row], obs[i]):
                    table[prev] = self.observations[row].copy()
            table.pop(row, None)
            self.observations[row] = obs[i]
            self.actions[row] = action[i]
            self.rewards[row] = reward[i]
            self.terminated[row] = terminated[i]
            self.truncated[row] = truncated[i]
            # The next row receives this transition's next observation; when the ring is full it held the
            # oldest transition, which is dropped.
            nxt = env * slots + (pos + 1) % slots
            table.pop(nxt, None)
            self.observations[nxt] = next_obs[i]
            self._env_has_next[env] = True
            if pos + 1 == slots:
                self._env_full[env] = True
            self._env_pos[env] = (pos + 1) % slots
        self.full = bool(self._env_full.all())

    def sample(self, batch_size: int, env: Any = None) -> ReplayBufferSamples:
        """Draw ``batch_size`` transitions uniformly, with replacement (``batch_size`` may exceed the number
        stored, as in Stable-Baselines3).

        ``env``: a `VecNormalize` whose ``normalize_obs`` / ``normalize_reward`` are applied to the batch
        (SB3's signature); ``None`` returns the stored values.

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
        return self._get_samples(self._uniform_rows(size, batch_size))

    def _uniform_rows(self, size: int, batch_size: int) -> np.ndarray:
        """``batch_size`` rows drawn uniformly, with replacement, from the ``size`` stored transitions."""
        idx = self._rng.integers(0, size, size=batch_size)
        if self.optimize_memory_usage:
            idx = self._rows_of(idx)
        return idx

    def _rows_of(self, draws: np.ndarray) -> np.ndarray:
        """Map uniform draws in ``[0, size)`` to rows of the per-env rings (optimized layout)."""
        sizes = self._env_sizes()
        ends = np.cumsum(sizes)
        env = np.searchsorted(ends, draws, side="right")
        offset = draws - (ends[env] - sizes[env])
        slot = np.where(self._env_full[env], (self._env_pos[env] + 1 + offset) % self._n_slots, offset)
        return env * self._n_slots + slot

    def _next_observations_of(self, rows: np.ndarray) -> np.ndarray:
        if not self.optimize_memory_usage:
            return self.next_observations[rows]
        slots = self._n_slots
        next_obs = self.observations[rows - rows % slots + (rows % slots + 1) % slots]
        table = self._final_obs
        if table:
            for i, row in enumerate(rows.tolist()):
                final = table.get(row)
                if final is not None:
                    next_obs[i] = final
        return next_obs

    def _to_tensor(self, array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(array).to(self.device, non_blocking=True)

    def _obs_tensor(self, array: np.ndarray) -> torch.Tensor:
        """Observations as float32 tensors (uint8 images travel to the device as uint8, then become float32)."""
        return self._to_tensor(array).float()

    def _get_samples(self, idx: np.ndarray) -> ReplayBufferSamples:
        to_tensor, obs_tensor = self._to_tensor, self._obs_tensor
        return ReplayBufferSamples(
            observations=obs_tensor(self.observations[idx]),
            actions=to_tensor(self.actions[idx]),
            next_observations=obs_tensor(self._next_observations_of(idx)),
            rewards=to_tensor(self.rewards[idx]),
            terminated=to_tensor(self.terminated[idx].astype(np.float32)),
            truncated=to_tensor(self.truncated[idx].astype(np.float32)),
        )

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the filled part of the buffer, its position and its RNG state to an ``.npz`` file.

        The file is written atomically and holds no pickled objects.
        """
        data = self.to_bytes()
        with atomic_write(path) as fh:
            fh.write(data)

    def to_bytes(self) -> bytes:
        """The ``.npz`` content `save()` writes: the JSON header as ``meta.npy`` and one member per array of
        `state_dict()` (the filled part, positions, sampler state)."""
        meta, arrays = self._state_members()
        buf = io.BytesIO()
        np.savez(buf, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
        return buf.getvalue()

    @classmethod
    def check_memory(
        cls, buffer_size: int, observation_space: spaces.Space, action_space: spaces.Space, optimize_memory_usage: bool
    ) -> None:
        """Refuse (`rlkit_td3.checks.state.check_allocation`) a buffer of ``buffer_size`` transitions that this machine
        could not hold, before allocating it (loading a model file whose ``buffer_size`` was forged)."""
        obs_dim, act_dim = flat_obs_dim(observation_space), int(np.prod(action_space.shape))
        per_row = 4 * (obs_dim * (1 if optimize_memory_usage else 2) + act_dim + 1) + 2
        check_allocation(
            f"a replay buffer of {buffer_size} transitions (pass a smaller buffer_size= to load() to build "
            "a smaller one)",
            buffer_size * per_row,
        )

    # the component state protocol (see the Architecture page of the docs)
    def state_dict(self) -> dict[str, Any]:
        """The buffer's content: ``{"meta": <JSON header>, "arrays": {name: array}}`` (copies), what `to_bytes()`
        writes. Every buffer kind (uniform, Dict, n-step, prioritized, HER) has it."""
        meta, arrays = self._state_members()
        return {"meta": copy.deepcopy(meta), "arrays": {name: np.array(a) for name, a in arrays.items()}}

    def load_state_dict(self, state: Any) -> None:
        """Restore what `state_dict()` returned (of this buffer or one of the same layout), after the checks a
        buffer file gets (`load()`: every array's dtype and shape, finite values, positions, sampler state).

        Raises:
            ModelFileError: (a ``ValueError``) naming the entry that is missing or wrong; nothing was changed.
        """
        if not isinstance(state, dict) or set(state) != {"meta", "arrays"}:
            got = sorted(map(str, state)) if isinstance(state, dict) else type(state).__name__
            raise ModelFileError(f"a replay buffer state must hold meta and arrays, got {got}")
        meta, arrays = state["meta"], state["arrays"]
        if not isinstance(meta, dict) or not isinstance(arrays, dict):
            raise ModelFileError("a replay buffer state's meta and arrays must be dicts")
        for name, array in arrays.items():
            if not isinstance(array, np.ndarray):
                raise ModelFileError(f"replay buffer state arrays[{name!r}] must be a NumPy array")
        buf = io.BytesIO()
        try:
            header = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        except (TypeError, ValueError) as exc:
            raise ModelFileError(f"a replay buffer state's meta is not JSON: {exc}") from exc
        np.savez(buf, meta=header, **{name: np.ascontiguousarray(a) for name, a in arrays.items()})
        buf.seek(0)
        self.load(buf)  # one set of checks for files and states

    def _state_members(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The JSON header and the arrays of `to_bytes()` / `state_dict()`."""
        meta: dict = {
            "buffer_size": self.buffer_size,
            "pos": self.pos,
            "full": self.full,
            "size": self.size(),
            "obs_shape": list(self.obs_shape),
            "action_dim": self.action_dim,
            "rng_state": self._rng.bit_generator.state,
            "optimize_memory_usage": self.optimize_memory_usage,
            "n_envs": self.n_envs,
            **self._extra_meta(),
            **run_id_meta(self.run_id),
        }
        if self.optimize_memory_usage:
            filled = self._env_filled_rows()
            rows = np.concatenate([e * self._n_slots + np.arange(n) for e, n in enumerate(filled)])
            arrays = {name: array[rows] for name, array in self._arrays().items()}
            final_rows = np.array(sorted(self._final_obs), dtype=np.int64)
            arrays["final_rows"] = final_rows
            arrays["final_obs"] = np.array(
                [self._final_obs[r] for r in final_rows.tolist()], dtype=self.obs_dtype
            ).reshape(len(final_rows), *self.obs_shape)
            meta.update(
                n_slots=self._n_slots,
                env_pos=self._env_pos.tolist(),
                env_full=self._env_full.tolist(),
                env_has_next=self._env_has_next.tolist(),
                env_filled=filled.tolist(),
            )
        else:
            arrays = {name: array[: self.size()] for name, array in self._arrays().items()}
        return meta, arrays

    def _extra_meta(self) -> dict:
        """Extra JSON-safe entries a subclass stores in the file's header (none for the uniform buffer)."""
        return {}

    def _env_filled_rows(self) -> np.ndarray:
        # Rows of each env's ring that hold data: its transitions plus the row with the newest next observation.
        return np.where(self._env_full, self._n_slots, self._env_pos + self._env_has_next)

    def load(self, path: str | os.PathLike[str] | IO[bytes]) -> None:
        """Restore a buffer written by `save()` into this buffer (same shapes, same capacity or larger).

        ``path`` may also be a binary file object (e.g. ``io.BytesIO(buffer.to_bytes())``). The file is
        checked before anything in this buffer changes: every array's header (dtype, shape) against this
        buffer's spaces and the file's declared size, positions within capacity and consistent with the
        stored rows, ``n_envs``, finite values, a well-formed sampler state. Nothing is allocated from a
        size the file claims before it has been checked.

        Raises:
            ModelFileError: (a ``ValueError``) the file is malformed or does not match this buffer's shapes,
                layout (``optimize_memory_usage``, ``n_envs``) or capacity.
        """
        try:
            with ZipReader(path, "replay buffer file") as archive:
                self._load_checked(archive)
        except ModelFileError:
            raise
        except FileNotFoundError:
            raise
        except Exception as exc:  # noqa: BLE001  (anything that fails while parsing untrusted bytes)
            raise ModelFileError(f"unreadable replay buffer file ({type(exc).__name__}: {exc})") from exc

    def _load_checked(self, archive: ZipReader) -> None:
        names = set(archive.namelist())
        allowed = {f"{name}.npy" for name in (*self._arrays(), "meta", "next_observations", "final_rows", "final_obs")}
        if not names <= allowed:
            raise ModelFileError(f"the replay buffer file has unexpected entries {sorted(names - allowed)}")
        raw = read_npy_member(archive, "meta", np.uint8, None, max_items=MAX_BUFFER_META_BYTES)
        meta = check_buffer_meta(
            parse_json(raw.tobytes(), "replay buffer meta", MAX_BUFFER_META_BYTES),
            obs_shape=self.obs_shape,
            action_dim=self.action_dim,
            n_envs=self.n_envs,
            optimize_memory_usage=self.optimize_memory_usage,
        )
        if self.optimize_memory_usage:
            self._load_per_env(meta, archive)
        else:
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
            arrays = {name: self._read_rows(archive, name, size) for name in self._arrays()}
            self._check_rows(arrays, np.arange(size), meta)
            for name, array in self._arrays().items():
                array[:size] = arrays[name]
            self.full = full or size == self.buffer_size
            self.pos = pos if full else size % self.buffer_size
        rng = np.random.default_rng()
        rng.bit_generator.state = meta["rng_state"]
        self._rng = rng
        self.file_run_id = meta.get("run_id")

    def _check_rows(self, arrays: dict[str, np.ndarray], rows: np.ndarray, meta: dict[str, Any]) -> None:
        """A subclass's checks of a file's arrays (``arrays[name][i]`` goes to row ``rows[i]``), run after every
        array is read and before any is stored; ``meta`` is the file's header (with ``final_rows``, the rows of
        the side table, for the memory-optimized layout). The uniform buffer has nothing more to check."""

    def _read_rows(self, archive: ZipReader, name: str, rows: int) -> np.ndarray:
        array = self._arrays()[name]
        return read_npy_member(archive, name, array.dtype, (rows, *array.shape[1:]))

    def _load_per_env(self, meta: dict, archive: ZipReader) -> None:
        filled = check_buffer_rings(meta, self.n_envs)
        old_slots = meta["n_slots"]
        if old_slots != self._n_slots and (any(meta["env_full"]) or filled.max(initial=0) > self._n_slots):
            raise ModelFileError(
                f"replay buffer file has n_envs={meta['n_envs']} rings of {old_slots} rows; this buffer "
                f"has n_envs={self.n_envs} rings of {self._n_slots} rows (buffer_size={self.buffer_size})"
            )
        total = int(filled.sum())
        arrays = {name: self._read_rows(archive, name, total) for name in self._arrays()}
        old_rows = read_npy_member(archive, "final_rows", np.int64, None, max_items=total)
        final_obs = read_npy_member(archive, "final_obs", self.obs_dtype, (len(old_rows), *self.obs_shape))
        env, slot = old_rows // old_slots, old_rows % old_slots
        pos = np.asarray(meta["env_pos"], dtype=np.int64)
        full = np.asarray(meta["env_full"], dtype=bool)
        if len(old_rows) and (
            np.any(np.diff(old_rows) <= 0)
            or old_rows[0] < 0
            or env[-1] >= self.n_envs
            or np.any(np.where(full[env], slot == pos[env], slot >= pos[env]))
        ):
            raise ModelFileError("replay buffer final_rows must be increasing rows that hold transitions")
        rows = np.concatenate([e * self._n_slots + np.arange(n) for e, n in enumerate(filled)])
        new_rows = env * self._n_slots + slot
        self._check_rows(arrays, rows, {**meta, "final_rows": new_rows})
        for name, array in self._arrays().items():
            array[rows] = arrays[name]
        self._final_obs = {int(r): np.array(o) for r, o in zip(new_rows, final_obs)}
        self._env_pos = pos
        self._env_full = full
        self._env_has_next = np.asarray(meta["env_has_next"], dtype=bool)
        self.full = bool(self._env_full.all())

    def __repr__(self) -> str:
        return f"ReplayBuffer(size={self.size()}, buffer_size={self.buffer_size}, n_envs={self.n_envs})"

"""The n-step replay buffer: each sampled transition carries an n-step return.

Storage and file format are the uniform `ReplayBuffer`'s, plus one link per row: ``next_row[i]`` is the row of the
same env's next transition when the episode goes on (``-1`` otherwise). A sampled row ``t`` is followed along those
links for at most ``n_steps`` transitions; the window stops early

- at a termination (no bootstrap: ``terminated`` is set),
- at a truncation (the bootstrap uses the true final observation stored with that transition),
- at the newest transition of an env whose episode is still running: its successor is not written yet, so the
  window is shorter and the bootstrap uses the newest next observation. Stable-Baselines3's ``NStepReplayBuffer``
  (SB3 >= 2.7) does the same at the write position. A window never reads a row written after its last link, so it
  never crosses the write position or wraps into older data.

The sample's ``rewards`` is ``sum_{j<k} gamma^j r_{t+j}`` and ``discounts`` is ``gamma^k``, ``k`` the window's length
(1..n_steps); the TD target is ``rewards + discounts * (1 - terminated) * min Q'(next_observations, .)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from gymnasium import spaces

from rlkit_td3.buffers.replay_buffer import ReplayBuffer
from rlkit_td3.checks.state import MAX_BUFFER_META_BYTES
from rlkit_td3.fileio.file_reader import ZipReader, parse_json, read_npy_member
from rlkit_td3.fileio.serialization import ModelFileError


class NStepReplayBufferSamples(NamedTuple):
    """A batch of n-step transitions (the `ReplayBufferSamples` fields plus ``discounts``).

    ``rewards`` holds the discounted n-step reward sums, ``next_observations`` / ``terminated`` / ``truncated``
    belong to the window's last transition and ``discounts`` is ``gamma ** k`` for a window of ``k`` transitions.
    """

    observations: torch.Tensor
    actions: torch.Tensor
    next_observations: torch.Tensor
    rewards: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    discounts: torch.Tensor

    @property
    def dones(self) -> torch.Tensor:
        """SB3's ``dones`` of a sample: 1 where the window's last transition terminated."""
        return self.terminated


def _check_n_steps(n_steps: object) -> int:
    if isinstance(n_steps, (bool, np.bool_)) or not isinstance(n_steps, (int, np.integer)) or n_steps < 1:
        raise ValueError(f"n_steps must be an int >= 1, got {n_steps!r}")
    return int(n_steps)


def _check_gamma(gamma: object) -> float:
    if isinstance(gamma, (bool, np.bool_)) or not isinstance(gamma, (int, float, np.floating, np.integer)):
        raise TypeError(f"gamma must be a float in [0, 1], got {gamma!r}")
    if not 0.0 <= float(gamma) <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma!r}")
    return float(gamma)


class NStepReplayBuffer(ReplayBuffer):
    """Replay buffer whose samples are n-step transitions (SB3's ``NStepReplayBuffer`` API, SB3 >= 2.7).

    Args:
        buffer_size: capacity in transitions (over all envs together).
        observation_space: one env's observation space (Box, Discrete, MultiDiscrete or MultiBinary).
        action_space: Box space of one env's actions.
        device: where sampled batches are put.
        n_envs: the number of envs feeding the buffer.
        seed: seed of the sampling generator.
        optimize_memory_usage: the memory-optimized layout of `ReplayBuffer` (supported, unlike SB3's).
        n_steps: the longest window, in transitions (1 gives one-step samples with ``discounts == gamma``).
        gamma: the discount used inside the window and for ``discounts``; the model passes its own ``gamma``.
        handle_timeout_termination: as in `ReplayBuffer` (``False``: a truncation ends the window as terminal).

    Windows stop early at an episode's end and at the newest transition of a running episode (see the module's
    notes). A saved buffer can only be loaded into a buffer of the same ``buffer_size``, ``n_envs``, ``n_steps``
    and ``gamma``.
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
        n_steps: int = 3,
        gamma: float = 0.99,
        handle_timeout_termination: bool = True,
    ) -> None:
        self.n_steps = _check_n_steps(n_steps)
        self.gamma = _check_gamma(gamma)
        super().__init__(
            buffer_size,
            observation_space,
            action_space,
            device,
            n_envs,
            seed,
            optimize_memory_usage,
            handle_timeout_termination=handle_timeout_termination,
        )
        rows = len(self.rewards)
        self.next_row = np.full(rows, -1, dtype=np.int64)
        self._last_row = np.full(self.n_envs, -1, dtype=np.int64)  # each env's newest transition

    def _arrays(self) -> dict[str, np.ndarray]:
        arrays = super()._arrays()
        arrays["next_row"] = self.next_row
        return arrays

    # ------------------------------------------------------------------ add
    def _rows_to_write(self, k: int, env_indices: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(envs, rows the transitions go to, every row ``add`` overwrites) for an ``add`` of ``k`` rows."""
        envs = np.arange(k) if env_indices is None else np.asarray(env_indices, dtype=np.int64).reshape(k)
        if envs.min() < 0 or envs.max() >= self.n_envs:
            raise ValueError(f"env_indices must be in [0, {self.n_envs}), got {envs.tolist()}")
        if not self.optimize_memory_usage:
            rows = (self.pos + np.arange(k)) % self.buffer_size
            return envs, rows, rows
        slots = self._n_slots
        pos = self._env_pos[envs]
        rows = envs * slots + pos
        # the next row of each env's ring receives the newest next observation (dropping the oldest transition)
        return envs, rows, np.concatenate([rows, envs * slots + (pos + 1) % slots])

    def add(
        self,
        obs: np.ndarray,
        next_obs: np.ndarray,
        action: np.ndarray,
        reward: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray | list[dict],
        env_indices: np.ndarray | None = None,
    ) -> None:
        """Store ``k`` transitions like `ReplayBuffer.add` (SB3's ``done, infos`` too) and link each to its env's
        previous transition.

        A link is made when the previous transition neither terminated nor was truncated, is still stored, and
        its next observation is this transition's observation.
        """
        k = len(reward)
        if k == 0 or k > self.n_envs:
            super().add(obs, next_obs, action, reward, terminated, truncated, env_indices)
            return
        envs, rows, overwritten = self._rows_to_write(k, env_indices)
        gone = set(overwritten.tolist())
        # plain ints: cheaper than array operations for a few envs; a newest transition about to be overwritten
        # (by another env's row, or dropped from a full memory-optimized ring) has no successor any more
        last_row = [-1 if r in gone else r for r in self._last_row.tolist()]
        super().add(obs, next_obs, action, reward, terminated, truncated, env_indices)
        self.next_row[overwritten] = -1
        for env, row in zip(envs.tolist(), rows.tolist()):
            prev = last_row[env]
            if prev >= 0 and not (self.terminated[prev] or self.truncated[prev]) and self._continues(prev, row):
                self.next_row[prev] = row
            last_row[env] = row
        self._last_row = np.array(last_row, dtype=np.int64)

    def _continues(self, prev: int, row: int) -> bool:
        if self.optimize_memory_usage:
            # the base class keeps a side-table entry exactly where the next row's observation is not prev's next
            return prev not in self._final_obs
        return bool(np.array_equal(self.next_observations[prev], self.observations[row]))

    # ------------------------------------------------------------------ sample
    def _window(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Follow the links of ``rows``: (last row of each window, n-step returns, windows' lengths)."""
        last = rows.copy()
        returns = self.rewards[rows].astype(np.float64)
        length = np.ones(len(rows), dtype=np.int64)
        ended = self.terminated[rows] | self.truncated[rows]
        for j in range(1, self.n_steps):
            nxt = self.next_row[last]
            go = ~ended & (nxt >= 0)
            if not go.any():
                break
            last = np.where(go, nxt, last)
            returns += np.where(go, self.gamma**j * self.rewards[last].astype(np.float64), 0.0)
            length += go
            ended |= self.terminated[last] | self.truncated[last]
        return last, returns, length

    def _get_samples(self, idx: np.ndarray) -> NStepReplayBufferSamples:
        to_tensor = self._to_tensor
        last, returns, length = self._window(idx)
        discounts = (self.gamma ** length.astype(np.float64)).astype(np.float32)
        return NStepReplayBufferSamples(
            observations=self._obs_tensor(self.observations[idx]),
            actions=to_tensor(self.actions[idx]),
            next_observations=self._obs_tensor(self._next_observations_of(last)),
            rewards=to_tensor(returns.astype(np.float32)),
            terminated=to_tensor(self.terminated[last].astype(np.float32)),
            truncated=to_tensor(self.truncated[last].astype(np.float32)),
            discounts=to_tensor(discounts),
        )

    # ------------------------------------------------------------------ persistence
    def _extra_meta(self) -> dict:
        return {"n_steps": self.n_steps, "gamma": self.gamma, "last_row": self._last_row.tolist()}

    def _load_checked(self, archive: ZipReader) -> None:
        # Everything this class adds is checked before the base class changes anything.
        raw = read_npy_member(archive, "meta", np.uint8, None, max_items=MAX_BUFFER_META_BYTES)
        meta = parse_json(raw.tobytes(), "replay buffer meta", MAX_BUFFER_META_BYTES)
        if not isinstance(meta, dict):
            raise ModelFileError("the replay buffer file's meta is not a JSON object")
        self._check_file_meta(meta)
        rows = len(self.rewards)
        links = read_npy_member(archive, "next_row", np.int64, None, max_items=rows)
        if links.size and (links.min() < -1 or links.max() >= rows):
            raise ModelFileError(f"replay buffer next_row entries must be in [-1, {rows}), got out-of-range links")
        last_row = np.asarray(meta["last_row"], dtype=np.int64)
        super()._load_checked(archive)
        self._last_row = last_row

    def _check_rows(self, arrays: dict[str, np.ndarray], rows: np.ndarray, meta: dict) -> None:
        # every link must be one that add() makes: from a stored transition that neither terminated nor was
        # truncated to the same env's next stored transition, written after it, whose observation is its next
        # observation; each row has at most one predecessor, and each env's newest row (last_row) is a stored transition
        super()._check_rows(arrays, rows, meta)
        stored = np.zeros(len(self.rewards), dtype=bool)
        stored[rows] = True
        if self.optimize_memory_usage:  # a ring's row with the newest next observation holds no transition yet
            slots = self._n_slots
            has_next = np.asarray(meta["env_has_next"], dtype=bool)
            pos = np.asarray(meta["env_pos"], dtype=np.int64)
            stored[(np.arange(self.n_envs) * slots + pos)[has_next]] = False
        links = arrays["next_row"]
        where = np.flatnonzero(links >= 0)
        src, dst = rows[where], links[where]
        last_row = np.asarray(meta["last_row"], dtype=np.int64)
        newest = last_row[last_row >= 0]
        problem = None
        if not np.all(stored[newest]):
            problem = "an env's newest row (last_row) is not a stored transition"
        elif not (np.all(stored[src]) and np.all(stored[dst])):
            problem = "a link from or to a row that holds no transition"
        elif np.any(src == dst) or len(np.unique(dst)) != len(dst):
            problem = "a row linked to itself, or two rows linked to the same successor"
        elif np.any(arrays["terminated"][where] | arrays["truncated"][where]):
            problem = "a link from a transition that ended its episode"
        elif self.optimize_memory_usage:
            env, slot = src // slots, src % slots
            final = np.asarray(meta["final_rows"], dtype=np.int64)
            if np.any(dst != env * slots + (slot + 1) % slots) or np.any(np.isin(src, final)):
                problem = "a link to another row than the same env's next one, or across an episode's end"
        else:
            full, pos, size = meta["full"], meta["pos"], len(rows)
            age = (np.arange(len(self.rewards)) - pos) % self.buffer_size if full else np.arange(len(self.rewards))
            observations, next_observations = arrays["observations"], arrays["next_observations"]
            if np.any(age[dst] <= age[src]) or np.any(dst >= size):
                problem = "a link to a row written before its own"
            elif not np.array_equal(next_observations[src], observations[dst]):
                problem = "a link to a row whose observation is not the linked row's next observation (another episode)"
        if problem is not None:
            raise ModelFileError(f"replay buffer next_row: {problem}")

    def _check_file_meta(self, meta: dict) -> None:
        for key, mine in (("n_steps", self.n_steps), ("gamma", self.gamma)):
            if meta.get(key) != mine:
                raise ModelFileError(f"replay buffer file has {key}={meta.get(key)!r}, this buffer has {key}={mine!r}")
        for key, mine in (("buffer_size", self.buffer_size), ("n_envs", self.n_envs)):
            if meta.get(key) != mine:
                raise ModelFileError(
                    f"an n-step replay buffer file loads only into the same {key}: the file has "
                    f"{key}={meta.get(key)!r}, this buffer has {key}={mine!r}"
                )
        last_row = meta.get("last_row")
        rows = len(self.rewards)
        if (
            not isinstance(last_row, list)
            or len(last_row) != self.n_envs
            or not all(isinstance(r, int) and not isinstance(r, bool) and -1 <= r < rows for r in last_row)
        ):
            raise ModelFileError(f"replay buffer last_row must be a list of {self.n_envs} ints in [-1, {rows})")

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(size={self.size()}, buffer_size={self.buffer_size}, n_envs={self.n_envs}, "
            f"n_steps={self.n_steps}, gamma={self.gamma})"
        )

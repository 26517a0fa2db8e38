"""Hindsight Experience Replay (HER, Andrychowicz et al. 2017) as a replay buffer.

A goal-conditioned env observes ``{"observation", "achieved_goal", "desired_goal"}`` and rewards reaching the
desired goal; with a sparse reward, almost every early episode fails and teaches nothing. HER replays some of
the stored transitions with the desired goal replaced by a goal the agent did achieve later in the same
episode, and the reward recomputed by the env's ``compute_reward(achieved_goal, desired_goal, infos)``: those
relabelled transitions succeed, and the critic learns what reaches what.

Relabelling happens at sampling time, so nothing is stored twice. Each sampled transition is relabelled with
probability ``her_ratio = 1 - 1 / (n_sampled_goal + 1)`` (``n_sampled_goal`` relabelled transitions for one
real one on average), independently of the others.

Layout: each env has its own ring of ``buffer_size // n_envs`` rows, so an episode is a contiguous run of
one ring (modulo its length). For every row the buffer keeps the slot its episode starts at and the episode's
length; the length is 0 until the episode has ended (``terminated`` or ``truncated``). As in Stable-Baselines3,
only transitions of episodes that have ended are sampled (a goal can only be drawn from an episode whose
future is known); the episodes still running are sampled once they end. When a ring wraps, writing into an old
episode makes all of that episode's remaining rows unsampleable at once, so no goal is ever taken from an
overwritten step. If an env's next observation does not continue its running episode (the env was reset
without the episode ending, e.g. by a new ``learn()``), that episode is closed where it stopped.
"""

from __future__ import annotations

import copy
import json
import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import VectorEnv

from rlkit_td3.buffers.dict_replay_buffer import DictReplayBuffer, DictReplayBufferSamples
from rlkit_td3.buffers.replay_buffer import normalize_samples, sb3_episode_flags, timeouts_as_terminations
from rlkit_td3.checks.arguments import check_bool
from rlkit_td3.checks.state import _int
from rlkit_td3.fileio.file_reader import ZipReader, parse_json, read_npy_member
from rlkit_td3.fileio.serialization import ModelFileError
from rlkit_td3.her.goal_selection_strategy import GoalSelectionStrategy, goal_selection_strategy

MAX_INFOS_BYTES = 2**31
"""Largest JSON record of info dicts (``copy_info_dict=True``) a buffer file may hold."""


def _reward_function(env: Any) -> Callable[[np.ndarray, np.ndarray, list[dict[str, Any]]], Any]:
    """The ``compute_reward`` of the first env of ``env`` (a gymnasium env or vector env, or an SB3 VecEnv)."""
    if isinstance(env, VectorEnv):
        base = env.unwrapped
        sub_envs = getattr(base, "envs", None)
        if isinstance(sub_envs, (list, tuple)) and sub_envs:
            return sub_envs[0].get_wrapper_attr("compute_reward")
        sb3_env = getattr(base, "sb3_env", None)
        if sb3_env is not None:
            return _reward_function(sb3_env)
        return lambda achieved, desired, infos: base.call("compute_reward", achieved, desired, infos)[0]
    if hasattr(env, "env_method"):  # an SB3-style VecEnv
        return lambda achieved, desired, infos: env.env_method("compute_reward", achieved, desired, infos, indices=[0])[
            0
        ]
    if isinstance(env, gym.Env):
        return env.get_wrapper_attr("compute_reward")
    raise TypeError(
        f"env must be a gymnasium env or vector env, or a Stable-Baselines3 VecEnv with compute_reward, got {env!r}"
    )


class HerReplayBuffer(DictReplayBuffer):
    """Replay buffer that relabels goals when it samples (Hindsight Experience Replay).

    Use it through the model, as in Stable-Baselines3:
    ``TD3("MultiInputPolicy", env, replay_buffer_class=HerReplayBuffer,
    replay_buffer_kwargs=dict(n_sampled_goal=4, goal_selection_strategy="future"))``; the model passes its env.

    Args:
        buffer_size: capacity in transitions over all envs (each env gets ``buffer_size // n_envs`` rows).
        observation_space: a Dict space with Box entries ``"achieved_goal"`` and ``"desired_goal"`` of the same
            shape (and usually ``"observation"``).
        action_space: Box space of one env's actions (stored normalised to [-1, 1]).
        env: the training env, whose ``compute_reward(achieved_goal, desired_goal, infos)`` (vectorised over
            the first axis, as gymnasium-robotics and panda-gym define it) gives relabelled rewards; may be set
            later with `set_env()`.
        device: where sampled batches are put.
        n_envs: the number of envs feeding the buffer.
        seed: seed of the buffer's own generator (transitions, relabelling, goals).
        optimize_memory_usage: must be False.
        n_sampled_goal: relabelled transitions per real one: the relabelling probability is
            ``her_ratio = 1 - 1 / (n_sampled_goal + 1)`` (0 disables relabelling).
        goal_selection_strategy: ``"future"``, ``"final"``, ``"episode"`` or a `GoalSelectionStrategy`.
        copy_info_dict: store each transition's info dict and pass copies of them to ``compute_reward``
            (slower; only for envs whose reward reads the infos). Saved buffers keep them as JSON.
        handle_timeout_termination: as in `ReplayBuffer` (``False``: a truncated episode ends as terminal).
    """

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        env: Any = None,
        device: torch.device | str = "cpu",
        n_envs: int = 1,
        seed: int | None = None,
        optimize_memory_usage: bool = False,
        n_sampled_goal: int = 4,
        goal_selection_strategy: GoalSelectionStrategy | str = "future",
        copy_info_dict: bool = False,
        handle_timeout_termination: bool = True,
    ) -> None:
        if isinstance(n_sampled_goal, bool) or not isinstance(n_sampled_goal, (int, np.integer)) or n_sampled_goal < 0:
            raise ValueError(f"n_sampled_goal must be a non-negative int, got {n_sampled_goal!r}")
        check_bool("copy_info_dict", copy_info_dict)
        strategy = _strategy(goal_selection_strategy)
        if isinstance(n_envs, (int, np.integer)) and not isinstance(n_envs, bool) and n_envs > buffer_size:
            raise ValueError(f"buffer_size ({buffer_size}) must be at least n_envs ({n_envs})")
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
        for key in ("achieved_goal", "desired_goal"):
            if key not in self.obs_layout:
                raise ValueError(
                    f"observation_space must have a {key!r} entry for HER, got keys {list(self.obs_layout)}"
                )
        if self.obs_shape["achieved_goal"] != self.obs_shape["desired_goal"]:
            raise ValueError(
                f"observation_space's achieved_goal {self.obs_shape['achieved_goal']} and desired_goal "
                f"{self.obs_shape['desired_goal']} must have the same shape"
            )
        self.env = env
        self.n_sampled_goal = int(n_sampled_goal)
        self.goal_selection_strategy = strategy
        self.her_ratio = 1.0 - 1.0 / (self.n_sampled_goal + 1)
        self.copy_info_dict = bool(copy_info_dict)
        n = self._n_rows()
        self.ep_start = np.zeros(n, dtype=np.int64)  # slot (in its env's ring) where the row's episode starts
        self.ep_length = np.zeros(n, dtype=np.int64)  # its episode's length, 0 while running or overwritten
        self.infos: np.ndarray | None = np.array([{} for _ in range(n)], dtype=object) if copy_info_dict else None
        self._env_pos = np.zeros(self.n_envs, dtype=np.int64)
        self._env_full = np.zeros(self.n_envs, dtype=bool)
        self._current_ep_start = np.zeros(self.n_envs, dtype=np.int64)
        self._current_ep_length = np.zeros(self.n_envs, dtype=np.int64)
        self._valid_rows: np.ndarray | None = None
        self._outgrown_by: int | None = None  # an env whose running episode filled its whole ring (for sample's error)

    @property
    def n_slots(self) -> int:
        """Rows of each env's ring."""
        return self.buffer_size // self.n_envs

    def _n_rows(self) -> int:
        return self.buffer_size // self.n_envs * self.n_envs

    def _per_env(self, flat: np.ndarray) -> np.ndarray:
        # each env has its own ring of n_slots rows: row = env * n_slots + slot
        return flat.reshape(self.n_envs, self.n_slots).T

    def set_env(self, env: Any) -> None:
        """Give the buffer the env whose ``compute_reward`` it calls (after loading a model without env).

        Raises:
            ValueError: the buffer already has an env.
        """
        if self.env is not None:
            raise ValueError("this HerReplayBuffer already has an env")
        _reward_function(env)
        self.env = env

    # ------------------------------------------------------------------ size
    def size(self) -> int:
        """Number of transitions stored (sampled once their episode has ended)."""
        return int(np.where(self._env_full, self.n_slots, self._env_pos).sum())

    def n_sampleable(self) -> int:
        """Number of stored transitions whose episode has ended (the ones `sample()` draws from)."""
        return len(self._sampleable_rows())

    def _sampleable_rows(self) -> np.ndarray:
        if self._valid_rows is None:
            self._valid_rows = np.flatnonzero(self.ep_length > 0)
        return self._valid_rows

    # ------------------------------------------------------------------ add
    def add(  # type: ignore[override]
        self,
        obs: dict[str, np.ndarray],
        next_obs: dict[str, np.ndarray],
        action: np.ndarray,
        reward: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray | list[dict[str, Any]],
        env_indices: np.ndarray | None = None,
        infos: list[dict[str, Any]] | None = None,
    ) -> None:
        """Store ``k`` transitions, one per env in ``env_indices`` (default ``0 .. k-1``), and close the
        episodes that end with them (``terminated | truncated``).

        ``infos`` (one dict per row) is stored only with ``copy_info_dict=True``. Stable-Baselines3's call
        ``add(obs, next_obs, action, reward, done, infos)`` is understood as in `ReplayBuffer.add` (and its
        infos are the ones stored).
        """
        k = len(reward)
        if k == 0:
            return
        if isinstance(truncated, (list, tuple, dict)):
            if infos is None and isinstance(truncated, (list, tuple)) and any(isinstance(i, dict) for i in truncated):
                infos = list(truncated)
            terminated, truncated = sb3_episode_flags(terminated, truncated, k)
        if not self.handle_timeout_termination:
            terminated, truncated = timeouts_as_terminations(terminated, truncated, k)
        if k > self.n_envs:
            raise ValueError(f"add() got {k} transitions but the buffer was built for n_envs={self.n_envs}")
        envs = list(range(k)) if env_indices is None else np.asarray(env_indices, dtype=np.int64).reshape(k).tolist()
        if len(set(envs)) != k or min(envs) < 0 or max(envs) >= self.n_envs:
            raise ValueError(f"env_indices must be {k} distinct envs in [0, {self.n_envs}), got {envs}")
        if self.copy_info_dict and (infos is None or len(infos) != k):
            raise ValueError(f"infos must be a list of {k} dicts with copy_info_dict=True, got {infos!r}")
        obs = self._obs_rows(obs, k, "obs")
        next_obs = self._obs_rows(next_obs, k, "next_obs")
        ended = (np.reshape(terminated, k) | np.reshape(truncated, k)).tolist()
        slots = self.n_slots
        self._close_interrupted(envs, obs)
        rows = []
        for env in envs:
            row = env * slots + int(self._env_pos[env])
            self._free_row(env, row)
            rows.append(row)
        index = np.asarray(rows)
        self._write(index, obs, next_obs, action, reward, terminated, truncated, k)
        self.ep_length[index] = 0
        for i, (env, row) in enumerate(zip(envs, rows)):
            self.ep_start[row] = self._current_ep_start[env]
            if self.infos is not None:
                self.infos[row] = copy.deepcopy(infos[i])
            self._current_ep_length[env] += 1
            pos = int(self._env_pos[env]) + 1
            if pos == slots:
                self._env_full[env] = True
            self._env_pos[env] = pos % slots
        self.pos = int(self._env_pos.max())
        self.full = bool(self._env_full.all())
        for env, end in zip(envs, ended):
            if end:
                self._close_episode(env)

    def _close_interrupted(self, envs: list[int], obs: dict[str, np.ndarray]) -> None:
        """Close the running episode of each env whose new observation is not its last next observation."""
        slots = self.n_slots
        for i, env in enumerate(envs):
            if self._current_ep_length[env] == 0:
                continue
            prev = env * slots + (int(self._env_pos[env]) - 1) % slots
            # compared as stored (float64 observations are stored as float32)
            stored = self.next_observations.items()
            if any(not np.array_equal(array[prev], obs[key][i].astype(array.dtype)) for key, array in stored):
                self._close_episode(env)

    def _free_row(self, env: int, row: int) -> None:
        """Before ``row`` is overwritten: retire what it held."""
        slots = self.n_slots
        length = int(self.ep_length[row])
        if length > 0:
            # An ended episode: its rows from here to its end cannot be sampled any more (its earlier rows
            # were overwritten already).
            slot = row - env * slots
            start = int(self.ep_start[row])
            offsets = np.arange((slot - start) % slots, length)
            self.ep_length[env * slots + (start + offsets) % slots] = 0
            self._valid_rows = None
        elif self._current_ep_length[env] == slots:
            # The running episode fills the whole ring: it loses its oldest step.
            self._outgrown_by = env
            self._current_ep_start[env] = (self._current_ep_start[env] + 1) % slots
            self._current_ep_length[env] -= 1
            first = env * slots
            running = first + (self._current_ep_start[env] + np.arange(self._current_ep_length[env])) % slots
            self.ep_start[running] = self._current_ep_start[env]

    def _close_episode(self, env: int) -> None:
        length = int(self._current_ep_length[env])
        if length > 0:
            start = int(self._current_ep_start[env])
            rows = env * self.n_slots + (start + np.arange(length)) % self.n_slots
            self.ep_start[rows] = start
            self.ep_length[rows] = length
            self._valid_rows = None
        self._current_ep_start[env] = self._env_pos[env]
        self._current_ep_length[env] = 0

    def truncate_last_trajectory(self) -> None:
        """Close every running episode where it stands (Stable-Baselines3's method of the same name), e.g.
        after loading a buffer whose envs will start fresh episodes. Not needed by ``learn()``: an env whose
        next observation does not continue its episode closes it on its own.

        As in SB3, the last transition of each episode so closed is marked ``truncated`` (the bootstrap goes on
        through it) and a ``UserWarning`` says so.
        """
        running = [env for env in range(self.n_envs) if self._current_ep_length[env] > 0]
        if running:
            warnings.warn(
                "The last trajectory in the replay buffer will be truncated: the last transition of each "
                f"running episode (envs {running}) is marked truncated and its episode can be sampled",
                UserWarning,
                stacklevel=2,
            )
        for env in running:
            self.truncated[env * self.n_slots + (int(self._env_pos[env]) - 1) % self.n_slots] = True
        for env in range(self.n_envs):
            self._close_episode(env)

    # ------------------------------------------------------------------ sample
    def sample(self, batch_size: int, env: Any = None) -> DictReplayBufferSamples:  # type: ignore[override]
        """Draw ``batch_size`` transitions uniformly among those of ended episodes; relabel each with
        probability `her_ratio`. ``env`` (a `VecNormalize`) normalises the batch as in `ReplayBuffer.sample`.

        Raises:
            ValueError: ``batch_size`` is not positive, or no episode has ended yet (choose ``learning_starts``
                larger than an episode's length).
        """
        if env is not None:
            return normalize_samples(self.sample(batch_size), env)
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size!r}")
        valid = self._sampleable_rows()
        if len(valid) == 0:
            if self._outgrown_by is not None:
                raise ValueError(
                    f"HerReplayBuffer holds no complete episode: an episode of env {self._outgrown_by} was longer "
                    f"than the {self.n_slots} rows each env's ring holds (buffer_size={self.buffer_size} shared by "
                    f"n_envs={self.n_envs}), so every episode is overwritten before it ends. HER samples complete "
                    "episodes only: choose buffer_size larger than n_envs times the env's episode length"
                )
            raise ValueError(
                "HerReplayBuffer cannot sample before the first episode has ended: choose learning_starts "
                "larger than the env's episode length"
            )
        rows = valid[self._rng.integers(0, len(valid), size=batch_size)]
        relabel = self._rng.random(batch_size) < self.her_ratio
        return self._relabelled_samples(rows, relabel)

    def _relabelled_samples(self, rows: np.ndarray, relabel: np.ndarray) -> DictReplayBufferSamples:
        obs = {key: array[rows] for key, array in self.observations.items()}
        next_obs = {key: array[rows] for key, array in self.next_observations.items()}
        rewards = self.rewards[rows]
        if relabel.any():
            chosen = rows[relabel]
            goals = self.next_observations["achieved_goal"][self._goal_rows(chosen)]
            obs["desired_goal"][relabel] = goals
            next_obs["desired_goal"][relabel] = goals
            if self.copy_info_dict:
                infos = [copy.deepcopy(info) for info in self.infos[chosen]]
            else:
                infos = [{} for _ in range(len(chosen))]
            # r_t is the reward of reaching s_{t+1}: the next observation's achieved goal against the new goal.
            rewards[relabel] = self._compute_reward(next_obs["achieved_goal"][relabel], goals, infos)
        return DictReplayBufferSamples(
            observations={key: self._to_tensor(value) for key, value in obs.items()},
            actions=self._to_tensor(self.actions[rows]),
            next_observations={key: self._to_tensor(value) for key, value in next_obs.items()},
            rewards=self._to_tensor(rewards),
            terminated=self._to_tensor(self.terminated[rows].astype(np.float32)),
            truncated=self._to_tensor(self.truncated[rows].astype(np.float32)),
        )

    def _goal_rows(self, rows: np.ndarray) -> np.ndarray:
        """For each row, the row of the transition (same episode) whose next achieved goal becomes the goal."""
        slots = self.n_slots
        start, length = self.ep_start[rows], self.ep_length[rows]
        strategy = self.goal_selection_strategy
        if strategy == GoalSelectionStrategy.FINAL:
            offset = length - 1
        elif strategy == GoalSelectionStrategy.FUTURE:
            offset = self._rng.integers((rows % slots - start) % slots, length)
        else:
            offset = self._rng.integers(0, length)
        return rows - rows % slots + (start + offset) % slots

    def _compute_reward(self, achieved: np.ndarray, desired: np.ndarray, infos: list[dict[str, Any]]) -> np.ndarray:
        if self.env is None:
            raise ValueError(
                "HerReplayBuffer needs the env's compute_reward to relabel: pass env= or call set_env(env)"
            )
        rewards = np.asarray(_reward_function(self.env)(achieved, desired, infos), dtype=np.float32)
        if rewards.shape not in ((len(achieved),), (len(achieved), 1)):
            raise ValueError(
                f"the env's compute_reward returned shape {rewards.shape} for {len(achieved)} goals; it must be "
                "vectorised over the first axis (one reward per goal)"
            )
        if not np.isfinite(rewards).all():  # caught here, before a NaN reward reaches the critics' targets
            bad = int(np.flatnonzero(~np.isfinite(rewards.reshape(-1)))[0])
            raise ValueError(
                f"the env's compute_reward returned a non-finite reward ({rewards.reshape(-1)[bad]}) for a "
                f"relabelled goal (achieved_goal={achieved[bad].tolist()}, desired_goal={desired[bad].tolist()}); "
                "rewards must be finite float32 values"
            )
        return rewards.reshape(len(achieved))

    # ------------------------------------------------------------------ persistence
    def _saved_rows(self) -> np.ndarray:
        filled = np.where(self._env_full, self.n_slots, self._env_pos)
        return np.concatenate([env * self.n_slots + np.arange(n) for env, n in enumerate(filled.tolist())])

    def _meta(self) -> dict:
        meta = super()._meta()
        meta.update(
            n_slots=self.n_slots,
            env_pos=self._env_pos.tolist(),
            env_full=self._env_full.tolist(),
            current_ep_start=self._current_ep_start.tolist(),
            current_ep_length=self._current_ep_length.tolist(),
            copy_info_dict=self.copy_info_dict,
        )
        return meta

    def _extra_arrays(self) -> dict[str, np.ndarray]:
        rows = self._saved_rows()
        arrays = {"ep_start": self.ep_start[rows], "ep_length": self.ep_length[rows]}
        if self.infos is not None:
            try:
                text = json.dumps([self.infos[row] for row in rows.tolist()], default=_json_value)
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"copy_info_dict=True: the stored info dicts must be JSON-serialisable to be saved ({exc})"
                ) from exc
            arrays["infos"] = np.frombuffer(text.encode(), dtype=np.uint8)
        return arrays

    def _allowed_members(self) -> set[str]:
        return super()._allowed_members() | {"ep_start.npy", "ep_length.npy", "infos.npy"}

    def _check_positions(self, meta: dict, archive: ZipReader):  # noqa: ANN202
        state = check_her_state(meta, n_envs=self.n_envs, n_slots=self.n_slots)
        rows = np.concatenate(
            [env * self.n_slots + np.arange(n) for env, n in enumerate(state["filled"].tolist())]
        ).astype(np.int64)
        ep_start = read_npy_member(archive, "ep_start", np.int64, (len(rows),))
        ep_length = read_npy_member(archive, "ep_length", np.int64, (len(rows),))
        check_her_episodes(rows, ep_start, ep_length, state, self.n_slots)
        infos = None
        if self.copy_info_dict:
            if meta.get("copy_info_dict") is not True:
                raise ModelFileError("the replay buffer file holds no info dicts; this buffer has copy_info_dict=True")
            raw = read_npy_member(archive, "infos", np.uint8, None, max_items=MAX_INFOS_BYTES)
            infos = parse_json(raw.tobytes(), "replay buffer infos", MAX_INFOS_BYTES)
            if not isinstance(infos, list) or len(infos) != len(rows) or not all(isinstance(i, dict) for i in infos):
                raise ModelFileError(f"replay buffer infos must be a list of {len(rows)} dicts")

        def restore() -> None:
            self.ep_start[:] = 0
            self.ep_length[:] = 0
            self.ep_start[rows] = ep_start
            self.ep_length[rows] = ep_length
            if infos is not None:
                for row, info in zip(rows.tolist(), infos):
                    self.infos[row] = info
            self._env_pos = state["env_pos"]
            self._env_full = state["env_full"]
            self._current_ep_start = state["current_ep_start"]
            self._current_ep_length = state["current_ep_length"]
            self.pos = int(self._env_pos.max())
            self.full = bool(self._env_full.all())
            self._valid_rows = None

        return rows, restore

    def __repr__(self) -> str:
        return (
            f"HerReplayBuffer(size={self.size()}, buffer_size={self.buffer_size}, n_envs={self.n_envs}, "
            f"n_sampled_goal={self.n_sampled_goal}, goal_selection_strategy={self.goal_selection_strategy.name})"
        )


def per_env_infos(infos: dict[str, Any], n_envs: int) -> list[dict[str, Any]]:
    """A gymnasium vector env's ``infos`` (``{key: array}`` with ``"_key"`` masks) as one dict per env, as
    ``compute_reward`` receives them with ``copy_info_dict=True``."""
    per_env: list[dict[str, Any]] = [{} for _ in range(n_envs)]
    for key, values in infos.items():
        if key.startswith("_"):
            continue
        present = infos.get(f"_{key}")
        nested = per_env_infos(values, n_envs) if isinstance(values, dict) else None
        for i in range(n_envs):
            if present is None or present[i]:
                per_env[i][key] = nested[i] if nested is not None else values[i]
    return per_env


def _strategy(value: Any) -> GoalSelectionStrategy:
    return goal_selection_strategy(value)


def _json_value(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


# ---------------------------------------------------------------------------- checks of a HER buffer file
def check_her_state(meta: dict[str, Any], *, n_envs: int, n_slots: int) -> dict[str, np.ndarray]:
    """The per-env rings and running episodes of a `HerReplayBuffer` file (same ``n_envs`` and ring length as
    the buffer); returns them as arrays, with ``filled`` (the filled rows of each ring)."""
    try:
        file_envs, file_slots = meta["n_envs"], meta["n_slots"]
        lists = {key: meta[key] for key in ("env_pos", "env_full", "current_ep_start", "current_ep_length")}
    except KeyError as exc:
        raise ModelFileError(f"the replay buffer file's meta lacks {exc}") from exc
    if file_envs != n_envs or file_slots != n_slots:
        raise ModelFileError(
            f"replay buffer file has n_envs={file_envs!r} rings of {file_slots!r} rows; this buffer has "
            f"n_envs={n_envs} rings of {n_slots} rows"
        )
    for key, value in lists.items():
        if not isinstance(value, list) or len(value) != n_envs:
            raise ModelFileError(f"replay buffer {key} must be a list of {n_envs} entries")
    for e in range(n_envs):
        pos = _int(f"replay buffer env_pos[{e}]", lists["env_pos"][e], 0, n_slots - 1)
        start = _int(f"replay buffer current_ep_start[{e}]", lists["current_ep_start"][e], 0, n_slots - 1)
        length = _int(f"replay buffer current_ep_length[{e}]", lists["current_ep_length"][e], 0, n_slots)
        full = lists["env_full"][e]
        if not isinstance(full, bool):
            raise ModelFileError(f"replay buffer env_full[{e}] must be a bool")
        if (start + length) % n_slots != pos or (not full and start + length != pos):
            raise ModelFileError(
                f"replay buffer ring {e} is inconsistent: pos={pos}, full={full}, running episode of {length} "
                f"rows from {start}"
            )
    state = {key: np.asarray(value, dtype=bool if key == "env_full" else np.int64) for key, value in lists.items()}
    state["filled"] = np.where(state["env_full"], n_slots, state["env_pos"])
    if meta["size"] != int(state["filled"].sum()) or meta["full"] != bool(state["env_full"].all()):
        raise ModelFileError(f"replay buffer size={meta['size']!r}, full={meta['full']!r} disagree with its rings")
    return state


def check_her_episodes(
    rows: np.ndarray, ep_start: np.ndarray, ep_length: np.ndarray, state: dict[str, Any], n_slots: int
) -> None:
    """The episode bookkeeping of a `HerReplayBuffer` file: every ended episode lies in filled rows of one ring,
    its first and last rows agree on where it starts and how long it is, and no row of a running episode is
    marked as ended (so every goal the buffer can draw comes from a stored step of the same episode).

    Raises:
        ModelFileError: naming what is inconsistent.
    """
    if np.any(ep_start < 0) or np.any(ep_start >= n_slots) or np.any(ep_length < 0) or np.any(ep_length > n_slots):
        raise ModelFileError(f"replay buffer ep_start must be in [0, {n_slots}) and ep_length in [0, {n_slots}]")
    env, slot = rows // n_slots, rows % n_slots
    ended = ep_length > 0
    offset = (slot - ep_start) % n_slots
    pos, full = state["env_pos"][env], state["env_full"][env]
    # In a ring that has not wrapped, the filled slots are [0, pos): an episode must not wrap.
    if np.any(ended & ((offset >= ep_length) | (~full & (ep_start + ep_length > pos)))):
        raise ModelFileError("replay buffer episodes must cover their own rows within the filled part of the ring")
    index = np.full(len(state["env_pos"]) * n_slots, -1, dtype=np.int64)
    index[rows] = np.arange(len(rows))
    for edge in (ep_start, ep_start + ep_length - 1):
        other = index[env * n_slots + edge % n_slots]
        if np.any(ended & ((other < 0) | (ep_start[other] != ep_start) | (ep_length[other] != ep_length))):
            raise ModelFileError("replay buffer episodes must start and end with rows of the same episode")
    cur_start, cur_len = state["current_ep_start"][env], state["current_ep_length"][env]
    if np.any(ended & ((slot - cur_start) % n_slots < cur_len)):
        raise ModelFileError("replay buffer rows of a running episode must not be marked as ended")

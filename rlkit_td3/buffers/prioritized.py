"""Prioritized replay: proportional PER (Schaul et al. 2016) and LAP (Fujimoto, Meger and Precup 2020).

Both sample row ``i`` with probability ``P(i) = p_i / sum_j p_j`` from a sum-tree kept in NumPy (float64): a
complete binary tree whose leaves are the rows' priorities and whose inner nodes hold the sums of their children.
Updating ``k`` leaves costs ``O(k log n)``; a batch is drawn by stratified sampling (one uniform draw in each of
``batch_size`` equal slices of the total), walked down the tree for the whole batch at once.

Proportional PER (Schaul et al. 2016, "Prioritized Experience Replay", ICLR, section 3.3 and Algorithm 1):
``p_i = (|delta_i| + epsilon) ** alpha``; new transitions get the largest priority seen so far; the critic loss is
weighted by importance weights ``w_i = (N P(i)) ** -beta / max_j w_j`` (max over the sampled batch), ``beta``
annealed linearly from ``beta`` to ``beta_final`` over training.

LAP, loss-adjusted prioritized replay (Fujimoto et al. 2020, "An Equivalence between Loss Functions and Non-Uniform
Sampling in Experience Replay", NeurIPS, section 5): ``p_i = max(|delta_i|, 1) ** alpha`` (the minimum priority
is 1) and, instead of importance weights, the critic loss is a Huber loss with threshold 1 applied uniformly to the
sampled batch: ``0.5 delta^2`` where ``|delta| < 1``, ``|delta|`` elsewhere (as in the authors' code; its gradient is
the standard Huber loss's). With several critics, ``|delta_i|`` is the largest over the critics (as in the authors'
TD3 code).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch
from gymnasium import spaces

from rlkit_td3.buffers.n_step import NStepReplayBuffer
from rlkit_td3.buffers.replay_buffer import normalize_samples
from rlkit_td3.checks.state import MAX_BUFFER_META_BYTES
from rlkit_td3.fileio.file_reader import ZipReader, parse_json, read_npy_member
from rlkit_td3.fileio.serialization import ModelFileError

PRIORITIZATIONS = ("proportional", "lap")


class PrioritizedReplayBufferSamples(NamedTuple):
    """A prioritized batch: the n-step fields, the importance ``weights`` (``None`` for LAP, whose loss is
    unweighted) and the sampled rows ``indices`` (a NumPy array) for the priority update."""

    observations: torch.Tensor
    actions: torch.Tensor
    next_observations: torch.Tensor
    rewards: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    discounts: torch.Tensor
    weights: torch.Tensor | None
    indices: np.ndarray

    @property
    def dones(self) -> torch.Tensor:
        """SB3's ``dones`` of a sample: 1 where the window's last transition terminated."""
        return self.terminated


class SumTree:
    """Sums of non-negative leaf values in a complete binary tree stored in one float64 array.

    Node 1 is the root, node ``i`` has children ``2i`` and ``2i + 1``, leaf ``j`` is node ``capacity + j``.
    Each inner node is recomputed from its two children (never updated by differences), so the tree is a
    function of its leaves: rebuilding it from saved leaves gives the same bits.
    """

    def __init__(self, n_leaves: int) -> None:
        self.capacity = 1 << max(int(n_leaves) - 1, 1).bit_length()
        self.n_leaves = int(n_leaves)
        self.nodes = np.zeros(2 * self.capacity, dtype=np.float64)

    @property
    def leaves(self) -> np.ndarray:
        """A writable view of the leaves (call `rebuild()` after writing to it)."""
        return self.nodes[self.capacity : self.capacity + self.n_leaves]

    @property
    def total(self) -> float:
        """The sum of all leaves (the root)."""
        return float(self.nodes[1])

    def update(self, leaves: np.ndarray, values: np.ndarray) -> None:
        """Set ``leaves`` to ``values`` and recompute their ancestors, one level at a time (O(k log n))."""
        nodes = self.nodes
        idx = np.asarray(leaves, dtype=np.int64) + self.capacity
        nodes[idx] = values
        if len(idx) <= 8:  # a few leaves (an env step): walking up one by one is cheaper than array operations
            for node in idx.tolist():
                node >>= 1
                while node:
                    nodes[node] = nodes[2 * node] + nodes[2 * node + 1]
                    node >>= 1
            return
        idx = np.unique(idx)  # sorted: each level's parents then come sorted, equal ones side by side
        keep = np.ones(len(idx), dtype=bool)
        while True:
            idx = idx >> 1
            if len(idx) > 1:
                np.not_equal(idx[1:], idx[:-1], out=keep[1 : len(idx)])
                idx = idx[keep[: len(idx)]]
            if len(idx) == 1:  # one common ancestor: the rest of the way up is a single path
                node = int(idx[0])
                while node:
                    nodes[node] = nodes[2 * node] + nodes[2 * node + 1]
                    node >>= 1
                return
            nodes[idx] = nodes[2 * idx] + nodes[2 * idx + 1]
            if idx[0] == 1:
                return

    def rebuild(self) -> None:
        """Recompute every inner node from the leaves."""
        nodes, width = self.nodes, self.capacity
        while width > 1:
            parents = np.arange(width // 2, width)
            nodes[parents] = nodes[2 * parents] + nodes[2 * parents + 1]
            width //= 2

    def find(self, targets: np.ndarray) -> np.ndarray:
        """For each target in ``[0, total)``, the leaf whose cumulative range holds it (never a zero leaf)."""
        nodes = self.nodes
        # every walk goes left while the right subtree is empty (a buffer not yet full): start below those levels
        start = 1
        while start < self.capacity and nodes[2 * start + 1] == 0.0 and nodes[2 * start] > 0.0:
            start *= 2
        idx = np.full(len(targets), start, dtype=np.int64)
        u = np.asarray(targets, dtype=np.float64).copy()
        while idx[0] < self.capacity:
            left = 2 * idx
            left_sum = nodes[left]
            # go right past the left subtree's mass, unless rounding would lead into an empty subtree
            right = ((u >= left_sum) & (nodes[left + 1] > 0.0)) | (left_sum <= 0.0)
            u = np.where(right, u - left_sum, u)
            idx = left + right
        return idx - self.capacity


class PrioritizedReplayBuffer(NStepReplayBuffer):
    """Replay buffer sampling transitions in proportion to their priority (PER or LAP, see the module's notes).

    Args:
        buffer_size: capacity in transitions (over all envs together).
        observation_space: one env's observation space (Box, Discrete, MultiDiscrete or MultiBinary).
        action_space: Box space of one env's actions.
        device: where sampled batches are put.
        n_envs: the number of envs feeding the buffer.
        seed: seed of the sampling generator.
        optimize_memory_usage: the memory-optimized layout of `ReplayBuffer`.
        n_steps: n-step returns as in `NStepReplayBuffer` (default 1: one-step samples).
        gamma: discount used for n-step returns; the model passes its own.
        alpha: priority exponent (0 samples uniformly). PER's paper uses 0.6, LAP's 0.4.
        beta: importance-sampling exponent at the start of training (PER only).
        beta_final: importance-sampling exponent at the end of training, reached linearly (PER only).
        epsilon: added to ``|delta|`` so no transition's priority is 0 (PER only).
        prioritization: ``"proportional"`` (PER) or ``"lap"`` (priorities ``max(|delta|, 1) ** alpha`` and an
            unweighted Huber critic loss).
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
        n_steps: int = 1,
        gamma: float = 0.99,
        alpha: float = 0.6,
        beta: float = 0.4,
        beta_final: float = 1.0,
        epsilon: float = 1e-6,
        prioritization: str = "proportional",
        handle_timeout_termination: bool = True,
    ) -> None:
        for name, value in (("alpha", alpha), ("beta", beta), ("beta_final", beta_final), ("epsilon", epsilon)):
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
                raise TypeError(f"{name} must be a float, got {value!r}")
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite float >= 0, got {value!r}")
        if prioritization not in PRIORITIZATIONS:
            raise ValueError(f"prioritization must be one of {PRIORITIZATIONS}, got {prioritization!r}")
        self.alpha, self.beta, self.beta_final = float(alpha), float(beta), float(beta_final)
        self.epsilon = float(epsilon)
        self.prioritization = prioritization
        super().__init__(
            buffer_size,
            observation_space,
            action_space,
            device,
            n_envs,
            seed,
            optimize_memory_usage,
            n_steps,
            gamma,
            handle_timeout_termination=handle_timeout_termination,
        )
        self.tree = SumTree(len(self.rewards))
        self.max_priority = 1.0
        self.progress = 0.0

    def _arrays(self) -> dict[str, np.ndarray]:
        arrays = super()._arrays()
        if hasattr(self, "tree"):
            arrays["priorities"] = self.tree.leaves
        return arrays

    @property
    def nbytes(self) -> int:
        """Bytes held by the storage, the sum-tree's inner nodes included."""
        return super().nbytes + self.tree.nodes.nbytes - self.tree.leaves.nbytes

    @property
    def current_beta(self) -> float:
        """β at the current training progress (``beta`` at 0, ``beta_final`` at 1)."""
        return self.beta + (self.beta_final - self.beta) * self.progress

    def set_progress(self, progress: float) -> None:
        """Tell the buffer how far training is, from 0 (start) to 1 (end); the model calls it in ``train``."""
        self.progress = min(max(float(progress), 0.0), 1.0)

    # ------------------------------------------------------------------ add / sample
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
        """Store transitions like `ReplayBuffer.add` (SB3's ``done, infos`` too); each new one gets the largest
        priority seen so far."""
        k = len(reward)
        if k == 0 or k > self.n_envs:
            super().add(obs, next_obs, action, reward, terminated, truncated, env_indices)
            return
        _, rows, overwritten = self._rows_to_write(k, env_indices)
        super().add(obs, next_obs, action, reward, terminated, truncated, env_indices)
        values = np.zeros(len(overwritten))
        values[: len(rows)] = self.max_priority
        # (memory-optimized layout: the rows after the new ones now hold next observations, not transitions)
        self.tree.update(overwritten[::-1], values[::-1])

    def sample(self, batch_size: int, env: Any = None) -> PrioritizedReplayBufferSamples:
        """Draw ``batch_size`` transitions with probability proportional to priority (stratified); ``env`` (a
        `VecNormalize`) normalises the batch as in `ReplayBuffer.sample`.

        With ``alpha=0`` (PER) every priority is 1 and the draw is the uniform buffer's, from the same generator,
        with importance weights of 1: training then equals training with the uniform buffer bit for bit.
        """
        if env is not None:
            return normalize_samples(self.sample(batch_size), env)
        size = self.size()
        if size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size!r}")
        if self.alpha == 0.0 and self.prioritization == "proportional":
            # every priority is 1: the uniform buffer's draws, so training equals it bit for bit
            rows = self._uniform_rows(size, batch_size)
            weights = torch.ones(batch_size, device=self.device)
            return PrioritizedReplayBufferSamples(*self._get_samples(rows), weights=weights, indices=rows)
        total = self.tree.total
        targets = (np.arange(batch_size) + self._rng.random(batch_size)) * (total / batch_size)
        rows = self.tree.find(np.minimum(targets, np.nextafter(total, 0.0)))
        weights = None
        if self.prioritization == "proportional":
            probs = self.tree.nodes[rows + self.tree.capacity] / total
            w = (size * probs) ** -self.current_beta
            weights = torch.from_numpy((w / w.max()).astype(np.float32)).to(self.device, non_blocking=True)
        return PrioritizedReplayBufferSamples(*self._get_samples(rows), weights=weights, indices=rows)

    def priorities_from_errors(self, abs_td_errors: np.ndarray) -> np.ndarray:
        """The priorities (float64) for absolute TD errors: ``(|d| + eps) ** alpha`` or ``max(|d|, 1) ** alpha``."""
        errors = np.asarray(abs_td_errors, dtype=np.float64)
        if self.prioritization == "lap":
            return np.maximum(errors, 1.0) ** self.alpha
        return (errors + self.epsilon) ** self.alpha

    def update_priorities(self, indices: np.ndarray, abs_td_errors: np.ndarray) -> None:
        """Set the priorities of the rows ``indices`` from their absolute TD errors."""
        priorities = self.priorities_from_errors(abs_td_errors)
        if not np.all(np.isfinite(priorities)):
            raise ValueError("update_priorities got non-finite TD errors")
        self.tree.update(indices, priorities)
        self.max_priority = max(self.max_priority, float(priorities.max()))

    def reset_max_priority(self) -> None:
        """Set the priority new transitions get (the largest seen so far) to the largest priority now stored, as
        TD7 does at each target refresh (Fujimoto et al. 2023); nothing happens while the buffer is empty."""
        if self.size() > 0:
            self.max_priority = float(self.tree.leaves.max())

    def critic_loss(
        self, batch: PrioritizedReplayBufferSamples, current_q: torch.Tensor, target_q: torch.Tensor
    ) -> torch.Tensor:
        """The critic loss for a prioritized batch, summed over critics; updates the batch's priorities.

        ``current_q`` has shape ``(n_critics, batch)``, ``target_q`` ``(batch,)``. PER: importance-weighted
        squared errors; LAP: unweighted Huber (threshold 1). The new priorities use the largest ``|delta|`` over
        the critics, read from the device once.
        """
        delta = current_q - target_q
        abs_delta = delta.abs()
        errors = abs_delta.detach().amax(dim=0).cpu().numpy()
        if not np.all(np.isfinite(errors)):
            # keep the tree finite; the non-finite loss itself is reported by the model's check after the update
            errors = np.where(np.isfinite(errors), errors, 0.0)
        self.update_priorities(batch.indices, errors)
        if batch.weights is None:
            return torch.where(abs_delta < 1.0, 0.5 * delta.pow(2), abs_delta).mean(dim=1).sum()
        return (batch.weights * delta.pow(2)).mean(dim=1).sum()

    # ------------------------------------------------------------------ persistence
    def _extra_meta(self) -> dict:
        return {**super()._extra_meta(), "max_priority": self.max_priority, "progress": self.progress}

    def _load_checked(self, archive: ZipReader) -> None:
        raw = read_npy_member(archive, "meta", np.uint8, None, max_items=MAX_BUFFER_META_BYTES)
        meta = parse_json(raw.tobytes(), "replay buffer meta", MAX_BUFFER_META_BYTES)
        if not isinstance(meta, dict):
            raise ModelFileError("the replay buffer file's meta is not a JSON object")
        max_priority, progress = meta.get("max_priority"), meta.get("progress")
        for key, value, low, high in (("max_priority", max_priority, 0.0, np.inf), ("progress", progress, 0.0, 1.0)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
                raise ModelFileError(f"replay buffer {key} must be a number in [{low}, {high}], got {value!r}")
        leaves = read_npy_member(archive, "priorities", np.float64, None, max_items=len(self.rewards))
        if not np.all(np.isfinite(leaves)) or np.any(leaves < 0) or np.any(leaves > max_priority):
            raise ModelFileError("replay buffer priorities must be finite, >= 0 and <= max_priority")
        # the tree is rebuilt from the loaded rows alone: rows the file does not fill get priority 0 (never drawn)
        previous = self.tree.leaves.copy()
        self.tree.leaves[:] = 0.0
        try:
            super()._load_checked(archive)
        except BaseException:
            self.tree.leaves[:] = previous
            raise
        self.tree.rebuild()
        self.max_priority, self.progress = float(max_priority), float(progress)


class LAPReplayBuffer(PrioritizedReplayBuffer):
    """`PrioritizedReplayBuffer` with LAP's settings (Fujimoto et al. 2020): ``prioritization="lap"``, ``alpha=0.4``.

    Args:
        buffer_size: capacity in transitions (over all envs together).
        observation_space: one env's observation space (Box, Discrete, MultiDiscrete or MultiBinary).
        action_space: Box space of one env's actions.
        device: where sampled batches are put.
        n_envs: the number of envs feeding the buffer.
        seed: seed of the sampling generator.
        optimize_memory_usage: the memory-optimized layout of `ReplayBuffer`.
        n_steps: n-step returns as in `NStepReplayBuffer` (default 1).
        gamma: discount used for n-step returns; the model passes its own.
        alpha: priority exponent (LAP's paper: 0.4).
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
        n_steps: int = 1,
        gamma: float = 0.99,
        alpha: float = 0.4,
        handle_timeout_termination: bool = True,
    ) -> None:
        super().__init__(
            buffer_size,
            observation_space,
            action_space,
            device,
            n_envs,
            seed,
            optimize_memory_usage,
            n_steps,
            gamma,
            alpha=alpha,
            prioritization="lap",
            handle_timeout_termination=handle_timeout_termination,
        )

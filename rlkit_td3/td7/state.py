"""TD7's own training state, as components of the state protocol (``state_dict`` / ``check_state`` /
``load_state_dict``; see the Architecture page), saved with a model's training state under their names.

- `ValueBounds` (``value_bounds``): the clipped value targets' bounds (Fujimoto et al. 2023): the
  smallest and largest target seen since the last target refresh, and the bounds in use until the next.
- `CheckpointSchedule` (``policy_checkpoints``): where the policy checkpoints stand: the episodes
  and steps since the current policy was last trained, its minimum return so far, the checkpoint's, and how many
  episodes a policy is held for.
"""

from __future__ import annotations

from typing import Any

from rlkit_td3.checks.state import _int, _number
from rlkit_td3.fileio.serialization import ModelFileError

INITIAL_LOW, INITIAL_HIGH = 1e8, -1e8
"""The reference's starting values of the running minimum and maximum (any target replaces them)."""

MAX_EPISODES_HELD = 10**6
"""Largest number of episodes a saved checkpoint schedule may hold a policy for."""


def _check_keys(entry: str, state: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(state, dict):
        raise ModelFileError(f"training_state.{entry} must be a dict, got {type(state).__name__}")
    if set(state) != set(keys):
        raise ModelFileError(f"training_state.{entry} must hold exactly {sorted(keys)}, got {sorted(map(str, state))}")
    return state


class ValueBounds:
    """The bounds of TD7's clipped value targets.

    ``low`` / ``high``: the smallest and largest target computed since the last target refresh; ``low_target`` /
    ``high_target``: the bounds next-state values are clipped to, set from ``low`` / ``high`` at each refresh
    (both 0 before the first, as in the authors' code).
    """

    keys = ("low", "high", "low_target", "high_target")

    def __init__(self) -> None:
        self.low, self.high = INITIAL_LOW, INITIAL_HIGH
        self.low_target = self.high_target = 0.0

    def observe(self, low: float, high: float) -> None:
        """Widen the running bounds to hold ``[low, high]`` (this update's targets)."""
        self.low, self.high = min(self.low, low), max(self.high, high)

    def refresh(self) -> None:
        """At a target refresh: clip with the bounds seen so far from now on."""
        self.low_target, self.high_target = self.low, self.high

    def state_dict(self) -> dict[str, float]:
        """The four bounds, as JSON numbers."""
        return {key: float(getattr(self, key)) for key in self.keys}

    def check_state(self, state: Any) -> None:
        """Refuse a state that is not four finite numbers with ``low_target <= high_target``."""
        state = _check_keys("value_bounds", state, self.keys)
        for key in self.keys:
            _number(f"training_state.value_bounds.{key}", state[key])
        if state["low_target"] > state["high_target"]:
            raise ModelFileError(
                f"training_state.value_bounds: low_target={state['low_target']!r} is above "
                f"high_target={state['high_target']!r}"
            )

    def load_state_dict(self, state: Any) -> None:
        """Check the state (`check_state`), then restore it."""
        self.check_state(state)
        for key in self.keys:
            setattr(self, key, float(state[key]))


class CheckpointSchedule:
    """Where TD7's policy checkpoints stand (the authors' ``maybe_train_and_checkpoint`` bookkeeping).

    Args:
        max_episodes: episodes a policy is held for once checkpointing is fully on.
        reset_weight: factor of the checkpoint's minimum return when that happens.
    """

    keys = (
        "episodes",
        "timesteps",
        "episodes_before_update",
        "min_return",
        "best_min_return",
        "episodes_seen",
    )

    def __init__(self, max_episodes: int, reset_weight: float) -> None:
        self.max_episodes = max_episodes
        self.reset_weight = reset_weight
        self.episodes = 0  # episodes of the current policy so far
        self.timesteps = 0  # transitions collected since the last training (the next batch's gradient steps)
        self.episodes_before_update = 1  # episodes a policy is held for now (1 until steps_before_checkpointing)
        self.min_return = INITIAL_LOW
        self.best_min_return = INITIAL_HIGH
        self.episodes_seen = 0  # the model's episode count when the schedule last looked

    def end_episode(self, episode_return: float) -> str | None:
        """Count an ended episode of the current policy; return ``"checkpoint"`` (the policy is kept and trained),
        ``"train"`` (it is dropped early, its minimum return being below the checkpoint's, and trained) or None
        (it is held for more episodes)."""
        self.episodes += 1
        self.min_return = min(self.min_return, float(episode_return))
        if self.min_return < self.best_min_return:
            return "train"
        if self.episodes == self.episodes_before_update:
            self.best_min_return = self.min_return
            return "checkpoint"
        return None

    def start_full_checkpointing(self) -> None:
        """From ``steps_before_checkpointing`` updates on: hold policies for ``max_episodes`` episodes, and lower
        the checkpoint's minimum return by ``reset_weight`` so that a new policy can replace it."""
        self.best_min_return *= self.reset_weight
        self.episodes_before_update = self.max_episodes

    def reset(self) -> None:
        """After the batch training: a new policy starts its evaluation."""
        self.episodes = self.timesteps = 0
        self.min_return = INITIAL_LOW

    def state_dict(self) -> dict[str, Any]:
        """The schedule's counters and returns, as JSON values."""
        return {key: getattr(self, key) for key in self.keys}

    def check_state(self, state: Any) -> None:
        """Refuse counters that are not non-negative ints (the episodes held in [1, `MAX_EPISODES_HELD`]) or
        returns that are not finite numbers."""
        state = _check_keys("policy_checkpoints", state, self.keys)
        for key in ("episodes", "timesteps", "episodes_seen"):
            _int(f"training_state.policy_checkpoints.{key}", state[key])
        _int(
            "training_state.policy_checkpoints.episodes_before_update",
            state["episodes_before_update"],
            1,
            MAX_EPISODES_HELD,
        )
        if state["episodes"] > state["episodes_before_update"]:
            raise ModelFileError(
                f"training_state.policy_checkpoints: episodes={state['episodes']!r} is above "
                f"episodes_before_update={state['episodes_before_update']!r}"
            )
        for key in ("min_return", "best_min_return"):
            _number(f"training_state.policy_checkpoints.{key}", state[key])

    def load_state_dict(self, state: Any) -> None:
        """Check the state (`check_state`), then restore it."""
        self.check_state(state)
        for key in ("episodes", "timesteps", "episodes_before_update", "episodes_seen"):
            setattr(self, key, int(state[key]))
        self.min_return, self.best_min_return = float(state["min_return"]), float(state["best_min_return"])

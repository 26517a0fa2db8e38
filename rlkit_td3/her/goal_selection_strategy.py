"""Goal selection strategies of Hindsight Experience Replay (Andrychowicz et al. 2017, section 4.5)."""

from __future__ import annotations

from enum import IntEnum


class GoalSelectionStrategy(IntEnum):
    """Where a relabelled transition's new goal comes from (Stable-Baselines3's names and values).

    All three take the goal among the goals *achieved* in the transition's own episode, read from the next
    observation's ``achieved_goal`` of a transition of that episode.
    """

    FUTURE = 0
    """A goal achieved at this transition or a later one of the episode (inclusive, as in Stable-Baselines3)."""
    FINAL = 1
    """The goal achieved at the episode's last transition."""
    EPISODE = 2
    """A goal achieved at any transition of the episode."""


KEY_TO_GOAL_STRATEGY: dict[str, GoalSelectionStrategy] = {
    "future": GoalSelectionStrategy.FUTURE,
    "final": GoalSelectionStrategy.FINAL,
    "episode": GoalSelectionStrategy.EPISODE,
}
"""The strategies by their string names (case-insensitive where accepted)."""


def goal_selection_strategy(value: GoalSelectionStrategy | str | int) -> GoalSelectionStrategy:
    """The strategy named by ``value``: a `GoalSelectionStrategy`, its name (``"future"``, ``"final"``,
    ``"episode"``, any case) or its int value (how a saved model's settings store it).

    Raises:
        ValueError: ``value`` names no strategy.
    """
    if isinstance(value, str):
        strategy = KEY_TO_GOAL_STRATEGY.get(value.lower())
        if strategy is not None:
            return strategy
    elif isinstance(value, int) and not isinstance(value, bool) and value in set(GoalSelectionStrategy):
        return GoalSelectionStrategy(value)
    raise ValueError(
        f"goal_selection_strategy must be one of {list(KEY_TO_GOAL_STRATEGY)} or a GoalSelectionStrategy, got {value!r}"
    )

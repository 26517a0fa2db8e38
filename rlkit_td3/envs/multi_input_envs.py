"""`SimpleMultiObsEnv`: a small grid world observed through a vector and an image (Stable-Baselines3's
``common.envs`` name), for testing Dict-observation set-ups (``MultiInputPolicy``)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

VEC_SIZE = 5
IMG_SIDE = 64


class SimpleMultiObsEnv(gym.Env):
    """Walk a ``num_row`` x ``num_col`` grid from a start cell to the bottom-right cell.

    Each cell has a fixed look: a vector in ``Box(0, 1, (5,), float64)`` and a grey uint8 image of 64 x 64 pixels
    (one channel, last or first); the observation is ``{"vec": ..., "img": ...}`` of the agent's cell. Actions
    move left, down, right or up (``Discrete(4)``, or with ``discrete_actions=False`` a ``Box(0, 1, (4,))``
    whose largest component is the move); a move into the border stays put. Reaching the goal gives reward 1
    and terminates; any other step gives -0.1; episodes are truncated after 100 steps.

    Args:
        num_col: grid columns.
        num_row: grid rows.
        random_start: start in a random cell other than the goal (else the top-left cell).
        discrete_actions: ``Discrete(4)`` actions, or a Box.
        channel_last: image shape ``(64, 64, 1)`` (True) or ``(1, 64, 64)``.
    """

    metadata: dict[str, Any] = {"render_modes": ["human"]}

    def __init__(
        self,
        num_col: int = 4,
        num_row: int = 4,
        random_start: bool = True,
        discrete_actions: bool = True,
        channel_last: bool = True,
    ) -> None:
        if num_col < 1 or num_row < 1 or num_col * num_row < 2:
            raise ValueError(f"the grid must have at least two cells, got num_col={num_col}, num_row={num_row}")
        self.num_col, self.num_row = int(num_col), int(num_row)
        self.random_start = random_start
        self.discrete_actions = discrete_actions
        img_shape = (IMG_SIDE, IMG_SIDE, 1) if channel_last else (1, IMG_SIDE, IMG_SIDE)
        self.observation_space = spaces.Dict(
            {
                "vec": spaces.Box(0.0, 1.0, (VEC_SIZE,), np.float64),
                "img": spaces.Box(0, 255, img_shape, np.uint8),
            }
        )
        self.action_space = spaces.Discrete(4) if discrete_actions else spaces.Box(0.0, 1.0, (4,), np.float32)
        n = self.num_col * self.num_row
        self.goal = n - 1
        cells = np.arange(n)
        # each cell's look: a fixed vector pattern and a grey level growing towards the goal
        self._vecs = ((cells[:, None] + 1) * (np.arange(VEC_SIZE) + 1) % 7) / 6.0
        self._greys = (cells * 255 // (n - 1)).astype(np.uint8)
        self._img_shape = img_shape
        self.max_count = 100
        self.count = 0
        self.state = 0

    def _obs(self) -> dict[str, np.ndarray]:
        return {
            "vec": self._vecs[self.state].copy(),
            "img": np.full(self._img_shape, self._greys[self.state], dtype=np.uint8),
        }

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.count = 0
        self.state = int(self.np_random.integers(0, self.goal)) if self.random_start else 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        move = int(np.argmax(action)) if not self.discrete_actions else int(np.asarray(action).reshape(()))
        row, col = divmod(self.state, self.num_col)
        if move == 0:
            col = max(col - 1, 0)
        elif move == 1:
            row = min(row + 1, self.num_row - 1)
        elif move == 2:
            col = min(col + 1, self.num_col - 1)
        elif move == 3:
            row = max(row - 1, 0)
        else:
            raise ValueError(f"action must be in 0..3, got {action!r}")
        self.state = row * self.num_col + col
        self.count += 1
        reached = self.state == self.goal
        return self._obs(), 1.0 if reached else -0.1, reached, self.count >= self.max_count and not reached, {}

    def render(self) -> None:
        grid = np.full((self.num_row, self.num_col), ".")
        grid.flat[self.goal] = "G"
        grid.flat[self.state] = "A"
        print("\n".join("".join(row) for row in grid))

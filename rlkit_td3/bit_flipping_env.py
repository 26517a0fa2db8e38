"""``BitFlippingEnv``: the classic goal-conditioned test task for HER (Andrychowicz et al. 2017, §4.1).

``n_bits`` bits start at random values; the goal is all ones. Each step flips the bits whose action component is
positive. The reward is sparse: 0 when the bits equal the goal (which ends the episode by termination), else -1;
episodes are cut (truncated) after ``max_steps`` steps. Without hindsight relabelling a random policy almost never
sees a reward of 0 for ``n_bits`` beyond ~10, which is what makes the task a test of HER.

SB3 ships the same task as ``stable_baselines3.common.envs.BitFlippingEnv``; this one has its constructor's
arguments, with the differences TD3/DDPG imply: actions are continuous (a Box, ``continuous=True`` by default) and
the three observation keys are float32 Boxes in [0, 1] (SB3's default is ``MultiBinary``), since the policies take
Box spaces. ``discrete_obs_space`` and ``image_obs_space`` are not supported.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rlkit_td3.checks import check_bool


class BitFlippingEnv(gym.Env):
    """Flip ``n_bits`` bits until they are all ones; a goal env with ``compute_reward`` for HER.

    Args:
        n_bits: number of bits (at least 1).
        continuous: must be True (TD3 and DDPG act in Box spaces; bits flip where the action is positive).
        max_steps: steps per episode before truncation; ``None`` means ``n_bits``.
        discrete_obs_space: must be False (SB3 option not supported here).
        image_obs_space: must be False (SB3 option not supported here).
        channel_first: accepted for SB3 compatibility; unused without image observations.
        render_mode: ``None`` or ``"human"`` (prints the bits).

    Raises:
        ValueError: an argument outside what is listed above, naming it and its value.
    """

    metadata: dict[str, Any] = {"render_modes": ["human"]}

    def __init__(
        self,
        n_bits: int = 10,
        continuous: bool = True,
        max_steps: int | None = None,
        discrete_obs_space: bool = False,
        image_obs_space: bool = False,
        channel_first: bool = True,
        render_mode: str | None = None,
    ) -> None:
        if isinstance(n_bits, bool) or not isinstance(n_bits, (int, np.integer)) or n_bits < 1:
            raise ValueError(f"n_bits must be a positive int, got {n_bits!r}")
        continuous, channel_first = check_bool("continuous", continuous), check_bool("channel_first", channel_first)
        discrete_obs_space = check_bool("discrete_obs_space", discrete_obs_space)
        image_obs_space = check_bool("image_obs_space", image_obs_space)
        if continuous is not True:
            raise ValueError(f"continuous must be True (TD3 and DDPG need Box actions), got {continuous!r}")
        if discrete_obs_space or image_obs_space:
            raise ValueError(
                "discrete_obs_space and image_obs_space must be False (observations are float32 Boxes), got "
                f"discrete_obs_space={discrete_obs_space!r}, image_obs_space={image_obs_space!r}"
            )
        if max_steps is not None and (
            isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 1
        ):
            raise ValueError(f"max_steps must be a positive int or None, got {max_steps!r}")
        if render_mode not in (None, "human"):
            raise ValueError(f"render_mode must be None or 'human', got {render_mode!r}")
        self.n_bits = int(n_bits)
        self.max_steps = self.n_bits if max_steps is None else int(max_steps)
        self.channel_first = channel_first
        self.render_mode = render_mode
        bits = spaces.Box(0.0, 1.0, (self.n_bits,), np.float32)
        self.observation_space = spaces.Dict({"observation": bits, "achieved_goal": bits, "desired_goal": bits})
        self.action_space = spaces.Box(-1.0, 1.0, (self.n_bits,), np.float32)
        self.desired_goal = np.ones(self.n_bits, dtype=np.float32)
        self.state = np.zeros(self.n_bits, dtype=np.float32)
        self.current_step = 0

    def _obs(self) -> dict[str, np.ndarray]:
        return {
            "observation": self.state.copy(),
            "achieved_goal": self.state.copy(),
            "desired_goal": self.desired_goal.copy(),
        }

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.current_step = 0
        self.state = self.np_random.integers(0, 2, self.n_bits).astype(np.float32)
        return self._obs(), {}

    def step(self, action: np.ndarray) -> tuple[dict, float, bool, bool, dict]:
        flip = np.asarray(action).reshape(self.n_bits) > 0
        self.state[flip] = 1.0 - self.state[flip]
        self.current_step += 1
        reward = float(self.compute_reward(self.state, self.desired_goal, None))
        success = reward == 0.0
        return (
            self._obs(),
            reward,
            success,
            self.current_step >= self.max_steps and not success,
            {"is_success": success},
        )

    def compute_reward(self, achieved_goal: np.ndarray, desired_goal: np.ndarray, info: Any) -> np.ndarray:
        """0 where the achieved bits equal the desired ones, else -1 (vectorised over leading dimensions)."""
        return -np.any(np.asarray(achieved_goal) != np.asarray(desired_goal), axis=-1).astype(np.float32)

    def render(self) -> None:
        if self.render_mode == "human":
            print("".join(str(int(bit)) for bit in self.state))

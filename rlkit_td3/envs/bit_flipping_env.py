"""``BitFlippingEnv``: the classic goal-conditioned test task for HER (Andrychowicz et al. 2017, §4.1).

``n_bits`` bits start at random values; the goal is all ones. Each step flips bits: with continuous actions (a
Box, the default here) the bits whose action component is positive, with discrete actions (``continuous=False``)
the one bit the action names. The reward is sparse: 0 when the bits equal the goal (which ends the episode by
termination), else -1; episodes are cut (truncated) after ``max_steps`` steps. Without hindsight relabelling a
random policy almost never sees a reward of 0 for ``n_bits`` beyond ~10, which is what makes the task a test of HER.

SB3 ships the same task as ``stable_baselines3.common.envs.BitFlippingEnv``, with the same constructor. The
observation is a Dict of ``"observation"``, ``"achieved_goal"`` and ``"desired_goal"``, each the bits encoded as

- float32 Boxes in [0, 1] (the default here: what TD3/DDPG's ``MultiInputPolicy`` takes; SB3's default is
  ``MultiBinary``),
- one integer in ``Discrete(2 ** n_bits)`` (``discrete_obs_space=True``), or
- a uint8 image of 36 x 36 pixels, 255 for a set bit, the bits first and zeros after (``image_obs_space=True``;
  one channel, first or last as ``channel_first`` says).

``compute_reward`` decodes any of the three, one goal or a batch, as HER relabelling needs.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rlkit_td3.checks.arguments import check_bool

IMAGE_SIDE = 36
"""Side of the square image observations (the smallest the default CNN takes)."""


class BitFlippingEnv(gym.Env):
    """Flip ``n_bits`` bits until they are all ones; a goal env with ``compute_reward`` for HER.

    Args:
        n_bits: number of bits (at least 1; at most 30 with ``discrete_obs_space``, 1296 with images).
        continuous: Box actions in [-1, 1] (a bit flips where its component is positive; the default here, as
            TD3 and DDPG need) or, with False, ``Discrete(n_bits)`` actions (flip that bit; SB3's default).
        max_steps: steps per episode before truncation; ``None`` means ``n_bits``.
        discrete_obs_space: encode each observation entry as one integer (``Discrete(2 ** n_bits)``).
        image_obs_space: encode each observation entry as a 36 x 36 uint8 image.
        channel_first: with images, shape ``(1, 36, 36)`` (True) or ``(36, 36, 1)``.
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
        if discrete_obs_space and image_obs_space:
            raise ValueError("discrete_obs_space and image_obs_space cannot both be True")
        if discrete_obs_space and n_bits > 30:
            raise ValueError(f"n_bits must be at most 30 with discrete_obs_space=True, got {n_bits}")
        if image_obs_space and n_bits > IMAGE_SIDE * IMAGE_SIDE:
            raise ValueError(
                f"n_bits must be at most {IMAGE_SIDE * IMAGE_SIDE} with image_obs_space=True, got {n_bits}"
            )
        if max_steps is not None and (
            isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 1
        ):
            raise ValueError(f"max_steps must be a positive int or None, got {max_steps!r}")
        if render_mode not in (None, "human"):
            raise ValueError(f"render_mode must be None or 'human', got {render_mode!r}")
        self.n_bits = int(n_bits)
        self.continuous = bool(continuous)
        self.max_steps = self.n_bits if max_steps is None else int(max_steps)
        self.discrete_obs_space = bool(discrete_obs_space)
        self.image_obs_space = bool(image_obs_space)
        self.channel_first = channel_first
        self.render_mode = render_mode
        self._image_shape = (1, IMAGE_SIDE, IMAGE_SIDE) if channel_first else (IMAGE_SIDE, IMAGE_SIDE, 1)
        if self.discrete_obs_space:
            entry: spaces.Space = spaces.Discrete(2**self.n_bits)
        elif self.image_obs_space:
            entry = spaces.Box(0, 255, self._image_shape, np.uint8)
        else:
            entry = spaces.Box(0.0, 1.0, (self.n_bits,), np.float32)
        self.observation_space = spaces.Dict({"observation": entry, "achieved_goal": entry, "desired_goal": entry})
        self.action_space = (
            spaces.Box(-1.0, 1.0, (self.n_bits,), np.float32) if self.continuous else spaces.Discrete(self.n_bits)
        )
        self.desired_goal = np.ones(self.n_bits, dtype=np.float32)
        self.state = np.zeros(self.n_bits, dtype=np.float32)
        self.current_step = 0

    # ------------------------------------------------------------------ encodings
    def _encode(self, bits: np.ndarray) -> Any:
        if self.discrete_obs_space:
            return int(np.dot(bits.astype(np.int64), 1 << np.arange(self.n_bits)))
        if self.image_obs_space:
            pixels = np.zeros(IMAGE_SIDE * IMAGE_SIDE, dtype=np.uint8)
            pixels[: self.n_bits] = bits * 255
            return pixels.reshape(self._image_shape)
        return bits.astype(np.float32)

    def _decode(self, value: Any) -> np.ndarray:
        """Bits (``(..., n_bits)``) of one encoded entry or a batch of them."""
        array = np.asarray(value)
        if self.discrete_obs_space:
            array = array.astype(np.int64)
            if array.ndim and array.shape[-1] == 1:  # a batch of scalars given as (B, 1)
                array = array[..., 0]
            return (array[..., None] >> np.arange(self.n_bits)) & 1
        if self.image_obs_space:
            flat = array.reshape(*array.shape[:-3], IMAGE_SIDE * IMAGE_SIDE)
            return flat[..., : self.n_bits] > 127
        return array > 0.5

    def _obs(self) -> dict[str, Any]:
        return {
            "observation": self._encode(self.state),
            "achieved_goal": self._encode(self.state),
            "desired_goal": self._encode(self.desired_goal),
        }

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.current_step = 0
        self.state = self.np_random.integers(0, 2, self.n_bits).astype(np.float32)
        return self._obs(), {}

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        if self.continuous:
            flip = np.asarray(action).reshape(self.n_bits) > 0
            self.state[flip] = 1.0 - self.state[flip]
        else:
            bit = int(np.asarray(action).reshape(()))
            self.state[bit] = 1.0 - self.state[bit]
        self.current_step += 1
        obs = self._obs()
        reward = float(self.compute_reward(obs["achieved_goal"], obs["desired_goal"], None))
        success = reward == 0.0
        return obs, reward, success, self.current_step >= self.max_steps and not success, {"is_success": success}

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        """0 where the achieved bits equal the desired ones, else -1, for one goal or a batch (any encoding)."""
        differ = np.any(self._decode(achieved_goal) != self._decode(desired_goal), axis=-1)
        return -differ.astype(np.float32)

    def render(self) -> None:
        if self.render_mode == "human":
            print("".join(str(int(bit)) for bit in self.state))

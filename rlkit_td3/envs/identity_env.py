"""Toy envs for testing a set-up (Stable-Baselines3's ``common.envs`` names): the identity tasks and a fake
image env.

In an identity env the observation is a state drawn at random from the action space and the reward is 1 when the
action equals it (within ``eps`` for a Box), else 0; a new state is drawn after every step and the episode is
truncated after ``ep_length`` steps, so a perfect policy scores ``ep_length``. `FakeImageEnv` returns random
uint8 images, reward 0, and is truncated after 10 steps: it exercises image pipelines, not learning.

The random draws come from the env's own generator (``reset(seed=...)`` seeds them), never from the spaces'
generators: ``env.action_space.sample()`` stays the caller's.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class _SeededDraws(gym.Env):
    """Draws samples of ``space`` from a private copy, seeded from the env's generator on ``reset(seed=...)``."""

    def _init_draws(self, space: spaces.Space) -> None:
        self._draw_space = copy.deepcopy(space)
        self._draw_space.seed(0)

    def _seed_draws(self, seed: int | None) -> None:
        if seed is not None:
            self._draw_space.seed(int(self.np_random.integers(2**31)))


class IdentityEnv(_SeededDraws):
    """Observe a state drawn from ``space``; reward 1 for the action equal to it, else 0.

    Args:
        dim: size of the default space, ``Discrete(dim)`` (used when ``space`` is None; default 1).
        space: the action and observation space (any space whose samples compare with ``==``).
        ep_length: steps before the episode is truncated.
    """

    def __init__(self, dim: int | None = None, space: spaces.Space | None = None, ep_length: int = 100) -> None:
        if space is None:
            space = spaces.Discrete(1 if dim is None else dim)
        elif dim is not None:
            raise ValueError(f"pass dim or space, not both (got dim={dim!r}, space={space!r})")
        if isinstance(ep_length, bool) or not isinstance(ep_length, (int, np.integer)) or ep_length < 1:
            raise ValueError(f"ep_length must be a positive int, got {ep_length!r}")
        self.action_space = space
        self.observation_space = space
        self.ep_length = int(ep_length)
        self.current_step = 0
        self.num_resets = -1  # reset() counts the resets; the first one makes it 0
        self._init_draws(space)
        self.state = self._draw_space.sample()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self._seed_draws(seed)
        self.current_step = 0
        self.num_resets += 1
        self.state = self._draw_space.sample()
        return self.state, {}

    def _reward(self, action: Any) -> float:
        return 1.0 if np.all(self.state == action) else 0.0

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        reward = self._reward(action)
        self.state = self._draw_space.sample()
        self.current_step += 1
        return self.state, reward, False, self.current_step >= self.ep_length, {}

    def render(self) -> None:
        """Nothing to draw."""


class IdentityEnvBox(IdentityEnv):
    """`IdentityEnv` on ``Box(low, high, (1,), float32)``: reward 1 when ``|action - state| <= eps``.

    Args:
        low: lower bound of the space.
        high: upper bound of the space.
        eps: the tolerance, a finite number >= 0 (``nan`` would make every reward 0: a `ValueError`).
        ep_length: steps before the episode is truncated.
    """

    def __init__(self, low: float = -1.0, high: float = 1.0, eps: float = 0.05, ep_length: int = 100) -> None:
        if isinstance(eps, bool) or not isinstance(eps, (int, float, np.integer, np.floating)) or not 0 <= eps < np.inf:
            raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")
        super().__init__(space=spaces.Box(low, high, (1,), np.float32), ep_length=ep_length)
        self.eps = float(eps)

    def _reward(self, action: Any) -> float:
        return 1.0 if np.all(np.abs(np.asarray(action) - self.state) <= self.eps) else 0.0


class IdentityEnvMultiDiscrete(IdentityEnv):
    """`IdentityEnv` on ``MultiDiscrete([dim, dim])``."""

    def __init__(self, dim: int = 1, ep_length: int = 100) -> None:
        super().__init__(space=spaces.MultiDiscrete([dim, dim]), ep_length=ep_length)


class IdentityEnvMultiBinary(IdentityEnv):
    """`IdentityEnv` on ``MultiBinary(dim)``."""

    def __init__(self, dim: int = 1, ep_length: int = 100) -> None:
        super().__init__(space=spaces.MultiBinary(dim), ep_length=ep_length)


class FakeImageEnv(_SeededDraws):
    """Random uint8 images, reward 0, truncated after ``ep_length`` (10) steps.

    Args:
        action_dim: ``Discrete(action_dim)`` actions, or with ``discrete=False`` ``Box(-1, 1, (action_dim,))``.
        screen_height: image height.
        screen_width: image width.
        n_channels: image channels.
        discrete: discrete or Box actions.
        channel_first: images ``(C, H, W)`` instead of ``(H, W, C)``.
    """

    def __init__(
        self,
        action_dim: int = 6,
        screen_height: int = 84,
        screen_width: int = 84,
        n_channels: int = 1,
        discrete: bool = True,
        channel_first: bool = False,
    ) -> None:
        shape = (
            (n_channels, screen_height, screen_width) if channel_first else (screen_height, screen_width, n_channels)
        )
        self.observation_space = spaces.Box(0, 255, shape, np.uint8)
        self.action_space = (
            spaces.Discrete(action_dim) if discrete else spaces.Box(-1.0, 1.0, (action_dim,), np.float32)
        )
        self.ep_length = 10
        self.current_step = 0
        self._init_draws(self.observation_space)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._seed_draws(seed)
        self.current_step = 0
        return self._draw_space.sample(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.current_step += 1
        return self._draw_space.sample(), 0.0, False, self.current_step >= self.ep_length, {}

    def render(self) -> None:
        """Nothing to draw."""

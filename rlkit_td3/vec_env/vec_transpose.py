"""``VecTransposeImage``: channel-last images to channel-first (SB3's ``VecTransposeImage``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from rlkit_td3.checks.arguments import check_bool
from rlkit_td3.preprocessing import is_image_space_channels_first
from rlkit_td3.vec_env.base_vec_env import VecEnv, VecEnvObs, VecEnvStepReturn, VecEnvWrapper
from rlkit_td3.vec_env.vec_normalize import is_image_space


class VecTransposeImage(VecEnvWrapper):
    """Turns ``(H, W, C)`` image observations into ``(C, H, W)``, as PyTorch convolutions expect.

    With a Dict space every image entry is transposed, other entries are left alone.

    Args:
        venv: the vectorized env to wrap.
        skip: do nothing (for code paths that always wrap).

    Raises:
        ValueError: the observations are not images (nor a Dict holding one), or an image is already
            channels-first ``(C, H, W)`` (its smallest dimension first), which SB3 refuses too.
    """

    def __init__(self, venv: VecEnv, skip: bool = False) -> None:
        space = venv.observation_space
        self.skip = check_bool("skip", skip)
        if self.skip:
            super().__init__(venv)
            return
        if isinstance(space, spaces.Dict):
            self.image_space_keys = [key for key, sub in space.spaces.items() if is_image_space(sub)]
            if not self.image_space_keys:
                raise ValueError(f"VecTransposeImage needs image observations, the Dict space has none: {space}")
            transposed = dict(space.spaces)
            for key in self.image_space_keys:
                transposed[key] = self.transpose_space(space.spaces[key], key)
            observation_space: spaces.Space = spaces.Dict(transposed)
        else:
            if not is_image_space(space):
                raise ValueError(f"VecTransposeImage needs a uint8 image space of shape (H, W, C), got {space}")
            observation_space = self.transpose_space(space)
        super().__init__(venv, observation_space=observation_space)

    @staticmethod
    def transpose_space(observation_space: spaces.Box, key: str = "") -> spaces.Box:
        """The ``(C, H, W)`` space of an ``(H, W, C)`` image space."""
        if not is_image_space(observation_space):
            raise ValueError(f"the space {key!r} is not an image space: {observation_space}")
        if is_image_space_channels_first(observation_space):  # transposing it would mix rows and channels
            raise ValueError(
                f"the image space {key!r} of shape {observation_space.shape} is already channels-first (C, H, W); "
                "VecTransposeImage takes channels-last (H, W, C) images (as Stable-Baselines3's)"
            )
        height, width, channels = observation_space.shape
        return spaces.Box(low=0, high=255, shape=(channels, height, width), dtype=observation_space.dtype)

    @staticmethod
    def transpose_image(image: np.ndarray) -> np.ndarray:
        """``(H, W, C)`` → ``(C, H, W)``, or ``(N, H, W, C)`` → ``(N, C, H, W)``."""
        if image.ndim == 3:
            return np.transpose(image, (2, 0, 1))
        return np.transpose(image, (0, 3, 1, 2))

    def transpose_observations(self, observations: Any) -> Any:
        """Transpose the image entries of a batch (or of one observation)."""
        if self.skip:
            return observations
        if isinstance(observations, dict):
            observations = dict(observations)
            for key in self.image_space_keys:
                observations[key] = self.transpose_image(observations[key])
            return observations
        return self.transpose_image(observations)

    def step_wait(self) -> VecEnvStepReturn:
        observations, rewards, dones, infos = self.venv.step_wait()
        for info in infos:
            if "terminal_observation" in info:
                info["terminal_observation"] = self.transpose_observations(info["terminal_observation"])
        return self.transpose_observations(observations), rewards, dones, infos

    def reset(self) -> VecEnvObs:
        return self.transpose_observations(self.venv.reset())


__all__ = ["VecTransposeImage"]

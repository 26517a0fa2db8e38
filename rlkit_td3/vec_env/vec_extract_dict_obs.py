"""``VecExtractDictObs``: keep one entry of a Dict observation (SB3's ``VecExtractDictObs``)."""

from __future__ import annotations

from gymnasium import spaces

from rlkit_td3.vec_env.base_vec_env import VecEnv, VecEnvObs, VecEnvStepReturn, VecEnvWrapper


class VecExtractDictObs(VecEnvWrapper):
    """Replaces Dict observations by their entry ``key`` (terminal observations too).

    Args:
        venv: a vectorized env with a Dict observation space.
        key: the entry to keep.

    Raises:
        ValueError: the space is not a Dict or has no ``key``.
    """

    def __init__(self, venv: VecEnv, key: str) -> None:
        space = venv.observation_space
        if not isinstance(space, spaces.Dict) or key not in space.spaces:
            raise ValueError(f"key {key!r} must be a key of a Dict observation space, the env has {space}")
        self.key = key
        super().__init__(venv=venv, observation_space=space.spaces[key])

    def reset(self) -> VecEnvObs:
        return self.venv.reset()[self.key]  # type: ignore[index]

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait()
        for info in infos:
            if "terminal_observation" in info:
                info["terminal_observation"] = info["terminal_observation"][self.key]
        return obs[self.key], rewards, dones, infos  # type: ignore[index]


__all__ = ["VecExtractDictObs"]

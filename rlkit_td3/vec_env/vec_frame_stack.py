"""``VecFrameStack``: observations made of the last ``n_stack`` ones (SB3's ``VecFrameStack``)."""

from __future__ import annotations

from collections.abc import Mapping

from rlkit_td3.vec_env.base_vec_env import VecEnv, VecEnvObs, VecEnvStepReturn, VecEnvWrapper
from rlkit_td3.vec_env.stacked_observations import StackedObservations


class VecFrameStack(VecEnvWrapper):
    """Stacks the last ``n_stack`` observations of each env along the channel axis (newest last).

    After a reset, and after an env's episode ends, that env's older slots are zeros. The
    ``terminal_observation`` in the info of an ended episode is stacked too.

    Args:
        venv: the vectorized env to wrap (Box or Dict observations).
        n_stack: number of observations to stack.
        channels_order: ``"last"`` (stack along the last axis), ``"first"``, or ``None`` to guess: channels
            first for images whose first axis is the smallest, last otherwise. A dict by key for Dict spaces.
    """

    def __init__(self, venv: VecEnv, n_stack: int, channels_order: str | Mapping[str, str] | None = None) -> None:
        self.stacked_obs = StackedObservations(venv.num_envs, n_stack, venv.observation_space, channels_order)
        super().__init__(venv, observation_space=self.stacked_obs.stacked_observation_space)

    def step_wait(self) -> VecEnvStepReturn:
        observations, rewards, dones, infos = self.venv.step_wait()
        observations, infos = self.stacked_obs.update(observations, dones, infos)
        return observations, rewards, dones, infos

    def reset(self) -> VecEnvObs:
        return self.stacked_obs.reset(self.venv.reset())


__all__ = ["VecFrameStack"]

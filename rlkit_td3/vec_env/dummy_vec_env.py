"""``DummyVecEnv``: the envs stepped one after the other in this process (SB3's ``DummyVecEnv``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from copy import deepcopy
from typing import Any

import gymnasium as gym
import numpy as np

from rlkit_td3.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvObs, VecEnvStepReturn
from rlkit_td3.vec_env.util import copy_obs_dict, dict_to_obs, is_wrapped, obs_space_info


def _check_env_fns(env_fns: Any) -> list[Callable[[], gym.Env]]:
    if isinstance(env_fns, (str, bytes)) or not isinstance(env_fns, Sequence) or not env_fns:
        raise ValueError(f"env_fns must be a non-empty list of functions that each return an env, got {env_fns!r}")
    for index, fn in enumerate(env_fns):
        if not callable(fn):
            raise TypeError(
                f"env_fns[{index}] must be a function returning an env (e.g. lambda: gym.make(...)), got {fn!r}"
            )
    return list(env_fns)


def _check_env(env: Any, index: int) -> gym.Env:
    if not isinstance(env, gym.Env):
        raise TypeError(f"env_fns[{index}]() must return a gymnasium.Env, got {type(env).__name__}")
    return env


class DummyVecEnv(VecEnv):
    """Runs the envs sequentially in the calling process; the sub-envs are in ``.envs``.

    The right choice for fast envs (the Bullet and MuJoCo locomotion tasks), where a worker process costs
    more in communication than it saves; see `SubprocVecEnv` for slow envs.

    Args:
        env_fns: one function per env, each returning a new ``gymnasium.Env``.

    Raises:
        ValueError: ``env_fns`` is empty, or two functions returned the same env object (or wrappers of one).
        TypeError: an entry is not callable or does not return a ``gymnasium.Env``.
    """

    def __init__(self, env_fns: list[Callable[[], gym.Env]]) -> None:
        fns = _check_env_fns(env_fns)
        self.envs = [_check_env(fn(), i) for i, fn in enumerate(fns)]
        if len({id(env.unwrapped) for env in self.envs}) != len(self.envs):  # wrappers around one env too
            raise ValueError(
                "env_fns returned the same env object more than once (or wrappers around one); each function must "
                "make a new env "
                "(write [lambda: gym.make(id) for _ in range(n)], not [lambda: env] * n)"
            )
        env = self.envs[0]
        super().__init__(len(self.envs), env.observation_space, env.action_space)
        self.keys, shapes, dtypes = obs_space_info(env.observation_space)
        self.buf_obs = {key: np.zeros((self.num_envs, *shapes[key]), dtype=dtypes[key]) for key in self.keys}
        self._plain_buf = self.buf_obs[None] if self.keys == [None] else None  # not a Dict/Tuple space
        self.buf_dones = np.zeros((self.num_envs,), dtype=bool)
        self.buf_rews = np.zeros((self.num_envs,), dtype=np.float32)
        self.buf_infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        self.actions: np.ndarray | None = None
        self.metadata = env.metadata
        self.step_count = 0
        #: per env, ``(step_count, np_random.bit_generator.state)`` just before its last auto-reset in
        #: `step_wait()` (``None`` before the first): what `restore_reset()` needs to redo that reset.
        self.pre_reset_states: list[tuple[int, dict[str, Any]] | None] = [None] * self.num_envs

    def step_async(self, actions: np.ndarray) -> None:
        self.actions = self._check_actions(actions)

    def step_wait(self) -> VecEnvStepReturn:
        actions = self.actions
        if actions is None:
            raise RuntimeError("step_wait() was called without a step_async(actions) before it")
        for index, env in enumerate(self.envs):
            obs, reward, terminated, truncated, info = env.step(actions[index])
            info = dict(info)  # the env's own dict is left untouched
            info["TimeLimit.truncated"] = bool(truncated and not terminated)
            done = terminated or truncated
            if done:
                # a copy: an env may return one array that it updates in place, and reset() would overwrite it
                info["terminal_observation"] = deepcopy(obs)
                self.pre_reset_states[index] = (self.step_count, deepcopy(env.np_random.bit_generator.state))
                obs, self.reset_infos[index] = env.reset()
            self.buf_rews[index] = reward
            self.buf_dones[index] = done
            self.buf_infos[index] = info
            self._save_obs(index, obs)
        self.actions = None
        self.step_count += 1
        return self._obs_from_buf(), self.buf_rews.copy(), self.buf_dones.copy(), list(self.buf_infos)

    def reset(self) -> VecEnvObs:
        for index, env in enumerate(self.envs):
            options = {"options": self._options[index]} if self._options[index] else {}
            obs, self.reset_infos[index] = env.reset(seed=self._seeds[index], **options)
            self._save_obs(index, obs)
        self._reset_seeds()
        self._reset_options()
        return self._obs_from_buf()

    def restore_reset(self, index: int, pre_reset_state: dict[str, Any]) -> Any:
        """Redo env ``index``'s auto-reset from the generator state recorded just before it.

        Sets the env's ``np_random`` to ``pre_reset_state`` (an entry of `pre_reset_states`, saved with
        a checkpoint) and resets the env as `step_wait()` does: the first observation, the env's state and
        its generator are then those of the original run. The observation is also stored in the batch that
        the next `step_wait()` / `reset()` builds on.

        Args:
            index: the env, in ``[0, num_envs)``.
            pre_reset_state: ``np_random.bit_generator.state`` recorded before the reset.

        Returns:
            The first observation of the new episode.

        Raises:
            IndexError: ``index`` is out of range.
            ValueError: ``pre_reset_state`` is not a generator state of the env's bit generator.
        """
        (index,) = self._get_indices(index)
        env = self.envs[index]
        try:
            env.np_random.bit_generator.state = deepcopy(pre_reset_state)
        except (TypeError, ValueError, KeyError) as error:
            raise ValueError(
                f"pre_reset_state must be a {type(env.np_random.bit_generator).__name__} state, got {pre_reset_state!r}"
            ) from error
        obs, self.reset_infos[index] = env.reset()
        self._save_obs(index, obs)
        return obs

    def close(self) -> None:
        for env in self.envs:
            env.close()

    def get_images(self) -> Sequence[np.ndarray | None]:
        if self.render_mode != "rgb_array":
            raise ValueError(
                f"get_images() needs envs made with render_mode='rgb_array', these have {self.render_mode!r}"
            )
        return [env.render() for env in self.envs]

    def _save_obs(self, index: int, obs: Any) -> None:
        if self._plain_buf is not None:
            self._plain_buf[index] = obs
            return
        for key in self.keys:
            self.buf_obs[key][index] = obs[key]

    def _obs_from_buf(self) -> VecEnvObs:
        if self._plain_buf is not None:
            return self._plain_buf.copy()
        return dict_to_obs(self.observation_space, copy_obs_dict(self.buf_obs))

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return [self.envs[i].get_wrapper_attr(attr_name) for i in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        for i in self._get_indices(indices):
            self.envs[i].set_wrapper_attr(attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        return [
            self.envs[i].get_wrapper_attr(method_name)(*method_args, **method_kwargs)
            for i in self._get_indices(indices)
        ]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        return [is_wrapped(self.envs[i], wrapper_class) for i in self._get_indices(indices)]

    def _get_target_envs(self, indices: VecEnvIndices) -> list[gym.Env]:
        return [self.envs[i] for i in self._get_indices(indices)]


__all__ = ["DummyVecEnv"]

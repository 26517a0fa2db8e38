"""Bridges between gymnasium vector envs and the SB3 ``VecEnv`` contract.

* `VecEnvView` shows a ``gymnasium.vector.VectorEnv`` (any autoreset mode, sync or async, wrapped or
  not) as an SB3 `VecEnv`: ``reset()`` returns the observations only, ``step()``
  returns ``(obs, rewards, dones, infos)`` with ended envs reset at once and
  ``infos[i]["terminal_observation"]`` / ``infos[i]["TimeLimit.truncated"]``.
* `GymnasiumVecEnv` shows an SB3-style ``VecEnv`` as a ``gymnasium.vector.VectorEnv`` in same-step
  autoreset mode (``infos["final_obs"]`` / ``infos["final_info"]``), so that it can be trained on.
* `reset_ended_envs()` resets some envs of a gymnasium vector env while keeping the other envs' episode
  statistics running.
"""

from __future__ import annotations

from collections.abc import Sequence
from copy import deepcopy
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv, VectorWrapper
from gymnasium.wrappers.vector import RecordEpisodeStatistics

from rlkit_td3.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvObs, VecEnvStepReturn
from rlkit_td3.vec_env.util import is_wrapped

_STATS_FIELDS = ("episode_returns", "episode_lengths", "episode_start_times", "prev_dones")


def _statistics_wrappers(venv: VectorEnv) -> list[RecordEpisodeStatistics]:
    """Every gymnasium ``RecordEpisodeStatistics`` in ``venv``'s wrapper chain, outermost first."""
    found = []
    while isinstance(venv, VectorWrapper):
        if isinstance(venv, RecordEpisodeStatistics):
            found.append(venv)
        venv = venv.env
    return found


def reset_ended_envs(venv: VectorEnv, mask: np.ndarray) -> tuple[Any, dict[str, Any]]:
    """Reset the envs of ``venv`` selected by ``mask`` (``options={"reset_mask": mask}``), only those.

    Gymnasium's vector env removes ``reset_mask`` from the options dict it shares with the wrappers above it,
    so a ``RecordEpisodeStatistics`` above would restart every env's statistics: they are kept here for the
    envs not in ``mask``.

    Args:
        venv: a gymnasium vector env (gymnasium >= 1.1, any autoreset mode), possibly wrapped.
        mask: bool array of shape ``(num_envs,)`` with at least one True.

    Returns:
        ``(obs, infos)`` of the whole batch as gymnasium returns them; only the masked rows are new.

    Raises:
        ValueError: ``mask`` has the wrong shape or selects no env.
    """
    mask = np.asarray(mask)
    if mask.dtype != np.bool_ or mask.shape != (venv.num_envs,) or not mask.any():
        raise ValueError(f"mask must be a bool array of shape ({venv.num_envs},) with at least one True, got {mask!r}")
    saved = [
        (stats, {name: getattr(stats, name).copy() for name in _STATS_FIELDS}) for stats in _statistics_wrappers(venv)
    ]
    obs, infos = venv.reset(options={"reset_mask": mask.copy()})
    for stats, fields in saved:  # the masked envs were restarted; the others go on
        for name, before in fields.items():
            getattr(stats, name)[~mask] = before[~mask]
    return obs, infos


def _split_infos(infos: dict[str, Any], num_envs: int) -> list[dict[str, Any]]:
    """Gymnasium's dict of arrays (with ``_key`` masks) as one dict per env holding the keys present for it."""
    result: list[dict[str, Any]] = [{} for _ in range(num_envs)]
    for key, value in infos.items():
        if key.startswith("_") and key[1:] in infos:
            continue
        present = infos.get(f"_{key}")
        present = np.ones(num_envs, dtype=bool) if present is None else np.asarray(present, dtype=bool)
        if isinstance(value, dict):
            nested = _split_infos(value, num_envs)
            for i in range(num_envs):
                if present[i]:
                    result[i][key] = nested[i]
            continue
        for i in range(num_envs):
            if present[i]:
                result[i][key] = value[i]
    return result


def _row(obs: Any, index: int) -> Any:
    if isinstance(obs, dict):
        return {key: _row(value, index) for key, value in obs.items()}
    if isinstance(obs, tuple):
        return tuple(_row(value, index) for value in obs)
    return deepcopy(obs[index])


def _set_rows(obs: Any, new: Any, mask: np.ndarray) -> Any:
    if isinstance(obs, dict):
        return {key: _set_rows(obs[key], new[key], mask) for key in obs}
    if isinstance(obs, tuple):
        return tuple(_set_rows(o, n, mask) for o, n in zip(obs, new))
    out = np.array(obs, copy=True)
    out[mask] = np.asarray(new)[mask]
    return out


def _base_vector_env(venv: VectorEnv) -> VectorEnv:
    while isinstance(venv, VectorWrapper):
        venv = venv.env
    return venv


class VecEnvView(VecEnv):
    """An SB3 `VecEnv` over a gymnasium vector env.

    Works in every gymnasium autoreset mode: with ``DISABLED`` and ``NEXT_STEP`` the envs that end are reset
    right after the step (``options={"reset_mask": ...}``, their episode statistics restarted alone, see
    `reset_ended_envs()`); with ``SAME_STEP`` gymnasium already reset them and ``final_obs`` /
    ``final_info`` give the last observation and info. Rewards are float32 and dones bool, as in
    `DummyVecEnv`.

    Args:
        venv: a ``gymnasium.vector.VectorEnv`` (``SyncVectorEnv``, ``AsyncVectorEnv``, possibly wrapped).

    Raises:
        TypeError: ``venv`` is not a gymnasium vector env.
    """

    def __init__(self, venv: VectorEnv) -> None:
        if not isinstance(venv, VectorEnv):
            raise TypeError(f"venv must be a gymnasium.vector.VectorEnv, got {type(venv).__name__}")
        self.gym_env = venv
        self.autoreset_mode = AutoresetMode(venv.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP))
        self._actions: np.ndarray | None = None
        self._last_obs: Any = None
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        self.metadata = venv.metadata

    # ------------------------------------------------------------------ reset / step
    def reset(self) -> VecEnvObs:
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        if any(options != self._options[0] for options in self._options):
            raise ValueError(
                "a gymnasium vector env takes one options dict for all its envs; set_options() was given "
                f"different ones: {self._options}"
            )
        options = deepcopy(self._options[0]) or None
        obs, infos = self.gym_env.reset(seed=seeds, options=options)
        self.reset_infos = _split_infos(infos, self.num_envs)
        self._reset_seeds()
        self._reset_options()
        self._last_obs = obs
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(self._check_actions(actions))

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise RuntimeError("step_wait() was called without a step_async(actions) before it")
        actions, self._actions = self._actions, None
        obs, rewards, terminated, truncated, infos = self.gym_env.step(actions)
        terminated = np.asarray(terminated, dtype=bool)
        truncated = np.asarray(truncated, dtype=bool)
        dones = terminated | truncated
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            step_infos = self._same_step_infos(infos, dones)
        else:
            step_infos = _split_infos(infos, self.num_envs)
            if dones.any():
                for i in np.flatnonzero(dones):
                    step_infos[i]["terminal_observation"] = _row(obs, i)
                reset_obs, reset_infos = reset_ended_envs(self.gym_env, dones)
                for i, info in enumerate(_split_infos(reset_infos, self.num_envs)):
                    if dones[i]:
                        self.reset_infos[i] = info
                obs = _set_rows(obs, reset_obs, dones)
        for i in range(self.num_envs):
            step_infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
        self._last_obs = obs
        return obs, np.asarray(rewards, dtype=np.float32), dones, step_infos

    def _same_step_infos(self, infos: dict[str, Any], dones: np.ndarray) -> list[dict[str, Any]]:
        """Per-env infos of a same-step autoreset: the ended envs' come from ``final_info``."""
        infos = dict(infos)
        final_obs = infos.pop("final_obs", None)
        final_info = infos.pop("final_info", None)
        infos.pop("_final_obs", None)
        infos.pop("_final_info", None)
        split = _split_infos(infos, self.num_envs)
        finals = _split_infos(final_info, self.num_envs) if final_info is not None else split
        stats_keys = {stats._stats_key for stats in _statistics_wrappers(self.gym_env)}
        result = []
        for i in range(self.num_envs):
            if not dones[i]:
                result.append(split[i])
                continue
            info = dict(finals[i])
            for key in stats_keys & split[i].keys():  # the statistics wrapper writes beside final_info
                info[key] = split[i].pop(key)
            self.reset_infos[i] = split[i]
            info["terminal_observation"] = deepcopy(final_obs[i]) if final_obs is not None else None
            result.append(info)
        return result

    # ------------------------------------------------------------------ sub-env access
    def _sync_envs(self) -> list[gym.Env] | None:
        base = _base_vector_env(self.gym_env)
        return list(base.envs) if isinstance(base, SyncVectorEnv) else None

    def _async_subset_error(self, what: str) -> ValueError:
        return ValueError(
            f"{what} with indices for a subset of the envs is not possible on a {type(self.gym_env).__name__} "
            "that is not a SyncVectorEnv (gymnasium's AsyncVectorEnv addresses all envs at once); pass indices=None"
        )

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        if not hasattr(self, "gym_env"):  # VecEnv.__init__ asks for render_mode before this is set
            raise AttributeError(attr_name)
        chosen = self._get_indices(indices)
        envs = self._sync_envs()
        if envs is not None:
            return [envs[i].get_wrapper_attr(attr_name) for i in chosen]
        values = list(self.gym_env.get_attr(attr_name))
        return [values[i] for i in chosen]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        chosen = self._get_indices(indices)
        envs = self._sync_envs()
        if envs is not None:
            for i in chosen:
                envs[i].set_wrapper_attr(attr_name, value)
            return
        if len(chosen) != self.num_envs:
            raise self._async_subset_error("set_attr")
        self.gym_env.set_attr(attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        chosen = self._get_indices(indices)
        envs = self._sync_envs()
        if envs is not None:
            return [envs[i].get_wrapper_attr(method_name)(*method_args, **method_kwargs) for i in chosen]
        if len(chosen) != self.num_envs:
            raise self._async_subset_error("env_method")
        return list(self.gym_env.call(method_name, *method_args, **method_kwargs))

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        chosen = self._get_indices(indices)
        envs = self._sync_envs()
        if envs is not None:
            return [is_wrapped(envs[i], wrapper_class) for i in chosen]
        raise ValueError(f"env_is_wrapped needs a SyncVectorEnv, got {type(self.gym_env).__name__}")

    def get_images(self) -> Sequence[np.ndarray | None]:
        if self.render_mode != "rgb_array":
            raise ValueError(
                f"get_images() needs envs made with render_mode='rgb_array', these have {self.render_mode!r}"
            )
        envs = self._sync_envs()
        if envs is not None:
            return [env.render() for env in envs]
        return list(self.gym_env.call("render"))

    def close(self) -> None:
        self.gym_env.close()


class GymnasiumVecEnv(VectorEnv):
    """A ``gymnasium.vector.VectorEnv`` over an SB3-style ``VecEnv`` (same-step autoreset).

    The SB3 env resets ended envs inside ``step``; this shows it as gymnasium's ``SAME_STEP`` mode: the
    returned observation of an ended env is the first of its next episode and ``infos["final_obs"]`` /
    ``infos["final_info"]`` (object arrays, with the masks ``_final_obs`` / ``_final_info``) hold the last
    observation and info. ``terminated`` / ``truncated`` come from ``dones`` and ``TimeLimit.truncated``.

    Args:
        venv: our `VecEnv` or any object with ``num_envs``, ``observation_space``,
            ``action_space``, ``reset()``, ``step()`` returning SB3's 4-tuple, and optionally ``seed``.

    Raises:
        TypeError: ``venv`` lacks one of those.
    """

    def __init__(self, venv: Any) -> None:
        missing = [
            name
            for name in ("num_envs", "observation_space", "action_space", "reset", "step")
            if not hasattr(venv, name)
        ]
        if missing:
            raise TypeError(f"venv must be an SB3-style VecEnv; {type(venv).__name__} lacks {missing}")
        self.sb3_env = venv
        self.num_envs = int(venv.num_envs)
        self.single_observation_space = venv.observation_space
        self.single_action_space = venv.action_space
        self.observation_space = gym.vector.utils.batch_space(venv.observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(venv.action_space, self.num_envs)
        self.metadata = {**dict(getattr(venv, "metadata", {}) or {}), "autoreset_mode": AutoresetMode.SAME_STEP}
        self.render_mode = getattr(venv, "render_mode", None)

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """``venv.seed(seed)`` (a list: its first entry, as SB3 seeds env ``i`` with ``seed + i``),
        ``venv.set_options(options)`` when given, then ``venv.reset()``."""
        if isinstance(seed, (list, tuple)):
            seed = seed[0] if seed else None
        if seed is not None:
            self.sb3_env.seed(seed)
        if options:
            self.sb3_env.set_options(options)
        obs = self.sb3_env.reset()
        infos: dict[str, Any] = {}
        for i, info in enumerate(getattr(self.sb3_env, "reset_infos", None) or []):
            infos = self._add_info(infos, info, i)
        return obs, infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        obs, rewards, dones, step_infos = self.sb3_env.step(actions)
        dones = np.asarray(dones, dtype=bool)
        truncated = np.array([bool(info.get("TimeLimit.truncated", False)) for info in step_infos]) & dones
        terminated = dones & ~truncated
        reset_infos = getattr(self.sb3_env, "reset_infos", None)
        infos: dict[str, Any] = {}
        for i, step_info in enumerate(step_infos):
            info = dict(step_info)
            if dones[i]:  # as gymnasium's same-step mode: the reset info, with the episode's end beside it
                final_obs = info.pop("terminal_observation", None)
                info = {**dict(reset_infos[i] if reset_infos else {}), "final_obs": final_obs, "final_info": info}
            infos = self._add_info(infos, info, i)
        return obs, np.asarray(rewards), terminated, truncated, infos

    def close(self, **kwargs: Any) -> None:
        self.sb3_env.close()

    def render(self) -> Any:
        return self.sb3_env.render()

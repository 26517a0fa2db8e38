"""The env plumbing of the training loop: what the user passed, turned into the vector env the loop steps.

`as_training_env` wraps an env id, a single env, a gymnasium vector env or a Stable-Baselines3-style ``VecEnv``;
`check_action_space` states which action spaces the algorithms accept; the float32 checks guard every step.
"""

from __future__ import annotations

import inspect
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import load_env_creator
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv, VectorWrapper
from gymnasium.wrappers.vector import RecordEpisodeStatistics

from rlkit_td3.evaluation import is_sb3_vec_env
from rlkit_td3.monitor import Monitor, is_monitored
from rlkit_td3.preprocessing import obs_rows
from rlkit_td3.utils import NonFiniteError
from rlkit_td3.vec_env.gymnasium_bridge import GymnasiumVecEnv, VecEnvView
from rlkit_td3.vec_env.vec_normalize import VecNormalize

FLOAT32_MAX = float(np.finfo(np.float32).max)


def _fits_float32(values: Any) -> np.ndarray:
    """Per row of ``values`` (shape ``(n, ...)``): finite, and still finite as float32 (the buffer's and the
    networks' dtype; a float64 of 1e300 is finite but becomes inf there). NaN compares false, so it fails too.
    A dict (Dict observations) fits where every key's row fits."""
    if isinstance(values, dict):
        return np.logical_and.reduce([_fits_float32(value) for value in values.values()])
    array = np.asarray(values)
    return (np.abs(array) <= FLOAT32_MAX).reshape(len(array), -1).all(axis=1)


def _all_fit_float32(values: Any) -> bool:
    """``_fits_float32(values).all()``, fast for the common dtypes (called on every step)."""
    if isinstance(values, dict):
        return all(_all_fit_float32(value) for value in values.values())
    array = np.asarray(values)
    kind, size = array.dtype.kind, array.dtype.itemsize
    if kind in "iub" and size <= 8:  # integers (even int64/uint64) and booleans are finite in float32
        return True
    if kind == "f" and size <= 4:
        return bool(np.isfinite(array).all())
    return bool((np.abs(array) <= FLOAT32_MAX).all())


def non_finite_error(
    venv: VectorEnv,
    autoreset_mode: AutoresetMode,
    num_timesteps: int,
    obs: Any,
    rewards: np.ndarray | None,
    infos: dict[str, Any] | None = None,
    dones: np.ndarray | None = None,
    where: str = "step()",
    rows: np.ndarray | None = None,
) -> NonFiniteError:
    """The `NonFiniteError` for a step (or reset) of ``venv`` that returned a non-finite value in one of ``rows``
    (default all): it names the env, the step (``num_timesteps`` before it) and the value."""
    n = venv.num_envs
    rows = np.ones(n, dtype=bool) if rows is None else rows
    bad_obs = ~_fits_float32(obs if isinstance(obs, dict) else np.reshape(obs, (n, -1))) & rows
    bad_reward = np.zeros(n, dtype=bool) if rewards is None else ~_fits_float32(rewards) & rows
    bad_final = np.zeros(n, dtype=bool)
    if infos is not None and dones is not None and autoreset_mode == AutoresetMode.SAME_STEP:
        for j in np.flatnonzero(dones & rows):
            final = infos["final_obs"][j]
            one = {k: np.asarray(v)[None] for k, v in final.items()} if isinstance(final, dict) else [final]
            bad_final[j] = not _fits_float32(one)[0]
    i = int(np.flatnonzero(bad_obs | bad_reward | bad_final)[0])
    if bad_obs[i]:
        row = obs_rows(obs, i)
        shown = (
            {key: np.array2string(np.asarray(value), threshold=8) for key, value in row.items()}
            if isinstance(row, dict)
            else np.array2string(np.asarray(row), threshold=8)
        )
        what = f"observation {shown} from {where}"
    elif bad_reward[i]:
        what = f"reward ({rewards[i]}) from {where}"
    else:
        final = np.array2string(np.asarray(infos["final_obs"][i]), threshold=8)
        what = f"final observation {final} (infos['final_obs']) from {where}"
    when = "before" if where == "reset()" else "at"
    return NonFiniteError(
        f"env {i} ({env_name(venv, i)}) returned a non-finite {what} (NaN, inf, or beyond float32's "
        f"range +-{FLOAT32_MAX:.3g}) {when} step {num_timesteps + n} (num_timesteps, counted over {n} "
        "env(s)); nothing from this step was stored or trained on, and the next learn() starts fresh episodes"
    )


class UnsupportedSpaceError(TypeError, AssertionError):
    """An action space TD3 and DDPG cannot act in: a ``TypeError``, and an ``AssertionError`` as Stable-Baselines3's
    constructors raise for an unsupported space."""


def check_action_space(space: spaces.Space) -> spaces.Box:
    """The algorithms need a floating-point Box action space with at least one element and finite bounds.

    Raises:
        UnsupportedSpaceError: (a ``TypeError`` and an ``AssertionError``) not a Box (e.g. Discrete, MultiDiscrete).
        TypeError: a Box of integers or booleans.
        ValueError: no element (a zero in the shape), infinite or NaN bounds, or ``low >= high`` in some dimension.
    """
    if not isinstance(space, spaces.Box):
        raise UnsupportedSpaceError(
            f"action_space must be a continuous gymnasium.spaces.Box; got {space!r}. "
            "TD3 and DDPG do not support discrete action spaces"
        )
    if np.dtype(space.dtype).kind != "f":
        raise TypeError(
            f"action_space must have a floating-point dtype, got {space!r}: the actor's continuous actions would be "
            "truncated to integers behind its back. Use a float Box and round in the env (or a wrapper)"
        )
    if int(np.prod(space.shape)) == 0:
        raise ValueError(f"action_space must have at least one element, got shape {space.shape}")
    if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
        raise ValueError(f"action_space must have finite bounds, got low={space.low}, high={space.high}")
    if not np.all(space.low < space.high):
        raise ValueError(f"action_space must have low < high in every dimension, got {space!r}")
    return space


class _ObservationCheck(gym.Wrapper):
    """Raises a clear error when an observation's shape or kind of dtype differs from the observation space.

    It also keeps ``options`` from an env whose ``reset()`` does not take them (Stable-Baselines3 only passes
    ``seed``): gymnasium's vector envs pass ``options`` to every sub-env.

    Without it a wrong shape surfaces later as a broadcasting error deep inside gymnasium or torch. (Float
    widths may differ: many envs return float64 for a float32 space, and the buffer stores float32.)
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        # a Dict space: each key's observation is checked against its Box
        self._spaces = dict(space.spaces) if isinstance(space, spaces.Dict) else None
        self._space, self._shape = space, getattr(space, "shape", None)
        self._steps = 0
        try:
            parameters = inspect.signature(env.unwrapped.reset).parameters.values()
        except (TypeError, ValueError):  # no signature to read: pass options as gymnasium does
            self._reset_takes_options = True
        else:
            self._reset_takes_options = any(p.name == "options" or p.kind is p.VAR_KEYWORD for p in parameters)

    def _name(self) -> str:
        return self.spec.id if self.spec is not None else type(self.env.unwrapped).__name__

    def _where(self) -> str:
        return f"step() (its step {self._steps} since creation)"

    def _check(self, obs: Any, where: str | None) -> None:
        """``where``: ``reset()``, or None for the latest ``step()`` (the messages are built only to raise)."""
        if self._spaces is not None:
            where = where or self._where()
            name = self._name()
            if not isinstance(obs, dict) or set(obs) != set(self._spaces):
                got = f"keys {sorted(obs)}" if isinstance(obs, dict) else f"a {type(obs).__name__}"
                raise ValueError(
                    f"{name} returned an observation with {got} from {where}; its observation_space is a Dict "
                    f"with keys {sorted(self._spaces)}"
                )
            for key, space in self._spaces.items():
                self._check_array(obs[key], space, where, name, f"observation[{key!r}]", f"observation_space[{key!r}]")
            return
        if self._shape is None:
            return
        self._check_array(obs, self._space, where, None, "an observation", "observation_space")

    def _check_array(
        self, obs: Any, space: spaces.Space, where: str | None, name: str | None, what: str, label: str
    ) -> None:
        array = np.asarray(obs)
        shape, kind = getattr(space, "shape", None), np.dtype(space.dtype).kind
        if array.shape != shape or (array.dtype.kind != kind and not (kind == "f" and array.dtype.kind in "iub")):
            # integers and booleans fit a float space; nothing else mixes
            raise ValueError(
                f"{name or self._name()} returned {what} of shape {array.shape} and dtype {array.dtype} from "
                f"{where or self._where()}; "
                f"its {label} has shape {shape} and dtype {space.dtype}"
            )

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        if not self._reset_takes_options:
            kwargs.pop("options", None)  # an env whose reset() has no options parameter works, as in SB3
        obs, info = self.env.reset(**kwargs)
        self._check(obs, "reset()")
        return obs, info

    def step(self, action: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._steps += 1
        self._check(obs, None)
        return obs, reward, terminated, truncated, info


EPISODE_STATS_KEY = "rlkit_episode"
"""The ``infos`` key of the episode-statistics wrapper the algorithm adds (a private key, so that it never
clashes with ``info["episode"]`` written by `Monitor` inside sub-envs)."""


def episode_statistics(env: VectorEnv | None) -> RecordEpisodeStatistics | None:
    """The gymnasium ``RecordEpisodeStatistics`` wrapper in ``env``'s wrapper chain, if any."""
    while isinstance(env, VectorWrapper):
        if isinstance(env, RecordEpisodeStatistics):
            return env
        env = env.env
    return None


def _make_env_id(env_id: str) -> gym.Env:
    """``gymnasium.make(env_id)``, with ``render_mode="rgb_array"`` when the env supports it (as Stable-Baselines3
    does), so that ``model.env.render()`` returns frames. Ids whose env has no ``rgb_array`` mode, or that set
    their own ``render_mode``, are made as they are."""
    try:
        spec = gym.spec(env_id)
        creator = spec.entry_point
        if isinstance(creator, str):
            creator = load_env_creator(creator)
        modes = getattr(creator, "metadata", {}).get("render_modes", ())
        wants_frames = "render_mode" not in spec.kwargs and "rgb_array" in modes
    except Exception:  # noqa: BLE001  (gymnasium.make below reports a bad id or entry point itself)
        wants_frames = False
    return gym.make(env_id, render_mode="rgb_array") if wants_frames else gym.make(env_id)


def as_training_env(env: Any) -> VectorEnv:
    """Wrap what the user passed as the gymnasium vector env the training loop steps, recording episode statistics.

    An env id is made with ``gymnasium.make``, with ``render_mode="rgb_array"`` where the env supports it (so
    ``model.get_env().render()`` returns one frame per env); a single env is wrapped in
    `Monitor` (unless it already has one, as Stable-Baselines3 does), in an
    observation check, and in a one-env ``SyncVectorEnv`` with autoreset disabled: the algorithm resets
    ended episodes itself, just before the next step, which is what makes a checkpoint at an episode
    boundary resume exactly. A gymnasium vector env is used as it is; a Stable-Baselines3-style ``VecEnv``
    (`rlkit_td3.vec_env`, or any object with its contract) is seen through `GymnasiumVecEnv`, a same-step
    autoreset vector env; another model's ``get_env()`` stands for the env that model trains on, which is used as
    that model uses it (see `_env_behind_view`). Unless the result already has one, it is then
    wrapped in gymnasium's vector ``RecordEpisodeStatistics``: its last 100 episodes give
    ``rollout/ep_rew_mean`` and ``rollout/ep_len_mean``.

    Raises:
        TypeError: ``env`` is none of these.
    """
    if isinstance(env, str):
        env = _make_env_id(env)
    if isinstance(env, _TrainingEnvView):
        env = _env_behind_view(env)
    if is_sb3_vec_env(env):
        env = GymnasiumVecEnv(env)
    if isinstance(env, gym.Env):
        single = _ObservationCheck(env if is_monitored(env) else Monitor(env))
        env = SyncVectorEnv([lambda: single], autoreset_mode=AutoresetMode.DISABLED)
    if not isinstance(env, VectorEnv):
        raise TypeError(
            f"env must be a gymnasium Env, a gymnasium VectorEnv, a Stable-Baselines3-style VecEnv or an env id "
            f"string, got {env!r}"
        )
    if episode_statistics(env) is None:
        if isinstance(env.metadata.get("autoreset_mode"), str):
            env.metadata["autoreset_mode"] = AutoresetMode(env.metadata["autoreset_mode"])
        env = RecordEpisodeStatistics(env, buffer_length=100, stats_key=EPISODE_STATS_KEY)
    return env


def _env_behind_view(view: _TrainingEnvView) -> VectorEnv:
    """The env another model's ``get_env()`` shows, as that model steps it, without that model's own
    episode-statistics wrapper (the new owner gets its own).

    Training through the view instead would step the env with the view's same-step resets, not the way the other
    model (and the run a checkpoint saved) stepped it, so a resumed run could not go on exactly. The other model's
    last observations are stale from here on: its next ``learn`` starts fresh episodes, as after any outside use.
    """
    view._model._env_used_outside = True
    env = view.gym_env
    if isinstance(env, RecordEpisodeStatistics) and getattr(env, "_stats_key", None) == EPISODE_STATS_KEY:
        env = env.env
    return env


def env_name(env: VectorEnv, index: int = 0) -> str:
    """How error messages name the user's env behind sub-env ``index`` of ``env``: its registered id, else its class.

    The library's own wrappers (episode statistics, ``Monitor``, the observation check, the one-env
    ``SyncVectorEnv``) are looked through. Only called on error paths.
    """
    base = env.unwrapped
    if isinstance(base, SyncVectorEnv) and 0 <= index < len(base.envs):
        sub = base.envs[index]
        return sub.spec.id if sub.spec is not None else type(sub.unwrapped).__name__
    if env.spec is not None:
        return env.spec.id
    try:  # e.g. an AsyncVectorEnv: ask the sub-env for its spec
        spec = base.get_attr("spec")[index]
    except Exception:  # noqa: BLE001  (naming the env must never hide the error being reported)
        spec = None
    return spec.id if spec is not None else type(base).__name__


class _TrainingEnvView(VecEnvView):
    """`VecEnvView` of a model's training env that tells the model when user code stepped or reset it.

    The model's last observations are then stale, so its next ``learn`` starts fresh episodes instead of
    storing a transition from an observation the env has left.
    """

    def __init__(self, venv: VectorEnv, model: Any) -> None:
        super().__init__(venv)
        self._model = model

    def reset(self) -> Any:
        self._model._env_used_outside = True
        return super().reset()

    def step_async(self, actions: np.ndarray) -> None:
        self._model._env_used_outside = True
        super().step_async(actions)

    def step_wait(self) -> Any:
        obs, rewards, dones, infos = super().step_wait()
        for info in infos:  # the model's own episode-statistics key is not the user's business
            info.pop(EPISODE_STATS_KEY, None)
        return obs, rewards, dones, infos


def find_vec_normalize(env: Any) -> VecNormalize | None:
    """The `VecNormalize` wrapper in the chain of Stable-Baselines3-style ``VecEnv`` wrappers of ``env``, or
    ``None`` (a `VecEnvView` of a gymnasium vector env has none)."""
    while env is not None:
        if isinstance(env, VecNormalize):
            return env
        env = getattr(env, "venv", None) if not isinstance(env, VecEnvView) else None
    return None

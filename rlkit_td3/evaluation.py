"""``evaluate_policy``: run a model for whole episodes and report the returns.

The signature, defaults and semantics are Stable-Baselines3's (``stable_baselines3.common.evaluation``):
episodes are spread over a vector env's envs as ``(n_eval_episodes + i) // n_envs`` for env ``i``, the
returns and lengths come from the [`Monitor`][rlkit_td3.monitor.Monitor] wrapper's ``info["episode"]`` when the
env has one, ``callback(locals(), globals())`` runs after each step once per env still evaluating, and
``reward_threshold`` raises ``AssertionError`` when the mean return is not above it. ``seed`` is an
addition.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Protocol

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv, VectorWrapper
from gymnasium.wrappers.vector import RecordEpisodeStatistics

from rlkit_td3.checks.arguments import check_bool
from rlkit_td3.monitor import Monitor, is_monitored

EvalCallbackFn = Callable[[dict[str, Any], dict[str, Any]], Any]


class _Predictor(Protocol):
    def predict(self, observation: Any, deterministic: bool = True) -> tuple[np.ndarray, Any]: ...


def is_sb3_vec_env(env: Any) -> bool:
    """Whether ``env`` looks like a Stable-Baselines3-style ``VecEnv`` (not a gymnasium vector env).

    Such an env has ``num_envs``, ``step_async`` and ``step_wait``; its ``reset()`` returns only the
    observations and its ``step`` returns ``(obs, rewards, dones, infos)`` with a list of info dicts,
    resetting ended envs itself.
    """
    return not isinstance(env, VectorEnv) and all(
        hasattr(env, name) for name in ("num_envs", "step_async", "step_wait")
    )


def evaluate_policy(
    model: _Predictor,
    env: gym.Env | VectorEnv | Any | str,
    n_eval_episodes: int = 10,
    deterministic: bool = True,
    render: bool = False,
    callback: EvalCallbackFn | None = None,
    reward_threshold: float | None = None,
    return_episode_rewards: bool = False,
    warn: bool = True,
    seed: int | None = None,
) -> tuple[float, float] | tuple[list[float], list[int]]:
    """Run ``n_eval_episodes`` complete episodes with ``model.predict``.

    When the env is wrapped in [`Monitor`][rlkit_td3.monitor.Monitor] (per sub-env for vector envs), an
    episode's return and length are those Monitor reports in ``info["episode"]``, as Stable-Baselines3 does:
    wrappers added above Monitor (reward scaling, early resets) then do not change them, and a ``done`` without
    ``info["episode"]`` (e.g. a lost life) does not end the episode. Otherwise the rewards are summed as they
    come out of ``env.step``.

    Args:
        model: anything with ``predict(obs, deterministic=...) -> (action, state)`` (a TD3 or DDPG model).
        env: a gymnasium Env, an env id (made with ``gymnasium.make``), a gymnasium vector env, or a
            Stable-Baselines3-style VecEnv (see [`is_sb3_vec_env`][rlkit_td3.evaluation.is_sb3_vec_env]), such as
            ``model.get_env()``.
            With several envs, env ``i`` runs ``(n_eval_episodes + i) // n_envs`` episodes.
        n_eval_episodes: number of episodes.
        deterministic: passed to ``predict``.
        render: call ``env.render()`` after every step.
        callback: ``callback(locals(), globals())`` after every step, once per env still evaluating; its
            locals include ``i`` (the env index), ``reward``, ``done``, ``info`` (that env's info dict),
            ``episode_rewards``, ``episode_lengths`` and ``episode_counts``.
        reward_threshold: raise ``AssertionError`` unless the mean return is above it.
        return_episode_rewards: return the per-episode lists instead of mean and std.
        warn: warn when the env has no Monitor wrapper but other wrappers, which may change its returns and
            lengths (as Stable-Baselines3 does, but an env with only ``gymnasium.make``'s wrappers, or none, or
            made here from an env id, does not warn: nothing can change its returns).
        seed: seed of the first reset (the following resets continue the env's RNG).

    Returns:
        ``(mean_return, std_return)``, or ``(episode_returns, episode_lengths)``.

    Raises:
        ValueError: ``n_eval_episodes`` is not a positive int, or ``seed`` not a non-negative int (NumPy
            integers count as ints).
        TypeError: ``env`` is none of the above, or ``callback`` is not callable.
        AssertionError: the mean return is not above ``reward_threshold``.
        RuntimeError: a Monitor-wrapped env ends ``MAX_DONES_WITHOUT_EPISODE`` (100) episodes in a row without
            Monitor's ``info["episode"]`` (a wrapper above Monitor ends them: the loop would never finish).
    """
    if (
        isinstance(n_eval_episodes, (bool, np.bool_))
        or not isinstance(n_eval_episodes, (int, np.integer))
        or n_eval_episodes < 1
    ):
        raise ValueError(f"n_eval_episodes must be a positive int, got {n_eval_episodes!r}")
    deterministic, render = check_bool("deterministic", deterministic), check_bool("render", render)
    return_episode_rewards = check_bool("return_episode_rewards", return_episode_rewards)
    warn = check_bool("warn", warn)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be a function callback(locals, globals) or None, got {callback!r}")
    if reward_threshold is not None and (
        isinstance(reward_threshold, bool) or not isinstance(reward_threshold, (int, float, np.number))
    ):
        raise TypeError(f"reward_threshold must be a number or None, got {reward_threshold!r}")
    n_eval_episodes = int(n_eval_episodes)
    if seed is not None:
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be None or a non-negative int, got {seed!r}")
        seed = int(seed)
    if isinstance(env, str):
        env = gym.make(env)
    if is_sb3_vec_env(env):
        monitored, plain = _sb3_vec_env_monitored(env), False
        run = _evaluate_sb3_vec
    elif isinstance(env, VectorEnv):
        monitored, plain = _vector_env_monitored(env), _plain_vector_env(env)
        run = _evaluate_vector
    elif isinstance(env, gym.Env):
        monitored, plain = is_monitored(env), _plain_env(env)
        run = _evaluate_single
    else:
        raise TypeError(
            f"env must be a gymnasium Env, an env id, a gymnasium VectorEnv or a Stable-Baselines3-style VecEnv, "
            f"got {env!r}"
        )
    if warn and not monitored and not plain:
        warnings.warn(
            "the evaluation env has no Monitor wrapper (rlkit_td3.monitor.Monitor): the returns and lengths are "
            "those env.step reports, which other wrappers (reward scaling, early resets) may have changed. "
            "Wrap the env in Monitor first to evaluate the env's own returns.",
            UserWarning,
            stacklevel=2,
        )
    returns, lengths = run(model, env, n_eval_episodes, deterministic, render, callback, seed, monitored)
    mean_reward, std_reward = float(np.mean(returns)), float(np.std(returns))
    if reward_threshold is not None and not mean_reward > reward_threshold:
        raise AssertionError(f"Mean reward below threshold: {mean_reward:.2f} < {reward_threshold:.2f}")
    if return_episode_rewards:
        return returns, lengths
    return mean_reward, std_reward


HARMLESS_WRAPPERS: tuple[type[gym.Wrapper], ...] = (
    gym.wrappers.TimeLimit,
    gym.wrappers.OrderEnforcing,
    gym.wrappers.PassiveEnvChecker,
)
"""The wrappers ``gymnasium.make`` adds: they change neither rewards nor episode ends (the time limit is part of
the env's definition), so an env with only these needs no Monitor to be evaluated faithfully."""


def _plain_env(env: gym.Env) -> bool:
    """Whether ``env`` has no wrapper but ``HARMLESS_WRAPPERS`` (nothing that could change its returns)."""
    while isinstance(env, gym.Wrapper):
        if not isinstance(env, HARMLESS_WRAPPERS):
            return False
        env = env.env
    return True


def _plain_vector_env(env: VectorEnv) -> bool:
    """A SyncVectorEnv, without vector wrappers, of plain envs."""
    return isinstance(env, SyncVectorEnv) and all(_plain_env(sub) for sub in env.envs)


def _vector_env_monitored(env: VectorEnv) -> bool:
    """A gymnasium vector env counts as monitored when each of its sub-envs has a Monitor (seen only through
    a SyncVectorEnv) or when gymnasium's ``RecordEpisodeStatistics`` writes ``info["episode"]`` above them."""
    layer: Any = env
    while isinstance(layer, VectorWrapper):
        if isinstance(layer, RecordEpisodeStatistics) and getattr(layer, "_stats_key", None) == "episode":
            return True
        layer = layer.env
    return isinstance(layer, SyncVectorEnv) and all(is_monitored(sub) for sub in layer.envs)


def _sb3_vec_env_monitored(env: Any) -> bool:
    layer = env
    while layer is not None:
        if type(layer).__name__ == "VecMonitor":
            return True
        layer = getattr(layer, "venv", None)
    try:
        return bool(env.env_is_wrapped(Monitor)[0])
    except Exception:  # noqa: BLE001  (a VecEnv without env_is_wrapped, or one that cannot tell)
        return False


def _evaluate_single(
    model: _Predictor,
    env: gym.Env,
    n_eval_episodes: int,
    deterministic: bool,
    render: bool,
    callback: EvalCallbackFn | None,
    seed: int | None,
    monitored: bool,
) -> tuple[list[float], list[int]]:
    tally = _Tally(1, monitored)  # the names below are the callback's locals, as in Stable-Baselines3
    episode_rewards, episode_lengths = tally.episode_rewards, tally.episode_lengths
    episode_counts = tally.episode_counts
    current_rewards, current_lengths = tally.current_rewards, tally.current_lengths
    i = 0
    observations, _ = env.reset(seed=seed)
    while episode_counts[i] < n_eval_episodes:
        action, _ = model.predict(observations, deterministic=deterministic)
        new_observations, reward, terminated, truncated, info = env.step(action)
        done = bool(terminated or truncated)
        current_rewards[i] += float(reward)
        current_lengths[i] += 1
        if callback is not None:
            callback(locals(), globals())
        if render:
            env.render()
        if done:
            tally.end_episode(i, info)
            new_observations, _ = env.reset()
        observations = new_observations
    return episode_rewards, episode_lengths


MAX_DONES_WITHOUT_EPISODE = 100
"""A monitored env that ends this many episodes in a row without Monitor's ``info["episode"]`` is an error."""


class _Tally:
    """The returns and lengths of finished episodes, and the running sums of the current ones, per env."""

    def __init__(self, n_envs: int, monitored: bool) -> None:
        self.monitored = monitored
        self.episode_rewards: list[float] = []
        self.episode_lengths: list[int] = []
        self.episode_counts = np.zeros(n_envs, dtype=int)
        self.current_rewards = np.zeros(n_envs)
        self.current_lengths = np.zeros(n_envs, dtype=int)
        self._dones_without_episode = np.zeros(n_envs, dtype=int)

    def end_episode(self, i: int, info: dict[str, Any]) -> None:
        """Record env ``i``'s finished episode (Monitor's figures when monitored) and restart its sums.

        Raises:
            RuntimeError: a monitored env keeps ending episodes without Monitor's ``info["episode"]``.
        """
        if not self.monitored:
            self._record(i, float(self.current_rewards[i]), int(self.current_lengths[i]))
        elif "episode" in info:
            self._record(i, float(info["episode"]["r"]), int(info["episode"]["l"]))
            self._dones_without_episode[i] = 0
        else:  # a done without it (e.g. a lost life) is not the end of the episode
            self._dones_without_episode[i] += 1
            if self._dones_without_episode[i] >= MAX_DONES_WITHOUT_EPISODE:
                raise RuntimeError(
                    f"env {i} ended {MAX_DONES_WITHOUT_EPISODE} episodes in a row without the Monitor wrapper's "
                    'info["episode"]: a wrapper above Monitor ends the episodes (a TimeLimit added after Monitor?). '
                    "Put Monitor outermost, or evaluate an env without Monitor"
                )
        self.current_rewards[i] = 0.0
        self.current_lengths[i] = 0

    def _record(self, i: int, episode_return: float, length: int) -> None:
        self.episode_rewards.append(episode_return)
        self.episode_lengths.append(length)
        self.episode_counts[i] += 1


def _env_info(infos: dict[str, Any], i: int) -> dict[str, Any]:
    """Env ``i``'s info dict out of a gymnasium vector env's dict of arrays (``_key`` masks say who has what)."""
    info: dict[str, Any] = {}
    for key, value in infos.items():
        if key.startswith("_"):
            continue
        mask = infos.get(f"_{key}")
        if mask is not None and not mask[i]:
            continue
        info[key] = _env_info(value, i) if isinstance(value, dict) else value[i]
    return info


def _evaluate_vector(
    model: _Predictor,
    env: VectorEnv,
    n_eval_episodes: int,
    deterministic: bool,
    render: bool,
    callback: EvalCallbackFn | None,
    seed: int | None,
    monitored: bool,
) -> tuple[list[float], list[int]]:
    n_envs = env.num_envs
    episode_count_targets = np.array([(n_eval_episodes + i) // n_envs for i in range(n_envs)])
    tally = _Tally(n_envs, monitored)  # the names below are the callback's locals, as in Stable-Baselines3
    episode_rewards, episode_lengths = tally.episode_rewards, tally.episode_lengths
    episode_counts = tally.episode_counts
    current_rewards, current_lengths = tally.current_rewards, tally.current_lengths
    mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
    mode = AutoresetMode(mode) if isinstance(mode, str) else mode
    resetting = np.zeros(n_envs, dtype=bool)  # next-step autoreset: this step only resets these envs
    observations, _ = env.reset(seed=seed)
    while (episode_counts < episode_count_targets).any():
        actions, _ = model.predict(observations, deterministic=deterministic)
        new_observations, rewards, terminated, truncated, infos = env.step(actions)
        live = ~resetting
        current_rewards += np.where(live, rewards, 0.0)
        current_lengths += live
        dones = (terminated | truncated) & live
        for i in range(n_envs):
            if live[i] and episode_counts[i] < episode_count_targets[i]:
                reward = rewards[i]
                done = bool(dones[i])
                info = _env_info(infos, i)
                if done and "final_info" in info:  # same-step autoreset: the info of the step that ended it
                    info = {**info["final_info"], "final_obs": info.get("final_obs")}
                if callback is not None:
                    callback(locals(), globals())
                if done:
                    tally.end_episode(i, info)
            if dones[i]:
                current_rewards[i] = 0.0
                current_lengths[i] = 0
        if mode == AutoresetMode.NEXT_STEP:
            resetting = dones
        elif mode == AutoresetMode.DISABLED and dones.any():  # e.g. the model's own env: reset the ended envs
            reset_obs, _ = env.reset(options={"reset_mask": dones.copy()})
            new_observations = np.where(dones.reshape(-1, *([1] * (reset_obs.ndim - 1))), reset_obs, new_observations)
        observations = new_observations
        if render:
            env.render()
    return episode_rewards, episode_lengths


def _evaluate_sb3_vec(
    model: _Predictor,
    env: Any,
    n_eval_episodes: int,
    deterministic: bool,
    render: bool,
    callback: EvalCallbackFn | None,
    seed: int | None,
    monitored: bool,
) -> tuple[list[float], list[int]]:
    n_envs = env.num_envs
    episode_count_targets = np.array([(n_eval_episodes + i) // n_envs for i in range(n_envs)])
    tally = _Tally(n_envs, monitored)  # the names below are the callback's locals, as in Stable-Baselines3
    episode_rewards, episode_lengths = tally.episode_rewards, tally.episode_lengths
    episode_counts = tally.episode_counts
    current_rewards, current_lengths = tally.current_rewards, tally.current_lengths
    if seed is not None:
        if not callable(getattr(env, "seed", None)):
            raise TypeError(f"seed={seed} needs a VecEnv with a seed() method; {type(env).__name__} has none")
        env.seed(seed)  # a VecEnv takes the seed of its next reset this way
    observations = env.reset()
    states = None
    episode_starts = np.ones(n_envs, dtype=bool)
    while (episode_counts < episode_count_targets).any():
        actions, states = model.predict(  # type: ignore[call-arg]
            observations, state=states, episode_start=episode_starts, deterministic=deterministic
        )
        new_observations, rewards, dones, infos = env.step(actions)
        current_rewards += rewards
        current_lengths += 1
        for i in range(n_envs):
            if episode_counts[i] < episode_count_targets[i]:
                reward = rewards[i]
                done = bool(dones[i])
                info = infos[i]
                episode_starts[i] = done
                if callback is not None:
                    callback(locals(), globals())
                if done:
                    tally.end_episode(i, info)
        observations = new_observations
        if render:
            env.render()
    return episode_rewards, episode_lengths


__all__ = ["HARMLESS_WRAPPERS", "MAX_DONES_WITHOUT_EPISODE", "evaluate_policy", "is_sb3_vec_env"]

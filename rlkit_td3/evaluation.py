"""``evaluate_policy``: run a model for whole episodes and report the returns."""

from __future__ import annotations

from typing import Any, Protocol

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv


class _Predictor(Protocol):
    def predict(self, observation: Any, deterministic: bool = True) -> tuple[np.ndarray, Any]: ...


def evaluate_policy(
    model: _Predictor,
    env: gym.Env | VectorEnv | str,
    n_eval_episodes: int = 10,
    deterministic: bool = True,
    return_episode_rewards: bool = False,
    seed: int | None = None,
) -> tuple[float, float] | tuple[list[float], list[int]]:
    """Run ``n_eval_episodes`` complete episodes with ``model.predict``.

    Args:
        model: anything with ``predict(obs, deterministic=...) -> (action, state)`` (a TD3 or DDPG model).
        env: a gymnasium Env, an env id, or a vector env (episodes are then spread over its envs, and
            only the first ``n_eval_episodes`` to finish, in completion order per env, are counted).
        n_eval_episodes: number of episodes.
        deterministic: passed to ``predict``.
        return_episode_rewards: return the per-episode lists instead of mean and std.
        seed: seed of the first reset (the following resets continue the env's RNG).

    Returns:
        ``(mean_return, std_return)``, or ``(episode_returns, episode_lengths)``.

    Raises:
        ValueError: ``n_eval_episodes`` is not a positive int, or ``seed`` not a non-negative int (NumPy
            integers count as ints).
    """
    if (
        isinstance(n_eval_episodes, (bool, np.bool_))
        or not isinstance(n_eval_episodes, (int, np.integer))
        or n_eval_episodes < 1
    ):
        raise ValueError(f"n_eval_episodes must be a positive int, got {n_eval_episodes!r}")
    n_eval_episodes = int(n_eval_episodes)
    if seed is not None:
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be None or a non-negative int, got {seed!r}")
        seed = int(seed)
    if isinstance(env, str):
        env = gym.make(env)
    if isinstance(env, VectorEnv):
        returns, lengths = _evaluate_vector(model, env, n_eval_episodes, deterministic, seed)
    else:
        returns, lengths = [], []
        for episode in range(n_eval_episodes):
            obs, _ = env.reset(seed=seed if episode == 0 else None)
            done, total, length = False, 0.0, 0
            while not done:
                action, _ = model.predict(obs, deterministic=deterministic)
                obs, reward, terminated, truncated, _ = env.step(action)
                total += float(reward)
                length += 1
                done = terminated or truncated
            returns.append(total)
            lengths.append(length)
    if return_episode_rewards:
        return returns, lengths
    return float(np.mean(returns)), float(np.std(returns))


def _evaluate_vector(
    model: _Predictor, env: VectorEnv, n_episodes: int, deterministic: bool, seed: int | None
) -> tuple[list[float], list[int]]:
    n = env.num_envs
    targets = np.array([(n_episodes + i) // n for i in range(n)])  # episodes per env, summing to n_episodes
    counts = np.zeros(n, dtype=int)
    ep_returns = np.zeros(n)
    ep_lengths = np.zeros(n, dtype=int)
    returns: list[float] = []
    lengths: list[int] = []
    next_step = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP) == AutoresetMode.NEXT_STEP
    resetting = np.zeros(n, dtype=bool)
    obs, _ = env.reset(seed=seed)
    while (counts < targets).any():
        actions, _ = model.predict(obs, deterministic=deterministic)
        obs, rewards, terminated, truncated, _ = env.step(actions)
        live = ~resetting if next_step else np.ones(n, dtype=bool)
        ep_returns += np.where(live, rewards, 0.0)
        ep_lengths += live
        dones = (terminated | truncated) & live
        for i in np.flatnonzero(dones):
            if counts[i] < targets[i]:
                returns.append(float(ep_returns[i]))
                lengths.append(int(ep_lengths[i]))
                counts[i] += 1
            ep_returns[i] = 0.0
            ep_lengths[i] = 0
        if next_step:
            resetting = dones
    return returns, lengths

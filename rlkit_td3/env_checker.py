"""``check_env``: check that a custom env follows gymnasium's API and suits TD3/DDPG.

The same entry point as Stable-Baselines3's ``stable_baselines3.common.env_checker.check_env`` (same
signature and defaults). It runs, in order:

1. the spaces: both must be gymnasium spaces; the action space must be a ``Box`` with finite bounds
   (TD3 and DDPG output continuous actions); with ``warn=True`` it warns about what works poorly
   (an action space not symmetric and normalised to [-1, 1], a float64 action or observation space,
   observation spaces the MLP policy cannot take as they are: ``Dict``, ``Tuple``, ``Discrete``,
   images and other multi-dimensional boxes);
2. the API: ``reset(seed=...)`` returns ``(obs, info)``, ``step`` returns five values, observations match
   the observation space (type, shape, dtype, bounds, naming the entries out of bounds), rewards are
   numbers and ``terminated``/``truncated`` are booleans;
3. gymnasium's own checker (``gymnasium.utils.env_checker.check_env``): seeding determinism, reset
   options, step determinism, returned data not reused, and its passive checks (which warn);
4. the render method, unless ``skip_render_check``;
5. a few random steps whose observations and rewards must be finite.

A failed check raises [`EnvCheckError`][rlkit_td3.env_checker.EnvCheckError], an ``AssertionError`` as in
Stable-Baselines3 (whose checker asserts); gymnasium's checker raises ``AssertionError`` too, or
``gymnasium.error.Error``.
"""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import env_checker as gym_checker

from rlkit_td3.checks import check_bool

N_NAN_CHECK_STEPS = 10
"""Random steps taken by the final check for NaN and infinite observations and rewards."""


class EnvCheckError(AssertionError):
    """The env does not follow gymnasium's API or cannot be used by TD3/DDPG."""


def _warn(message: str) -> None:
    warnings.warn(message, UserWarning, stacklevel=4)  # the caller of check_env


def _check_spaces(env: gym.Env) -> None:
    for name in ("observation_space", "action_space"):
        space = getattr(env, name, None)
        if not isinstance(space, spaces.Space):
            raise EnvCheckError(
                f"env.{name} must be a gymnasium.spaces.Space (see https://gymnasium.farama.org/api/spaces/), "
                f"got {space!r}"
            )
    action_space = env.action_space
    if not isinstance(action_space, spaces.Box):
        raise EnvCheckError(
            f"env.action_space must be a continuous gymnasium.spaces.Box, got {action_space!r}: TD3 and DDPG output "
            "continuous actions and cannot act in discrete (Discrete, MultiDiscrete, MultiBinary) or composite "
            "(Dict, Tuple) action spaces"
        )
    if not (np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
        raise EnvCheckError(
            f"env.action_space must have finite bounds, got low={action_space.low}, high={action_space.high}: "
            "TD3 and DDPG squash their actions into [low, high]"
        )
    if not np.all(action_space.low < action_space.high):
        raise EnvCheckError(f"env.action_space must have low < high in every dimension, got {action_space!r}")


def _warn_about_spaces(env: gym.Env) -> None:
    """Warnings for spaces that work, but poorly (SB3's ``warn=True`` checks, adapted to TD3/DDPG)."""
    action_space: spaces.Box = env.action_space
    if np.any(action_space.low != -1) or np.any(action_space.high != 1):
        _warn(
            f"the action space has low={action_space.low}, high={action_space.high}: we recommend a symmetric "
            "and normalised Box action space, [-1, 1] (rlkit_td3 rescales actions itself, but an env acting in "
            "[-1, 1] is easier to tune and to share; cf. gymnasium.wrappers.RescaleAction)"
        )
    if action_space.dtype != np.float32:
        _warn(f"the action space has dtype {action_space.dtype}: we recommend np.float32 to avoid casting errors")

    obs_space = env.observation_space
    if isinstance(obs_space, (spaces.Dict, spaces.Tuple)):
        _warn(
            f"the observation space is a {type(obs_space).__name__}: rlkit_td3's MlpPolicy takes a Box observation; "
            "flatten it first, e.g. gymnasium.wrappers.FlattenObservation(env)"
        )
        return
    if not isinstance(obs_space, spaces.Box):
        _warn(
            f"the observation space is {obs_space!r}: rlkit_td3's MlpPolicy takes a Box observation; "
            "convert it first, e.g. gymnasium.wrappers.FlattenObservation(env) for a one-hot Box"
        )
        return
    if len(obs_space.shape) == 3:
        _warn(
            f"the observation space {obs_space!r} looks like an image: use policy='CnnPolicy' (uint8 images, "
            "bounds 0 and 255) or a features_extractor_class of your own; MlpPolicy refuses uint8 images"
        )
    elif len(obs_space.shape) != 1:
        _warn(
            f"the observation space has shape {obs_space.shape} (neither a 1D vector nor an image): MlpPolicy "
            "flattens it; we recommend a 1D observation"
        )
    if obs_space.dtype == np.float64:
        _warn(
            "the observation space has dtype float64: rlkit_td3 stores and feeds observations as float32, "
            "so we recommend np.float32"
        )


def _check_obs(obs: Any, space: spaces.Space, method: str) -> None:
    """One observation against the observation space, with a message saying what differs."""
    if not isinstance(space, spaces.Tuple) and isinstance(obs, tuple):
        raise EnvCheckError(
            f"the observation returned by {method}() is a tuple; it must be a single observation "
            f"(did {method}() return {'(obs, info)' if method == 'reset' else 'an extra value'} inside the obs?)"
        )
    if isinstance(space, spaces.Dict):
        if not isinstance(obs, dict) or obs.keys() != space.spaces.keys():
            keys = sorted(obs) if isinstance(obs, dict) else type(obs).__name__
            raise EnvCheckError(
                f"the observation returned by {method}() must be a dict with keys {sorted(space.spaces)}, got {keys}"
            )
        for key, subspace in space.spaces.items():
            try:
                _check_obs(obs[key], subspace, method)
            except EnvCheckError as exc:
                raise EnvCheckError(f"observation key {key!r}: {exc}") from exc
        return
    if isinstance(space, spaces.Box):
        if not isinstance(obs, np.ndarray):
            raise EnvCheckError(
                f"the observation returned by {method}() must be a numpy array, got {type(obs).__name__}"
            )
        if obs.shape != space.shape:
            raise EnvCheckError(
                f"the observation returned by {method}() has shape {obs.shape}; the observation space has shape "
                f"{space.shape}"
            )
        if not np.can_cast(obs.dtype, space.dtype):
            raise EnvCheckError(
                f"the observation returned by {method}() has dtype {obs.dtype}, which cannot be cast safely to the "
                f"observation space's dtype {space.dtype}"
            )
        outside = (obs < space.low) | (obs > space.high)
        if np.any(outside):
            lines = [
                f"  obs[{','.join(map(str, index))}] = {obs[index]} not in [{space.low[index]}, {space.high[index]}]"
                for index in zip(*np.nonzero(outside))
            ]
            shown = "\n".join(lines[:10]) + (f"\n  ... and {len(lines) - 10} more" if len(lines) > 10 else "")
            raise EnvCheckError(
                f"the observation returned by {method}() is outside the observation space's bounds at "
                f"{len(lines)} entries:\n{shown}"
            )
    if not space.contains(obs):
        raise EnvCheckError(f"the observation returned by {method}() is not in the observation space {space!r}")


def _check_reset_and_step(env: gym.Env) -> None:
    try:
        result = env.reset(seed=0)
    except TypeError as exc:
        raise TypeError(f"reset() must accept the keyword arguments seed and options ({exc})") from exc
    if not isinstance(result, tuple) or len(result) != 2:
        raise EnvCheckError(
            f"reset() must return a tuple (obs, info), got {type(result).__name__}"
            + (f" of length {len(result)}" if isinstance(result, tuple) else "")
            + " (gymnasium's API: return obs, info)"
        )
    obs, info = result
    if not isinstance(info, dict):
        raise EnvCheckError(f"the info returned by reset() must be a dict, got {type(info).__name__}")
    _check_obs(obs, env.observation_space, "reset")

    data = env.step(env.action_space.sample())
    if not isinstance(data, tuple) or len(data) != 5:
        got = f"{len(data)} values" if isinstance(data, tuple) else type(data).__name__
        raise EnvCheckError(
            f"step() must return five values (obs, reward, terminated, truncated, info), got {got}"
            + (" (the old gym API's (obs, reward, done, info)?)" if isinstance(data, tuple) and len(data) == 4 else "")
        )
    obs, reward, terminated, truncated, info = data
    _check_obs(obs, env.observation_space, "step")
    if isinstance(reward, (bool, np.bool_)) or not isinstance(reward, (int, float, np.integer, np.floating)):
        raise EnvCheckError(f"the reward returned by step() must be a float, got {reward!r}")
    for name, flag in (("terminated", terminated), ("truncated", truncated)):
        if not isinstance(flag, (bool, np.bool_)):
            raise EnvCheckError(f"the {name} flag returned by step() must be a bool, got {flag!r}")
    if not isinstance(info, dict):
        raise EnvCheckError(f"the info returned by step() must be a dict, got {type(info).__name__}")


def _check_render(env: gym.Env, warn: bool) -> None:
    if warn and env.metadata.get("render_modes") is None:
        _warn("the env declares no render modes (env.metadata['render_modes']): render() may not work")
    if env.render_mode is not None:
        env.render()


def _flat(space: spaces.Space, obs: Any) -> np.ndarray:
    """The observation as one float array (composite spaces flattened)."""
    if isinstance(space, (spaces.Box, spaces.Dict, spaces.Tuple, spaces.Discrete, spaces.MultiDiscrete)):
        return np.asarray(spaces.flatten(space, obs), dtype=np.float64)
    return np.asarray(obs, dtype=np.float64)


def _check_finite(env: gym.Env) -> None:
    env.reset()
    for step in range(N_NAN_CHECK_STEPS):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        if not np.all(np.isfinite(_flat(env.observation_space, obs))):
            raise EnvCheckError(f"step() returned a non-finite observation (NaN or inf) at random step {step}: {obs}")
        if not np.isfinite(float(reward)):
            raise EnvCheckError(f"step() returned a non-finite reward {reward} at random step {step}")
        if terminated or truncated:
            env.reset()


def check_env(env: gym.Env, warn: bool = True, skip_render_check: bool = True) -> None:
    """Check that ``env`` follows gymnasium's API and can be used by TD3 and DDPG; raise on the first problem.

    Call it on a custom env before training. It resets and steps the env (with random actions).

    Args:
        env: the env to check (the raw env is best: wrappers can hide problems).
        warn: also warn about what works but poorly (action space not in [-1, 1], float64 spaces,
            observation spaces the MLP policy must flatten, no declared render modes) and let gymnasium's
            checker warn (infinite observation bounds, ...); False silences both.
        skip_render_check: skip calling ``render()`` (True by default, for headless machines and CI).

    Raises:
        TypeError: ``env`` is not a ``gymnasium.Env``, or its ``reset`` does not accept ``seed``.
        EnvCheckError: (an ``AssertionError``) a check failed; the message says which and how.
    """
    warn, skip_render_check = check_bool("warn", warn), check_bool("skip_render_check", skip_render_check)
    if not isinstance(env, gym.Env):
        raise TypeError(
            f"env must be a gymnasium.Env (see https://gymnasium.farama.org/api/env/), got {type(env).__name__}"
        )
    _check_spaces(env)
    if warn:
        _warn_about_spaces(env)
    _check_reset_and_step(env)
    with warnings.catch_warnings():
        if warn:  # the action-space advice is given above already, in TD3/DDPG terms
            warnings.filterwarnings("ignore", message=".*symmetric and normalized space")
        else:
            warnings.simplefilter("ignore")
        gym_checker.check_env(env, skip_render_check=True, skip_close_check=True)
    if not skip_render_check:
        _check_render(env, warn)
    _check_finite(env)


__all__ = ["EnvCheckError", "check_env"]

"""``check_env``: check that a custom env follows gymnasium's API, judged as Stable-Baselines3's checker does.

The same entry point as Stable-Baselines3's ``stable_baselines3.common.env_checker.check_env`` (same signature and
defaults), raising where SB3's raises and warning where SB3's warns. It runs, in order:

1. the spaces: both must be gymnasium spaces; a goal-conditioned env (one with ``compute_reward``) must observe a
   ``Dict``; a ``Box`` action space must have finite bounds (checked after the warnings of 3; TD3 and DDPG
   squash their actions into them; SB3 checks it only with ``warn=True``);
2. ``reset(seed=0)`` must accept ``seed`` (a ``TypeError`` otherwise; ``options`` is not required, as in SB3);
3. with ``warn=True``, what an SB3-style library supports poorly: Tuple, nested Dict, Sequence, Graph and OneOf
   observations (the last three skip the checks of returned values), (Multi)Discrete spaces not starting at 0 or
   with a multi-dimensional ``nvec``, Dict/Tuple action spaces, images that are not uint8 in [0, 255] or smaller
   than 36 x 36, observations neither 1D nor images, a Box action space not symmetric and normalised to [-1, 1],
   a non-float32 Box action space;
4. the returned values: ``reset`` returns ``(obs, info)``, ``step`` returns five values, observations match the
   space (type, shape, dtype, bounds naming every entry out of bounds, the Dict key that is wrong), the reward is
   a number, ``terminated``/``truncated`` are bools, and a goal env's reward is its ``compute_reward`` (also
   vectorised over a batch);
5. with ``warn=True``, gymnasium's own checker (``gymnasium.utils.env_checker.check_env``: seeding determinism,
   reset options, data not reused). What it finds is reported as one ``UserWarning``, not raised, and its
   passive warnings (infinite observation bounds, ...) are silenced: SB3's checker does not run it, and an env
   that does not seed through ``super().reset(seed=seed)`` still trains, only not reproducibly;
6. the render method, unless ``skip_render_check``;
7. a few random steps whose observations and rewards must be finite.

The action space is judged as SB3 judges it: a ``Discrete``, ``MultiDiscrete`` or ``MultiBinary`` action space
passes (SB3 has algorithms for them). TD3 and DDPG themselves refuse any action space but a ``Box``, with a clear
error, when the model is built.

A failed check raises [`EnvCheckError`][rlkit_td3.env_checker.EnvCheckError], an ``AssertionError`` as in
Stable-Baselines3 (whose checker asserts); messages hold what SB3's say (``Expected: (3,), actual shape: (2, 3)``,
``Error while checking key=obs``, ...) and, where it helps, more.
"""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import env_checker as gym_checker

from rlkit_td3.checks.arguments import check_bool

N_NAN_CHECK_STEPS = 10
"""Random steps taken by the final check for NaN and infinite observations and rewards."""

MIN_IMAGE_SIDE = 36
"""The smallest image side the default CNN (NatureCNN) takes."""


class EnvCheckError(AssertionError):
    """The env does not follow gymnasium's API (an ``AssertionError``, as Stable-Baselines3's checker raises)."""


def _warn(message: str) -> None:
    warnings.warn(message, UserWarning, stacklevel=4)  # the caller of check_env


def _is_goal_env(env: gym.Env) -> bool:
    return hasattr(env.unwrapped, "compute_reward")


# ---------------------------------------------------------------------------------------------------------- spaces
def _check_spaces(env: gym.Env) -> None:
    for name in ("observation_space", "action_space"):
        space = getattr(env, name, None)
        if not isinstance(space, spaces.Space):
            raise EnvCheckError(
                f"env.{name} must be a gymnasium.spaces.Space (see https://gymnasium.farama.org/api/spaces/), "
                f"got {space!r}"
            )
    if _is_goal_env(env) and not isinstance(env.observation_space, spaces.Dict):
        raise EnvCheckError(
            "the env defines compute_reward(), so it is a goal-conditioned env, whose observation space must be a "
            f"gymnasium.spaces.Dict; got {env.observation_space!r} (rename compute_reward() if it is not a goal env)"
        )


def _check_action_bounds(action_space: spaces.Space) -> None:
    if isinstance(action_space, spaces.Box) and not (
        np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))
    ):
        raise EnvCheckError(
            f"env.action_space must have finite bounds, got low={action_space.low}, high={action_space.high}: "
            "continuous actions are squashed into [low, high] (Continuous action space must have a finite lower "
            "and upper bound)"
        )


def _starts_at_zero(space: spaces.Space) -> bool:
    if not isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)):
        return True
    return bool(np.all(np.asarray(space.start) == 0))


def _warn_non_zero_start(space: spaces.Space, kind: str, key: str = "") -> None:
    if not _starts_at_zero(space):
        where = f" (key={key!r})" if key else ""
        _warn(
            f"the {type(space).__name__} {kind} space{where} starts at {space.start}, which is not supported: "
            "policies index actions and one-hot observations from 0; shift it with a wrapper"
        )


def _warn_about_spaces(env: gym.Env) -> bool:
    """Warnings for spaces that work poorly or not at all; True when the returned values cannot be checked."""
    obs_space, action_space = env.observation_space, env.action_space
    skip = False
    members: dict[str, spaces.Space] = {}
    if isinstance(obs_space, spaces.Dict):
        members = dict(obs_space.spaces)
        if any(isinstance(space, spaces.Dict) for space in members.values()):
            _warn(
                "Nested observation spaces are not supported (a Dict inside a Dict): flatten them to one level of keys"
            )
    inner = list(members.values())
    if isinstance(obs_space, spaces.Tuple):
        _warn(
            "the observation space is a Tuple, which is not supported; a Dict observation space is (MultiInputPolicy)"
        )
        inner = list(obs_space.spaces)
    if isinstance(obs_space, spaces.OneOf):
        _warn("OneOf observation spaces are not supported; the returned values are not checked")
        skip = True
    if isinstance(obs_space, spaces.Sequence) or any(isinstance(s, spaces.Sequence) for s in inner):
        _warn(
            "Sequence observation spaces are not supported (pad to a fixed size); the returned values are not checked"
        )
        skip = True
    if isinstance(obs_space, spaces.Graph) or any(isinstance(s, spaces.Graph) for s in inner):
        _warn("Graph observation spaces are not supported; the returned values are not checked")
        skip = True
    for key, space in members.items():
        _warn_non_zero_start(space, "observation", key)
    _warn_non_zero_start(obs_space, "observation")
    for kind, space in (("observation", obs_space), ("action", action_space)):
        if isinstance(space, spaces.MultiDiscrete) and space.nvec.ndim > 1:
            _warn(
                f"the MultiDiscrete {kind} space has a multi-dimensional nvec {space.nvec.tolist()}, which is not "
                "supported: flatten it to 1D with a wrapper"
            )
    _warn_non_zero_start(action_space, "action")
    if isinstance(action_space, (spaces.Dict, spaces.Tuple)):
        _warn(
            f"the action space is a {type(action_space).__name__}, which is not supported (actions must be one "
            "numpy array): flatten it with a wrapper"
        )
    for key, space in (members or {"": obs_space}).items():
        if isinstance(space, spaces.Box):
            _warn_about_box_observation(space, key)
    if isinstance(action_space, spaces.Box):
        if np.any(action_space.low != -1) or np.any(action_space.high != 1):
            _warn(
                f"the action space has low={action_space.low}, high={action_space.high}: we recommend a symmetric "
                "and normalised Box action space, [-1, 1] (rlkit_td3 rescales actions itself, but an env acting in "
                "[-1, 1] is easier to tune and to share; cf. gymnasium.wrappers.RescaleAction)"
            )
        if action_space.dtype != np.float32:
            _warn(f"the action space has dtype {action_space.dtype}: we recommend np.float32 to avoid casting errors")
    return skip


def _warn_about_box_observation(space: spaces.Box, key: str) -> None:
    name = f"observation {key!r}" if key else "observation"
    if len(space.shape) == 3:
        if space.dtype != np.uint8:
            _warn(
                f"the {name} looks like an image but has dtype {space.dtype}, not np.uint8 (if it is not an image, "
                "flatten it to a 1D vector)"
            )
        if np.any(space.low != 0) or np.any(space.high != 255):
            _warn(
                f"the {name} looks like an image but its bounds are not 0 and 255: the CNN policy scales images "
                "by 1/255"
            )
        channels_first = int(np.argmin(space.shape)) == 0
        height, width = space.shape[1:] if channels_first else space.shape[:2]
        if min(height, width) < MIN_IMAGE_SIDE:
            _warn(
                f"the {name} is a {height} x {width} image, smaller than the {MIN_IMAGE_SIDE} x {MIN_IMAGE_SIDE} "
                "the default CnnPolicy (NatureCNN) takes: use a features extractor of your own"
            )
    elif len(space.shape) != 1:
        _warn(
            f"the {name} has shape {space.shape}, neither an image nor a 1D vector: we recommend flattening it "
            "(the MLP policy flattens it as it is) or a features extractor of your own"
        )


# ------------------------------------------------------------------------------------------------- returned values
def _check_obs(obs: Any, space: spaces.Space, method: str) -> None:
    """One observation against one (non-Dict) space, with a message saying what differs."""
    if not isinstance(space, spaces.Tuple) and isinstance(obs, tuple):
        raise EnvCheckError(
            f"the observation returned by {method}() is a tuple; it must be a single observation "
            f"(did {method}() return {'(obs, info)' if method == 'reset' else 'an extra value'} inside the obs?)"
        )
    if isinstance(space, spaces.Discrete):
        if not np.issubdtype(type(obs), np.integer):
            raise EnvCheckError(f"the observation returned by {method}() must be an int, got {type(obs).__name__}")
    elif not isinstance(space, (spaces.Dict, spaces.Tuple)) and not isinstance(obs, np.ndarray):
        raise EnvCheckError(f"the observation returned by {method}() must be a numpy array, got {type(obs).__name__}")
    if isinstance(obs, np.ndarray):
        if obs.shape != space.shape:
            raise EnvCheckError(
                f"the observation returned by {method}() does not have the observation space's shape "
                f"({space!r}): Expected: {space.shape}, actual shape: {obs.shape}"
            )
        if not np.can_cast(obs.dtype, space.dtype):
            raise EnvCheckError(
                f"the observation returned by {method}() has dtype {obs.dtype}, which cannot be cast safely to the "
                f"observation space's dtype ({space!r}): Expected: {space.dtype}, actual dtype: {obs.dtype}"
            )
        if isinstance(space, spaces.Box):
            outside = (obs < space.low) | (obs > space.high)
            if np.any(outside):
                lines = [
                    f"  Expected: {space.low[index]} <= obs[{','.join(map(str, index))}] <= {space.high[index]}, "
                    f"actual value: {obs[index]}"
                    for index in zip(*np.nonzero(outside))
                ]
                raise EnvCheckError(
                    f"the observation returned by {method}() is outside the bounds of the observation space "
                    f"{space!r}: {len(lines)} invalid indices:\n" + "\n".join(lines)
                )
    if not space.contains(obs):
        raise EnvCheckError(f"the observation returned by {method}() is not in the observation space {space!r}")


def _check_observation(env: gym.Env, obs: Any, method: str) -> None:
    space = env.observation_space
    if _is_goal_env(env):
        _check_goal_keys(space, method)
    if not isinstance(space, spaces.Dict):
        _check_obs(obs, space, method)
        return
    if not isinstance(obs, dict):
        raise EnvCheckError(f"the observation returned by {method}() must be a dict, got {type(obs).__name__}")
    if obs.keys() != space.spaces.keys():
        raise EnvCheckError(
            f"the observation keys returned by {method}() must match the observation space keys: "
            f"{sorted(obs)} != {sorted(space.spaces)}"
        )
    for key, subspace in space.spaces.items():
        try:
            _check_obs(obs[key], subspace, method)
        except EnvCheckError as exc:
            raise EnvCheckError(f"Error while checking key={key}: {exc}") from exc


def _check_goal_keys(space: spaces.Dict, method: str) -> None:
    keys = list(space.spaces)
    if len(keys) < 3:
        raise EnvCheckError(
            "a goal-conditioned env must observe at least 3 keys, observation, achieved_goal and desired_goal; "
            f"the observation space has {keys}"
        )
    for key in ("achieved_goal", "desired_goal"):
        if key not in space.spaces:
            raise EnvCheckError(
                f"the observation returned by {method}() of a goal-conditioned env must have a {key!r} key; the "
                f"observation space has {keys}"
            )


def _check_goal_reward(env: gym.Env, obs: dict, reward: float, info: dict) -> None:
    compute_reward = env.unwrapped.compute_reward
    achieved, desired = obs["achieved_goal"], obs["desired_goal"]
    if compute_reward(achieved, desired, info) != reward:
        raise EnvCheckError("the reward returned by step() is not the one compute_reward() gives for the observation")
    achieved, desired = np.asarray(achieved), np.asarray(desired)
    batch_achieved, batch_desired = np.stack([achieved, achieved]), np.stack([desired, desired])
    if achieved.ndim == 0:
        batch_achieved, batch_desired = batch_achieved.reshape(2, 1), batch_desired.reshape(2, 1)
    rewards = np.asarray(compute_reward(batch_achieved, batch_desired, np.array([info, info])))
    if rewards.shape != (2,):
        raise EnvCheckError(
            f"compute_reward() must be vectorised over a batch of goals (HER relabels batches): for 2 goals it "
            f"returned shape {rewards.shape}, expected (2,)"
        )
    if rewards[0] != reward:
        raise EnvCheckError(f"compute_reward() gives {rewards[0]} for a batch but {reward} for one goal")


def _check_reset_and_step(env: gym.Env) -> None:
    result = env.reset()
    if not isinstance(result, tuple) or len(result) != 2:
        raise EnvCheckError(
            f"reset() must return a tuple (obs, info), got {type(result).__name__}"
            + (f" of length {len(result)}" if isinstance(result, tuple) else "")
            + " (gymnasium's API: return obs, info)"
        )
    obs, info = result
    if not isinstance(info, dict):
        raise EnvCheckError(f"the info returned by reset() must be a dict, got {type(info).__name__}")
    _check_observation(env, obs, "reset")

    data = env.step(env.action_space.sample())
    if not isinstance(data, tuple) or len(data) != 5:
        got = f"{len(data)} values" if isinstance(data, tuple) else type(data).__name__
        raise EnvCheckError(
            f"step() must return five values (obs, reward, terminated, truncated, info), got {got}"
            + (" (the old gym API's (obs, reward, done, info)?)" if isinstance(data, tuple) and len(data) == 4 else "")
        )
    obs, reward, terminated, truncated, info = data
    _check_observation(env, obs, "step")
    if isinstance(reward, (bool, np.bool_)) or not isinstance(reward, (int, float, np.integer, np.floating)):
        raise EnvCheckError(f"the reward returned by step() must be a float, got {reward!r}")
    for name, flag in (("terminated", terminated), ("truncated", truncated)):
        if not isinstance(flag, (bool, np.bool_)):
            raise EnvCheckError(f"the {name} flag returned by step() must be a bool, got {flag!r}")
    if not isinstance(info, dict):
        raise EnvCheckError(f"the info returned by step() must be a dict, got {type(info).__name__}")
    if _is_goal_env(env):
        _check_goal_reward(env, obs, float(reward), info)


# ----------------------------------------------------------------------------------------------------- the others
def _run_gymnasium_checker(env: gym.Env) -> None:
    """gymnasium's checker; what it finds becomes a warning. Its passive warnings (infinite bounds, a wrapped env,
    ...) are silenced: SB3's checker gives none of them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            gym_checker.check_env(env, skip_render_check=True, skip_close_check=True)
        except (AssertionError, gym.error.Error, TypeError) as exc:
            failure = f"{type(exc).__name__}: {exc}"
        else:
            return
    _warn(
        f"gymnasium's env checker failed ({failure}). The env may train, but not reproducibly: reset(seed=...) "
        "should call super().reset(seed=seed) and draw from self.np_random, and reset() should accept options"
    )


def _check_render(env: gym.Env, warn: bool) -> None:
    if warn and env.metadata.get("render_modes") is None:
        _warn("the env declares no render modes (env.metadata['render_modes']): render() may not work")
    if env.render_mode is not None:
        env.render()


def _flat(space: spaces.Space, obs: Any) -> np.ndarray | None:
    """The observation as one float array (composite spaces flattened); None where that is not possible."""
    try:
        return np.asarray(spaces.flatten(space, obs), dtype=np.float64)
    except (NotImplementedError, TypeError, ValueError):
        return None


def _check_finite(env: gym.Env) -> None:
    env.reset()
    for step in range(N_NAN_CHECK_STEPS):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        flat = _flat(env.observation_space, obs)
        if flat is not None and not np.all(np.isfinite(flat)):
            raise EnvCheckError(f"step() returned a non-finite observation (NaN or inf) at random step {step}: {obs}")
        if not np.isfinite(float(reward)):
            raise EnvCheckError(f"step() returned a non-finite reward {reward} at random step {step}")
        if terminated or truncated:
            env.reset()


def _unsupported_structure(space: spaces.Space) -> bool:
    """Sequence, Graph or OneOf spaces (at the top or one level down): their values are not checked."""
    members = space.spaces.values() if isinstance(space, spaces.Dict) else getattr(space, "spaces", ())
    unsupported = (spaces.Sequence, spaces.Graph, spaces.OneOf)
    return isinstance(space, unsupported) or any(isinstance(member, unsupported) for member in members)


def check_env(env: gym.Env, warn: bool = True, skip_render_check: bool = True) -> None:
    """Check that ``env`` follows gymnasium's API, as Stable-Baselines3's checker judges it; raise on the first
    problem.

    Call it on a custom env before training. It resets and steps the env (with random actions).

    Args:
        env: the env to check (the raw env is best: wrappers can hide problems).
        warn: also warn about what works poorly (see the module's notes: unsupported spaces, images, the action
            space's range and dtype) and run gymnasium's checker, whose findings are warnings; False silences both.
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
    try:
        env.reset(seed=0)
    except TypeError as exc:
        raise TypeError(f"reset() must accept the keyword argument seed ({exc})") from exc
    skip = warn and _warn_about_spaces(env)
    _check_action_bounds(env.action_space)  # after the warnings, as in SB3 (whose checker warns, then asserts)
    if skip:
        return
    if not warn and _unsupported_structure(env.observation_space):
        return
    _check_reset_and_step(env)
    if warn:
        _run_gymnasium_checker(env)
    if not skip_render_check:
        _check_render(env, warn)
    _check_finite(env)


__all__ = ["EnvCheckError", "check_env"]

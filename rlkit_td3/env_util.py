"""``make_vec_env`` and wrapper helpers (``stable_baselines3.common.env_util``'s counterpart).

Not to be confused with the algorithm's internal ``rlkit_td3.vec_env.training_env.as_training_env``, which
wraps one env for training: this one builds a `VecEnv` of ``n_envs`` monitored envs, as SB3's does.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from rlkit_td3.monitor import Monitor
from rlkit_td3.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv
from rlkit_td3.vec_env.util import is_wrapped, unwrap_wrapper


def _check_optional_dict(name: str, value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"{name} must be a dict or None, got {value!r}")
    return dict(value)


def make_vec_env(
    env_id: str | Callable[..., gym.Env],
    n_envs: int = 1,
    seed: int | None = None,
    start_index: int = 0,
    monitor_dir: str | None = None,
    wrapper_class: Callable[..., gym.Env] | None = None,
    env_kwargs: dict[str, Any] | None = None,
    vec_env_cls: type[DummyVecEnv | SubprocVecEnv] | None = None,
    vec_env_kwargs: dict[str, Any] | None = None,
    monitor_kwargs: dict[str, Any] | None = None,
    wrapper_kwargs: dict[str, Any] | None = None,
) -> VecEnv:
    """Make ``n_envs`` envs, each wrapped in a `Monitor`, as one ``VecEnv``.

    Env ``i`` has rank ``start_index + i``. It is made by ``gymnasium.make(env_id, render_mode="rgb_array",
    **env_kwargs)`` (``env_kwargs`` may name another ``render_mode``) or by ``env_id(**env_kwargs)`` for a
    callable; then wrapped in ``Monitor(env, filename=<monitor_dir>/<rank>, **monitor_kwargs)`` (no file without
    ``monitor_dir``), then in ``wrapper_class(env, **wrapper_kwargs)`` if given.

    With a ``seed``, env ``i``'s action space is seeded with ``seed + rank`` and the first reset of the
    ``VecEnv`` seeds env ``i`` with ``seed + rank`` too (through `VecEnv.seed()`). SB3 seeds that first reset
    with ``seed + i``, ignoring ``start_index``; the two agree for the default ``start_index=0``.

    Args:
        env_id: a registered gymnasium id, or a function returning an env.
        n_envs: number of envs.
        seed: base seed (``None``: unseeded).
        start_index: rank of the first env (used in seeds and monitor file names).
        monitor_dir: folder for the ``<rank>.monitor.csv`` files (created if needed); ``None`` for no files.
        wrapper_class: a ``gymnasium.Wrapper`` (or any ``env -> env`` function) applied after the Monitor.
        env_kwargs: keyword arguments for ``gymnasium.make`` or the env function.
        vec_env_cls: `DummyVecEnv` (default) or
            `SubprocVecEnv`.
        vec_env_kwargs: keyword arguments for ``vec_env_cls`` (e.g. ``{"start_method": "spawn"}``).
        monitor_kwargs: keyword arguments for the Monitor (e.g. ``{"info_keywords": ("is_success",)}``).
        wrapper_kwargs: keyword arguments for ``wrapper_class``.

    Returns:
        The vectorized env. Its first reset is seeded: from ``seed``, or (``seed=None``) from a base seed drawn
        from NumPy's global generator, as in SB3.

    Raises:
        ValueError: ``n_envs``, ``seed`` or ``start_index`` out of range.
        TypeError: ``env_id`` is neither a string nor callable, or a ``*_kwargs`` is not a dict.
    """
    if not isinstance(env_id, str) and not callable(env_id):
        raise TypeError(f"env_id must be an env id string or a function returning an env, got {env_id!r}")
    for name, value, low in (("n_envs", n_envs, 1), ("start_index", start_index, 0)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0):
        raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
    env_kwargs = _check_optional_dict("env_kwargs", env_kwargs)
    vec_env_kwargs = _check_optional_dict("vec_env_kwargs", vec_env_kwargs)
    monitor_kwargs = _check_optional_dict("monitor_kwargs", monitor_kwargs)
    wrapper_kwargs = _check_optional_dict("wrapper_kwargs", wrapper_kwargs)

    def make_env(rank: int) -> Callable[[], gym.Env]:
        def _init() -> gym.Env:
            if isinstance(env_id, str):
                env = gym.make(env_id, **{"render_mode": "rgb_array", **env_kwargs})
            else:
                env = env_id(**env_kwargs)
            if seed is not None:
                env.action_space.seed(seed + rank)  # the env itself is seeded at the first reset
            monitor_path = None
            if monitor_dir is not None:
                os.makedirs(monitor_dir, exist_ok=True)
                monitor_path = os.path.join(monitor_dir, str(rank))
            env = Monitor(env, filename=monitor_path, **monitor_kwargs)
            if wrapper_class is not None:
                env = wrapper_class(env, **wrapper_kwargs)
            return env

        return _init

    cls = DummyVecEnv if vec_env_cls is None else vec_env_cls
    vec_env = cls([make_env(start_index + i) for i in range(n_envs)], **vec_env_kwargs)
    vec_env.seed(None if seed is None else seed + start_index)  # None: random seeds, as SB3
    return vec_env


__all__ = ["is_wrapped", "make_vec_env", "unwrap_wrapper"]

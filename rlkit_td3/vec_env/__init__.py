"""Vectorized envs with Stable-Baselines3's API (``stable_baselines3.common.vec_env``'s counterpart).

``from rlkit_td3.vec_env import DummyVecEnv, VecNormalize`` works where an SB3 script imports them from
``stable_baselines3.common.vec_env``. See the "Vectorized environments" docs page.
"""

from __future__ import annotations

from copy import deepcopy
from typing import TypeVar

from rlkit_td3.vec_env.base_vec_env import (
    CloudpickleWrapper,
    VecEnv,
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
    VecEnvWrapper,
    tile_images,
)
from rlkit_td3.vec_env.dummy_vec_env import DummyVecEnv
from rlkit_td3.vec_env.stacked_observations import StackedObservations
from rlkit_td3.vec_env.subproc_vec_env import SubprocVecEnv
from rlkit_td3.vec_env.vec_check_nan import VecCheckNan
from rlkit_td3.vec_env.vec_extract_dict_obs import VecExtractDictObs
from rlkit_td3.vec_env.vec_frame_stack import VecFrameStack
from rlkit_td3.vec_env.vec_monitor import VecMonitor
from rlkit_td3.vec_env.vec_normalize import VecNormalize
from rlkit_td3.vec_env.vec_transpose import VecTransposeImage
from rlkit_td3.vec_env.vec_video_recorder import VecVideoRecorder

VecEnvWrapperT = TypeVar("VecEnvWrapperT", bound=VecEnvWrapper)


def unwrap_vec_wrapper(env: VecEnv, vec_wrapper_class: type[VecEnvWrapperT]) -> VecEnvWrapperT | None:
    """The outermost ``vec_wrapper_class`` wrapper in ``env``'s chain of VecEnv wrappers, or ``None``."""
    current = env
    while isinstance(current, VecEnvWrapper):
        if isinstance(current, vec_wrapper_class):
            return current
        current = current.venv
    return None


def unwrap_vec_normalize(env: VecEnv) -> VecNormalize | None:
    """The `VecNormalize` in ``env``'s chain, or ``None``."""
    return unwrap_vec_wrapper(env, VecNormalize)


def is_vecenv_wrapped(env: VecEnv, vec_wrapper_class: type[VecEnvWrapper]) -> bool:
    """Whether ``env``'s chain holds a ``vec_wrapper_class`` wrapper."""
    return unwrap_vec_wrapper(env, vec_wrapper_class) is not None


def sync_envs_normalization(env: VecEnv, eval_env: VecEnv) -> None:
    """Copy the ``VecNormalize`` statistics of ``env`` into ``eval_env``, layer by layer (as SB3 does).

    The two chains are walked together; at each layer where ``env`` has a `VecNormalize`, ``eval_env``
    gets a copy of its ``obs_rms`` and ``ret_rms`` (so later training does not move the eval statistics).

    Raises:
        TypeError: ``eval_env`` has no ``VecNormalize`` at a layer where ``env`` has one.
    """
    current, current_eval = env, eval_env
    while isinstance(current, VecEnvWrapper):
        if isinstance(current, VecNormalize):
            if not isinstance(current_eval, VecNormalize):
                raise TypeError(
                    f"eval_env must be wrapped like env: env has a VecNormalize where eval_env has "
                    f"{type(current_eval).__name__}"
                )
            current_eval.obs_rms = deepcopy(current.obs_rms)
            current_eval.ret_rms = deepcopy(current.ret_rms)
        current = current.venv
        current_eval = current_eval.venv if isinstance(current_eval, VecEnvWrapper) else current_eval


__all__ = [
    "CloudpickleWrapper",
    "DummyVecEnv",
    "StackedObservations",
    "SubprocVecEnv",
    "VecCheckNan",
    "VecEnv",
    "VecEnvIndices",
    "VecEnvObs",
    "VecEnvStepReturn",
    "VecEnvWrapper",
    "VecExtractDictObs",
    "VecFrameStack",
    "VecMonitor",
    "VecNormalize",
    "VecTransposeImage",
    "VecVideoRecorder",
    "is_vecenv_wrapped",
    "sync_envs_normalization",
    "tile_images",
    "unwrap_vec_normalize",
    "unwrap_vec_wrapper",
]

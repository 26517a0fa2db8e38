"""Type names for annotations, as in Stable-Baselines3's ``common/type_aliases.py``.

The replay samples are this library's own NamedTuples (from `rlkit_td3.buffers`), so an annotation written
against SB3's names describes what rlkit_td3's buffers return.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, SupportsFloat, Union

import gymnasium as gym
import numpy as np
import torch

from rlkit_td3.buffers import DictReplayBufferSamples, ReplayBufferSamples
from rlkit_td3.callbacks import BaseCallback
from rlkit_td3.schedules import Schedule
from rlkit_td3.vec_env import VecEnv

GymEnv = Union[gym.Env, VecEnv]  # noqa: UP007 (a runtime alias, usable in isinstance-free annotations on 3.10)
"""An env a model takes: a gymnasium env or a `VecEnv`."""
GymObs = Union[tuple, dict[str, Any], np.ndarray, int]  # noqa: UP007
GymResetReturn = tuple[GymObs, dict]
GymStepReturn = tuple[GymObs, SupportsFloat, bool, bool, dict]
TensorDict = dict[str, torch.Tensor]
OptimizerStateDict = dict[str, Any]
MaybeCallback = Union[None, Callable, list[BaseCallback], BaseCallback]  # noqa: UP007
"""What ``learn(callback=...)`` takes: nothing, a function ``(locals, globals) -> bool``, a callback or a list."""
PyTorchObs = Union[torch.Tensor, TensorDict]  # noqa: UP007


class PolicyPredictor(Protocol):
    """Anything with SB3's ``predict`` signature: a model or a policy."""

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """The action for ``observation`` (and the recurrent state, ``None`` here)."""
        ...


__all__ = [
    "DictReplayBufferSamples",
    "GymEnv",
    "GymObs",
    "GymResetReturn",
    "GymStepReturn",
    "MaybeCallback",
    "OptimizerStateDict",
    "PolicyPredictor",
    "PyTorchObs",
    "ReplayBufferSamples",
    "Schedule",
    "TensorDict",
]

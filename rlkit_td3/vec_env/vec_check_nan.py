"""``VecCheckNan``: find where NaN or infinite values first appear (SB3's ``VecCheckNan``)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from rlkit_td3.checks.arguments import check_bool
from rlkit_td3.vec_env.base_vec_env import VecEnv, VecEnvObs, VecEnvStepReturn, VecEnvWrapper


class VecCheckNan(VecEnvWrapper):
    """Checks the actions sent and the observations and rewards returned for NaN (and infinite) values.

    Args:
        venv: the vectorized env to wrap.
        raise_exception: raise ``ValueError`` instead of warning.
        warn_once: warn only the first time (ignored when raising).
        check_inf: also look for infinite values.
    """

    def __init__(self, venv: VecEnv, raise_exception: bool = False, warn_once: bool = True, check_inf: bool = True):
        super().__init__(venv)
        self.raise_exception = check_bool("raise_exception", raise_exception)
        self.warn_once = check_bool("warn_once", warn_once)
        self.check_inf = check_bool("check_inf", check_inf)
        self._user_warned = False
        self._actions: np.ndarray | None = None
        self._observations: VecEnvObs | None = None

    def step_async(self, actions: np.ndarray) -> None:
        self._check_val(event="step_async", actions=actions)
        self._actions = actions
        self.venv.step_async(actions)

    def step_wait(self) -> VecEnvStepReturn:
        observations, rewards, dones, infos = self.venv.step_wait()
        self._check_val(event="step_wait", observations=observations, rewards=rewards, dones=dones)
        self._observations = observations
        return observations, rewards, dones, infos

    def reset(self) -> VecEnvObs:
        observations = self.venv.reset()
        self._check_val(event="reset", observations=observations)
        self._observations = observations
        return observations

    def check_array_value(self, name: str, value: np.ndarray) -> list[tuple[str, str]]:
        """The ``(name, "nan" | "inf")`` problems found in ``value`` (numeric arrays only)."""
        array = np.asarray(value)
        if not np.issubdtype(array.dtype, np.number):
            return []
        found = []
        if np.any(np.isnan(array)):
            found.append((name, "nan"))
        if self.check_inf and np.any(np.isinf(array)):
            found.append((name, "inf"))
        return found

    def _check_val(self, event: str, **values: Any) -> None:
        if not self.raise_exception and self.warn_once and self._user_warned:
            return
        found: list[tuple[str, str]] = []
        for name, value in values.items():
            if isinstance(value, dict):
                for key, inner in value.items():
                    found += self.check_array_value(f"{name}[{key!r}]", inner)
            elif isinstance(value, tuple):
                for index, inner in enumerate(value):
                    found += self.check_array_value(f"{name}[{index}]", inner)
            else:
                found += self.check_array_value(name, value)
        if not found:
            return
        self._user_warned = True
        problems = ", ".join(f"{kind} in {name}" for name, kind in found)
        if event == "step_async":
            message = f"found {problems} in the actions sent to the env (last observations: {self._observations!r})"
        elif event == "reset":
            message = f"found {problems} returned by the env at reset"
        else:
            message = f"found {problems} returned by the env at step (last actions: {self._actions!r})"
        if self.raise_exception:
            raise ValueError(message)
        warnings.warn(message, UserWarning, stacklevel=3)


__all__ = ["VecCheckNan"]

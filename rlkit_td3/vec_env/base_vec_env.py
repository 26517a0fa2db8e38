"""``VecEnv`` and ``VecEnvWrapper``: Stable-Baselines3's vectorized-env contract.

A ``VecEnv`` steps ``num_envs`` copies of an env at once with the older four-value API that SB3 kept:
``reset()`` returns the observations only (the reset infos are in ``reset_infos``), and
``step(actions)`` returns ``(obs, rewards, dones, infos)``, ``infos`` being a list of one dict per env.
An env whose episode ends (terminated or truncated) is reset at once: ``obs`` then holds the first
observation of its next episode, ``infos[i]["terminal_observation"]`` the last one of the episode that ended,
and ``infos[i]["TimeLimit.truncated"]`` says whether it was cut by a time limit rather than terminated.

The names, signatures and semantics follow ``stable_baselines3.common.vec_env.base_vec_env`` (SB3 2.x).
"""

from __future__ import annotations

import inspect
import math
import numbers
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from copy import deepcopy
from typing import Any, Union

import cloudpickle
import gymnasium as gym
import numpy as np

VecEnvIndices = Union[None, int, Iterable[int]]  # noqa: UP007 - a runtime alias, kept importable on 3.10
"""Which envs a call addresses: ``None`` (all), one index, or several."""
VecEnvObs = Union[np.ndarray, dict[str, np.ndarray], tuple[np.ndarray, ...]]  # noqa: UP007
"""A batch of observations: one array with a leading env axis, or a dict / tuple of such arrays."""
VecEnvStepReturn = tuple[VecEnvObs, np.ndarray, np.ndarray, list[dict]]
"""What `VecEnv.step()` returns: ``(obs, rewards, dones, infos)``."""


def tile_images(images: Sequence[np.ndarray]) -> np.ndarray:
    """Arrange ``N`` images of shape ``(H, W, C)`` on a grid of ``ceil(sqrt(N))`` columns (black padding).

    Raises:
        ValueError: no images, or images of different shapes.
    """
    frames = [np.asarray(image) for image in images]
    if not frames:
        raise ValueError("images must hold at least one image")
    if any(frame.shape != frames[0].shape or frame.ndim != 3 for frame in frames):
        raise ValueError(f"images must all have the same (H, W, C) shape, got {[f.shape for f in frames]}")
    height, width, channels = frames[0].shape
    cols = math.ceil(math.sqrt(len(frames)))
    rows = math.ceil(len(frames) / cols)
    grid = np.zeros((rows * height, cols * width, channels), dtype=frames[0].dtype)
    for index, frame in enumerate(frames):
        row, col = divmod(index, cols)
        grid[row * height : (row + 1) * height, col * width : (col + 1) * width] = frame
    return grid


def _check_seed(seed: Any) -> int | None:
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
    return int(seed)


class VecEnv(ABC):
    """Abstract vectorized env: ``num_envs`` envs stepped together (SB3's ``VecEnv`` contract).

    Args:
        num_envs: number of envs.
        observation_space: the observation space of one env.
        action_space: the action space of one env.
    """

    def __init__(self, num_envs: int, observation_space: gym.spaces.Space, action_space: gym.spaces.Space) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, numbers.Integral) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        self.num_envs = int(num_envs)
        self.observation_space = observation_space
        self.action_space = action_space
        self.reset_infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        self._seeds: list[int | None] = [None] * self.num_envs
        self._options: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        try:
            render_modes = self.get_attr("render_mode")
        except AttributeError:
            render_modes = [None] * self.num_envs
        if any(mode != render_modes[0] for mode in render_modes):
            raise ValueError(f"all envs must have the same render_mode, got {render_modes}")
        self.render_mode: str | None = render_modes[0]
        modes = ["rgb_array"] if self.render_mode == "rgb_array" else ["human", "rgb_array"]
        if not hasattr(self, "metadata"):
            self.metadata: dict[str, Any] = {"render_modes": modes}

    # ------------------------------------------------------------------ the contract
    @abstractmethod
    def reset(self) -> VecEnvObs:
        """Reset every env and return the batch of first observations (their infos go to ``reset_infos``).

        Each env is reset with the seed and options set by `seed()` / `set_options()`, which apply to
        this one reset only.
        """

    @abstractmethod
    def step_async(self, actions: np.ndarray) -> None:
        """Send one action per env; `step_wait()` collects the results."""

    @abstractmethod
    def step_wait(self) -> VecEnvStepReturn:
        """Wait for the step started by `step_async()` and return ``(obs, rewards, dones, infos)``."""

    @abstractmethod
    def close(self) -> None:
        """Close every env (and any worker process)."""

    def has_attr(self, attr_name: str) -> bool:
        """Whether every env has attribute ``attr_name`` (looked up through its wrappers)."""
        try:
            self.get_attr(attr_name)
        except AttributeError:
            return False
        return True

    @abstractmethod
    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The value of attribute ``attr_name`` of each addressed env (looked up through its wrappers)."""

    @abstractmethod
    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set attribute ``attr_name`` to ``value`` in each addressed env."""

    @abstractmethod
    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        """Call ``method_name(*method_args, **method_kwargs)`` on each addressed env; return the results."""

    @abstractmethod
    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        """Whether each addressed env has a ``wrapper_class`` wrapper in its chain."""

    def step(self, actions: np.ndarray) -> VecEnvStepReturn:
        """Step every env with its action: `step_async()` then `step_wait()`."""
        self.step_async(actions)
        return self.step_wait()

    def get_images(self) -> Sequence[np.ndarray | None]:
        """One RGB frame per env (needs ``render_mode="rgb_array"``)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement get_images")

    def render(self, mode: str | None = None) -> np.ndarray | None:
        """Render the envs.

        With mode ``"rgb_array"`` (the envs must have been made with that render mode) the frames of all envs
        are returned tiled into one image. With ``"human"``, envs made with ``render_mode="human"`` draw their
        own windows. A mode the envs were not made with gives a warning and ``None``, as in SB3.

        Args:
            mode: ``"rgb_array"``, ``"human"``, or ``None`` for the envs' ``render_mode``.
        """
        mode = mode or self.render_mode
        if mode is None:
            warnings.warn("render() was called on a VecEnv whose envs have no render_mode", stacklevel=2)
            return None
        if mode != self.render_mode:
            warnings.warn(
                f"render(mode={mode!r}) was called but the envs were made with render_mode={self.render_mode!r}; "
                f"make them with render_mode={mode!r} to render this way",
                stacklevel=2,
            )
            return None
        if mode == "rgb_array":
            return tile_images([frame for frame in self.get_images() if frame is not None])
        self.env_method("render")
        return None

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """Seed the next `reset()`: env ``i`` is reset with ``seed + i``.

        With ``None`` a random base seed is drawn from NumPy's global generator, as SB3 does.

        Returns:
            The seed each env will get.

        Raises:
            ValueError: ``seed`` is not a non-negative int or None.
        """
        seed = _check_seed(seed)
        if seed is None:
            seed = int(np.random.randint(0, np.iinfo(np.uint32).max, dtype=np.uint32))  # noqa: NPY002 - as SB3
        self._seeds = [seed + index for index in range(self.num_envs)]
        return list(self._seeds)

    def set_options(self, options: list[dict] | dict | None = None) -> None:
        """Options for the next `reset()`: one dict for every env, or a list of one dict per env.

        Raises:
            ValueError: a list whose length is not ``num_envs``, or entries that are not dicts.
        """
        if options is None:
            options = {}
        if isinstance(options, dict):
            self._options = [deepcopy(options) for _ in range(self.num_envs)]
            return
        options = list(options)
        if len(options) != self.num_envs or not all(isinstance(o, dict) for o in options):
            raise ValueError(f"options must be a dict or a list of {self.num_envs} dicts, got {options!r}")
        self._options = deepcopy(options)

    @property
    def unwrapped(self) -> VecEnv:
        """The innermost ``VecEnv`` (itself unless this is a `VecEnvWrapper`)."""
        return self

    def getattr_depth_check(self, name: str, already_found: bool) -> str | None:
        """Name of this class if ``name`` is one of its instance attributes and a wrapper above has it too."""
        if name in self.__dict__ and already_found:
            return f"{type(self).__module__}.{type(self).__name__}"
        return None

    def _check_actions(self, actions: Any) -> Any:
        """The batch of actions to step, one per env; refuse one with fewer.

        - One env given one unbatched action (shape ``action_space.shape``, e.g. ``env.action_space.sample()``)
          steps with that action (SB3's ``DummyVecEnv`` would pass its first row instead).
        - More rows than envs: the first ``num_envs`` are used, as SB3's vec envs do, with a ``UserWarning``
          naming how many rows were left out (a batch of the wrong size is usually a bug).

        Raises:
            ValueError: fewer actions than envs, or an object without a length.
        """
        try:
            count = len(actions)
        except TypeError:
            count = None
        shape = getattr(self.action_space, "shape", None)
        if self.num_envs == 1 and shape and count != 1 and np.shape(actions) == tuple(shape):
            return np.asarray(actions)[None]  # one env, one unbatched action
        if count is not None and count > self.num_envs:
            warnings.warn(
                f"step() got {count} actions for {self.num_envs} env(s); the first {self.num_envs} are used and "
                f"{count - self.num_envs} left out, as in SB3",
                UserWarning,
                stacklevel=4,
            )
            return actions[: self.num_envs]
        if count != self.num_envs:
            raise ValueError(
                f"actions must hold one action per env ({self.num_envs}), got {type(actions).__name__} "
                f"of length {count}" + (f" and shape {np.shape(actions)}" if hasattr(actions, "shape") else "")
            )
        return actions

    def _reset_seeds(self) -> None:
        self._seeds = [None] * self.num_envs

    def _reset_options(self) -> None:
        self._options = [{} for _ in range(self.num_envs)]

    def _get_indices(self, indices: VecEnvIndices) -> list[int]:
        """The env indices a call addresses, checked against ``num_envs``."""
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, numbers.Integral) and not isinstance(indices, bool):
            chosen = [int(indices)]
        else:
            chosen = [int(i) for i in indices]  # type: ignore[union-attr]
        for index in chosen:
            if not -self.num_envs <= index < self.num_envs:
                raise IndexError(f"indices must lie in [-{self.num_envs}, {self.num_envs}), got {index}")
        return [index % self.num_envs for index in chosen]  # negative ones count from the end, as in SB3


class VecEnvWrapper(VecEnv):
    """Base of the wrappers around a `VecEnv`: everything not overridden goes to ``venv``.

    Attributes that the wrapper does not have are looked up down the chain of wrappers (``wrapper.obs_rms``
    finds a ``VecNormalize`` below); a name held by two layers below is ambiguous and raises
    ``AttributeError``, as in SB3.

    Args:
        venv: the vectorized env to wrap.
        observation_space: the wrapper's observation space (default: ``venv``'s).
        action_space: the wrapper's action space (default: ``venv``'s).
    """

    def __init__(
        self,
        venv: VecEnv,
        observation_space: gym.spaces.Space | None = None,
        action_space: gym.spaces.Space | None = None,
    ) -> None:
        if not isinstance(venv, VecEnv):
            raise TypeError(f"venv must be a VecEnv, got {type(venv).__name__}")
        self.venv = venv
        self.class_attributes = dict(inspect.getmembers(self.__class__))
        super().__init__(
            num_envs=venv.num_envs,
            observation_space=venv.observation_space if observation_space is None else observation_space,
            action_space=venv.action_space if action_space is None else action_space,
        )

    def step_async(self, actions: np.ndarray) -> None:
        self.venv.step_async(actions)

    @abstractmethod
    def reset(self) -> VecEnvObs:
        pass

    @abstractmethod
    def step_wait(self) -> VecEnvStepReturn:
        pass

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        return self.venv.seed(seed)

    def set_options(self, options: list[dict] | dict | None = None) -> None:
        self.venv.set_options(options)

    def close(self) -> None:
        self.venv.close()

    def render(self, mode: str | None = None) -> np.ndarray | None:
        return self.venv.render(mode=mode)

    def get_images(self) -> Sequence[np.ndarray | None]:
        return self.venv.get_images()

    def has_attr(self, attr_name: str) -> bool:
        return self.venv.has_attr(attr_name)

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return self.venv.get_attr(attr_name, indices)

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        self.venv.set_attr(attr_name, value, indices)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        return self.venv.env_method(method_name, *method_args, indices=indices, **method_kwargs)

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        return self.venv.env_is_wrapped(wrapper_class, indices=indices)

    @property
    def reset_infos(self) -> list[dict[str, Any]]:  # type: ignore[override]
        """The infos of the last reset, from the wrapped env."""
        venv = self.__dict__.get("venv")
        return venv.reset_infos if venv is not None else self.__dict__.get("_reset_infos", [])

    @reset_infos.setter
    def reset_infos(self, value: list[dict[str, Any]]) -> None:
        self.__dict__["_reset_infos"] = value  # only VecEnv.__init__ sets it; reads go to venv

    @property
    def unwrapped(self) -> VecEnv:
        return self.venv.unwrapped

    def __getattr__(self, name: str) -> Any:
        """Look ``name`` up down the wrapper chain (only called when normal lookup fails)."""
        if name.startswith("__") or name == "class_attributes" or self.__dict__.get("venv") is None:
            raise AttributeError(name)
        blocking = self.getattr_depth_check(name, already_found=False)
        if blocking is not None:
            own = f"{type(self).__module__}.{type(self).__name__}"
            raise AttributeError(
                f"attribute {name!r} is ambiguous when looked up from {own}: {blocking} also has it further down"
            )
        return self.getattr_recursive(name)

    def _get_all_attributes(self) -> dict[str, Any]:
        attributes = dict(self.__dict__)
        attributes.update(self.class_attributes)
        return attributes

    def getattr_recursive(self, name: str) -> Any:
        """The value of ``name`` from the outermost layer (this wrapper or one below) that has it."""
        if name in self._get_all_attributes():
            return getattr(self, name)
        if hasattr(self.venv, "getattr_recursive"):
            return self.venv.getattr_recursive(name)
        return getattr(self.venv, name)

    def getattr_depth_check(self, name: str, already_found: bool) -> str | None:
        """The class of a layer below the first one holding ``name`` that also holds it, else ``None``."""
        has_it = name in self._get_all_attributes()
        if has_it and already_found:
            return f"{type(self).__module__}.{type(self).__name__}"
        return self.venv.getattr_depth_check(name, already_found or has_it)


class CloudpickleWrapper:
    """Holds a value that is pickled with cloudpickle (so lambdas and closures reach worker processes).

    Args:
        var: the value (typically an env factory).
    """

    def __init__(self, var: Any) -> None:
        self.var = var

    def __getstate__(self) -> bytes:
        return cloudpickle.dumps(self.var)

    def __setstate__(self, state: bytes) -> None:
        self.var = cloudpickle.loads(state)


__all__ = [
    "CloudpickleWrapper",
    "VecEnv",
    "VecEnvIndices",
    "VecEnvObs",
    "VecEnvStepReturn",
    "VecEnvWrapper",
    "tile_images",
]

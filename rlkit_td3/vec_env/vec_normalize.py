"""``VecNormalize``: running normalisation of observations and rewards (SB3's ``VecNormalize``).

Observations are standardised with the running mean and variance of every observation seen while
``training`` is true, then clipped to ``[-clip_obs, clip_obs]``. Rewards are divided by the running standard
deviation of the discounted return ``R <- gamma * R + r`` (reset at episode ends), then clipped to
``[-clip_reward, clip_reward]``; they are not centred. The formulas are SB3's.

Statistics are saved in a safe format (no pickle): a zip archive holding ``vec_normalize.json`` (the
settings) and ``statistics.npz`` (the float64 arrays), written atomically. SB3 pickles the whole wrapper;
`VecNormalize.load()` reads such a file only with ``allow_pickle=True``.
"""

from __future__ import annotations

import io
import json
import math
import os
import pickle
import zipfile
from collections.abc import Sequence
from copy import deepcopy
from typing import Any

import numpy as np
from gymnasium import spaces

from rlkit_td3.checks.arguments import check_bool
from rlkit_td3.fileio.file_reader import (
    MAX_METADATA_BYTES,
    MAX_TENSOR_RATIO,
    ModelFileError,
    ZipReader,
    parse_json,
    unpickle,
)
from rlkit_td3.fileio.serialization import atomic_write
from rlkit_td3.running_mean_std import RunningMeanStd, check_running_stats
from rlkit_td3.vec_env.base_vec_env import VecEnv, VecEnvObs, VecEnvStepReturn, VecEnvWrapper

STATE_FORMAT = "rlkit_td3.VecNormalize"
STATE_VERSION = 1
_JSON_ENTRY = "vec_normalize.json"
_ARRAYS_ENTRY = "statistics.npz"
_MAX_ENTRY_BYTES = 256 * 2**20
_SETTINGS = ("training", "norm_obs", "norm_reward", "clip_obs", "clip_reward", "gamma", "epsilon")


def is_image_space(space: spaces.Space) -> bool:
    """A 3-d ``uint8`` Box with bounds 0 and 255 (an image, channels first or last)."""
    return (
        isinstance(space, spaces.Box)
        and space.dtype == np.uint8
        and len(space.shape) == 3
        and bool(np.all(space.low == 0))
        and bool(np.all(space.high == 255))
    )


def _positive(name: str, value: Any) -> float:
    """A number > 0: ``epsilon`` finite, the clips may be ``inf`` (no clipping); NaN and bools never."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    try:
        number = float(value)  # a Python int of any size: an OverflowError past float64, never a TypeError
    except OverflowError:
        number = math.inf
    if not number > 0 or (name == "epsilon" and not math.isfinite(number)):
        raise ValueError(f"{name} must be a {'finite ' if name == 'epsilon' else ''}positive number, got {value!r:.80}")
    return number


def _gamma(value: Any) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"gamma must be a number in [0, 1], got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"gamma must be a number in [0, 1], got {value!r}")
    return float(value)


class VecNormalize(VecEnvWrapper):
    """Normalises observations and rewards with running statistics.

    Args:
        venv: the vectorized env to wrap.
        training: update the statistics at each reset and step (turn off for evaluation).
        norm_obs: normalise observations (Box spaces, or the ``norm_obs_keys`` of a Dict space).
        norm_reward: normalise rewards by the running std of the discounted return.
        clip_obs: observations are clipped to ``[-clip_obs, clip_obs]`` after normalisation.
        clip_reward: rewards are clipped to ``[-clip_reward, clip_reward]`` after normalisation.
        gamma: discount of the return whose std scales the rewards.
        epsilon: added to the variances before the square root.
        norm_obs_keys: the keys of a Dict observation space to normalise (default: all; they must be Boxes).

    Attributes:
        obs_rms: the observation `RunningMeanStd` (a dict of them, by key,
            for Dict spaces).
        ret_rms: the statistics of the discounted return.
        returns: the current discounted return of each env.

    Raises:
        ValueError: a bad setting, or ``norm_obs`` on a space that is neither a Box nor a Dict of Boxes.
    """

    def __init__(
        self,
        venv: VecEnv,
        training: bool = True,
        norm_obs: bool = True,
        norm_reward: bool = True,
        clip_obs: float = 10.0,
        clip_reward: float = 10.0,
        gamma: float = 0.99,
        epsilon: float = 1e-8,
        norm_obs_keys: Sequence[str] | None = None,
    ) -> None:
        super().__init__(venv)
        self.training = training
        self.norm_obs = check_bool("norm_obs", norm_obs)
        self.norm_reward = check_bool("norm_reward", norm_reward)
        self.clip_obs = _positive("clip_obs", clip_obs)
        self.clip_reward = _positive("clip_reward", clip_reward)
        self.epsilon = _positive("epsilon", epsilon)
        self.gamma = _gamma(gamma)
        self.norm_obs_keys = list(norm_obs_keys) if norm_obs_keys is not None else None
        self.obs_rms: RunningMeanStd | dict[str, RunningMeanStd] = {}
        if self.norm_obs:
            self._setup_obs_statistics()
        self.ret_rms = RunningMeanStd(shape=())
        self.returns = np.zeros(self.num_envs)
        self.old_obs: VecEnvObs = np.array([])
        self.old_reward = np.array([])

    @property
    def training(self) -> bool:
        """Whether resets and steps update the statistics; set it to True or False (a bool, else ``TypeError``)."""
        return self._training

    @training.setter
    def training(self, value: bool) -> None:
        self._training = check_bool("training", value)

    def _setup_obs_statistics(self) -> None:
        space = self.observation_space
        if isinstance(space, spaces.Dict):
            keys = list(space.spaces) if self.norm_obs_keys is None else self.norm_obs_keys
            for key in keys:
                if key not in space.spaces:
                    raise ValueError(f"norm_obs_keys entry {key!r} is not a key of the observation space {space}")
                if not isinstance(space.spaces[key], spaces.Box):
                    raise ValueError(
                        f"VecNormalize only supports Box subspaces, but key {key!r} is {space.spaces[key]}; "
                        "explicitly pass the observation keys to normalize with norm_obs_keys=[...], leaving it out"
                    )
            self.norm_obs_keys = keys
            self.obs_rms = {key: RunningMeanStd(shape=space.spaces[key].shape) for key in keys}
        elif isinstance(space, spaces.Box):
            if self.norm_obs_keys is not None:
                raise ValueError(f"norm_obs_keys is applicable only with a Dict observation space, this one is {space}")
            self.obs_rms = RunningMeanStd(shape=space.shape)
        else:
            raise ValueError(
                f"VecNormalize only supports Box and Dict observation spaces, not {space}; pass norm_obs=False"
            )
        self.observation_space = self._normalized_space(space)

    def _normalized_space(self, space: spaces.Space) -> spaces.Space:
        """The observation space after normalisation: a normalised image (uint8 in [0, 255]) becomes a float32
        Box in ``[-clip_obs, clip_obs]``, as in SB3; other spaces are unchanged."""
        if not self.norm_obs:
            return space
        if isinstance(space, spaces.Dict):
            keys = set(self.obs_rms) if isinstance(self.obs_rms, dict) else set()
            subspaces = {
                key: spaces.Box(-self.clip_obs, self.clip_obs, sub.shape, np.float32)
                if key in keys and is_image_space(sub)
                else sub
                for key, sub in space.spaces.items()
            }
            return spaces.Dict(subspaces)
        if is_image_space(space):
            return spaces.Box(-self.clip_obs, self.clip_obs, space.shape, np.float32)
        return space

    # ------------------------------------------------------------------ stepping
    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait()
        self.old_obs = obs
        self.old_reward = rewards
        if self._training and self.norm_obs:
            self._update_obs(obs)
        obs = self.normalize_obs(obs)
        if self._training:
            self._update_reward(rewards)
        rewards = self.normalize_reward(rewards)
        for info in infos:
            if "terminal_observation" in info:
                info["terminal_observation"] = self.normalize_obs(info["terminal_observation"])
        self.returns[dones] = 0
        return obs, rewards, dones, infos

    def reset(self) -> VecEnvObs:
        obs = self.venv.reset()
        self.old_obs = obs
        self.returns = np.zeros(self.num_envs)
        if self.training and self.norm_obs:
            self._update_obs(obs)
        return self.normalize_obs(obs)

    def _update_obs(self, obs: VecEnvObs) -> None:
        if isinstance(self.obs_rms, dict):
            for key, rms in self.obs_rms.items():
                rms.update(obs[key])  # type: ignore[index]
        else:
            self.obs_rms.update(obs)

    def _update_reward(self, reward: np.ndarray) -> None:
        self.returns = self.returns * self.gamma + reward
        self.ret_rms.update(self.returns)

    # ------------------------------------------------------------------ normalisation
    def _normalize(self, obs: np.ndarray, rms: RunningMeanStd) -> np.ndarray:
        scaled = (np.asarray(obs) - rms.mean) / np.sqrt(rms.var + self.epsilon)
        return np.clip(scaled, -self.clip_obs, self.clip_obs)

    def _unnormalize(self, obs: np.ndarray, rms: RunningMeanStd) -> np.ndarray:
        return np.asarray(obs) * np.sqrt(rms.var + self.epsilon) + rms.mean

    def normalize_obs(self, obs: VecEnvObs | dict[str, np.ndarray]) -> VecEnvObs:
        """Normalise (and clip) observations with the current statistics, as float32; the input is not changed."""
        result = deepcopy(obs)
        if not self.norm_obs:
            return result
        if isinstance(self.obs_rms, dict):
            for key, rms in self.obs_rms.items():
                result[key] = self._normalize(obs[key], rms).astype(np.float32)  # type: ignore[index]
            return result
        return self._normalize(obs, self.obs_rms).astype(np.float32)  # type: ignore[arg-type]

    def unnormalize_obs(self, obs: VecEnvObs | dict[str, np.ndarray]) -> VecEnvObs:
        """Invert `normalize_obs()` (up to clipping and float32 rounding)."""
        result = deepcopy(obs)
        if not self.norm_obs:
            return result
        if isinstance(self.obs_rms, dict):
            for key, rms in self.obs_rms.items():
                result[key] = self._unnormalize(obs[key], rms)  # type: ignore[index]
            return result
        return self._unnormalize(obs, self.obs_rms)  # type: ignore[arg-type]

    def normalize_reward(self, reward: np.ndarray) -> np.ndarray:
        """Divide by the std of the discounted return and clip (only with ``norm_reward``); float32, as SB3 returns
        (the statistics are float64)."""
        if self.norm_reward:
            reward = np.clip(reward / np.sqrt(self.ret_rms.var + self.epsilon), -self.clip_reward, self.clip_reward)
        return np.asarray(reward, dtype=np.float32)

    def unnormalize_reward(self, reward: np.ndarray) -> np.ndarray:
        """Invert `normalize_reward()` (up to clipping)."""
        if self.norm_reward:
            return reward * np.sqrt(self.ret_rms.var + self.epsilon)
        return reward

    def get_original_obs(self) -> VecEnvObs:
        """The observations of the last reset or step, before normalisation."""
        return deepcopy(self.old_obs)

    def get_original_reward(self) -> np.ndarray:
        """The rewards of the last step, before normalisation."""
        return self.old_reward.copy()

    def set_venv(self, venv: VecEnv) -> None:
        """Attach the env to a wrapper that has none (one built by `load()` or `from_state()`).

        Raises:
            ValueError: this wrapper already has an env, or ``venv``'s observations do not fit the statistics.
        """
        if self.__dict__.get("venv") is not None:
            raise ValueError("this VecNormalize already wraps an env; set_venv() is for one loaded without it")
        VecEnvWrapper.__init__(self, venv)
        self._check_shapes(venv.observation_space)
        self.observation_space = self._normalized_space(venv.observation_space)
        self._restore_returns()

    def _restore_returns(self) -> None:
        """The loaded discounted returns if they are for this many envs (an exact resume), else zeros (as SB3)."""
        loaded = self.__dict__.pop("_loaded_returns", None)
        if loaded is not None and loaded.shape == (self.num_envs,):
            self.returns = loaded.copy()
        else:
            self.returns = np.zeros(self.num_envs)

    def _check_shapes(self, space: spaces.Space) -> None:
        if not self.norm_obs:
            return
        if isinstance(self.obs_rms, dict):
            if not isinstance(space, spaces.Dict):
                raise ValueError(f"the statistics are for a Dict observation space, the env has {space}")
            for key, rms in self.obs_rms.items():
                if key not in space.spaces or space.spaces[key].shape != rms.mean.shape:
                    raise ValueError(
                        f"the statistics of key {key!r} have shape {rms.mean.shape}, the env's observation space "
                        f"is {space}"
                    )
        elif space.shape != self.obs_rms.mean.shape:
            raise ValueError(
                f"the statistics are for observations of shape {self.obs_rms.mean.shape}, the env's are {space.shape}"
            )

    # ------------------------------------------------------------------ state, save and load
    def get_state(self) -> dict[str, Any]:
        """The settings and statistics: ``{"config": <JSON-able dict>, "arrays": {name: float64 array}}``.

        Besides the statistics, ``arrays["returns"]`` holds each env's running discounted return, so that a
        run restored mid-episode scales its rewards exactly as it would have (SB3 does not save them).
        `set_state()` restores all of it bit for bit; `save()` writes exactly this.
        """
        config: dict[str, Any] = {"format": STATE_FORMAT, "format_version": STATE_VERSION}
        config.update({name: getattr(self, name) for name in _SETTINGS})
        config["norm_obs_keys"] = self.norm_obs_keys
        arrays: dict[str, np.ndarray] = {}
        stats: list[tuple[str, RunningMeanStd]] = [("ret_rms", self.ret_rms)]
        if isinstance(self.obs_rms, dict):
            config["obs_rms_keys"] = list(self.obs_rms)
            stats += [(f"obs_rms.{i}", rms) for i, rms in enumerate(self.obs_rms.values())]
        elif self.norm_obs:
            config["obs_rms_keys"] = None
            stats.append(("obs_rms", self.obs_rms))
        else:
            config["obs_rms_keys"] = []
        for name, rms in stats:
            arrays[f"{name}.mean"] = np.array(rms.mean, dtype=np.float64)
            arrays[f"{name}.var"] = np.array(rms.var, dtype=np.float64)
            arrays[f"{name}.count"] = np.array(rms.count, dtype=np.float64)
        arrays["returns"] = np.array(self.__dict__.get("returns", np.zeros(0)), dtype=np.float64)
        return {"config": config, "arrays": arrays}

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore `get_state()` output: settings and statistics, and the running discounted returns when
        they are for as many envs as this wrapper has (otherwise those start from zero, as after SB3's load).

        Raises:
            ValueError: the state is malformed, of another format, or does not fit this env's observations.
        """
        try:
            config, arrays = state["config"], state["arrays"]
            if config.get("format") != STATE_FORMAT or config.get("format_version") != STATE_VERSION:
                raise ValueError(
                    f"not a {STATE_FORMAT} state of version {STATE_VERSION}: "
                    f"format {config.get('format')!r}, version {config.get('format_version')!r}"
                )

            def rms(name: str, shape: tuple[int, ...] | None = None) -> RunningMeanStd:
                checked = check_running_stats(
                    name, arrays[f"{name}.mean"], arrays[f"{name}.var"], arrays[f"{name}.count"], shape
                )
                new = RunningMeanStd(shape=checked[0].shape)
                new.mean, new.var, new.count = checked
                return new

            keys = config["obs_rms_keys"]
            settings = {name: config[name] for name in _SETTINGS}
            if keys is None:
                obs_rms: RunningMeanStd | dict[str, RunningMeanStd] = rms("obs_rms")
            else:
                obs_rms = {key: rms(f"obs_rms.{i}") for i, key in enumerate(keys)}
            ret_rms = rms("ret_rms", ())
            norm_obs_keys = config["norm_obs_keys"]
            returns = arrays.get("returns")
            returns = None if returns is None else np.array(returns, dtype=np.float64)
            if returns is not None and (returns.ndim != 1 or not np.all(np.isfinite(returns))):
                raise ValueError(f"malformed VecNormalize state: returns must be finite numbers, got {returns!r:.80}")
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"malformed VecNormalize state: {type(exc).__name__}: {exc}") from exc
        for name in ("training", "norm_obs", "norm_reward"):
            if not isinstance(settings[name], bool):
                raise ValueError(f"malformed VecNormalize state: {name} must be a bool, got {settings[name]!r}")
        for name in ("clip_obs", "clip_reward", "epsilon"):
            settings[name] = _positive(name, settings[name])
        settings["gamma"] = _gamma(settings["gamma"])
        previous = {name: getattr(self, name, None) for name in (*_SETTINGS, "obs_rms", "ret_rms", "norm_obs_keys")}
        for name, value in settings.items():
            setattr(self, name, value)
        self.obs_rms, self.ret_rms, self.norm_obs_keys = obs_rms, ret_rms, norm_obs_keys
        if self.__dict__.get("venv") is not None:
            try:
                self._check_shapes(self.venv.observation_space)
            except ValueError:
                for name, value in previous.items():
                    setattr(self, name, value)
                raise
        self.__dict__["_loaded_returns"] = returns
        if self.__dict__.get("venv") is not None:
            self._restore_returns()

    # the component state protocol (see the Architecture page of the docs)
    def state_dict(self) -> dict[str, Any]:
        """`get_state()`: ``{"config": ..., "arrays": ...}``, what `save()` writes."""
        return self.get_state()

    def load_state_dict(self, state: Any) -> None:
        """`set_state()`: checks the state (format, settings, every statistic's shape and finite values, the
        running returns) and restores it; a ``ValueError`` names what is wrong and nothing is changed."""
        self.set_state(state)

    @classmethod
    def from_state(cls, state: dict[str, Any], venv: VecEnv | None = None) -> VecNormalize:
        """A wrapper with `get_state()` output restored, around ``venv`` (or none: see `set_venv()`)."""
        self = cls.__new__(cls)
        self.__dict__["venv"] = None
        self.class_attributes = {}
        self.returns = np.zeros(0)
        self.set_state(state)
        self.old_obs, self.old_reward = np.array([]), np.array([])
        if venv is not None:
            self.set_venv(venv)
        return self

    def save(self, save_path: str | os.PathLike[str]) -> None:
        """Write the settings and statistics to ``save_path`` atomically, in the safe format (no pickle).

        The file is a zip archive of ``vec_normalize.json`` and ``statistics.npz``; any file name works
        (SB3's examples use ``vec_normalize.pkl``, which is then not a pickle).
        """
        state = self.get_state()
        arrays = io.BytesIO()
        np.savez(arrays, **state["arrays"])
        with atomic_write(save_path) as fh:
            with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as archive:
                archive.writestr(_JSON_ENTRY, json.dumps(state["config"], indent=2, allow_nan=False))
                archive.writestr(_ARRAYS_ENTRY, arrays.getvalue())

    @staticmethod
    def load(load_path: str | os.PathLike[str], venv: VecEnv, allow_pickle: bool = False) -> VecNormalize:
        """Rebuild a wrapper around ``venv`` from a file written by `save()`.

        Args:
            load_path: the file.
            venv: the env to wrap (its observations must fit the saved statistics).
            allow_pickle: also accept a file pickled by Stable-Baselines3's ``VecNormalize.save``. Unpickling
                can run arbitrary code: only for files you trust. Only the statistics and settings are read
                from it.

        Raises:
            ModelFileError: (a ``ValueError``) the file is neither format, is malformed, holds invalid
                statistics or settings, or does not fit ``venv``.
            ValueError: the file is a pickle and ``allow_pickle`` is false.
        """
        check_bool("allow_pickle", allow_pickle)
        if zipfile.is_zipfile(load_path):
            state = _read_state(load_path)
            try:
                return VecNormalize.from_state(state, venv)
            except ModelFileError:
                raise
            except ValueError as exc:  # the file's statistics or settings: the file's fault, named as such
                raise ModelFileError(f"{os.fspath(load_path)!r} (a VecNormalize file): {exc}") from exc
        with open(load_path, "rb") as fh:
            head = fh.read(2)
        if head[:1] == b"\x80":  # pickle protocol 2+
            if not allow_pickle:
                raise ValueError(
                    f"{os.fspath(load_path)!r} is a pickle (Stable-Baselines3's format); unpickling runs code from "
                    "the file, so it is refused unless you pass allow_pickle=True for a file you trust"
                )
            return VecNormalize.from_state(_state_from_sb3_pickle(load_path), venv)
        raise ModelFileError(
            f"{os.fspath(load_path)!r} is not a VecNormalize file (neither rlkit_td3's zip nor a pickle)"
        )


_MAX_STAT_ITEMS = 2**22
"""Most values one statistic in a VecNormalize file may hold (32 MiB of float64: a 1024x1024x4 image)."""
_MAX_STAT_MEMBERS = 4 + 3 * 1024


def _read_state(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The settings and statistics of a file written by `VecNormalize.save()`, through the one reader: two
    entries, each capped; the JSON's depth; each statistic's ``.npy`` header (float64, at most
    `_MAX_STAT_ITEMS` values, declared size and ratio) before its data is read."""
    what = f"{os.fspath(path)!r} (a VecNormalize file)"
    allowed = {_JSON_ENTRY, _ARRAYS_ENTRY}
    with ZipReader(path, what, allowed=allowed, max_entry_bytes=_MAX_ENTRY_BYTES) as archive:
        if archive.names != allowed:
            raise ModelFileError(f"{what}: entries {sorted(archive.names)}, expected {sorted(allowed)}")
        config = parse_json(archive.read(_JSON_ENTRY, MAX_METADATA_BYTES, MAX_TENSOR_RATIO), f"{what}: settings")
        with archive.npz(_ARRAYS_ENTRY, _MAX_ENTRY_BYTES, MAX_TENSOR_RATIO) as npz:
            members = npz.namelist()
            if len(members) > _MAX_STAT_MEMBERS or not all(m.endswith(".npy") for m in members):
                raise ModelFileError(f"{what}: {_ARRAYS_ENTRY} holds {len(members)} members, not only .npy statistics")
            arrays = {
                m[:-4]: np.array(npz.npy(m[:-4], np.float64, None, _MAX_STAT_ITEMS, any_ndim=True)) for m in members
            }
    return {"config": config, "arrays": arrays}


class _SB3Stub:
    """Stands in for SB3 classes while unpickling: keeps the pickled attributes, runs nothing."""

    def __setstate__(self, state: Any) -> None:
        self.__dict__.update(state if isinstance(state, dict) else {})


class _SB3Unpickler(pickle.Unpickler):
    """Maps SB3's ``VecNormalize``/``RunningMeanStd`` to stubs; other classes resolve normally (unsafe)."""

    def find_class(self, module: str, name: str) -> Any:
        if module.startswith("stable_baselines3"):
            return _SB3Stub
        return super().find_class(module, name)


def _state_from_sb3_pickle(path: str | os.PathLike[str]) -> dict[str, Any]:
    with open(path, "rb") as fh:
        obj = unpickle(fh, f"{os.fspath(path)!r}", allow_pickle=True, unpickler=_SB3Unpickler)
    values = getattr(obj, "__dict__", {})
    try:
        config: dict[str, Any] = {"format": STATE_FORMAT, "format_version": STATE_VERSION}
        config.update({name: values[name] for name in _SETTINGS})
        for name in ("training", "norm_obs", "norm_reward"):
            config[name] = bool(config[name])
        for name in ("clip_obs", "clip_reward", "gamma", "epsilon"):
            config[name] = float(config[name])
        config["norm_obs_keys"] = values.get("norm_obs_keys")
        arrays: dict[str, np.ndarray] = {}

        def put(name: str, rms: Any) -> None:
            arrays[f"{name}.mean"] = np.asarray(rms.mean, dtype=np.float64)
            arrays[f"{name}.var"] = np.asarray(rms.var, dtype=np.float64)
            arrays[f"{name}.count"] = np.asarray(rms.count, dtype=np.float64)

        put("ret_rms", values["ret_rms"])
        obs_rms = values.get("obs_rms")
        if isinstance(obs_rms, dict):
            config["obs_rms_keys"] = list(obs_rms)
            for i, rms in enumerate(obs_rms.values()):
                put(f"obs_rms.{i}", rms)
        elif obs_rms is not None and config["norm_obs"]:
            config["obs_rms_keys"] = None
            put("obs_rms", obs_rms)
        else:
            config["obs_rms_keys"] = []
    except (KeyError, AttributeError, TypeError) as exc:
        raise ValueError(f"{os.fspath(path)!r} is not a Stable-Baselines3 VecNormalize pickle: {exc}") from exc
    return {"config": config, "arrays": arrays}


__all__ = ["VecNormalize", "is_image_space"]

"""Exploration noise, added to the actor's output in normalised action units ([-1, 1] per dimension).

Each noise owns a seedable `numpy.random.Generator` and has `ActionNoise.reset()`, called
at the end of every episode. ``sigma`` may decay exponentially with the number of draws,
``sigma_t = max(sigma_0 * decay**t, min_sigma)`` (the decaying exploration of the seeds' runs).
For vector envs the algorithm wraps a single-env noise in `VectorizedActionNoise`, which keeps
one independent copy per env.
"""

from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

import numpy as np

from rlkit_td3.checks.state import _int, _number, check_numpy_rng_state
from rlkit_td3.fileio.serialization import ModelFileError
from rlkit_td3.utils import ValueAssertionError


def _as_vector(value: Any, name: str) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array (one entry per action dimension), got {value!r}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return arr


class ActionNoise(ABC):
    """Base class of exploration noises: ``noise()`` returns one sample of shape ``(action_dim,)``."""

    def __init__(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def seed(self, seed: int | None) -> None:
        """Re-seed the noise's own random generator."""
        self._rng = np.random.default_rng(seed)

    def reset(self) -> None:  # noqa: B027  (a no-op default is the intended behaviour)
        """Called at the end of an episode. Stateless noises need not override it."""

    @abstractmethod
    def __call__(self) -> np.ndarray:
        """Draw one noise sample (float32, shape ``(action_dim,)``)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON description used by ``save``; subclasses override it to be saved without pickle."""
        raise NotImplementedError(f"{type(self).__name__} has no JSON description")

    def get_state(self) -> dict[str, Any]:
        """The noise's changing state as JSON (its generator; subclasses add what they carry between draws).

        A checkpoint stores it so that a resumed run draws the same noise. Subclasses with more state
        extend both this and `set_state()`.
        """
        return {"rng": self._rng.bit_generator.state}

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore what `get_state()` returned."""
        self._rng.bit_generator.state = state["rng"]

    # the component state protocol (see the Architecture page of the docs): what a checkpoint saves and restores
    def state_dict(self) -> dict[str, Any]:
        """The noise's changing state, as JSON: what a checkpoint stores (by default `get_state()`).

        A noise of your own with more state overrides this and `load_state_dict()` (or `get_state()`,
        `set_state()` and `check_state()`); the checkpoint stores whatever it returns and hands it back.
        """
        return self.get_state()

    def load_state_dict(self, state: Any) -> None:
        """Restore what `state_dict()` returned, after checking it (`check_state()`).

        Raises:
            ModelFileError: (a ``ValueError``) the state is not one this noise can hold; nothing was changed.
        """
        self.check_state(state)
        self.set_state(state)

    def check_state(self, state: Any, entry: str = "action_noise state") -> None:
        """Raise ``ModelFileError`` naming ``entry`` unless ``state`` is one `set_state()` can restore.

        The base class checks that it is a dict and, when it holds one, the ``"rng"`` generator state that
        `get_state()` writes; the built-in noises check all of theirs.
        """
        if not isinstance(state, dict):
            raise ModelFileError(f"{entry} must be a dict, got {str(state)[:200]}")
        if "rng" in state:
            check_numpy_rng_state(f"{entry}.rng", state["rng"])


class _DecayingSigma:
    """Shared σ bookkeeping for the two built-in noises."""

    def _init_sigma(self, sigma: Any, decay: float, min_sigma: float) -> None:
        if not 0.0 < decay <= 1.0:
            raise ValueError(f"decay must be in (0, 1], got {decay!r}")
        if min_sigma < 0.0:
            raise ValueError(f"min_sigma must be >= 0, got {min_sigma!r}")
        self._sigma0 = _as_vector(sigma, "sigma")
        if np.any(self._sigma0 < 0):
            raise ValueError(f"sigma must be >= 0, got {sigma!r}")
        self.decay = float(decay)
        self.min_sigma = float(min_sigma)
        self.n_draws = 0

    def get_state(self) -> dict[str, Any]:
        return {**super().get_state(), "n_draws": self.n_draws}  # type: ignore[misc]

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)  # type: ignore[misc]
        self.n_draws = int(state["n_draws"])

    def check_state(self, state: Any, entry: str = "action_noise state") -> None:
        super().check_state(state, entry)  # type: ignore[misc]
        check_numpy_rng_state(f"{entry}.rng", state.get("rng"))
        _int(f"{entry}.n_draws", state.get("n_draws"), 0)

    @property
    def sigma(self) -> np.ndarray:
        """The current standard deviation, after ``n_draws`` decays."""
        if self.decay == 1.0:
            return self._sigma0
        return np.maximum(self._sigma0 * self.decay**self.n_draws, self.min_sigma)


class NormalActionNoise(_DecayingSigma, ActionNoise):
    """Independent Gaussian noise N(mean, sigma²) per action dimension.

    Args:
        mean: mean per action dimension.
        sigma: standard deviation per action dimension, in normalised units (0.1 = 5% of the range).
        decay: multiply sigma by this factor after every draw (1.0 = constant).
        min_sigma: lower bound for the decayed sigma.
        seed: seed of the noise's own generator.
    """

    def __init__(
        self,
        mean: Any,
        sigma: Any,
        *,
        decay: float = 1.0,
        min_sigma: float = 0.0,
        seed: int | None = None,
    ) -> None:
        super().__init__(seed)
        self.mean = _as_vector(mean, "mean")
        self._init_sigma(sigma, decay, min_sigma)
        if self.mean.shape != self._sigma0.shape:
            raise ValueError(f"mean and sigma must have the same shape, got {self.mean.shape} and {self._sigma0.shape}")

    def __call__(self) -> np.ndarray:
        sample = self._rng.normal(self.mean, self.sigma)
        self.n_draws += 1
        return sample.astype(np.float32)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "NormalActionNoise",
            "mean": self.mean.tolist(),
            "sigma": self._sigma0.tolist(),
            "decay": self.decay,
            "min_sigma": self.min_sigma,
        }

    def __repr__(self) -> str:
        return f"NormalActionNoise(mean={self.mean}, sigma={self.sigma})"


class OrnsteinUhlenbeckActionNoise(_DecayingSigma, ActionNoise):
    """Temporally correlated Ornstein-Uhlenbeck noise, as in the DDPG paper (Lillicrap et al. 2016).

    ``x_{t+1} = x_t + theta * (mean - x_t) * dt + sigma * sqrt(dt) * N(0, 1)``.

    Args:
        mean: long-run mean per action dimension.
        sigma: diffusion scale per action dimension.
        theta: rate of mean reversion (DDPG paper: 0.15).
        dt: time step of the discretisation.
        initial_noise: the state after ``reset()``; zeros when omitted.
        decay: multiply sigma by this factor after every draw (1.0 = constant).
        min_sigma: lower bound for the decayed sigma.
        seed: seed of the noise's own generator.
    """

    def __init__(
        self,
        mean: Any,
        sigma: Any,
        theta: float = 0.15,
        dt: float = 1e-2,
        initial_noise: Any | None = None,
        *,
        decay: float = 1.0,
        min_sigma: float = 0.0,
        seed: int | None = None,
    ) -> None:
        super().__init__(seed)
        self.mean = _as_vector(mean, "mean")
        self._init_sigma(sigma, decay, min_sigma)
        if theta <= 0 or dt <= 0:
            raise ValueError(f"theta and dt must be > 0, got theta={theta!r}, dt={dt!r}")
        self.theta = float(theta)
        self.dt = float(dt)
        self.initial_noise = None if initial_noise is None else _as_vector(initial_noise, "initial_noise")
        self.reset()

    def __call__(self) -> np.ndarray:
        step = self._rng.standard_normal(self.mean.shape)
        self._state = (
            self._state + self.theta * (self.mean - self._state) * self.dt + self.sigma * np.sqrt(self.dt) * step
        )
        self.n_draws += 1
        return self._state.astype(np.float32)

    def reset(self) -> None:
        self._state = np.zeros_like(self.mean) if self.initial_noise is None else self.initial_noise.copy()

    def get_state(self) -> dict[str, Any]:
        return {**super().get_state(), "x": self._state.tolist()}

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        self._state = np.asarray(state["x"], dtype=np.float64).reshape(self.mean.shape)

    def check_state(self, state: Any, entry: str = "action_noise state") -> None:
        super().check_state(state, entry)
        x = state.get("x")
        if not isinstance(x, list) or len(x) != self.mean.size:
            raise ModelFileError(f"{entry}.x must be a list of {self.mean.size} numbers (the action dimension)")
        for value in x:
            _number(f"{entry}.x", value)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "OrnsteinUhlenbeckActionNoise",
            "mean": self.mean.tolist(),
            "sigma": self._sigma0.tolist(),
            "theta": self.theta,
            "dt": self.dt,
            "initial_noise": None if self.initial_noise is None else self.initial_noise.tolist(),
            "decay": self.decay,
            "min_sigma": self.min_sigma,
        }

    def __repr__(self) -> str:
        return f"OrnsteinUhlenbeckActionNoise(mean={self.mean}, sigma={self.sigma}, theta={self.theta})"


class VectorizedActionNoise(ActionNoise):
    """One independent copy of ``base_noise`` per env; ``noise()`` returns shape ``(n_envs, action_dim)``.

    The copies are deep copies (the caller's object is not used or changed), each re-seeded from
    ``seed`` with independent streams.
    """

    def __init__(self, base_noise: ActionNoise, n_envs: int, seed: int | None = None) -> None:
        if base_noise is None:  # SB3 raises ValueError here, TypeError for other non-noises
            raise ValueError("base_noise must be an ActionNoise, got None")
        if not isinstance(base_noise, ActionNoise):
            raise TypeError(f"base_noise must be an ActionNoise, got {type(base_noise).__name__}")
        if isinstance(base_noise, VectorizedActionNoise):
            raise TypeError("base_noise must be a single-env noise, not a VectorizedActionNoise")
        if isinstance(n_envs, (bool, np.bool_)) or not isinstance(n_envs, (int, np.integer)) or n_envs < 1:
            raise ValueError(f"n_envs must be a positive int, got {n_envs!r}")
        super().__init__(seed)
        self.base_noise = base_noise
        self.n_envs = int(n_envs)
        self._noises = [copy.deepcopy(base_noise) for _ in range(n_envs)]
        self.seed(seed)

    @property
    def noises(self) -> list[ActionNoise]:
        """The per-env copies. Assigning checks the new list: one noise per env, each of ``base_noise``'s type.

        Raises:
            TypeError: not a list or tuple.
            ValueAssertionError: the wrong number of noises (a ``ValueError``; also an ``AssertionError``, as SB3
                raises).
            ValueError: an entry is not of ``base_noise``'s type.
        """
        return self._noises

    @noises.setter
    def noises(self, noises: list[ActionNoise]) -> None:
        if not isinstance(noises, (list, tuple)):
            raise TypeError(f"noises must be a list of ActionNoise, got {type(noises).__name__}")
        if len(noises) != self.n_envs:
            raise ValueAssertionError(f"noises must hold one noise per env ({self.n_envs}), got {len(noises)}")
        wrong = [i for i, noise in enumerate(noises) if not isinstance(noise, type(self.base_noise))]
        if wrong:
            raise ValueError(
                f"noises must all be of base_noise's type {type(self.base_noise).__name__}; entries {wrong} are not"
            )
        self._noises = list(noises)

    def seed(self, seed: int | None) -> None:
        children = np.random.SeedSequence(seed).spawn(self.n_envs) if seed is not None else [None] * self.n_envs
        for noise, child in zip(self._noises, children):
            noise.seed(None if child is None else int(child.generate_state(1)[0]))

    def reset(self, indices: Iterable[int] | None = None) -> None:
        """Reset the copies of the given envs (all when ``indices`` is None)."""
        for i in range(self.n_envs) if indices is None else indices:
            self.noises[i].reset()

    def __call__(self) -> np.ndarray:
        return np.stack([noise() for noise in self._noises])

    def resized(self, n_envs: int, seed: int | None = None) -> VectorizedActionNoise:
        """A copy of this noise for ``n_envs`` envs (used when a model's env changes its number of envs).

        The first ``min(n_envs, self.n_envs)`` copies carry on from their current state (deep copies); the
        added ones are fresh copies of ``base_noise``, seeded from ``seed``. This object is not changed.
        """
        resized = VectorizedActionNoise(self.base_noise, n_envs, seed=seed)
        kept = min(resized.n_envs, self.n_envs)
        resized.noises[:kept] = [copy.deepcopy(noise) for noise in self.noises[:kept]]
        return resized

    def get_state(self) -> dict[str, Any]:
        return {"noises": [noise.get_state() for noise in self.noises]}

    def set_state(self, state: dict[str, Any]) -> None:
        if len(state["noises"]) != self.n_envs:
            raise ValueError(f"noise state holds {len(state['noises'])} copies, this noise has {self.n_envs}")
        for noise, sub in zip(self.noises, state["noises"]):
            noise.set_state(sub)

    def state_dict(self) -> dict[str, Any]:
        """Each copy's `ActionNoise.state_dict()`, in env order."""
        return {"noises": [noise.state_dict() for noise in self.noises]}

    def load_state_dict(self, state: Any) -> None:
        """Give each copy its `ActionNoise.load_state_dict()` (after checking the layout and every copy's state)."""
        self.check_state(state)
        for noise, sub in zip(self.noises, state["noises"]):
            noise.load_state_dict(sub)

    def check_state(self, state: Any, entry: str = "action_noise state") -> None:
        copies = state.get("noises") if isinstance(state, dict) else None
        if not isinstance(copies, list) or set(state) != {"noises"} or len(copies) != self.n_envs:
            raise ModelFileError(f"{entry} must hold {self.n_envs} noise states (one per env)")
        for i, (sub, noise) in enumerate(zip(copies, self.noises)):
            noise.check_state(sub, f"{entry}.noises[{i}]")

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "VectorizedActionNoise",
            "base_noise": self.base_noise.to_dict(),
            "n_envs": self.n_envs,
        }

    def __repr__(self) -> str:
        return f"VectorizedActionNoise({self.base_noise!r}, n_envs={self.n_envs})"


def noise_from_dict(spec: dict[str, Any]) -> ActionNoise:
    """Rebuild a built-in noise from its `ActionNoise.to_dict()` description.

    Raises:
        ValueError: unknown type or malformed description.
    """
    if not isinstance(spec, dict):
        raise ValueError(f"malformed action noise description {spec!r}")
    kwargs = {k: v for k, v in spec.items() if k != "type"}
    kind = spec.get("type")
    try:
        if kind == "NormalActionNoise":
            return NormalActionNoise(**kwargs)
        if kind == "OrnsteinUhlenbeckActionNoise":
            return OrnsteinUhlenbeckActionNoise(**kwargs)
        if kind == "VectorizedActionNoise":
            return VectorizedActionNoise(noise_from_dict(kwargs["base_noise"]), int(kwargs["n_envs"]))
    except (TypeError, KeyError) as exc:
        raise ValueError(f"malformed action noise description {spec!r}") from exc
    raise ValueError(
        f"unknown action noise type {kind!r}; allowed: NormalActionNoise, OrnsteinUhlenbeckActionNoise, "
        "VectorizedActionNoise (pass other noises to load() through custom_objects)"
    )


__all__ = [
    "ActionNoise",
    "NormalActionNoise",
    "OrnsteinUhlenbeckActionNoise",
    "VectorizedActionNoise",
    "noise_from_dict",
]


def draw_noise(noise: ActionNoise, batch_size: int, action_space: Any) -> np.ndarray:
    """Exploration noise for ``batch_size`` rows of actions, shape ``(batch_size, action_dim)``.

    One draw per row: when ``batch_size`` is the number of envs a `VectorizedActionNoise` gives its per-env
    copies; otherwise row ``i`` comes from copy ``i % n_envs`` (a single-env noise: from the noise itself).

    Raises:
        ValueError: the noise returns a sample of another size than ``action_space``'s.
    """
    action_dim = int(np.prod(action_space.shape))
    vectorized = isinstance(noise, VectorizedActionNoise)
    if vectorized and batch_size == noise.n_envs:
        sample = np.asarray(noise())
    elif not vectorized and batch_size == 1:
        sample = np.reshape(noise(), (1, -1))
    else:
        copies = noise.noises if vectorized else [noise]
        sample = np.stack([np.reshape(copies[i % len(copies)](), -1) for i in range(batch_size)])
    if sample.shape != (batch_size, action_dim):
        raise ValueError(
            f"action_noise returned samples of shape {sample.shape}, for {batch_size} row(s) of actions; the "
            f"action space {action_space} needs ({batch_size}, {action_dim})"
        )
    return sample


def fit_noise_to_envs(
    noise: ActionNoise, action_space: Any, n_envs: int, seed: int | None, strict: bool
) -> ActionNoise:
    """``noise`` checked against ``action_space`` and fitted to ``n_envs`` envs.

    ``strict`` (a model being built): a `VectorizedActionNoise` for another number of envs is the caller's
    mistake. Otherwise (the env changed: ``set_env``, ``load(env=...)``) a vectorized noise is resized, keeping
    the copies of the envs that remain and seeding fresh ones from ``seed``; a single-env noise becomes a
    vectorized one whose first copy is the noise as it stands.

    Raises:
        ValueError: the noise's dimension differs from the action space's, or (``strict``) a vectorized noise
            was made for another number of envs.
    """
    base = noise.base_noise if isinstance(noise, VectorizedActionNoise) else noise
    mean = getattr(base, "mean", None)
    action_dim = int(np.prod(action_space.shape))
    if isinstance(mean, np.ndarray) and mean.size != action_dim:
        raise ValueError(
            f"action_noise has {mean.size} dimension(s) (its mean has shape {mean.shape}); the action space "
            f"{action_space} has {action_dim}"
        )
    if isinstance(noise, VectorizedActionNoise) and noise.n_envs != n_envs:
        if strict:
            raise ValueError(
                f"action_noise is a VectorizedActionNoise for n_envs={noise.n_envs}; the env has "
                f"n_envs={n_envs} (pass the single-env noise: the model vectorizes it)"
            )
        return noise.resized(n_envs, seed=seed)
    if not isinstance(noise, VectorizedActionNoise) and n_envs > 1:
        vectorized = VectorizedActionNoise(noise, n_envs, seed=seed)
        vectorized.noises[0] = noise  # the first env carries on with the noise as it stands
        return vectorized
    return noise


# ---------------------------------------------------------------------------- checks of a saved noise
_NOISE_KEYS = {
    "NormalActionNoise": ({"type", "mean", "sigma"}, {"decay", "min_sigma"}),
    "OrnsteinUhlenbeckActionNoise": ({"type", "mean", "sigma"}, {"decay", "min_sigma", "theta", "dt", "initial_noise"}),
}


def check_noise_spec(entry: str, spec: Any, action_dim: int, n_envs: int) -> None:
    """A built-in noise's JSON: vectors of the action's dimension, finite numbers, ``n_envs`` copies."""
    if spec is None or (isinstance(spec, dict) and spec.get("pickled") is True and len(spec) == 1):
        return
    if not isinstance(spec, dict):
        raise ModelFileError(f"{entry} must be a noise description, got {str(spec)[:200]}")
    if spec.get("type") == "VectorizedActionNoise":
        if set(spec) != {"type", "base_noise", "n_envs"}:
            raise ModelFileError(f"{entry} has keys {sorted(spec)}")
        if _int(f"{entry}.n_envs", spec["n_envs"], 1, 2**16) != n_envs:
            raise ModelFileError(f"{entry}.n_envs is {spec['n_envs']}, the model has n_envs={n_envs}")
        check_noise_spec(f"{entry}.base_noise", spec["base_noise"], action_dim, 1)
        if isinstance(spec["base_noise"], dict) and spec["base_noise"].get("type") == "VectorizedActionNoise":
            raise ModelFileError(f"{entry}.base_noise cannot be vectorized itself")
        return
    keys = _NOISE_KEYS.get(spec.get("type"))
    if keys is None:
        raise ModelFileError(f"{entry} has unknown type {spec.get('type')!r}")
    required, optional = keys
    if not required <= set(spec) <= required | optional:
        raise ModelFileError(
            f"{entry} has keys {sorted(spec)}, expected {sorted(required)} and some of {sorted(optional)}"
        )
    if n_envs != 1:
        raise ModelFileError(f"{entry} is a single-env noise but the model has n_envs={n_envs}")
    for name in ("mean", "sigma", "initial_noise"):
        value = spec.get(name)
        if value is None and name == "initial_noise":
            continue
        if not isinstance(value, list) or len(value) != action_dim:
            raise ModelFileError(f"{entry}.{name} must be a list of {action_dim} numbers (the action dimension)")
        for x in value:
            _number(f"{entry}.{name}", x, 0.0 if name == "sigma" else -math.inf)
    if "decay" in spec:
        _number(f"{entry}.decay", spec["decay"], 1e-12, 1.0)
    if "min_sigma" in spec:
        _number(f"{entry}.min_sigma", spec["min_sigma"], 0.0)
    for name in ("theta", "dt"):
        if name in spec and _number(f"{entry}.{name}", spec[name], 0.0) <= 0:
            raise ModelFileError(f"{entry}.{name} must be > 0")


def check_noise_state(entry: str, state: Any, noise: Any) -> None:
    """A noise's saved state against the (built) noise it is restored into: `ActionNoise.check_state()`."""
    if noise is None or state is None:
        return
    noise.check_state(state, entry)

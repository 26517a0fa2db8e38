"""PyBullet robots on gymnasium.

Importing :mod:`rlkit_td3` imports this module. It registers the PyBullet ids (``HalfCheetahBulletEnv-v0``,
``AntBulletEnv-v0``, ...) with gymnasium: `pybullet_envs_gymnasium` registers them, and the nine ids in
:data:`BULLET_ENV_IDS` are then pointed at thin subclasses defined here. Registration only names entry points:
``pybullet`` itself is imported on the first ``gymnasium.make`` of a Bullet id, not before (the subclasses are
built on first attribute access, see :func:`__getattr__`).

What the subclasses change, and why (the facts are from the pybullet_envs specification in the project's
shared notes, and from measurements on this project's CI machine):

* **Machine-independent arithmetic.** The port computes the walkers' distance to the walk target and the
  Reacher's distance to its target with ``np.linalg.norm``, and the walkers' body-frame velocity with
  ``np.dot``. Both go through BLAS, and OpenBLAS picks a different kernel per CPU (with or without fused
  multiply-add). On an AVX-512 machine that changed the last bits of the progress reward of Ant, Humanoid and
  Reacher against the original's reference trajectories. Here these quantities are evaluated in a fixed order
  in plain Python floats, the order OpenBLAS's Haswell/Zen kernels use, so the rewards are the original's on
  any CPU. ``arctan2`` uses the C library's ``atan2`` (numpy's AVX-512 ``arctan2`` differs in the last bit).
* **Actions are cast to float64 on entry.** The original was written for numpy 1.x, where the Humanoid's torque
  and the Reacher's electricity cost were computed in float64 even for float32 actions; numpy 2 (NEP 50) keeps
  them in float32. Casting first gives numpy 1 behaviour, whatever the caller's dtype.
* **The physics client is created in DIRECT mode.** The port's ``BulletClient()`` first tries to attach to a
  shared-memory physics server and falls back to DIRECT; if a GUI server is running, an env would silently
  share that world. (Rendering with ``render_mode="human"`` and ``PYBULLET_EGL`` keep the port's behaviour.)

Everything else (physics set-up, seeding call sequence, rewards, termination, rendering) is the port's, which
reproduces the original ``pybullet_envs`` (pybullet 3.2.7) bit for bit when given the original's RNG
(:func:`legacy_seed`). ``tests/test_bullet_envs.py`` guards that against recorded reference trajectories.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import os
import struct
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from typing import Any

import gymnasium
import numpy as np
import pybullet_envs_gymnasium  # noqa: F401  (registers the Bullet ids with gymnasium)
from gymnasium.envs.registration import registry

BULLET_ENV_IDS: tuple[str, ...] = (
    "InvertedPendulumBulletEnv-v0",
    "InvertedDoublePendulumBulletEnv-v0",
    "InvertedPendulumSwingupBulletEnv-v0",
    "ReacherBulletEnv-v0",
    "Walker2DBulletEnv-v0",
    "HalfCheetahBulletEnv-v0",
    "AntBulletEnv-v0",
    "HopperBulletEnv-v0",
    "HumanoidBulletEnv-v0",
)
"""The nine Bullet ids guarded against the original ``pybullet_envs`` (see the Environments page)."""

# class name -> (module of pybullet_envs_gymnasium, kind of fix the robot needs)
_PORT_CLASSES: dict[str, tuple[str, str]] = {
    "InvertedPendulumBulletEnv": ("gym_pendulum_envs", "none"),
    "InvertedDoublePendulumBulletEnv": ("gym_pendulum_envs", "none"),
    "InvertedPendulumSwingupBulletEnv": ("gym_pendulum_envs", "none"),
    "ReacherBulletEnv": ("gym_manipulator_envs", "reacher"),
    "Walker2DBulletEnv": ("gym_locomotion_envs", "walker"),
    "HalfCheetahBulletEnv": ("gym_locomotion_envs", "walker"),
    "AntBulletEnv": ("gym_locomotion_envs", "walker"),
    "HopperBulletEnv": ("gym_locomotion_envs", "walker"),
    "HumanoidBulletEnv": ("gym_locomotion_envs", "walker"),
}


# ---------------------------------------------------------------------------------------------------------
# Fixed-order float arithmetic (no BLAS)


def _fma_emulated(a: float, b: float, c: float) -> float:
    """``a * b + c`` with a single rounding, for Pythons without :func:`math.fma` (added in 3.13).

    The product is split exactly into ``p + err`` (Dekker's algorithm) and :func:`math.fsum`, which is
    correctly rounded, adds ``c``. Where the split could overflow or underflow, exact rationals are used.
    """
    if a == 0.0 or b == 0.0 or not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return a * b + c
    p = a * b
    if not (1e-250 < abs(p) < 1e250) or abs(a) > 1e290 or abs(b) > 1e290:
        try:
            return float(Fraction(a) * Fraction(b) + Fraction(c))
        except OverflowError:
            return p + c
    split = 134217729.0  # 2**27 + 1
    t = split * a
    a_hi = t - (t - a)
    a_lo = a - a_hi
    t = split * b
    b_hi = t - (t - b)
    b_lo = b - b_hi
    err = ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    return math.fsum((p, err, c))


_fma: Callable[[float, float, float], float] = getattr(math, "fma", _fma_emulated)


def sequential_norm(values: Iterable[float]) -> float:
    """Euclidean norm summing the squares left to right: ``sqrt((0 + v0*v0) + v1*v1 + ...)``.

    This is what ``np.linalg.norm`` returned for the short vectors of these envs on the machines that recorded
    the reference (OpenBLAS's Haswell/Zen ``ddot``), and it does not depend on the CPU or the BLAS.
    """
    acc = 0.0
    for v in values:
        v = float(v)
        acc += v * v
    return math.sqrt(acc)


def rotate_like_openblas(rows: Sequence[Sequence[float]], vec: Sequence[float]) -> list[float]:
    """Product of a 3x3 matrix and a 3-vector in the evaluation order of OpenBLAS's x86-64 ``dgemv``.

    Each row is evaluated as ``fma(a2, v2, fma(a0, v0, a1 * v1))`` (measured against ``np.dot`` with the
    Haswell and SkylakeX kernels, which agree for this shape).
    """
    v0, v1, v2 = (float(x) for x in vec)
    out = []
    for row in rows:
        a0, a1, a2 = (float(x) for x in row)
        out.append(_fma(a2, v2, _fma(a0, v0, a1 * v1)))
    return out


# ---------------------------------------------------------------------------------------------------------
# gym 0.21 seeding (what the original pybullet_envs used)


def legacy_np_random(seed: int) -> np.random.RandomState:
    """A ``RandomState`` seeded exactly like gym 0.21's ``gym.utils.seeding.np_random(seed)``.

    gym 0.21 hashed the seed with SHA-512, took the first 8 bytes as two little-endian uint32 words (dropping
    leading zero words) and seeded MT19937 with that word list. The original ``pybullet_envs`` drew its initial
    states from it; gymnasium's generator (PCG64) gives different draws for the same seed.

    Args:
        seed: a non-negative integer.

    Returns:
        The seeded generator.
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    digest = hashlib.sha512(str(int(seed) % 2**64).encode("utf8")).digest()[:8]
    low, high = struct.unpack("<2I", digest)
    words = [low, high] if high else ([low] if low else [0])
    rng = np.random.RandomState()
    rng.seed(words)
    return rng


def legacy_seed(env: gymnasium.Env, seed: int) -> None:
    """Give a Bullet env the RNG the original ``pybullet_envs`` had after ``env.seed(seed)`` (gym 0.21).

    The next ``reset()`` calls (without a ``seed`` argument) then draw the original's initial states, which makes
    trajectories comparable bit for bit with the original. ``reset(seed=...)`` replaces the RNG again.

    Args:
        env: a Bullet env, wrapped or not.
        seed: a non-negative integer.
    """
    rng = legacy_np_random(seed)
    base = env.unwrapped
    base.np_random = rng  # type: ignore[assignment]
    robot = getattr(base, "robot", None)
    if robot is not None:
        robot.np_random = rng


# ---------------------------------------------------------------------------------------------------------
# The subclasses (built lazily so that importing this module does not import pybullet)


class _WalkerStateMixin:
    """Recomputes the BLAS-dependent parts of a walker's state in fixed-order arithmetic."""

    def calc_state(self) -> np.ndarray:
        state = super().calc_state()  # type: ignore[misc]
        body_x, body_y = self.body_xyz[0], self.body_xyz[1]  # type: ignore[attr-defined]
        dy = self.walk_target_y - body_y  # type: ignore[attr-defined]
        dx = self.walk_target_x - body_x  # type: ignore[attr-defined]
        self.walk_target_theta = math.atan2(dy, dx)
        self.walk_target_dist = sequential_norm((dy, dx))
        yaw = self.body_rpy[2]  # type: ignore[attr-defined]
        angle_to_target = self.walk_target_theta - yaw
        cos_y, sin_y = np.cos(-yaw), np.sin(-yaw)
        rot = ((cos_y, -sin_y, 0.0), (sin_y, cos_y, 0.0), (0.0, 0.0, 1.0))
        vx, vy, vz = rotate_like_openblas(rot, self.robot_body.speed())  # type: ignore[attr-defined]
        fixed = np.array(
            [np.sin(angle_to_target), np.cos(angle_to_target), 0.3 * vx, 0.3 * vy, 0.3 * vz], dtype=np.float32
        )
        state[1:6] = np.clip(fixed, -5, +5)
        return state


class _ReacherPotentialMixin:
    """The Reacher's potential with a fixed-order norm."""

    def calc_potential(self) -> float:
        return -100 * sequential_norm(self.to_target_vec)  # type: ignore[attr-defined]


_ROBOT_MIXINS: dict[str, type] = {"walker": _WalkerStateMixin, "reacher": _ReacherPotentialMixin}


@functools.cache
def _fixed_robot_class(robot_cls: type, fix: str) -> type:
    mixin = _ROBOT_MIXINS[fix]
    return type(
        robot_cls.__name__, (mixin, robot_cls), {"__module__": __name__, "__qualname__": robot_cls.__name__}
    )


class _BulletEnvMixin:
    """Env-level changes shared by the nine envs: DIRECT client, float64 actions, fixed robot arithmetic."""

    _robot_fix = "none"

    def __init__(self, render_mode: str | None = None) -> None:
        super().__init__(render_mode=render_mode)  # type: ignore[call-arg]
        if self._robot_fix != "none":
            # The port's env constructors build their robot themselves; give it the fixed subclass (it adds
            # methods only, no state).
            robot = self.robot  # type: ignore[has-type]
            robot.__class__ = _fixed_robot_class(type(robot), self._robot_fix)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict]:
        if self.physicsClientId < 0 and not self.should_render and not os.getenv("PYBULLET_EGL"):  # type: ignore[attr-defined]
            self._connect_direct()
        return super().reset(seed=seed, options=options)  # type: ignore[misc]

    def _connect_direct(self) -> None:
        # Same set-up as the port's first reset, with the connection mode fixed to DIRECT.
        import pybullet
        from pybullet_utils import bullet_client

        self.ownsPhysicsClient = True
        self._p = bullet_client.BulletClient(connection_mode=pybullet.DIRECT)
        self._p.resetSimulation()
        self._p.setPhysicsEngineParameter(deterministicOverlappingPairs=1)
        self.physicsClientId = self._p._client
        self._p.configureDebugVisualizer(pybullet.COV_ENABLE_GUI, 0)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        return super().step(np.asarray(action, dtype=np.float64))  # type: ignore[misc]


@functools.cache
def _env_class(name: str) -> type:
    import importlib

    module_name, fix = _PORT_CLASSES[name]
    base = getattr(importlib.import_module(f"pybullet_envs_gymnasium.{module_name}"), name)
    doc = (
        f"``{name}`` of `pybullet_envs_gymnasium`, with a DIRECT physics client, float64 actions and "
        "BLAS-free reward arithmetic (see :mod:`rlkit_td3.envs`)."
    )
    attrs = {"__module__": __name__, "__qualname__": name, "__doc__": doc, "_robot_fix": fix}
    return type(name, (_BulletEnvMixin, base), attrs)


def __getattr__(name: str) -> Any:
    """Build the env classes (``rlkit_td3.envs.HopperBulletEnv`` ...) on first access; this imports pybullet."""
    if name in _PORT_CLASSES:
        cls = _env_class(name)
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _point_ids_here() -> None:
    for env_id in BULLET_ENV_IDS:
        name = env_id.split("-")[0]
        spec = registry.get(env_id)
        if spec is None:  # pragma: no cover  (pybullet_envs_gymnasium registers all nine)
            raise RuntimeError(f"pybullet_envs_gymnasium did not register {env_id}")
        registry[env_id] = dataclasses.replace(spec, entry_point=f"{__name__}:{name}")


_point_ids_here()

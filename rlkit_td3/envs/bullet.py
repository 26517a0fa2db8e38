"""PyBullet robots on gymnasium (`rlkit_td3.envs.bullet`; `rlkit_td3.envs` re-exports its public names).

Importing `rlkit_td3` imports this module. It registers the PyBullet ids (``HalfCheetahBulletEnv-v0``,
``AntBulletEnv-v0``, ...) with gymnasium: `pybullet_envs_gymnasium` registers them, and the nine ids in
`BULLET_ENV_IDS` are then pointed at thin subclasses defined here. Registration only names entry points:
``pybullet`` itself is imported on the first ``gymnasium.make`` of a Bullet id, not before (the subclasses are
built on first attribute access, see `__getattr__()`).

The subclasses change three things of the port, each because a measurement showed it was needed (the commit
that introduced them records the figures):

* **The walkers' and the Reacher's distance to their target is summed in a fixed order.** The port computes it
  with ``np.linalg.norm``, which goes through BLAS ``ddot``; numpy's OpenBLAS picks its kernel per CPU. On an
  AVX-512 CPU (the SkylakeX kernel) the last bit of the distance, hence of the potential-based progress reward,
  differs from what the original gave on the machine that recorded the reference trajectories (Haswell/Zen
  kernel): the port mismatched Ant, Humanoid and Reacher there, and matched them all with
  ``OPENBLAS_CORETYPE=Haswell``. Here the norm is ``sqrt((x0*x0 + x1*x1) + ...)`` left to right
  (`sequential_norm()`), which is what those kernels return for these short vectors, on any CPU.
* **Actions are cast to float64 on entry.** Under numpy 2 (NEP 50) a float32 action keeps parts of the torque and
  reward arithmetic in float32: the Humanoid's torques (hence its dynamics) and the walkers' and Reacher's
  rewards then differ from what the same action values give as float64. With the cast, an env behaves like
  the original fed ``action.astype(float64)`` whatever dtype the caller passes, so a learner's float32 actions
  and the reference's float64 actions follow the same trajectories.
* **The physics client is created in DIRECT mode.** The port's ``BulletClient()`` first tries to attach to a
  shared-memory physics server and only falls back to DIRECT; while any process on the machine runs such a
  server (a pybullet GUI, for example), every env would attach to that one world and the envs would disturb each
  other. (``render_mode="human"`` and ``PYBULLET_EGL`` keep the port's connection.)

Everything else (physics set-up, seeding call sequence, rewards, termination, rendering) is the port's, which
reproduces the original ``pybullet_envs`` (pybullet 3.2.7) bit for bit when given the original's RNG
(`legacy_seed()`). ``tests/test_bullet_envs.py`` guards that against recorded reference trajectories.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import math
import os
import struct
from collections.abc import Iterable
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

# class name -> (module of pybullet_envs_gymnasium, which robot fix it needs)
_PORT_CLASSES: dict[str, tuple[str, str | None]] = {
    "InvertedPendulumBulletEnv": ("gym_pendulum_envs", None),
    "InvertedDoublePendulumBulletEnv": ("gym_pendulum_envs", None),
    "InvertedPendulumSwingupBulletEnv": ("gym_pendulum_envs", None),
    "ReacherBulletEnv": ("gym_manipulator_envs", "reacher"),
    "Walker2DBulletEnv": ("gym_locomotion_envs", "walker"),
    "HalfCheetahBulletEnv": ("gym_locomotion_envs", "walker"),
    "AntBulletEnv": ("gym_locomotion_envs", "walker"),
    "HopperBulletEnv": ("gym_locomotion_envs", "walker"),
    "HumanoidBulletEnv": ("gym_locomotion_envs", "walker"),
}


def sequential_norm(values: Iterable[float]) -> float:
    """Euclidean norm that sums the squares left to right: ``sqrt((v0*v0 + v1*v1) + v2*v2 ...)``.

    For the 2- and 3-vectors of these envs this is what ``np.linalg.norm`` returned on the machine that recorded
    the reference trajectories (OpenBLAS's Haswell/Zen ``ddot``), and it does not depend on the CPU or the BLAS.

    Args:
        values: the vector's components.

    Returns:
        The norm, as a Python float.
    """
    acc = 0.0
    for v in values:
        v = float(v)
        acc += v * v
    return math.sqrt(acc)


# ---------------------------------------------------------------------------------------------------------
# gym 0.21 seeding (what the original pybullet_envs used)


def legacy_np_random(seed: int) -> np.random.RandomState:
    """A ``RandomState`` seeded exactly like gym 0.21's ``gym.utils.seeding.np_random(seed)``.

    gym 0.21 hashed the seed with SHA-512, took the first 8 bytes as two little-endian uint32 words (dropping
    leading zero words) and seeded MT19937 with that word list (facts from the pybullet_envs specification,
    §3.2). The original ``pybullet_envs`` drew its initial states from it; gymnasium's generator (PCG64) gives
    different draws for the same seed.

    Args:
        seed: a non-negative integer.

    Returns:
        The seeded generator.

    Raises:
        ValueError: if ``seed`` is not a non-negative integer.
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


class _WalkerDistanceMixin:
    """A walker robot whose distance to the walk target (hence its potential) does not depend on the BLAS."""

    def calc_state(self) -> np.ndarray:
        state = super().calc_state()  # type: ignore[misc]
        # Same operands and order as the port's np.linalg.norm([dy, dx]).
        dy = self.walk_target_y - self.body_xyz[1]  # type: ignore[attr-defined]
        dx = self.walk_target_x - self.body_xyz[0]  # type: ignore[attr-defined]
        self.walk_target_dist = sequential_norm((dy, dx))
        return state


class _ReacherDistanceMixin:
    """The Reacher robot with a BLAS-free norm in its potential."""

    def calc_potential(self) -> float:
        return -100 * sequential_norm(self.to_target_vec)  # type: ignore[attr-defined]


_ROBOT_MIXINS: dict[str, type] = {"walker": _WalkerDistanceMixin, "reacher": _ReacherDistanceMixin}


@functools.cache
def _fixed_robot_class(robot_cls: type, fix: str) -> type:
    attrs = {"__module__": __name__, "__qualname__": robot_cls.__name__}
    return type(robot_cls.__name__, (_ROBOT_MIXINS[fix], robot_cls), attrs)


class _BulletEnvMixin:
    """Env-level changes shared by the nine envs: DIRECT client, float64 actions, the robot's fixed norm."""

    _robot_fix: str | None = None

    def __init__(self, render_mode: str | None = None) -> None:
        super().__init__(render_mode=render_mode)  # type: ignore[call-arg]
        if self._robot_fix is not None:
            # The port's constructors build their robot themselves; give it the subclass (methods only, no state).
            robot = self.robot  # type: ignore[has-type]
            robot.__class__ = _fixed_robot_class(type(robot), self._robot_fix)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        if self.physicsClientId < 0 and not self.should_render and not os.getenv("PYBULLET_EGL"):  # type: ignore[attr-defined]
            self._connect_direct()
        return super().reset(seed=seed, options=options)  # type: ignore[misc]

    def _connect_direct(self) -> None:
        # The port's first-reset set-up (pybullet_envs specification §1.1), with the connection mode fixed.
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

    def camera_adjust(self) -> None:
        """Move the GUI's debug camera (``render_mode="human"`` only).

        The port calls this on every render; it reads and resets the debug visualizer camera, which only a GUI
        shows. pybullet 3.2.7's ``getDebugVisualizerCamera`` fails for every client once client 0 has been
        disconnected, so an ``rgb_array`` env rendered after another Bullet env was closed raised "Not connected
        to physics server". The ``rgb_array`` image does not depend on it.
        """
        if self.render_mode == "human":  # type: ignore[attr-defined]
            super().camera_adjust()  # type: ignore[misc]

    @property
    def np_random(self) -> np.random.Generator:
        """The env's generator, which the robot shares (it draws the initial joint positions from it)."""
        return gymnasium.Env.np_random.fget(self)  # type: ignore[attr-defined]

    @np_random.setter
    def np_random(self, value: np.random.Generator) -> None:
        # The port hands its generator to the robot only in seed(); a generator set from outside (an async
        # vector env's set_attr, as exact resume does) must reach the robot too, or its resets would not follow.
        gymnasium.Env.np_random.fset(self, value)  # type: ignore[attr-defined]
        robot = self.__dict__.get("robot")
        if robot is not None:
            robot.np_random = value


@functools.cache
def _env_class(name: str) -> type:
    module_name, fix = _PORT_CLASSES[name]
    base = getattr(importlib.import_module(f"pybullet_envs_gymnasium.{module_name}"), name)
    doc = (
        f"``{name}`` of `pybullet_envs_gymnasium`, with a DIRECT physics client, float64 actions and a "
        "BLAS-free target distance (see `rlkit_td3.envs.bullet`)."
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
        spec = registry.get(env_id)
        if spec is None:  # pragma: no cover  (pybullet_envs_gymnasium registers all nine)
            raise RuntimeError(f"pybullet_envs_gymnasium did not register {env_id}")
        registry[env_id] = dataclasses.replace(spec, entry_point=f"{__name__}:{env_id.split('-')[0]}")


_point_ids_here()

"""PyBullet robots on gymnasium.

Importing :mod:`rlkit_td3` imports this module, which registers the PyBullet ids
(``HalfCheetahBulletEnv-v0``, ``AntBulletEnv-v0``, ...) with gymnasium through
`pybullet_envs_gymnasium`. Registration only names entry points: ``pybullet`` itself is
imported on the first ``gymnasium.make`` of a Bullet id, not before.
"""

from __future__ import annotations

import pybullet_envs_gymnasium  # noqa: F401  (registers the Bullet ids with gymnasium)

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

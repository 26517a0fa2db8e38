"""Environments: the PyBullet ids (registered with gymnasium on ``import rlkit_td3``; `rlkit_td3.envs.bullet`) and
Stable-Baselines3's toy envs for testing a set-up (``stable_baselines3.common.envs`` names): `IdentityEnv`,
`IdentityEnvBox`, `IdentityEnvMultiBinary`, `IdentityEnvMultiDiscrete`, `FakeImageEnv`, `SimpleMultiObsEnv` and
`BitFlippingEnv` (HER's test task)."""

from typing import Any

from rlkit_td3.envs import bullet
from rlkit_td3.envs.bit_flipping_env import BitFlippingEnv
from rlkit_td3.envs.bullet import BULLET_ENV_IDS, legacy_np_random, legacy_seed, sequential_norm
from rlkit_td3.envs.identity_env import (
    FakeImageEnv,
    IdentityEnv,
    IdentityEnvBox,
    IdentityEnvMultiBinary,
    IdentityEnvMultiDiscrete,
)
from rlkit_td3.envs.multi_input_envs import SimpleMultiObsEnv


def __getattr__(name: str) -> Any:
    """The Bullet env classes (``rlkit_td3.envs.HopperBulletEnv`` ...), built on first access (imports pybullet)."""
    return bullet.__getattr__(name)


__all__ = [
    "BULLET_ENV_IDS",
    "BitFlippingEnv",
    "FakeImageEnv",
    "IdentityEnv",
    "IdentityEnvBox",
    "IdentityEnvMultiBinary",
    "IdentityEnvMultiDiscrete",
    "SimpleMultiObsEnv",
    "legacy_np_random",
    "legacy_seed",
    "sequential_norm",
]

"""Former home of `BitFlippingEnv`, kept so ``from rlkit_td3.bit_flipping_env import BitFlippingEnv`` still works;
it lives in `rlkit_td3.envs.bit_flipping_env` (SB3's ``common.envs.bit_flipping_env`` path)."""

from rlkit_td3.envs.bit_flipping_env import BitFlippingEnv

__all__ = ["BitFlippingEnv"]

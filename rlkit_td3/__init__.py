"""rlkit_td3: TD3 and DDPG for continuous control, with Stable-Baselines3's API."""

from rlkit_td3 import envs as envs  # registers the PyBullet ids with gymnasium
from rlkit_td3.version import __version__

__all__ = ["__version__"]

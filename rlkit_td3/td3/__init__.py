"""TD3 (``rlkit_td3.td3``): the algorithm and, as in Stable-Baselines3's ``td3`` package, its policies."""

from rlkit_td3.td3.policies import CnnPolicy, MlpPolicy, MultiInputPolicy, TD3Policy
from rlkit_td3.td3.td3 import TD3

__all__ = ["TD3", "CnnPolicy", "MlpPolicy", "MultiInputPolicy", "TD3Policy"]

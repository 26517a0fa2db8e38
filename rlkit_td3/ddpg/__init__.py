"""DDPG (``rlkit_td3.ddpg``): the algorithm and, as in Stable-Baselines3's ``ddpg`` package, its policies."""

from rlkit_td3.ddpg.ddpg import DDPG
from rlkit_td3.ddpg.policies import CnnPolicy, MlpPolicy, MultiInputPolicy, TD3Policy

__all__ = ["DDPG", "CnnPolicy", "MlpPolicy", "MultiInputPolicy", "TD3Policy"]

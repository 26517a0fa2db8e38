"""DDPG (``rlkit_td3.ddpg``): the algorithm and, as in Stable-Baselines3's ``ddpg`` package, its policies."""

from rlkit_td3.ddpg.ddpg import DDPG
from rlkit_td3.ddpg.policies import MlpPolicy, TD3Policy

__all__ = ["DDPG", "MlpPolicy", "TD3Policy"]

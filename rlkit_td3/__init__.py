"""rlkit_td3: TD3, DDPG and TD7 for continuous control, with Stable-Baselines3's API."""

from rlkit_td3 import envs as envs  # registers the PyBullet ids with gymnasium (pybullet loads on make)
from rlkit_td3.ddpg import DDPG
from rlkit_td3.her import HerReplayBuffer
from rlkit_td3.off_policy import OffPolicyAlgorithm
from rlkit_td3.td3 import TD3
from rlkit_td3.td7 import TD7
from rlkit_td3.version import __version__

__all__ = ["DDPG", "TD3", "TD7", "HerReplayBuffer", "OffPolicyAlgorithm", "__version__"]

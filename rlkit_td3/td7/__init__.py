"""TD7 (``rlkit_td3.td7``): the algorithm, its training state and, as the other algorithms' packages, its policy."""

from rlkit_td3.policies.td7_policy import TD7Policy
from rlkit_td3.td7.td7 import TD7

MlpPolicy = TD7Policy

__all__ = ["TD7", "MlpPolicy", "TD7Policy"]

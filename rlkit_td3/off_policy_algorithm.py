"""Stable-Baselines3's module name for `OffPolicyAlgorithm` (``stable_baselines3.common.off_policy_algorithm``).

The class lives in `rlkit_td3.off_policy`; this module only lets SB3 imports work after the import rule.
"""

from rlkit_td3.off_policy import OffPolicyAlgorithm

__all__ = ["OffPolicyAlgorithm"]

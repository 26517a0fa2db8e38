"""The policies TD3 uses, where Stable-Baselines3 users import them (``stable_baselines3.td3.policies``).

They live in `rlkit_td3.policies`; this module only names them.
"""

from rlkit_td3.policies import CnnPolicy, MlpPolicy, MultiInputPolicy, TD3Policy
from rlkit_td3.policies.networks import Actor

__all__ = ["Actor", "CnnPolicy", "MlpPolicy", "MultiInputPolicy", "TD3Policy"]

"""The policies DDPG uses (the same as TD3's), where Stable-Baselines3 users import them
(``stable_baselines3.ddpg.policies``)."""

from rlkit_td3.td3.policies import Actor, CnnPolicy, MlpPolicy, MultiInputPolicy, TD3Policy

__all__ = ["Actor", "CnnPolicy", "MlpPolicy", "MultiInputPolicy", "TD3Policy"]

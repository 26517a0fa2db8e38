"""DDPG (Lillicrap et al. 2016), as TD3 with its three switches off.

One critic, no target policy smoothing, and a policy delay of 1 (actor and targets updated at every
critic step). With the same seed, ``DDPG(...)`` trains bit for bit like
``TD3(..., policy_kwargs={"n_critics": 1}, target_policy_noise=0.0, policy_delay=1)``. Like
Stable-Baselines3's DDPG (and sfujim's "OurDDPG") it keeps TD3's networks and learning rates, so a
comparison isolates the three switches.
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import torch
from gymnasium.vector import VectorEnv

from rlkit_td3.buffers import ReplayBuffer
from rlkit_td3.fileio.model_files import register_algorithm
from rlkit_td3.noise import ActionNoise
from rlkit_td3.off_policy import OffPolicyAlgorithm
from rlkit_td3.policies import TD3Policy
from rlkit_td3.schedules import ScheduleLike


@register_algorithm
class DDPG(OffPolicyAlgorithm):
    """Deep Deterministic Policy Gradient. See `OffPolicyAlgorithm`.

    ``policy_kwargs`` may still set ``n_critics``; the default is 1. The caller's dict is not modified.
    """

    def __init__(
        self,
        policy: str | type[TD3Policy],
        env: gym.Env | VectorEnv | str,
        learning_rate: ScheduleLike = 1e-3,
        buffer_size: int = 1_000_000,
        learning_starts: int = 100,
        batch_size: int = 256,
        tau: float = 0.005,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = 1,
        gradient_steps: int = 1,
        action_noise: ActionNoise | str | None = "default",
        replay_buffer_class: type[ReplayBuffer] | None = None,
        replay_buffer_kwargs: dict[str, Any] | None = None,
        optimize_memory_usage: bool = False,
        *,
        actor_learning_rate: ScheduleLike | None = None,
        critic_learning_rate: ScheduleLike | None = None,
        n_steps: int = 1,
        warmup_action_noise: bool = True,
        policy_kwargs: dict[str, Any] | None = None,
        tensorboard_log: str | os.PathLike[str] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: torch.device | str = "auto",
    ) -> None:
        if policy_kwargs is not None and not isinstance(policy_kwargs, dict):
            raise TypeError(f"policy_kwargs must be a dict, got {policy_kwargs!r}")
        super().__init__(
            policy,
            env,
            learning_rate,
            buffer_size,
            learning_starts,
            batch_size,
            tau,
            gamma,
            train_freq,
            gradient_steps,
            action_noise,
            replay_buffer_class,
            replay_buffer_kwargs,
            optimize_memory_usage,
            policy_delay=1,
            target_policy_noise=0.0,
            target_noise_clip=0.0,
            actor_learning_rate=actor_learning_rate,
            critic_learning_rate=critic_learning_rate,
            n_steps=n_steps,
            warmup_action_noise=warmup_action_noise,
            policy_kwargs={"n_critics": 1, **(policy_kwargs or {})},
            tensorboard_log=tensorboard_log,
            verbose=verbose,
            seed=seed,
            device=device,
        )

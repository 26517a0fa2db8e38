"""TD3: Twin Delayed DDPG (Fujimoto, van Hoof and Meger, 2018).

The three switches, on: two critics (the target takes their minimum), target policy smoothing with
N(0, 0.2) noise clipped to ±0.5, and a policy delay of 2. Everything else lives in
`OffPolicyAlgorithm`. Defaults follow Stable-Baselines3 2.x, except the
exploration noise (Gaussian σ = 0.1 instead of none).
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
class TD3(OffPolicyAlgorithm):
    """Twin Delayed DDPG. See `OffPolicyAlgorithm` for the arguments.

    The critic count is the policy's ``n_critics`` (default 2; set it in ``policy_kwargs``).

    Example:
        ```python
        from rlkit_td3 import TD3

        model = TD3("MlpPolicy", "Pendulum-v1").learn(10_000)
        ```
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
        policy_delay: int = 2,
        target_policy_noise: float = 0.2,
        target_noise_clip: float = 0.5,
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
            policy_delay=policy_delay,
            target_policy_noise=target_policy_noise,
            target_noise_clip=target_noise_clip,
            actor_learning_rate=actor_learning_rate,
            critic_learning_rate=critic_learning_rate,
            n_steps=n_steps,
            warmup_action_noise=warmup_action_noise,
            policy_kwargs=policy_kwargs,
            tensorboard_log=tensorboard_log,
            verbose=verbose,
            seed=seed,
            device=device,
        )

"""TD7 (Fujimoto, Chang, Smith, Gu, Precup and Meger, 2023, "For SALE: State-Action Representation Learning for
Deep Reinforcement Learning", NeurIPS): TD3 plus four parts, each a component of the base.

* SALE embeddings (`rlkit_td3.policies.sale`, in `rlkit_td3.policies.TD7Policy`), trained at every update;
* LAP replay (`rlkit_td3.buffers.LAPReplayBuffer`: alpha 0.4, minimum priority 1, its Huber loss), whose largest
  priority is reset to the largest stored at each target refresh;
* clipped value targets (`rlkit_td3.td7.state.ValueBounds`) and hard target copies every
  ``target_update_interval`` updates (targets, fixed encoders, value bounds, all refreshed together);
* policy checkpoints (`rlkit_td3.td7.state.CheckpointSchedule`): with ``train_freq=(1, "episode")`` and
  ``gradient_steps=-1`` the base's loop calls `TD7.train` after each episode with the transitions collected; the
  policy is held (not trained) for a few episodes and judged by its minimum return, then trained in one batch of
  as many updates as transitions collected since it was last trained.

The defaults are the authors' (``Hyperparameters`` in their TD7.py, the 25k warm-up of their main.py); the TD7 page
of the documentation lists where this implementation differs and why.
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import torch
from gymnasium.vector import VectorEnv

from rlkit_td3.buffers import (
    LAPReplayBuffer,
    PrioritizedReplayBuffer,
    PrioritizedReplayBufferSamples,
    ReplayBuffer,
    ReplayBufferSamples,
)
from rlkit_td3.callbacks import MaybeCallback
from rlkit_td3.fileio.model_files import register_algorithm
from rlkit_td3.noise import ActionNoise
from rlkit_td3.off_policy import OffPolicyAlgorithm
from rlkit_td3.policies import TD3Policy, TD7Policy
from rlkit_td3.schedules import ScheduleLike
from rlkit_td3.td7 import fused
from rlkit_td3.td7.state import CheckpointSchedule, ValueBounds
from rlkit_td3.update.optim import MOMENT_FLUSH_EVERY, flush_tiny_moments, optimizer_step, zero_grad
from rlkit_td3.utils import _check_float, _check_int
from rlkit_td3.vec_env.training_env import episode_statistics

SETTINGS = (
    "target_update_interval",
    "use_checkpoints",
    "max_eps_when_checkpointing",
    "steps_before_checkpointing",
    "reset_weight",
)
"""TD7's settings beyond `OffPolicyAlgorithm`'s, stored in a model file's ``algorithm_settings``."""


@register_algorithm
class TD7(OffPolicyAlgorithm):
    """TD7: TD3 with SALE embeddings, LAP, clipped value targets, hard target copies and policy checkpoints.

    The arguments are `OffPolicyAlgorithm`'s, with the authors' defaults, plus:

    Args:
        tau: 1 (the default) copies the networks into the targets at each refresh, as TD7 does; a value below 1
            makes each refresh a Polyak step instead (only to compare with TD3's soft updates).
        target_update_interval: updates between two target refreshes (250): the actor, critic and fixed-encoder
            targets, the fixed encoder (from the trained encoder), the value bounds and LAP's largest priority.
        use_checkpoints: hold each policy for some episodes, keep the best by minimum return, and act with it in
            ``predict(deterministic=True)``. Needs one env, ``train_freq=(1, "episode")`` and ``gradient_steps=-1``.
            ``False`` trains as ``train_freq`` / ``gradient_steps`` say and predicts with the current actor.
        max_eps_when_checkpointing: episodes a policy is held for once checkpointing is fully on (20).
        steps_before_checkpointing: updates after which policies are held for ``max_eps_when_checkpointing``
            episodes instead of 1 (750 000).
        reset_weight: the checkpoint's minimum return is multiplied by it at that point (0.9).

    ``model.use_fused_update`` (on by default) makes each update with `rlkit_td3.td7.fused`'s steps, whose backward
    passes are written out, wherever they apply; off, every update is `_train_step`'s autograd update.

    Example:
        ```python
        from rlkit_td3 import TD7

        model = TD7(
            "MlpPolicy", "Pendulum-v1", learning_starts=1_000, buffer_size=10_000
        )
        model.learn(2_000)
        obs = model.get_env().reset()
        # deterministic: the checkpoint policy acts
        action, _ = model.predict(obs, deterministic=True)
        ```
    """

    policy_aliases = {"MlpPolicy": TD7Policy, "TD7Policy": TD7Policy}

    def __init__(
        self,
        policy: str | type[TD3Policy],
        env: gym.Env | VectorEnv | str | None,
        learning_rate: ScheduleLike = 3e-4,
        buffer_size: int = 1_000_000,
        learning_starts: int = 25_000,
        batch_size: int = 256,
        tau: float = 1.0,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = (1, "episode"),
        gradient_steps: int = -1,
        action_noise: ActionNoise | str | None = "default",
        replay_buffer_class: type[ReplayBuffer] | None = LAPReplayBuffer,
        replay_buffer_kwargs: dict[str, Any] | None = None,
        optimize_memory_usage: bool = False,
        *,
        policy_delay: int = 2,
        target_policy_noise: float = 0.2,
        target_noise_clip: float = 0.5,
        target_update_interval: int = 250,
        use_checkpoints: bool = True,
        max_eps_when_checkpointing: int = 20,
        steps_before_checkpointing: int = 750_000,
        reset_weight: float = 0.9,
        actor_learning_rate: ScheduleLike | None = None,
        critic_learning_rate: ScheduleLike | None = None,
        warmup_action_noise: bool = False,
        policy_kwargs: dict[str, Any] | None = None,
        tensorboard_log: str | os.PathLike[str] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: torch.device | str = "auto",
        _init_setup_model: bool = True,
    ) -> None:
        self.set_algorithm_settings(
            {
                "target_update_interval": target_update_interval,
                "use_checkpoints": use_checkpoints,
                "max_eps_when_checkpointing": max_eps_when_checkpointing,
                "steps_before_checkpointing": steps_before_checkpointing,
                "reset_weight": reset_weight,
            }
        )
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
            warmup_action_noise=warmup_action_noise,
            policy_kwargs=policy_kwargs,
            tensorboard_log=tensorboard_log,
            verbose=verbose,
            seed=seed,
            device=device,
            _init_setup_model=_init_setup_model,
        )

    # ------------------------------------------------------------------ settings and state
    def set_algorithm_settings(self, settings: dict[str, Any]) -> None:
        """Check and set TD7's own settings (`SETTINGS`): at construction and when a model file is loaded.

        Raises:
            TypeError / ValueError: naming the setting, its value and what is allowed.
        """
        if not isinstance(settings, dict) or set(settings) != set(SETTINGS):
            got = sorted(map(str, settings)) if isinstance(settings, dict) else type(settings).__name__
            raise ValueError(f"TD7's settings must be exactly {sorted(SETTINGS)}, got {got}")
        self.target_update_interval = _check_int("target_update_interval", settings["target_update_interval"], 1)
        if not isinstance(settings["use_checkpoints"], bool):
            raise TypeError(f"use_checkpoints must be a bool, got {settings['use_checkpoints']!r}")
        self.use_checkpoints = settings["use_checkpoints"]
        self.max_eps_when_checkpointing = _check_int(
            "max_eps_when_checkpointing", settings["max_eps_when_checkpointing"], 1
        )
        self.steps_before_checkpointing = _check_int(
            "steps_before_checkpointing", settings["steps_before_checkpointing"], 0, integral_float=True
        )
        self.reset_weight = _check_float("reset_weight", settings["reset_weight"], 0.0, 1.0)

    def algorithm_settings(self) -> dict[str, Any]:
        """TD7's own settings (`SETTINGS`), as JSON values: what a model file stores besides the base's."""
        return {name: getattr(self, name) for name in SETTINGS}

    def training_state_parts(self) -> dict[str, Any]:
        """TD7's training state components, saved with the model's training state under these names."""
        return {"value_bounds": self._value_bounds, "policy_checkpoints": self._checkpoints}

    def _setup_model(self) -> None:
        super()._setup_model()
        if not isinstance(self.policy, TD7Policy):
            raise TypeError(f"TD7 needs a TD7Policy (policy='MlpPolicy'), got {type(self.policy).__name__}")
        if self.use_checkpoints:
            if self.train_freq != (1, "episode") or self.gradient_steps != -1:
                raise ValueError(
                    'use_checkpoints=True trains after each episode: it needs train_freq=(1, "episode") and '
                    f"gradient_steps=-1, got train_freq={self.train_freq!r} and gradient_steps={self.gradient_steps!r}"
                )
            if self.n_envs != 1:
                raise ValueError(f"use_checkpoints=True needs one env (as the paper), got n_envs={self.n_envs}")
        self.policy.use_checkpoint = self.use_checkpoints
        self._value_bounds = ValueBounds()
        self._fused_updates = 0  # updates made by `rlkit_td3.td7.fused`'s steps since this model was built or loaded
        self._checkpoints = CheckpointSchedule(self.max_eps_when_checkpointing, self.reset_weight)

    def _update_learning_rate(self) -> None:
        super()._update_learning_rate()
        lr = self._critic_schedule(self._current_progress_remaining)
        for group in self.policy.encoder_optimizer.param_groups:
            group["lr"] = lr

    # ------------------------------------------------------------------ policy checkpoints
    def learn(
        self,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int | None = 4,
        tb_log_name: str | None = None,
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> TD7:
        """`OffPolicyAlgorithm.learn`; a call that restarts the episode count restarts the schedule's count of
        episodes seen with it."""
        if reset_num_timesteps is True:
            self._checkpoints.episodes_seen = 0
        return super().learn(total_timesteps, callback, log_interval, tb_log_name, reset_num_timesteps, progress_bar)

    def train(self, gradient_steps: int, batch_size: int | None = None) -> None:
        """Without checkpoints: ``gradient_steps`` updates (`OffPolicyAlgorithm.train`). With them, the base's
        loop calls this after each episode with its transitions: the schedule counts them and the episode, and
        trains the policy in one batch (every transition since its last training) when it is checkpointed or
        dropped (`CheckpointSchedule.end_episode`)."""
        if not self.use_checkpoints:
            super().train(gradient_steps, batch_size)
            return
        schedule = self._checkpoints
        schedule.timesteps += _check_int("gradient_steps", gradient_steps, 0)
        if self._episode_num == schedule.episodes_seen:  # the learn call ended mid-episode
            return
        schedule.episodes_seen = self._episode_num
        decision = schedule.end_episode(self._last_episode_return())
        if decision is None:
            return
        if decision == "checkpoint":
            policy = self.policy
            policy.checkpoint_actor.load_state_dict(policy.actor.state_dict())
            policy.checkpoint_encoder.load_state_dict(policy.fixed_encoder.state_dict())
        steps = schedule.timesteps
        # the authors switch to full checkpointing just before the update numbered steps_before_checkpointing
        before = self.steps_before_checkpointing - self._n_updates
        if 0 <= before < steps:
            super().train(before, batch_size)
            schedule.start_full_checkpointing()
            steps -= before
        super().train(steps, batch_size)
        schedule.reset()

    def _last_episode_return(self) -> float:
        stats = episode_statistics(self._venv)
        if stats is None or not stats.return_queue:
            raise RuntimeError("TD7's policy checkpoints need the env's episode statistics (the training env's)")
        return float(stats.return_queue[-1])

    # ------------------------------------------------------------------ the update
    def _train_step(self, batch: ReplayBufferSamples, update_actor: bool) -> None:  # type: ignore[override]
        """One TD7 update (the authors' ``Agent.train``): encoder, critics (clipped targets, LAP), priorities,
        the delayed actor, and every ``target_update_interval`` updates the target refresh. Where
        `rlkit_td3.td7.fused` applies, the same update with the backward passes written out (`_fused_train_step`)."""
        nets = fused.eligible(self, batch)
        if nets is not None:
            self._fused_train_step(nets, batch, update_actor)
            return
        policy = self.policy
        obs, actions, next_obs = batch.observations, batch.actions, batch.next_observations

        # SALE: g(f(s), a) learns to predict f(s').
        encoder_loss = policy.encoder.loss(obs, actions, next_obs)
        zero_grad(policy.encoder_optimizer)
        encoder_loss.backward()
        optimizer_step(policy.encoder_optimizer)

        target_q, zs, zsa = self._targets(batch)
        current_q = policy.critic(obs, actions, zs, zsa)
        if isinstance(batch, PrioritizedReplayBufferSamples):
            critic_loss = self.replay_buffer.critic_loss(batch, current_q, target_q)  # LAP: Huber, new priorities
        else:
            critic_loss = (current_q - target_q).pow(2).mean(dim=1).sum()
        zero_grad(policy.critic_optimizer)
        critic_loss.backward()
        optimizer_step(policy.critic_optimizer)
        self._critic_loss_sum += critic_loss.detach()
        self._n_critic_losses += 1

        if update_actor:
            # ascend the mean of every critic's value of pi(s) (the authors' actor loss); the critic's weights are
            # constants here: autograd computes no gradient for them (the authors' code computes and discards them)
            frozen = [param for param in policy.critic.parameters() if param.requires_grad]
            for param in frozen:
                param.requires_grad_(False)
            try:
                pi = policy.actor(obs, zs)
                actor_loss = -policy.critic(obs, pi, zs, policy.fixed_encoder.zsa(zs, pi)).mean()
                zero_grad(policy.actor_optimizer)
                actor_loss.backward()
            finally:
                for param in frozen:
                    param.requires_grad_(True)
            optimizer_step(policy.actor_optimizer)
            self._actor_loss_sum += actor_loss.detach()
            self._n_actor_losses += 1
        self._after_update()

    def _fused_train_step(self, nets: Any, batch: ReplayBufferSamples, update_actor: bool) -> None:
        """`_train_step` with `rlkit_td3.td7.fused`'s steps: the same losses, gradients written out."""
        policy = self.policy
        obs = batch.observations
        self._fused_updates += 1
        with torch.no_grad():
            fused.encoder_step(nets, policy, obs, batch.actions, batch.next_observations)
            target_q, zs, zsa = self._targets(batch)
            self._critic_loss_sum += fused.critic_step(nets, self, batch, zs, zsa, target_q)
            self._n_critic_losses += 1
            if update_actor:
                self._actor_loss_sum += fused.actor_step(nets, policy, obs, zs)
                self._n_actor_losses += 1
        self._after_update()

    def _targets(self, batch: ReplayBufferSamples) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The critics' clipped targets (the value bounds observe them) and the fixed encoder's ``z_s``, ``z_sa``
        of the batch, without gradient."""
        policy = self.policy
        obs, actions, next_obs = batch.observations, batch.actions, batch.next_observations
        with torch.no_grad():
            target_zs = policy.fixed_encoder_target.zs(next_obs)
            next_actions = policy.actor_target(next_obs, target_zs)
            if self.target_policy_noise > 0.0:
                noise = torch.randn(
                    next_actions.shape,
                    generator=self._smoothing_rng,
                    device=next_actions.device,
                    dtype=next_actions.dtype,
                ).mul_(self.target_policy_noise)
                noise = noise.clamp(-self.target_noise_clip, self.target_noise_clip)
                next_actions = (next_actions + noise).clamp(-1.0, 1.0)
            target_zsa = policy.fixed_encoder_target.zsa(target_zs, next_actions)
            next_q = policy.critic_target(next_obs, next_actions, target_zs, target_zsa).min(dim=0).values
            bounds = self._value_bounds
            next_q = next_q.clamp(bounds.low_target, bounds.high_target)  # clipped value targets
            discount = getattr(batch, "discounts", self.gamma)
            target_q = batch.rewards + discount * (1.0 - batch.terminated) * next_q
            low_high = torch.stack([target_q.min(), target_q.max()]).tolist()
            bounds.observe(low_high[0], low_high[1])
            zs = policy.fixed_encoder.zs(obs)
            zsa = policy.fixed_encoder.zsa(zs, actions)
        return target_q, zs, zsa

    def _after_update(self) -> None:
        """Every ``target_update_interval`` updates the target refresh; the encoder optimizer's moment flush."""
        if self._n_updates % self.target_update_interval == 0:
            self._refresh_targets()
        if self._n_updates % MOMENT_FLUSH_EVERY == 0:
            flush_tiny_moments(self.policy.encoder_optimizer)

    def _refresh_targets(self) -> None:
        """Targets ← networks (hard copies with ``tau=1``), fixed encoder target ← fixed encoder ← encoder, value
        bounds and LAP's largest priority refreshed."""
        policy = self.policy
        with torch.no_grad():
            for target, source in (
                (policy.actor_target, policy.actor),
                (policy.critic_target, policy.critic),
                (policy.fixed_encoder_target, policy.fixed_encoder),
                (policy.fixed_encoder, policy.encoder),
            ):
                target_params, source_params = list(target.parameters()), list(source.parameters())
                if self.tau == 1.0:
                    torch._foreach_copy_(target_params, source_params)
                else:
                    torch._foreach_lerp_(target_params, source_params, self.tau)
        if isinstance(self.replay_buffer, PrioritizedReplayBuffer):
            self.replay_buffer.reset_max_priority()
        self._value_bounds.refresh()

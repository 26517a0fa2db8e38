"""`TD7Policy`: the networks of TD7 (Fujimoto et al. 2023): SALE encoders, actor, critics, their copies.

A `TD3Policy` whose networks are built by its `_build_networks` hook from `rlkit_td3.policies.sale`:

* ``encoder``: the `SALEEncoder` being trained; ``fixed_encoder``: its copy from the last target refresh, whose
  embeddings the actor and the critics read; ``fixed_encoder_target``: the copy before that, read by the targets;
* ``actor`` / ``actor_target``, ``critic`` / ``critic_target`` (`SALEActor`, `SALECritic`);
* ``checkpoint_actor`` / ``checkpoint_encoder``: the policy kept by TD7's policy checkpoints, which
  ``predict(deterministic=True)`` and `export()` use (`evaluation_actor`) while ``use_checkpoint`` is on.

Everything else (action scaling, observation handling, the state checks of a model file) is `TD3Policy`'s.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from rlkit_td3.checks.arguments import check_bool
from rlkit_td3.fileio.serialization import ModelFileError
from rlkit_td3.policies.networks import parse_net_arch
from rlkit_td3.policies.registry import POLICY_ALIASES
from rlkit_td3.policies.sale import SALEActor, SALECritic, SALEEncoder, check_sale_saved_state
from rlkit_td3.policies.td3_policy import TD3Policy
from rlkit_td3.preprocessing import is_image_space

MAX_EMBEDDING_DIM = 8192
"""Largest ``embedding_dim`` a TD7 policy accepts (a model file cannot declare a larger one)."""

TD7_DEFAULT_NET_ARCH = [256, 256]
"""Hidden sizes of TD7's actor, critics and encoders (``Hyperparameters`` in the authors' TD7.py)."""


class TD7Policy(TD3Policy):
    """TD7's networks and optimizers (``MlpPolicy`` of `rlkit_td3.TD7`).

    Args:
        observation_space: a flat (non-image) Box observation space.
        action_space: Box action space with finite bounds.
        net_arch: hidden sizes of the actor and critics (a list, or ``{"pi": [...], "qf": [...]}``); the raw
            input's AvgL1Norm-ed embedding has as many units as the first hidden layer. Default ``[256, 256]``.
        activation_fn: activation of the critics and encoders (default ELU; the actor uses ReLU, as the paper).
        n_critics: number of Q-networks (2).
        optimizer_class: optimizer of the actor, critics and encoder (Adam).
        optimizer_kwargs: extra optimizer arguments.
        actor_learning_rate: initial learning rate of the actor.
        critic_learning_rate: initial learning rate of the critics and of the encoder.
        embedding_dim: size of the SALE embeddings ``z_s`` and ``z_sa`` (256).
        encoder_net_arch: hidden sizes of the two SALE encoders (``[256, 256]``).
        normalize_obs: as in `TD3Policy` (off in the paper).
        use_checkpoint: ``predict(deterministic=True)`` and `export()` act with the checkpoint policy (TD7 sets
            it from its ``use_checkpoints``; a policy file stores it).
    """

    optimizer_names = ("actor_optimizer", "critic_optimizer", "encoder_optimizer")
    json_kwargs = ("embedding_dim", "encoder_net_arch")

    def __init__(
        self,
        observation_space: spaces.Box,
        action_space: spaces.Box,
        net_arch: list[int] | dict[str, list[int]] | None = None,
        activation_fn: type[nn.Module] = nn.ELU,
        n_critics: int = 2,
        optimizer_class: type[torch.optim.Optimizer] = torch.optim.Adam,
        optimizer_kwargs: dict[str, Any] | None = None,
        actor_learning_rate: float = 3e-4,
        critic_learning_rate: float = 3e-4,
        embedding_dim: int = 256,
        encoder_net_arch: list[int] | None = None,
        normalize_obs: bool = False,
        use_checkpoint: bool = True,
    ) -> None:
        if not isinstance(observation_space, spaces.Box) or is_image_space(observation_space):
            raise TypeError(f"TD7Policy needs a Box observation space that is not an image, got {observation_space!r}")
        if isinstance(embedding_dim, bool) or not isinstance(embedding_dim, (int, np.integer)):
            raise TypeError(f"embedding_dim must be an int, got {embedding_dim!r}")
        if not 1 <= embedding_dim <= MAX_EMBEDDING_DIM:
            raise ValueError(f"embedding_dim must be in [1, {MAX_EMBEDDING_DIM}], got {embedding_dim!r}")
        if isinstance(n_critics, bool) or not isinstance(n_critics, (int, np.integer)) or n_critics < 1:
            raise ValueError(f"n_critics must be a positive int, got {n_critics!r}")
        self.embedding_dim = int(embedding_dim)
        encoder_arch, _ = parse_net_arch(list(TD7_DEFAULT_NET_ARCH) if encoder_net_arch is None else encoder_net_arch)
        if not encoder_arch:
            raise ValueError("encoder_net_arch must hold at least one hidden size, got []")
        self.encoder_net_arch = encoder_arch
        pi, qf = parse_net_arch(list(TD7_DEFAULT_NET_ARCH) if net_arch is None else net_arch)
        if not pi or not qf:
            raise ValueError(
                f"net_arch must give at least one hidden size to the actor and the critics, got {net_arch!r}"
            )
        self.use_checkpoint = check_bool("use_checkpoint", use_checkpoint)
        super().__init__(
            observation_space,
            action_space,
            list(TD7_DEFAULT_NET_ARCH) if net_arch is None else net_arch,
            activation_fn,
            n_critics,
            optimizer_class,
            optimizer_kwargs,
            actor_learning_rate,
            critic_learning_rate,
            normalize_obs=normalize_obs,
        )

    def _build_networks(
        self, pi_arch: list[int], qf_arch: list[int], activation_fn: type[nn.Module], n_critics: int
    ) -> None:
        obs_dim = int(np.prod(self.observation_space.shape))
        action_dim = int(np.prod(self.action_space.shape))
        emb = self.embedding_dim
        self.encoder = SALEEncoder(obs_dim, action_dim, emb, self.encoder_net_arch, activation_fn)
        self.actor = SALEActor(obs_dim, action_dim, emb, pi_arch, nn.ReLU)
        self.critic = SALECritic(obs_dim, action_dim, emb, qf_arch, activation_fn, int(n_critics))
        self.n_critics = self.critic.n_critics
        self.fixed_encoder = copy.deepcopy(self.encoder)
        self.fixed_encoder_target = copy.deepcopy(self.encoder)
        self.actor_target = copy.deepcopy(self.actor)
        self.critic_target = copy.deepcopy(self.critic)
        self.checkpoint_actor = copy.deepcopy(self.actor)
        self.checkpoint_encoder = copy.deepcopy(self.encoder)
        for net, encoder in (
            (self.actor, self.fixed_encoder),
            (self.critic, self.fixed_encoder),
            (self.actor_target, self.fixed_encoder_target),
            (self.critic_target, self.fixed_encoder_target),
            (self.checkpoint_actor, self.checkpoint_encoder),
        ):
            net.link(encoder)
        for copy_ in self.copies():
            copy_.requires_grad_(False)
            copy_.train(False)

    def copies(self) -> tuple[nn.Module, ...]:
        """The networks that are copies (never trained by a gradient): targets, fixed encoders, checkpoint."""
        return (
            self.actor_target,
            self.critic_target,
            self.fixed_encoder,
            self.fixed_encoder_target,
            self.checkpoint_actor,
            self.checkpoint_encoder,
        )

    def _build_optimizers(self, actor_learning_rate: float, critic_learning_rate: float) -> None:
        super()._build_optimizers(actor_learning_rate, critic_learning_rate)
        self.encoder_optimizer = self._make_optimizer(self.encoder.parameters(), critic_learning_rate)

    def set_training_mode(self, mode: bool) -> None:
        """Training (``True``) or evaluation mode for the actor, the critics and the encoder (copies stay in
        evaluation mode)."""
        super().set_training_mode(mode)
        self.encoder.train(mode)

    def evaluation_actor(self) -> nn.Module:
        """The checkpoint actor (reading the checkpoint encoder) while ``use_checkpoint`` is on (TD7 evaluates the
        checkpoint, not the policy being trained), else the actor: what ``predict(deterministic=True)`` and
        `export()` act with."""
        return self.checkpoint_actor if self.use_checkpoint else self.actor

    def constructor_kwargs(self) -> dict[str, Any]:
        """`TD3Policy.constructor_kwargs` plus ``embedding_dim``, ``encoder_net_arch`` and ``use_checkpoint`` (which
        a policy file stores and a model file does not: TD7 sets it from ``use_checkpoints``)."""
        kwargs = super().constructor_kwargs()
        kwargs["embedding_dim"] = self.embedding_dim
        kwargs["encoder_net_arch"] = list(self.encoder_net_arch)
        kwargs["use_checkpoint"] = self.use_checkpoint
        return kwargs

    sale_groups = {
        "encoder": ("encoder", "fixed_encoder", "fixed_encoder_target", "checkpoint_encoder"),
        "actor": ("actor", "actor_target", "checkpoint_actor"),
        "critic": ("critic", "critic_target"),
    }

    @classmethod
    def check_saved_state(
        cls,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        policy_kwargs: dict[str, Any],
        state: Any,
        model_file: bool = True,
        only: tuple[str, ...] | None = None,
    ) -> None:
        """Refuse a saved state dict (of a model or a policy file) whose tensors are not exactly those of the SALE
        networks, targets, fixed encoders and checkpoint ``policy_kwargs`` declare, before building them."""
        sale = {
            "embedding_dim": policy_kwargs.get("embedding_dim", 256),
            "net_arch": policy_kwargs.get("encoder_net_arch", list(TD7_DEFAULT_NET_ARCH)),
        }
        emb = sale["embedding_dim"]
        if isinstance(emb, bool) or not isinstance(emb, int) or not 1 <= emb <= MAX_EMBEDDING_DIM:
            raise ModelFileError(f"embedding_dim must be in [1, {MAX_EMBEDDING_DIM}], got {emb!r}")
        arch = sale["net_arch"]
        if not isinstance(arch, list) or not arch or any(type(n) is not int or n < 1 for n in arch):
            raise ModelFileError(f"encoder_net_arch must be a non-empty list of positive ints, got {arch!r}")
        kwargs = {
            **policy_kwargs,
            "net_arch": policy_kwargs.get("net_arch", list(TD7_DEFAULT_NET_ARCH)),
            "representation": "sale",
            "representation_kwargs": sale,
        }
        check_sale_saved_state(observation_space, action_space, kwargs, state, cls.sale_groups, only)


POLICY_ALIASES["TD7Policy"] = TD7Policy

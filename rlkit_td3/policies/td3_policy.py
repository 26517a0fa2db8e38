"""The deterministic actor-critic policy used by TD3 and DDPG.

:class:`TD3Policy` holds every network training needs (actor, critic ensemble and their target
copies) and the two optimizers, as in Stable-Baselines3, where a "policy" is the whole learner.

* The actor maps an observation to ``tanh(...)`` in [-1, 1] per action dimension; :meth:`unscale_action`
  maps that to the env's bounds, per dimension, so asymmetric bounds work.
* The critics are one :class:`CriticEnsemble`: the ``n_critics`` Q-networks are stacked along a leading
  tensor dimension, so every layer of all critics is one batched matmul.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

DEFAULT_NET_ARCH = [400, 300]
"""Hidden sizes of actor and critics: the TD3 paper's 400-300 (Fujimoto et al. 2018, also SB3's default)."""


def python_scalars(value: Any) -> Any:
    """``value`` with every NumPy scalar replaced by the equal Python number, inside lists, tuples and dicts too.

    Settings may be given as NumPy scalars (``np.float32(1e-3)``, ``np.int64(64)``) wherever a Python number is
    accepted; this keeps what a model stores JSON-serialisable.
    """
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list):
        return [python_scalars(v) for v in value]
    if isinstance(value, tuple):
        return tuple(python_scalars(v) for v in value)
    if isinstance(value, dict):
        return {k: python_scalars(v) for k, v in value.items()}
    return value


def parse_net_arch(net_arch: Any) -> tuple[list[int], list[int]]:
    """Split ``net_arch`` into (actor sizes, critic sizes).

    Accepts a list of positive ints (the same for both) or a dict ``{"pi": [...], "qf": [...]}``.

    Raises:
        TypeError / ValueError: naming ``net_arch`` and what is allowed.
    """

    def sizes(value: Any, where: str) -> list[int]:
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"{where} must be a list of positive ints, got {value!r}")
        for size in value:
            if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size <= 0:
                raise ValueError(f"{where} must be a list of positive ints, got {value!r}")
        return [int(s) for s in value]

    if isinstance(net_arch, dict):
        if set(net_arch) != {"pi", "qf"}:
            raise ValueError(f"net_arch as a dict must have exactly the keys 'pi' and 'qf', got {sorted(net_arch)}")
        return sizes(net_arch["pi"], "net_arch['pi']"), sizes(net_arch["qf"], "net_arch['qf']")
    arch = sizes(net_arch, "net_arch")
    return arch, list(arch)


def _mlp(in_dim: int, hidden: Sequence[int], out_dim: int, activation_fn: type[nn.Module]) -> list[nn.Module]:
    layers: list[nn.Module] = []
    for size in hidden:
        layers += [nn.Linear(in_dim, size), activation_fn()]
        in_dim = size
    layers.append(nn.Linear(in_dim, out_dim))
    return layers


class Actor(nn.Module):
    """Deterministic actor: flattened observation → MLP → tanh, in normalised action units."""

    def __init__(self, obs_dim: int, action_dim: int, net_arch: Sequence[int], activation_fn: type[nn.Module]):
        super().__init__()
        self.mu = nn.Sequential(*_mlp(obs_dim, net_arch, action_dim, activation_fn), nn.Tanh())

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.mu(obs.reshape(obs.shape[0], -1))  # scalar observations (shape ()) give one column


class CriticEnsemble(nn.Module):
    """``n_critics`` independent Q(s, a) MLPs evaluated together.

    Layer ``i`` of all critics is one weight tensor of shape ``(n_critics, in, out)``; a forward pass is
    one batched matmul per layer. Each critic is initialised like ``nn.Linear`` (uniform in
    ±1/sqrt(fan_in) for weights and biases) from the global torch generator, critic by critic.
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        net_arch: Sequence[int],
        activation_fn: type[nn.Module],
        n_critics: int = 2,
    ):
        super().__init__()
        if isinstance(n_critics, (bool, np.bool_)) or not isinstance(n_critics, (int, np.integer)) or n_critics < 1:
            raise ValueError(f"n_critics must be a positive int, got {n_critics!r}")
        n_critics = int(n_critics)
        self.n_critics = n_critics
        sizes = [obs_dim + action_dim, *net_arch, 1]
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            self.weights.append(nn.Parameter(torch.empty(n_critics, fan_in, fan_out)))
            self.biases.append(nn.Parameter(torch.empty(n_critics, 1, fan_out)))
        self.activation = activation_fn()
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw fresh weights, matching ``nn.Linear``'s default initialisation per critic."""
        with torch.no_grad():
            for weight, bias in zip(self.weights, self.biases):
                bound = 1.0 / math.sqrt(weight.shape[1])
                weight.uniform_(-bound, bound)
                bias.uniform_(-bound, bound)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Q-values of every critic, shape ``(n_critics, batch)``."""
        x = torch.cat([obs.reshape(obs.shape[0], -1), action], dim=1).expand(self.n_critics, -1, -1)
        last = len(self.weights) - 1
        for i, (weight, bias) in enumerate(zip(self.weights, self.biases)):
            x = torch.baddbmm(bias, x, weight)
            if i < last:
                x = self.activation(x)
        return x.squeeze(-1)

    def q1_forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Q-value of the first critic only, shape ``(batch,)``, with its parameters detached.

        Used by the actor step: gradients flow to the action (and so to the actor) but no gradient is
        computed for any critic parameter.
        """
        x = torch.cat([obs.reshape(obs.shape[0], -1), action], dim=1)
        last = len(self.weights) - 1
        for i, (weight, bias) in enumerate(zip(self.weights, self.biases)):
            x = torch.addmm(bias[0].detach(), x, weight[0].detach())
            if i < last:
                x = self.activation(x)
        return x.squeeze(-1)


class TD3Policy(nn.Module):
    """Actor, critics, their targets and optimizers for TD3 / DDPG (``MlpPolicy``).

    Args:
        observation_space: Box observation space (flattened for the MLPs).
        action_space: Box action space with finite bounds.
        net_arch: hidden sizes, a list (actor and critics alike) or ``{"pi": [...], "qf": [...]}``.
        activation_fn: activation class between hidden layers.
        n_critics: number of Q-networks (TD3: 2, DDPG: 1).
        optimizer_class: optimizer for actor and critics.
        optimizer_kwargs: extra optimizer arguments. For Adam and AdamW the fused implementation is used
            unless ``fused`` or ``foreach`` is given here.
        actor_learning_rate: initial learning rate of the actor optimizer.
        critic_learning_rate: initial learning rate of the critic optimizer.
    """

    def __init__(
        self,
        observation_space: spaces.Box,
        action_space: spaces.Box,
        net_arch: list[int] | dict[str, list[int]] | None = None,
        activation_fn: type[nn.Module] = nn.ReLU,
        n_critics: int = 2,
        optimizer_class: type[torch.optim.Optimizer] = torch.optim.Adam,
        optimizer_kwargs: dict[str, Any] | None = None,
        actor_learning_rate: float = 1e-3,
        critic_learning_rate: float = 1e-3,
    ):
        super().__init__()
        if not isinstance(action_space, spaces.Box):
            raise TypeError(f"action_space must be a gymnasium.spaces.Box, got {action_space!r}")
        if not isinstance(observation_space, spaces.Box):
            raise TypeError(
                f"observation_space must be a gymnasium.spaces.Box for MlpPolicy, got {observation_space!r}"
            )
        if not (isinstance(activation_fn, type) and issubclass(activation_fn, nn.Module)):
            raise TypeError(f"activation_fn must be an nn.Module class such as nn.ReLU, got {activation_fn!r}")
        if not (isinstance(optimizer_class, type) and issubclass(optimizer_class, torch.optim.Optimizer)):
            raise TypeError(f"optimizer_class must be a torch.optim.Optimizer class, got {optimizer_class!r}")
        self.observation_space = observation_space
        self.action_space = action_space
        pi_arch, qf_arch = parse_net_arch(net_arch if net_arch is not None else DEFAULT_NET_ARCH)
        # stored with Python ints (NumPy ints may be passed), in the form given: a list or a dict
        self.net_arch: list[int] | dict[str, list[int]] = (
            {"pi": pi_arch, "qf": qf_arch} if isinstance(net_arch, dict) else pi_arch
        )
        self.activation_fn = activation_fn
        self.optimizer_class = optimizer_class
        if optimizer_kwargs is not None and not isinstance(optimizer_kwargs, dict):
            raise TypeError(f"optimizer_kwargs must be a dict, got {optimizer_kwargs!r}")
        self.optimizer_kwargs = python_scalars(dict(optimizer_kwargs or {}))
        if "lr" in self.optimizer_kwargs:
            raise ValueError(
                f"optimizer_kwargs must not contain 'lr' (got lr={self.optimizer_kwargs['lr']!r}): the learning rate "
                "is set by learning_rate, actor_learning_rate and critic_learning_rate"
            )

        obs_dim = int(np.prod(observation_space.shape))
        action_dim = int(np.prod(action_space.shape))
        self.actor = Actor(obs_dim, action_dim, pi_arch, activation_fn)
        self.actor_target = copy.deepcopy(self.actor)
        self.critic = CriticEnsemble(obs_dim, action_dim, qf_arch, activation_fn, n_critics)
        self.n_critics = self.critic.n_critics
        self.critic_target = copy.deepcopy(self.critic)
        for target in (self.actor_target, self.critic_target):
            target.requires_grad_(False)

        low = torch.as_tensor(action_space.low, dtype=torch.float32).flatten()
        high = torch.as_tensor(action_space.high, dtype=torch.float32).flatten()
        self.register_buffer("action_low", low, persistent=False)
        self.register_buffer("action_high", high, persistent=False)
        with np.errstate(over="ignore"):
            span = action_space.high - action_space.low
        # Bounds so wide that ``high - low`` overflows the space's dtype (e.g. +-3e38 in float32) are scaled
        # through the midpoint and half-width in float64, which cannot overflow; other bounds keep the plain
        # formula (bit for bit what it always gave).
        self._wide_bounds = not bool(np.all(np.isfinite(span)))
        low64, high64 = action_space.low.astype(np.float64), action_space.high.astype(np.float64)
        self._mid64, self._half64 = 0.5 * low64 + 0.5 * high64, 0.5 * high64 - 0.5 * low64

        self.actor_optimizer = self._make_optimizer(self.actor.parameters(), actor_learning_rate)
        self.critic_optimizer = self._make_optimizer(self.critic.parameters(), critic_learning_rate)

    def _make_optimizer(self, params: Any, lr: float) -> torch.optim.Optimizer:
        kwargs = dict(self.optimizer_kwargs)
        if self.optimizer_class in (torch.optim.Adam, torch.optim.AdamW) and not {"fused", "foreach"} & set(kwargs):
            kwargs["fused"] = True
        return self.optimizer_class(params, lr=lr, **kwargs)

    # ------------------------------------------------------------------ action scaling
    def scale_action(self, action: np.ndarray) -> np.ndarray:
        """Env units → normalised [-1, 1] units, per dimension."""
        low, high = self.action_space.low, self.action_space.high
        if self._wide_bounds:
            return ((np.asarray(action, dtype=np.float64) - self._mid64) / self._half64).astype(np.float32)
        return (2.0 * (action - low) / (high - low) - 1.0).astype(np.float32)

    def unscale_action(self, scaled: np.ndarray) -> np.ndarray:
        """Normalised [-1, 1] units → env units, per dimension (asymmetric bounds included)."""
        low, high = self.action_space.low, self.action_space.high
        if self._wide_bounds:
            env_action = (self._mid64 + np.asarray(scaled, dtype=np.float64) * self._half64).astype(low.dtype)
            return np.clip(env_action, low, high)  # the float64 → dtype rounding may step just outside
        return (low + 0.5 * (scaled + 1.0) * (high - low)).astype(self.action_space.dtype)

    # ------------------------------------------------------------------ acting
    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Deterministic action in normalised units."""
        return self.actor(obs)

    @torch.no_grad()
    def actor_numpy(self, obs: np.ndarray) -> np.ndarray:
        """Normalised actions for a batch of observations given as NumPy, returned as NumPy."""
        device = self.action_low.device
        obs_t = torch.as_tensor(obs, dtype=torch.float32, device=device)
        return self.actor(obs_t).cpu().numpy()

    def constructor_kwargs(self) -> dict[str, Any]:
        """The keyword arguments that rebuild this policy (learning rates aside)."""
        return {
            "net_arch": copy.deepcopy(self.net_arch),
            "activation_fn": self.activation_fn,
            "n_critics": self.n_critics,
            "optimizer_class": self.optimizer_class,
            "optimizer_kwargs": dict(self.optimizer_kwargs),
        }

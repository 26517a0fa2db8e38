"""The networks of a `TD3Policy`: the actor, the critic ensemble (every critic's layer one batched matmul) and the
observation preprocessing in front of them; ``net_arch`` parsing.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from rlkit_td3.checks.arguments import check_bool
from rlkit_td3.policies.registry import POLICY_ALIASES
from rlkit_td3.preprocessing import is_image_space, preprocess_obs

DEFAULT_NET_ARCH = [400, 300]
"""Hidden sizes of actor and critics: the TD3 paper's 400-300 (Fujimoto et al. 2018, also SB3's default)."""


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


class ScaleImages(nn.Module):
    """Preprocessing of a `Box` observation batch before the features extractor: integer batches are cast to
    float32 (and divided by 255 for images when the policy normalises them); floating batches pass unchanged
    (TorchScript-compatible, no parameters)."""

    __constants__ = ["scale"]

    def __init__(self, scale: bool = False):
        super().__init__()
        self.scale = scale

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        if self.scale:
            return obs.float() / 255.0
        # Floating batches keep their dtype, so a policy cast with ``.double()`` runs in float64 end to end.
        return obs if obs.is_floating_point() else obs.float()


class PreprocessDict(nn.Module):
    """Preprocessing of a `Dict` observation batch (`rlkit_td3.preprocessing.preprocess_obs`, key by key), or of
    a Discrete / MultiDiscrete (one-hot) or MultiBinary (cast to float) one."""

    def __init__(self, observation_space: spaces.Space, normalize_images: bool = True):
        super().__init__()
        self.observation_space = observation_space
        self.normalize_images = normalize_images

    def forward(self, obs: Any) -> Any:
        return preprocess_obs(obs, self.observation_space, self.normalize_images)


def make_preprocessor(observation_space: spaces.Space, normalize_images: bool = True) -> nn.Module:
    """The parameter-free module that turns a batch of raw observations into what features extractors take."""
    if not isinstance(observation_space, spaces.Box):
        return PreprocessDict(observation_space, normalize_images)
    return ScaleImages(bool(normalize_images and is_image_space(observation_space)))


class _FlattenBatch(nn.Module):
    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.reshape(obs.shape[0], -1)  # scalar observations (shape ()) give one column


class Actor(nn.Module):
    """Deterministic actor: observation → preprocessing → features extractor → MLP → tanh, in normalised
    action units.

    Args:
        obs_dim: the extractor's ``features_dim`` (the flattened observation size for the default flatten).
        action_dim: the flattened action size.
        net_arch: hidden sizes of the MLP.
        activation_fn: activation class between hidden layers.
        features_extractor: the extractor (a flatten when None).
        preprocess: the observation preprocessing module (a cast to float when None), see `make_preprocessor`.
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        net_arch: Sequence[int],
        activation_fn: type[nn.Module],
        features_extractor: nn.Module | None = None,
        preprocess: nn.Module | None = None,
    ):
        super().__init__()
        self.preprocess = preprocess if preprocess is not None else ScaleImages(False)
        self.features_extractor = features_extractor if features_extractor is not None else _FlattenBatch()
        self.mu = nn.Sequential(*_mlp(obs_dim, net_arch, action_dim, activation_fn), nn.Tanh())

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.mu(self.features_extractor(self.preprocess(obs)))

    # SB3's actor is a policy of its own: predict, save and load act through the policy that built this actor
    def _owner(self) -> Any:
        owner = self.__dict__.get("_policy")
        if owner is None:
            raise RuntimeError("this Actor belongs to no policy (built on its own): use a TD3Policy's actor")
        return owner

    def predict(
        self, observation: Any, state: Any = None, episode_start: Any = None, deterministic: bool = False
    ) -> tuple[np.ndarray, Any]:
        """Actions in env units from this actor, as SB3's ``actor.predict``: the policy's observation handling
        (one observation or a batch, ``normalize_obs``) and action unscaling around this network. The actor is
        deterministic whatever ``deterministic`` is; ``state`` is returned unchanged.

        Raises:
            ValueError: the observation's shape matches neither one observation nor a batch.
        """
        check_bool("deterministic", deterministic)
        policy = self._owner()
        self.train(False)
        obs, vectorized = policy.obs_to_tensor(observation)
        with torch.no_grad():
            scaled = self(policy.normalize_observations(obs)).cpu().numpy()
        actions = policy.unscale_action(scaled.reshape(len(scaled), *policy.action_space.shape))
        return (actions if vectorized else actions[0]), state

    def save(self, path: str | os.PathLike[str]) -> None:
        """Save this actor with its policy's spaces and settings (``metadata.json`` and ``policy.pth`` holding the
        actor's tensors and, with ``normalize_obs``, the observation statistics; no pickle), atomically; `load()`
        reads it back. The policy's own actor is saved, as SB3's ``actor.save``."""
        self._owner()._write_actor_file(path, self)

    @classmethod
    def load(cls, path: str | os.PathLike[str], device: torch.device | str = "auto") -> Actor:
        """An actor saved by `save()`, checked as a policy file is (``TD3Policy.load_actor``): its ``predict``
        gives the saved actor's actions."""
        return POLICY_ALIASES["MlpPolicy"].load_actor(path, device)


class CriticEnsemble(nn.Module):
    """``n_critics`` independent Q(s, a) MLPs evaluated together.

    Layer ``i`` of all critics is one weight tensor of shape ``(n_critics, in, out)``; a forward pass is
    one batched matmul per layer. Each critic is initialised like ``nn.Linear`` (uniform in
    ±1/sqrt(fan_in) for weights and biases) from the global torch generator, critic by critic.

    With ``layer_norm`` every hidden layer is followed by a LayerNorm (before the activation) with its own
    gain and bias per critic, tensors of shape ``(n_critics, 1, width)`` initialised to ones and zeros.
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        net_arch: Sequence[int],
        activation_fn: type[nn.Module],
        n_critics: int = 2,
        features_extractor: nn.Module | None = None,
        preprocess: nn.Module | None = None,
        shared_features_extractor: nn.Module | None = None,
        layer_norm: bool = False,
    ):
        super().__init__()
        self.preprocess = preprocess if preprocess is not None else ScaleImages(False)
        if shared_features_extractor is not None:
            # The actor's extractor, not registered here: it is neither in the critic's parameters (so the critic
            # optimizer and the critic loss never move it) nor in its state dict (the actor's holds it). It is also
            # the critic's ``features_extractor`` attribute, the very object, as in SB3.
            object.__setattr__(self, "features_extractor", shared_features_extractor)
            object.__setattr__(self, "shared_features_extractor", shared_features_extractor)
        else:
            self.features_extractor = features_extractor if features_extractor is not None else _FlattenBatch()
            object.__setattr__(self, "shared_features_extractor", None)
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
        self.layer_norm = bool(layer_norm)
        if self.layer_norm:  # after the weights: their initial values are drawn exactly as without LayerNorm
            self.norm_weights = nn.ParameterList(nn.Parameter(torch.ones(n_critics, 1, w)) for w in net_arch)
            self.norm_biases = nn.ParameterList(nn.Parameter(torch.zeros(n_critics, 1, w)) for w in net_arch)

    def _normalize(self, x: torch.Tensor, i: int, critic: int | None = None) -> torch.Tensor:
        """LayerNorm of hidden layer ``i`` (all critics, or one, detached), when enabled."""
        if not self.layer_norm:
            return x
        x = nn.functional.layer_norm(x, x.shape[-1:])
        if critic is None:
            return torch.addcmul(self.norm_biases[i], x, self.norm_weights[i])
        return torch.addcmul(self.norm_biases[i][critic].detach(), x, self.norm_weights[i][critic].detach())

    def reset_parameters(self) -> None:
        """Draw fresh weights, matching ``nn.Linear``'s default initialisation per critic."""
        with torch.no_grad():
            for weight, bias in zip(self.weights, self.biases):
                bound = 1.0 / math.sqrt(weight.shape[1])
                weight.uniform_(-bound, bound)
                bias.uniform_(-bound, bound)

    def extract_features(self, obs: Any, grad: bool = True) -> torch.Tensor:
        """Features of a batch of observations; no gradient reaches a shared extractor (SB3's rule: only the
        actor loss trains it), nor any extractor when ``grad`` is False."""
        if self.shared_features_extractor is not None:
            with torch.no_grad():
                return self.shared_features_extractor(self.preprocess(obs))
        if grad:
            return self.features_extractor(self.preprocess(obs))
        with torch.no_grad():
            return self.features_extractor(self.preprocess(obs))

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Q-values of every critic, shape ``(n_critics, batch)``."""
        x = torch.cat([self.extract_features(obs), action], dim=1).expand(self.n_critics, -1, -1)
        last = len(self.weights) - 1
        for i, (weight, bias) in enumerate(zip(self.weights, self.biases)):
            x = torch.baddbmm(bias, x, weight)
            if i < last:
                x = self.activation(self._normalize(x, i))
        return x.squeeze(-1)

    def q1_forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Q-value of the first critic only, shape ``(batch,)``, with its parameters detached.

        Used by the actor step: gradients flow to the action (and so to the actor) but no gradient is
        computed for any critic parameter.
        """
        x = torch.cat([self.extract_features(obs, grad=False), action], dim=1)
        last = len(self.weights) - 1
        for i, (weight, bias) in enumerate(zip(self.weights, self.biases)):
            x = torch.addmm(bias[0].detach(), x, weight[0].detach())
            if i < last:
                x = self.activation(self._normalize(x, i, critic=0))
        return x.squeeze(-1)

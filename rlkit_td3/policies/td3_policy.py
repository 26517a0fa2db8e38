"""The deterministic actor-critic policy used by TD3 and DDPG.

`TD3Policy` holds every network training needs (actor, critic ensemble and their target
copies) and the two optimizers, as in Stable-Baselines3, where a "policy" is the whole learner.

The networks are in `rlkit_td3.policies.networks` (importable from here too), the shapes of their tensors in
`rlkit_td3.policies.state_shapes`.

* The actor maps an observation to ``tanh(...)`` in [-1, 1] per action dimension; `unscale_action()`
  maps that to the env's bounds, per dimension, so asymmetric bounds work.
* The critics are one `CriticEnsemble`: the ``n_critics`` Q-networks are stacked along a leading
  tensor dimension, so every layer of all critics is one batched matmul.
* A policy is saved and loaded on its own (`TD3Policy.save()` / `TD3Policy.load()`, JSON + tensors,
  no pickle) and acts through `TD3Policy.predict()`, as in Stable-Baselines3.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from rlkit_td3.checks.arguments import check_bool
from rlkit_td3.checks.state import check_optimizer_state, check_policy_state
from rlkit_td3.export import export
from rlkit_td3.fileio.serialization import (
    ModelFileError,
)
from rlkit_td3.policies.networks import (  # noqa: F401  (ScaleImages, PreprocessDict, _FlattenBatch: importable here as before)
    DEFAULT_NET_ARCH,
    Actor,
    CriticEnsemble,
    PreprocessDict,
    ScaleImages,
    _FlattenBatch,
    make_preprocessor,
    parse_net_arch,
)
from rlkit_td3.policies.obs_normalizer import ObsNormalizer
from rlkit_td3.policies.policy_file import (  # noqa: F401  (POLICY_CONTENT: importable here as before)
    ACTOR_CONTENT,
    POLICY_CONTENT,
    read_policy_file,
    write_policy_file,
)
from rlkit_td3.policies.registry import POLICY_ALIASES
from rlkit_td3.policies.sale import (
    SALEActor,
    SALEInferenceActor,
    build_sale_networks,
    check_representation,
    check_sale_saved_state,
    train_sale_encoder,
)
from rlkit_td3.policies.state_shapes import (
    _check_observation_space,
    check_mlp_state_size,
    check_state_shapes,
    expected_state_shapes,  # noqa: F401  (importable here as before)
    extractor_kwargs_for,
)
from rlkit_td3.preprocessing import is_image_space
from rlkit_td3.torch_layers import (
    BaseFeaturesExtractor,
    CombinedExtractor,
    FlattenExtractor,
    NatureCNN,
)


def python_scalars(value: Any) -> Any:
    """``value`` with every NumPy scalar replaced by the equal Python number and every NumPy array by the equal
    (nested) list, inside lists, tuples and dicts too.

    Settings may be given as NumPy scalars (``np.float32(1e-3)``, ``np.int64(64)``) or arrays
    (``betas=np.array([0.9, 0.999])``) wherever Python numbers are accepted; this keeps what a model stores
    JSON-serialisable.
    """
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list):
        return [python_scalars(v) for v in value]
    if isinstance(value, tuple):
        return tuple(python_scalars(v) for v in value)
    if isinstance(value, dict):
        return {k: python_scalars(v) for k, v in value.items()}
    return value


def _is_batch(observation: Any, shape: tuple[int, ...], what: str) -> bool:
    given = np.shape(observation)
    if given == shape:
        return False
    if given[1:] == shape:
        return True
    raise ValueError(f"{what} has shape {given}; expected {shape} or (batch, *{shape})")


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
        features_extractor_class: the network run on observations before the MLPs (see
            `rlkit_td3.torch_layers`); the actor and the critic ensemble each build one.
        features_extractor_kwargs: extra keyword arguments of ``features_extractor_class``.
        share_features_extractor: the critics use the actor's extractor; only the actor loss trains it (the
            critic loss sees its features without gradient, as in SB3).
        normalize_images: scale image observations (see `rlkit_td3.preprocessing.is_image_space`) to [0, 1].
        critic_layer_norm: a LayerNorm after each hidden layer of the critics (per-critic gain and bias).
        normalize_obs: keep running statistics of the observations collected by ``learn`` and give the networks
            normalised observations (`rlkit_td3.policies.obs_normalizer.ObsNormalizer`; Box observations that
            are not images). The statistics are saved with the model.
        representation: ``"sale"``: the actor and the critics read SALE embeddings (Fujimoto et al. 2023, see
            `rlkit_td3.policies.sale`), whose encoders every update trains (`train_representation`); flat Box
            observations, the default extractor. ``None`` (the default): plain MLPs.
        representation_kwargs: with ``"sale"``: ``embedding_dim`` (256), the encoders' ``net_arch`` ([256, 256])
            and ``target_update_interval`` (250: updates between hard refreshes of the fixed encoders), TD7's.
    """

    optimizer_names: tuple[str, ...] = ("actor_optimizer", "critic_optimizer")
    """The policy's optimizers, by attribute name: what `optimizer_state_dict()` returns and a model file stores."""
    json_kwargs: tuple[str, ...] = ()
    """Constructor arguments of a subclass, beyond `TD3Policy`'s, that `constructor_kwargs()` returns as JSON values
    and a model file stores with the others."""

    default_features_extractor_class: type[BaseFeaturesExtractor] = FlattenExtractor
    """``features_extractor_class`` when none is given (`CnnPolicy` and `MultiInputPolicy` change it)."""

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
        features_extractor_class: type[BaseFeaturesExtractor] | None = None,
        features_extractor_kwargs: dict[str, Any] | None = None,
        share_features_extractor: bool = False,
        normalize_images: bool = True,
        critic_layer_norm: bool = False,
        normalize_obs: bool = False,
        representation: str | None = None,
        representation_kwargs: dict[str, Any] | None = None,
    ):
        super().__init__()
        self.representation = representation
        self.sale_kwargs = check_representation(
            representation,
            representation_kwargs,
            observation_space,
            {
                "features_extractor_class": features_extractor_class,
                "share_features_extractor": share_features_extractor,
                "critic_layer_norm": critic_layer_norm,
            },
        )
        if self.sale_kwargs is not None:
            self.optimizer_names = (*type(self).optimizer_names, "encoder_optimizer")
            self.json_kwargs = (*type(self).json_kwargs, "representation", "representation_kwargs")
        if not isinstance(action_space, spaces.Box):
            raise TypeError(f"action_space must be a gymnasium.spaces.Box, got {action_space!r}")
        if features_extractor_class is None:
            features_extractor_class = self.default_features_extractor_class
        if not (isinstance(features_extractor_class, type) and issubclass(features_extractor_class, nn.Module)):
            raise TypeError(
                "features_extractor_class must be a BaseFeaturesExtractor subclass such as NatureCNN, got "
                f"{features_extractor_class!r}"
            )
        if features_extractor_kwargs is not None and not isinstance(features_extractor_kwargs, dict):
            raise TypeError(f"features_extractor_kwargs must be a dict, got {features_extractor_kwargs!r}")
        for name, flag in (
            ("share_features_extractor", share_features_extractor),
            ("normalize_images", normalize_images),
            ("critic_layer_norm", critic_layer_norm),
            ("normalize_obs", normalize_obs),
        ):
            check_bool(name, flag)
        _check_observation_space(observation_space, features_extractor_class)
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

        self.features_extractor_class = features_extractor_class
        self.features_extractor_kwargs = python_scalars(dict(features_extractor_kwargs or {}))
        self.share_features_extractor = bool(share_features_extractor)
        self.normalize_images = bool(normalize_images)
        self.critic_layer_norm = bool(critic_layer_norm)
        self.normalize_obs = bool(normalize_obs)
        if self.normalize_obs and (not isinstance(observation_space, spaces.Box) or is_image_space(observation_space)):
            raise ValueError(
                f"normalize_obs=True needs a Box observation space that is not an image, got {observation_space!r} "
                "(Dict observations: wrap the env in rlkit_td3.vec_env.VecNormalize with norm_obs_keys)"
            )
        self.obs_normalizer = ObsNormalizer(observation_space.shape) if self.normalize_obs else None

        self._build_networks(pi_arch, qf_arch, activation_fn, n_critics)

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

        self._build_optimizers(actor_learning_rate, critic_learning_rate)

    def _build_networks(
        self, pi_arch: list[int], qf_arch: list[int], activation_fn: type[nn.Module], n_critics: int
    ) -> None:
        """Build ``actor``, ``critic`` and their targets (a subclass with other networks overrides this hook; the
        constructor calls it after its checks, before the action bounds and the optimizers)."""
        if self.representation == "sale":
            build_sale_networks(self, pi_arch, qf_arch, activation_fn, n_critics, self.sale_kwargs)
            return
        action_dim = int(np.prod(self.action_space.shape))
        # Built in this order (actor extractor, actor MLP, critic extractor, critic MLPs), each drawing its
        # initial weights from torch's global generator; the default flatten draws nothing.
        actor_extractor = self.make_features_extractor()
        features_dim = int(actor_extractor.features_dim)
        self.actor = Actor(features_dim, action_dim, pi_arch, activation_fn, actor_extractor, self._preprocessor())
        self.actor_target = copy.deepcopy(self.actor)
        if self.share_features_extractor:
            self.critic = CriticEnsemble(
                features_dim,
                action_dim,
                qf_arch,
                activation_fn,
                n_critics,
                preprocess=self._preprocessor(),
                shared_features_extractor=self.actor.features_extractor,
                layer_norm=self.critic_layer_norm,
            )
        else:
            self.critic = CriticEnsemble(
                features_dim,
                action_dim,
                qf_arch,
                activation_fn,
                n_critics,
                self.make_features_extractor(),
                self._preprocessor(),
                layer_norm=self.critic_layer_norm,
            )
        self.n_critics = self.critic.n_critics
        self.critic_target = copy.deepcopy(self.critic)
        if self.share_features_extractor:  # the target critic reads the target actor's extractor
            for name in ("shared_features_extractor", "features_extractor"):
                object.__setattr__(self.critic_target, name, self.actor_target.features_extractor)
        for actor in (self.actor, self.actor_target):  # what actor.predict / actor.save act through, as in SB3
            object.__setattr__(actor, "_policy", self)
        for target in (self.actor_target, self.critic_target):
            target.requires_grad_(False)
            target.train(False)  # as in SB3: batch norm or dropout in a target runs in evaluation mode

    def _build_optimizers(self, actor_learning_rate: float, critic_learning_rate: float) -> None:
        """Build the optimizers named in `optimizer_names` (a subclass with more networks overrides this hook)."""
        self.actor_optimizer = self._make_optimizer(self.actor.parameters(), actor_learning_rate)
        self.critic_optimizer = self._make_optimizer(self.critic.parameters(), critic_learning_rate)
        if self.representation == "sale":
            self.encoder_optimizer = self._make_optimizer(self.encoder.parameters(), critic_learning_rate)

    def train_representation(self, batch: Any, n_updates: int) -> None:
        """The policy's own learning beyond the actor and the critics, which the model's update loop calls after
        each update (``n_updates``: the model's count, this update included): with ``representation="sale"``, one
        step of the SALE encoders on ``batch`` and, every ``target_update_interval`` updates, the fixed encoders'
        hard refresh (`rlkit_td3.policies.sale.train_sale_encoder`). Nothing otherwise."""
        if self.representation == "sale":
            train_sale_encoder(self, batch, n_updates, self.sale_kwargs["target_update_interval"])

    def inference_actor(self) -> nn.Module:
        """The network ``predict(deterministic=True)`` acts with, as one module of normalised observations (what
        `export()` writes): the actor, or for SALE a standalone copy of it and the encoder it reads."""
        actor = self.evaluation_actor()
        return SALEInferenceActor(actor, actor._encoder()) if isinstance(actor, SALEActor) else actor

    def make_features_extractor(self) -> BaseFeaturesExtractor:
        """A new features extractor for this policy's observation space (fresh weights)."""
        kwargs = extractor_kwargs_for(
            self.features_extractor_class, self.features_extractor_kwargs, self.normalize_images
        )
        return self.features_extractor_class(self.observation_space, **kwargs)

    def _preprocessor(self) -> nn.Module:
        return make_preprocessor(self.observation_space, self.normalize_images)

    def extract_features(self, obs: Any, features_extractor: nn.Module) -> torch.Tensor:
        """``features_extractor`` applied to the preprocessed observations (images scaled), as in SB3."""
        return features_extractor(self._preprocessor()(obs))

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
    def forward(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        """Deterministic action in normalised units (``deterministic`` is accepted for SB3 and ignored: the
        actor is deterministic)."""
        return self.actor(self.normalize_observations(obs))

    @torch.no_grad()
    def actor_numpy(self, obs: np.ndarray | dict[str, np.ndarray]) -> np.ndarray:
        """Normalised actions for a batch of observations given as NumPy (a dict of arrays for a `Dict`
        space), returned as NumPy."""
        return self.actor(self.normalize_observations(self._as_tensor(obs))).cpu().numpy()

    def evaluation_actor(self) -> nn.Module:
        """The network ``predict(deterministic=True)`` acts with: the actor; a policy that keeps a separate policy
        for evaluation (TD7's checkpoint) overrides it."""
        return self.actor

    @torch.no_grad()
    def evaluation_actor_numpy(self, obs: np.ndarray | dict[str, np.ndarray]) -> np.ndarray:
        """The normalised actions ``predict(deterministic=True)`` takes: `evaluation_actor`'s (for a batch given
        as NumPy, returned as NumPy)."""
        return self.evaluation_actor()(self.normalize_observations(self._as_tensor(obs))).cpu().numpy()

    def normalize_observations(self, obs: Any) -> Any:
        """``obs`` as the networks see it: normalised with ``normalize_obs``, else unchanged."""
        return obs if self.obs_normalizer is None else self.obs_normalizer(obs)

    def normalize_batch(self, batch: Any) -> Any:
        """A replay batch (a NamedTuple) with both observations normalised (``normalize_obs``), else ``batch``."""
        if self.obs_normalizer is None:
            return batch
        return batch._replace(
            observations=self.obs_normalizer(batch.observations),
            next_observations=self.obs_normalizer(batch.next_observations),
        )

    def update_obs_statistics(self, obs: Any) -> None:
        """Add raw observations to the ``normalize_obs`` statistics (nothing without it); ``learn`` calls it
        with every observation the env returns."""
        if self.obs_normalizer is not None:
            self.obs_normalizer.update(obs)

    def _as_tensor(self, obs: Any) -> Any:
        """A NumPy batch as float32 tensor(s) on the policy's device (images keep their 0-255 values)."""
        device = self.action_low.device
        if isinstance(obs, dict):
            return {
                key: torch.as_tensor(np.asarray(value), dtype=torch.float32, device=device)
                for key, value in obs.items()
            }
        return torch.as_tensor(obs, dtype=torch.float32, device=device)

    def constructor_kwargs(self) -> dict[str, Any]:
        """The keyword arguments that rebuild this policy (learning rates aside).

        The features extractor settings are included only where they differ from the class's defaults, so a
        default ``MlpPolicy`` is described as it always was.
        """
        kwargs: dict[str, Any] = {
            "net_arch": copy.deepcopy(self.net_arch),
            "activation_fn": self.activation_fn,
            "n_critics": self.n_critics,
            "optimizer_class": self.optimizer_class,
            "optimizer_kwargs": dict(self.optimizer_kwargs),
        }
        if self.features_extractor_class is not self.default_features_extractor_class:
            kwargs["features_extractor_class"] = self.features_extractor_class
        if self.features_extractor_kwargs:
            kwargs["features_extractor_kwargs"] = copy.deepcopy(self.features_extractor_kwargs)
        if self.share_features_extractor:
            kwargs["share_features_extractor"] = True
        if not self.normalize_images:
            kwargs["normalize_images"] = False
        if self.critic_layer_norm:
            kwargs["critic_layer_norm"] = True
        if self.normalize_obs:
            kwargs["normalize_obs"] = True
        if self.representation is not None:
            kwargs["representation"] = self.representation
            kwargs["representation_kwargs"] = copy.deepcopy(self.sale_kwargs)
        return kwargs

    # ------------------------------------------------------------------ Stable-Baselines3's BasePolicy API
    @property
    def device(self) -> torch.device:
        """The device of the policy's parameters (CPU for a policy without parameters), as in SB3."""
        for param in self.parameters():
            return param.device
        return torch.device("cpu")

    def set_training_mode(self, mode: bool) -> None:
        """Put the actor and the critics in training (``True``) or evaluation (``False``) mode
        (``nn.Module.train``); the targets stay in evaluation mode, as in SB3.

        The built-in MLPs have no dropout or batch norm, so the mode changes no output; it matters for features
        extractors or subclasses with such layers (see `mode_dependent()`). The model sets evaluation mode
        for ``predict`` and while collecting, training mode for the updates.
        """
        self.actor.train(mode)
        self.critic.train(mode)
        if self.representation is not None:
            self.encoder.train(mode)
        self.training = mode

    def mode_dependent(self) -> bool:
        """Whether the actor's or the critics' output may depend on the training mode: they hold batch norm,
        dropout or recurrent layers, or a layer class from outside ``torch.nn`` and rlkit_td3 (which might read
        ``self.training``). When it is False the model does not switch modes around each update."""
        for module in (*self.actor.modules(), *self.critic.modules()):
            if isinstance(module, (nn.modules.batchnorm._NormBase, nn.modules.dropout._DropoutNd, nn.RNNBase)):
                return True
            if not type(module).__module__.startswith(("torch.nn.modules.", "rlkit_td3.")):
                return True
        return False

    def is_vectorized_observation(self, observation: np.ndarray | dict[str, np.ndarray]) -> bool:
        """Whether ``observation`` is a batch ``(n, *obs_shape)`` rather than one observation ``obs_shape``
        (for a `Dict` space: a dict whose arrays are all batches, or all single observations).

        Raises:
            ValueError: the shape is neither, naming both the given and the expected shapes (and the key).
        """
        if isinstance(self.observation_space, spaces.Dict):
            if not isinstance(observation, dict) or set(observation) != set(self.observation_space.spaces):
                got = sorted(observation) if isinstance(observation, dict) else type(observation).__name__
                raise ValueError(
                    f"observation must be a dict with the keys {sorted(self.observation_space.spaces)}, got {got}"
                )
            flags = {
                key: _is_batch(observation[key], sub.shape, f"observation[{key!r}]")
                for key, sub in self.observation_space.spaces.items()
            }
            if len(set(flags.values())) > 1:
                raise ValueError(f"observation mixes batched and single entries: {flags}")
            return next(iter(flags.values()))
        return _is_batch(observation, self.observation_space.shape, "observation")

    def obs_to_tensor(self, observation: np.ndarray | dict[str, np.ndarray]) -> tuple[Any, bool]:
        """``(batch of observations as a float32 tensor on the policy's device, whether it was a batch)``;
        for a `Dict` space the batch is a dict of tensors.

        One observation becomes a batch of one, as in SB3.

        Raises:
            TypeError: ``observation`` is the ``(obs, info)`` tuple returned by ``env.reset()``.
            ValueError: the observation's shape matches neither one observation nor a batch.
        """
        if isinstance(observation, tuple) and len(observation) == 2 and isinstance(observation[1], dict):
            raise TypeError(
                "observation is an (obs, info) tuple: pass only the observation, e.g. obs, info = env.reset()"
            )
        if isinstance(self.observation_space, spaces.Dict):
            vectorized = self.is_vectorized_observation(observation)
            batch = {
                key: np.asarray(observation[key], dtype=np.float32).reshape(-1, *sub.shape)
                for key, sub in self.observation_space.spaces.items()
            }
            return self._as_tensor(batch), vectorized
        obs = np.asarray(observation, dtype=np.float32)
        vectorized = self.is_vectorized_observation(obs)
        batch = obs.reshape(-1, *self.observation_space.shape)
        return torch.as_tensor(batch, device=self.action_low.device), vectorized

    def predict(
        self,
        observation: np.ndarray,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, Any]:
        """Actions in env units for one observation or a batch of them: the actor's output, unscaled.

        A bare policy has no exploration noise (the algorithm owns it), so as in SB3's ``TD3Policy`` the
        action is the same whatever ``deterministic`` is, except for a policy that keeps a separate policy for
        evaluation (TD7's checkpoint): ``deterministic=True`` acts with it, as ``model.predict`` does.
        ``state`` and ``episode_start`` are for recurrent policies in SB3; ``state`` is returned unchanged.

        Returns:
            ``(action, state)``: shape ``action_space.shape`` for one observation, else ``(batch, *shape)``.

        Raises:
            TypeError: ``observation`` is the ``(obs, info)`` tuple returned by ``env.reset()``.
            ValueError: the observation's shape matches neither one observation nor a batch.
        """
        check_bool("deterministic", deterministic)
        self.set_training_mode(False)
        obs, vectorized = self.obs_to_tensor(observation)
        actor = self.evaluation_actor() if deterministic else self.actor
        with torch.no_grad():
            scaled = actor(self.normalize_observations(obs)).cpu().numpy()
        actions = self.unscale_action(scaled.reshape(len(scaled), *self.action_space.shape))
        return (actions if vectorized else actions[0]), state

    def parameters_to_vector(self) -> np.ndarray:
        """All parameters (actor, actor target, critics, critic targets: ``self.parameters()`` order) as one
        flat float32 NumPy vector, as SB3's ``parameters_to_vector``."""
        return torch.nn.utils.parameters_to_vector(self.parameters()).detach().cpu().numpy()

    def load_from_vector(self, vector: np.ndarray) -> None:
        """Set every parameter from a flat vector in `parameters_to_vector()`'s order (copied in place,
        so optimizers keep tracking the same tensors).

        Raises:
            ValueError: ``vector`` is not one-dimensional, not of the policy's size (named in the message),
                or not finite.
        """
        array = np.asarray(vector)
        params = list(self.parameters())
        expected = sum(p.numel() for p in params)
        if array.ndim != 1 or array.size != expected:
            raise ValueError(
                f"vector must be a 1-D array of {expected} parameters (parameters_to_vector()'s length), "
                f"got shape {array.shape}"
            )
        if array.dtype.kind not in "fiu" or not np.all(np.isfinite(array)):
            raise ValueError(f"vector must hold finite numbers, got dtype {array.dtype} with non-finite entries")
        flat = torch.as_tensor(array, dtype=torch.float32)
        with torch.no_grad():
            offset = 0
            for param in params:
                n = param.numel()
                param.copy_(flat[offset : offset + n].view_as(param))
                offset += n

    # ------------------------------------------------------------------ the component state protocol
    def load_state_dict(  # type: ignore[override]
        self, state_dict: Any, strict: bool = True, assign: bool = False, *, entry: str = "policy state"
    ) -> Any:
        """``nn.Module.load_state_dict``, after checking the state (`rlkit_td3.checks.state.check_policy_state`):
        exactly this policy's keys (with ``strict=False``, only those it has), each tensor of its shape and dtype,
        finite. The observation normaliser's statistics are checked as it loads them.

        Raises:
            ModelFileError: (a ``ValueError``) naming ``entry`` and the tensor; nothing was changed.
        """
        if not strict and isinstance(state_dict, dict):
            own = super().state_dict()
            check_policy_state(entry, {**own, **{k: v for k, v in state_dict.items() if k in own}}, self)
        else:
            check_policy_state(entry, state_dict, self)
        return super().load_state_dict(state_dict, strict=strict, assign=assign)

    def optimizer_state_dict(self) -> dict[str, dict[str, Any]]:
        """The optimizers' state dicts, by attribute name (``actor_optimizer``, ``critic_optimizer``)."""
        return {name: getattr(self, name).state_dict() for name in self.optimizer_names}

    def load_optimizer_state_dict(self, states: Any, entry: str = "{name}") -> None:
        """Restore what `optimizer_state_dict()` returned, each checked against its optimizer first
        (`rlkit_td3.checks.state.check_optimizer_state`: parameter groups, moments' shapes, finite values).

        Raises:
            ModelFileError: (a ``ValueError``) naming the optimizer (``entry`` formatted with it) and what is wrong;
                nothing was changed.
        """
        names = self.optimizer_names
        if not isinstance(states, dict) or not set(names) <= set(states):
            got = sorted(map(str, states)) if isinstance(states, dict) else type(states).__name__
            raise ModelFileError(f"the optimizer states must hold {list(names)}, got {got}")
        checked = {
            name: check_optimizer_state(entry.format(name=name), states[name], getattr(self, name)) for name in names
        }
        for name, state in checked.items():
            getattr(self, name).load_state_dict(state)

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
        """Refuse a saved state dict that is not that of the networks ``policy_kwargs`` declare, before building
        them (nothing is allocated). A model file's (``model_file``): a plain ``MlpPolicy`` by its parameter
        count, the other built-in policies by every tensor's shape, a registered subclass by strict loading
        once built; a policy file's: every tensor's shape (`rlkit_td3.policies.state_shapes.check_state_shapes`),
        or those whose names start with ``only`` (an actor file's).
        """
        if policy_kwargs.get("representation") is not None:
            check_sale_saved_state(observation_space, action_space, policy_kwargs, state, cls.sale_groups, only)
            return
        beyond_mlp = {"features_extractor_class", "features_extractor_kwargs", "share_features_extractor"}
        beyond_mlp |= {"critic_layer_norm", "normalize_obs"}
        built_in = cls in (TD3Policy, CnnPolicy, MultiInputPolicy)
        if model_file and cls is TD3Policy and not beyond_mlp & set(policy_kwargs):
            check_mlp_state_size(observation_space, action_space, policy_kwargs, state)
        elif built_in or not model_file:
            check_state_shapes(cls, observation_space, action_space, policy_kwargs, state, exact=built_in, only=only)

    sale_groups: dict[str, tuple[str, ...]] = {
        "encoder": ("encoder", "fixed_encoder", "fixed_encoder_target"),
        "actor": ("actor", "actor_target"),
        "critic": ("critic", "critic_target"),
    }
    """The SALE networks of a ``representation="sale"`` policy, by kind: what `check_saved_state` expects."""

    def save(self, path: str | os.PathLike[str]) -> None:
        """Save the policy alone (networks, spaces and constructor arguments, no optimizer state) to one
        zip file, written atomically: ``metadata.json`` (JSON) and ``policy.pth`` (tensors), no pickle.

        `load()` rebuilds it. The current learning rates are stored as the constructor's
        ``actor_learning_rate`` / ``critic_learning_rate``.

        Raises:
            TypeError: a user-defined activation or optimizer class that is not a ``torch.nn`` /
                ``torch.optim`` class is refused (a policy file never names code to import).
        """
        write_policy_file(self, path)

    def _write_actor_file(self, path: str | os.PathLike[str], actor: Actor) -> None:
        """``actor.save(path)``: the file of this policy's actor (its target actor saves as the actor would)."""
        if actor is not self.actor and actor is not self.actor_target:
            raise ValueError("the actor to save is not this policy's")
        if actor is self.actor_target:
            raise ValueError("actor_target.save(): save the policy's actor (policy.actor), whose weights a file holds")
        write_policy_file(self, path, content=ACTOR_CONTENT)

    @classmethod
    def load(cls, path: str | os.PathLike[str], device: torch.device | str = "auto") -> TD3Policy:
        """Load a policy written by `save()`; its predictions are bitwise those of the saved policy.

        Nothing in the file is trusted: the archive is checked as a model file is, classes are found by
        name among ``torch.nn`` / ``torch.optim`` and the registered policies (or ``cls`` itself when the
        file names it), and every tensor's shape is checked against the architecture the file declares
        before any network is built.

        Args:
            path: the zip file.
            device: where to put the networks (``"auto"``: CUDA when available).

        Raises:
            ModelFileError: (a ``ValueError``) the file is unreadable, is a whole model or an actor rather than a
                policy, names an unknown class, or its tensors do not match its declared architecture.
        """
        from rlkit_td3.utils import get_device

        return read_policy_file(cls, path).to(get_device(device))

    @classmethod
    def load_actor(cls, path: str | os.PathLike[str], device: torch.device | str = "auto") -> Actor:
        """The actor in a file written by ``policy.actor.save()`` (what ``Actor.load`` returns), checked as
        `load()` checks a policy file. Its ``predict`` is that of the saved actor; it belongs to a policy built
        from the file's settings (its critics fresh and minimal: the file holds none)."""
        from rlkit_td3.utils import get_device

        return read_policy_file(cls, path, content=ACTOR_CONTENT).to(get_device(device)).actor

    def export(self, path: str | os.PathLike[str], format: str = "torchscript", **kwargs: Any) -> Path:
        """Export the actor, with the action unscaling (and optional observation normalisation) in the
        graph, to TorchScript or ONNX. See `rlkit_td3.export.export()` for the arguments."""
        return export(self, path, format=format, **kwargs)


class CnnPolicy(TD3Policy):
    """`TD3Policy` for image observations: `NatureCNN` is the default features extractor (``"CnnPolicy"``)."""

    default_features_extractor_class = NatureCNN


class MultiInputPolicy(TD3Policy):
    """`TD3Policy` for `Dict` observations: `CombinedExtractor` is the default features extractor
    (``"MultiInputPolicy"``)."""

    default_features_extractor_class = CombinedExtractor


POLICY_ALIASES.update(MlpPolicy=TD3Policy, CnnPolicy=CnnPolicy, MultiInputPolicy=MultiInputPolicy)

OPTIMIZER_NAMES = TD3Policy.optimizer_names
"""The policy's optimizers, by attribute name (`TD3Policy.optimizer_state_dict()`)."""

"""SALE: state-action representation learning (Fujimoto et al. 2023, "For SALE", NeurIPS).

Two encoders learn embeddings of states and state-action pairs:

* the state encoder ``f``: ``z_s = AvgL1Norm(f(s))``;
* the state-action encoder ``g``: ``z_sa = g(z_s, a)``,

trained together so that ``z_sa`` predicts the next state's embedding: the loss is
``(g(f(s), a) - |f(s')|_x)^2`` with the target ``z_s'`` computed without gradient.
``AvgL1Norm(x) = x / mean(|x|)`` keeps the embeddings' scale fixed.

The networks that read the embeddings (`SALEActor`, `SALECritic`) take, besides them, their own AvgL1Norm-ed linear
embedding of the raw input: ``pi(s, z_s)`` and ``Q(s, a, z_sa, z_s)``. Each is linked to the
encoder whose embeddings it reads when called with the observations alone (`SALEActor.link`), so that
``actor(obs)`` acts as any actor does; the update passes the embeddings it has already computed.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from gymnasium import spaces
from torch import nn

from rlkit_td3.fileio.serialization import ModelFileError
from rlkit_td3.policies.declared_size import declared_n_critics
from rlkit_td3.policies.networks import DEFAULT_NET_ARCH, _mlp, parse_net_arch
from rlkit_td3.policies.sale_functions import avg_l1_norm, avg_l1_norm_values, elu
from rlkit_td3.preprocessing import is_image_space
from rlkit_td3.utils import global_module_hooks, module_has_hooks


def _flat(obs: torch.Tensor) -> torch.Tensor:
    return obs.reshape(obs.shape[0], -1)


_MIN_COLUMNS = 64  # the narrowest input-gradient product `_CatLinear` makes


class _CatLinear(torch.autograd.Function):
    """``linear(cat(parts, 1))`` as ``nn.Linear`` computes it, with a backward that computes the input gradient only
    of the parts that need one.

    Autograd's ``Linear`` on a joined input computes the gradient of the whole input, and the backward of ``cat``
    drops the columns of the parts that need none: in TD7's critic update, the embeddings ``[z_sa, z_s]`` (two
    thirds of the critics' first hidden layer's input); in its actor update, ``z_s`` (half of the actor's, nearly
    all of ``g``'s). Here each part that needs a gradient gets ``grad @ W[:, its columns]``, the others none. The
    forward (``addmm``) and the weight and bias gradients are the products autograd makes, so the values are the
    same up to the rounding of those column products.
    """

    @staticmethod
    def forward(ctx, weight: torch.Tensor, bias: torch.Tensor, *parts: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        joined = torch.cat(parts, dim=1)
        ctx.save_for_backward(weight, joined)
        ctx.widths = tuple(part.shape[1] for part in parts)
        return torch.addmm(bias, joined, weight.t())

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:  # type: ignore[override]
        weight, joined = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_weight = grad.t().mm(joined) if needs[0] else None
        grad_bias = grad.sum(0) if needs[1] else None
        bounds, start = [], 0
        for width in ctx.widths:
            bounds.append((start, start + width))
            start += width
        needed = [bound for need, bound in zip(needs[2:], bounds) if need]
        grads: list[torch.Tensor | None] = [None] * len(bounds)
        if needed:
            # one product over the columns from the first needed part to the last, at least _MIN_COLUMNS wide (a
            # BLAS may sum a narrow product in another order than the whole one: with that many columns, MKL's
            # columns are those of autograd's whole product, bit for bit, on the CPUs measured)
            low, high = needed[0][0], needed[-1][1]
            if high - low < _MIN_COLUMNS:
                low = max(0, min(low, high - _MIN_COLUMNS))
                high = min(start, max(high, low + _MIN_COLUMNS))
            columns = grad.mm(weight[:, low:high])
            for i, (need, (a, b)) in enumerate(zip(needs[2:], bounds)):
                if need:
                    grads[i] = columns[:, a - low : b - low]
        return (grad_weight, grad_bias, *grads)


def _run(net: nn.Module, x: torch.Tensor, start: int = 0) -> torch.Tensor:
    """``net(x)`` for a ``Linear`` or an ``nn.Sequential`` (from its module ``start`` on), calling the functions
    ``Linear``, ``ReLU`` and ``Tanh`` call themselves (and `sale_functions.elu` for ``ELU``), without ``nn.Module``'s
    call dispatch (about a tenth of a TD7 update's time on a CPU goes to the Python around its operations). Any other
    module, a module with hooks, or any global module hook: the module is called."""
    hooked = global_module_hooks()
    if start == 0 and (hooked or module_has_hooks(net)):
        return net(x)
    modules = net._modules.values() if type(net) is nn.Sequential else (net,)
    for i, module in enumerate(modules):
        if i < start:
            continue
        kind = type(module)
        if hooked or module_has_hooks(module):
            x = module(x)
        elif kind is nn.Linear:
            params = module._parameters
            x = F.linear(x, params["weight"], params["bias"])
        elif kind is nn.ELU:
            x = elu(x, module.alpha, module.inplace)
        elif kind is nn.ReLU:
            x = F.relu(x, inplace=module.inplace)
        elif kind is nn.Tanh:
            x = torch.tanh(x)
        else:
            x = module(x)
    return x


def _mlp_on_joined(net: nn.Sequential, parts: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """``net(torch.cat(parts, 1))`` for an MLP whose first module is a ``Linear``: while gradients are recorded, its
    first layer is `_CatLinear` (no gradient for the parts that need none)."""
    first = net[0]
    plain = (
        not torch.is_grad_enabled()
        or type(first) is not nn.Linear
        or first.bias is None
        or module_has_hooks(first)
        or module_has_hooks(net)
        or global_module_hooks()
        or not (first.weight.requires_grad or any(part.requires_grad for part in parts))
    )
    if plain:
        return _run(net, torch.cat(parts, dim=1))
    return _run(net, _CatLinear.apply(first.weight, first.bias, *parts), start=1)


class SALEEncoder(nn.Module):
    """The SALE encoders: ``zs(obs)`` (state embedding, AvgL1Norm-ed) and ``zsa(zs, actions)``.

    Args:
        obs_dim: flattened observation size.
        action_dim: flattened action size.
        embedding_dim: size of ``z_s`` and ``z_sa`` (the paper's 256).
        net_arch: hidden sizes of both encoders (the paper's ``[256, 256]``).
        activation_fn: activation class between hidden layers (the paper's ELU).
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        embedding_dim: int = 256,
        net_arch: Sequence[int] = (256, 256),
        activation_fn: type[nn.Module] = nn.ELU,
    ) -> None:
        super().__init__()
        self.embedding_dim = int(embedding_dim)
        self.state_encoder = nn.Sequential(*_mlp(obs_dim, list(net_arch), embedding_dim, activation_fn))
        self.state_action_encoder = nn.Sequential(
            *_mlp(embedding_dim + action_dim, list(net_arch), embedding_dim, activation_fn)
        )

    def zs(self, obs: torch.Tensor) -> torch.Tensor:
        """The state embedding ``z_s = AvgL1Norm(f(s))``."""
        return avg_l1_norm(_run(self.state_encoder, _flat(obs)))

    def zsa(self, zs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """The state-action embedding ``z_sa = g(z_s, a)`` (not normalised: it is trained to predict ``z_s'``)."""
        return _mlp_on_joined(self.state_action_encoder, (zs, actions))

    def loss(self, obs: torch.Tensor, actions: torch.Tensor, next_obs: torch.Tensor) -> torch.Tensor:
        """The encoders' loss: the mean squared error of ``g(f(s), a)`` against ``z_s'`` (without gradient)."""
        with torch.no_grad():
            next_zs = self.zs(next_obs)
        return (self.zsa(self.zs(obs), actions) - next_zs).pow(2).mean()


class _Linked(nn.Module):
    """A network that reads the embeddings of a `SALEEncoder` it does not own (set by `link`)."""

    def link(self, encoder: SALEEncoder) -> None:
        """Read embeddings from ``encoder`` when called without them (not a submodule: the policy owns it)."""
        object.__setattr__(self, "encoder", encoder)

    def save(self, path: Any) -> None:
        """Refused: a SALE network reads an encoder it does not hold; save its policy or export it."""
        raise TypeError(
            f"a {type(self).__name__} reads a SALE encoder it does not hold, so it has no file of its own ({path!r}): "
            "save its policy (policy.save(path)) or export the actor (policy.export(path))"
        )

    def _encoder(self) -> SALEEncoder:
        encoder = self.__dict__.get("encoder")
        if encoder is None:
            raise RuntimeError(f"this {type(self).__name__} is linked to no SALEEncoder: call link(encoder) first")
        return encoder


class SALEActor(_Linked):
    """The actor ``pi(s, z_s)``: ``AvgL1Norm(W s)`` joined to ``z_s``, an MLP, ``tanh`` (normalised actions).

    Args:
        obs_dim: flattened observation size.
        action_dim: flattened action size.
        embedding_dim: size of ``z_s``.
        net_arch: hidden sizes; the raw observation's embedding has ``net_arch[0]`` units.
        activation_fn: activation class between hidden layers (the paper's ReLU).
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        embedding_dim: int,
        net_arch: Sequence[int] = (256, 256),
        activation_fn: type[nn.Module] = nn.ReLU,
    ) -> None:
        super().__init__()
        self.obs_embedding = nn.Linear(obs_dim, net_arch[0])
        self.mu = nn.Sequential(
            *_mlp(embedding_dim + net_arch[0], list(net_arch), action_dim, activation_fn), nn.Tanh()
        )

    def forward(self, obs: torch.Tensor, zs: torch.Tensor | None = None) -> torch.Tensor:
        """Normalised actions; ``zs`` defaults to the linked encoder's embedding of ``obs``."""
        if zs is None:
            zs = self._encoder().zs(obs)
        return _mlp_on_joined(self.mu, (avg_l1_norm(_run(self.obs_embedding, _flat(obs))), zs))


class _SALEQ(nn.Module):
    def __init__(self, in_dim: int, embedding_dim: int, net_arch: Sequence[int], activation_fn: type[nn.Module]):
        super().__init__()
        self.sa_embedding = nn.Linear(in_dim, net_arch[0])
        self.q = nn.Sequential(*_mlp(2 * embedding_dim + net_arch[0], list(net_arch), 1, activation_fn))

    def forward(self, sa: torch.Tensor, *embeddings: torch.Tensor) -> torch.Tensor:
        return _mlp_on_joined(self.q, (avg_l1_norm(_run(self.sa_embedding, sa)), *embeddings)).squeeze(-1)


class SALECritic(_Linked):
    """``n_critics`` Q-networks ``Q(s, a, z_sa, z_s)``: ``AvgL1Norm(W [s, a])`` joined to ``[z_sa, z_s]``, an MLP.

    Returns ``(n_critics, batch)`` values, as `rlkit_td3.policies.CriticEnsemble` does.

    Args:
        obs_dim: flattened observation size.
        action_dim: flattened action size.
        embedding_dim: size of ``z_s`` and ``z_sa``.
        net_arch: hidden sizes; the raw input's embedding has ``net_arch[0]`` units.
        activation_fn: activation class between hidden layers (the paper's ELU).
        n_critics: number of Q-networks (the paper's 2).
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        embedding_dim: int,
        net_arch: Sequence[int] = (256, 256),
        activation_fn: type[nn.Module] = nn.ELU,
        n_critics: int = 2,
    ) -> None:
        super().__init__()
        self.n_critics = int(n_critics)
        self.q_networks = nn.ModuleList(
            _SALEQ(obs_dim + action_dim, embedding_dim, net_arch, activation_fn) for _ in range(self.n_critics)
        )

    def forward(
        self,
        obs: torch.Tensor,
        actions: torch.Tensor,
        zs: torch.Tensor | None = None,
        zsa: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Q-values of shape ``(n_critics, batch)``; missing embeddings come from the linked encoder."""
        if zs is None:
            zs = self._encoder().zs(obs)
        if zsa is None:
            zsa = self._encoder().zsa(zs, actions)
        sa = torch.cat([_flat(obs), actions], dim=1)
        return torch.stack([q(sa, zsa, zs) for q in self.q_networks])

    def q1_forward(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """The first critic's values, shape ``(batch,)``."""
        return self.forward(obs, actions)[0]


# ---------------------------------------------------------------------- SALE in any policy of the base
SALE_DEFAULTS: dict[str, Any] = {"embedding_dim": 256, "net_arch": [256, 256], "target_update_interval": 250}
"""``representation_kwargs`` of ``representation="sale"`` and their defaults: TD7's (``Hyperparameters`` in the
authors' TD7.py: ``zs_dim`` 256, encoder hidden sizes 256-256, ``target_update_rate`` 250)."""

MAX_EMBEDDING_DIM = 8192
"""Largest ``embedding_dim`` a SALE policy accepts (a file cannot declare a larger one)."""


def check_sale_kwargs(kwargs: Any) -> dict[str, Any]:
    """`SALE_DEFAULTS` updated with ``kwargs`` (``representation_kwargs``), checked, as Python values.

    Raises:
        TypeError / ValueError: naming the argument, its value and what is allowed.
    """
    if kwargs is None:
        kwargs = {}
    if not isinstance(kwargs, dict):
        raise TypeError(f"representation_kwargs must be a dict, got {kwargs!r}")
    unknown = set(kwargs) - set(SALE_DEFAULTS)
    if unknown:
        raise ValueError(
            f"representation_kwargs: unknown keys {sorted(map(str, unknown))} for representation='sale' "
            f"(allowed: {sorted(SALE_DEFAULTS)})"
        )
    merged = {**SALE_DEFAULTS, **kwargs}
    for key, high in (("embedding_dim", MAX_EMBEDDING_DIM), ("target_update_interval", 10**9)):
        value = merged[key]
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= high:
            raise ValueError(f"representation_kwargs['{key}'] must be an int in [1, {high}], got {value!r}")
        merged[key] = int(value)
    arch = merged["net_arch"]
    if (
        not isinstance(arch, (list, tuple))
        or not arch
        or any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s <= 0 for s in arch)
    ):
        raise ValueError(f"representation_kwargs['net_arch'] must be a non-empty list of positive ints, got {arch!r}")
    merged["net_arch"] = [int(s) for s in arch]
    return merged


def check_representation(
    representation: Any, kwargs: Any, observation_space: Any, settings: dict[str, Any]
) -> dict[str, Any] | None:
    """The checked SALE settings of a `TD3Policy`'s ``representation`` / ``representation_kwargs`` (None for
    ``representation=None``); ``settings``: the policy's other constructor arguments, checked to fit SALE.

    Raises:
        TypeError / ValueError: naming the argument, its value and what is allowed.
    """
    if representation is None:
        if kwargs is not None:
            raise ValueError(f"representation_kwargs={kwargs!r} needs representation='sale'")
        return None
    if not isinstance(representation, str) or representation != "sale":
        raise ValueError(f"representation must be None or 'sale', got {representation!r}")
    if not isinstance(observation_space, spaces.Box) or is_image_space(observation_space):
        raise TypeError(
            f"representation='sale' needs a Box observation space that is not an image, got {observation_space!r}"
        )
    extractor = settings.get("features_extractor_class")
    if extractor is not None and extractor.__name__ != "FlattenExtractor":
        raise ValueError(
            f"representation='sale' reads flat observations: features_extractor_class must be FlattenExtractor, "
            f"got {extractor!r}"
        )
    for key in ("share_features_extractor", "critic_layer_norm"):
        if settings.get(key):
            raise ValueError(f"representation='sale' builds its own networks: {key} must be False, got True")
    return check_sale_kwargs(kwargs)


def build_sale_networks(
    policy: nn.Module,
    pi_arch: list[int],
    qf_arch: list[int],
    activation_fn: type[nn.Module],
    n_critics: int,
    sale_kwargs: dict[str, Any],
) -> None:
    """Give ``policy`` SALE networks: ``encoder`` (trained by `train_sale_encoder`), ``fixed_encoder`` and
    ``fixed_encoder_target`` (copies), ``actor`` / ``critic`` (`SALEActor`, `SALECritic`, reading the fixed
    encoder's embeddings) and their targets (reading the fixed encoder target's), as `TD7Policy` has them.

    The encoders use ELU (the paper's); the actor and the critics ``activation_fn``.
    """
    obs_dim = int(np.prod(policy.observation_space.shape))
    action_dim = int(np.prod(policy.action_space.shape))
    emb = sale_kwargs["embedding_dim"]
    if not pi_arch or not qf_arch:
        raise ValueError(
            f"representation='sale' needs at least one hidden layer in the actor and the critics, got "
            f"pi={pi_arch!r}, qf={qf_arch!r}"
        )
    policy.encoder = SALEEncoder(obs_dim, action_dim, emb, sale_kwargs["net_arch"], nn.ELU)
    policy.actor = SALEActor(obs_dim, action_dim, emb, pi_arch, activation_fn)
    policy.critic = SALECritic(obs_dim, action_dim, emb, qf_arch, activation_fn, int(n_critics))
    policy.n_critics = policy.critic.n_critics
    policy.fixed_encoder = copy.deepcopy(policy.encoder)
    policy.fixed_encoder_target = copy.deepcopy(policy.encoder)
    policy.actor_target = copy.deepcopy(policy.actor)
    policy.critic_target = copy.deepcopy(policy.critic)
    policy.actor.link(policy.fixed_encoder)
    policy.critic.link(policy.fixed_encoder)
    policy.actor_target.link(policy.fixed_encoder_target)
    policy.critic_target.link(policy.fixed_encoder_target)
    for module in (policy.actor_target, policy.critic_target, policy.fixed_encoder, policy.fixed_encoder_target):
        module.requires_grad_(False)
        module.train(False)


def refresh_fixed_encoders(policy: nn.Module) -> None:
    """``fixed_encoder_target`` ← ``fixed_encoder`` ← ``encoder`` (hard copies, in that order, as TD7)."""
    with torch.no_grad():
        for target, source in (
            (policy.fixed_encoder_target, policy.fixed_encoder),
            (policy.fixed_encoder, policy.encoder),
        ):
            torch._foreach_copy_(list(target.parameters()), list(source.parameters()))


def train_sale_encoder(policy: nn.Module, batch: Any, n_updates: int, target_update_interval: int) -> None:
    """One step of the SALE encoders on ``batch`` (`SALEEncoder.loss`, ``policy.encoder_optimizer``, at the
    critics' current learning rate), then, every ``target_update_interval`` updates, `refresh_fixed_encoders`."""
    optimizer = policy.encoder_optimizer
    lr = policy.critic_optimizer.param_groups[0]["lr"]
    for group in optimizer.param_groups:
        group["lr"] = lr
    loss = policy.encoder.loss(batch.observations, batch.actions, batch.next_observations)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    if n_updates % target_update_interval == 0:
        refresh_fixed_encoders(policy)


class SALEInferenceActor(nn.Module):
    """A standalone copy of a SALE actor and the state encoder it reads: observations → ``pi(s, z_s)``, what
    `rlkit_td3.export` writes (scriptable: it holds both networks, unlike a linked `SALEActor`).

    Args:
        actor: the `SALEActor` (e.g. TD7's checkpoint actor).
        encoder: the `SALEEncoder` whose ``z_s`` it reads (e.g. TD7's checkpoint encoder).
    """

    def __init__(self, actor: SALEActor, encoder: SALEEncoder) -> None:
        super().__init__()
        self.state_encoder = copy.deepcopy(encoder.state_encoder)
        self.obs_embedding = copy.deepcopy(actor.obs_embedding)
        self.mu = copy.deepcopy(actor.mu)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Normalised actions: ``SALEActor.forward(obs, SALEEncoder.zs(obs))``."""
        flat = _flat(obs)
        zs = avg_l1_norm_values(self.state_encoder(flat))
        return self.mu(torch.cat([avg_l1_norm_values(self.obs_embedding(flat)), zs], dim=1))


def sale_state_shapes(
    obs_dim: int,
    action_dim: int,
    pi_arch: list[int],
    qf_arch: list[int],
    n_critics: int,
    embedding_dim: int,
    encoder_net_arch: list[int],
    groups: dict[str, tuple[str, ...]],
) -> dict[str, tuple[int, ...]]:
    """Name and shape of every tensor of SALE networks, built on the ``meta`` device (nothing is allocated).

    ``groups`` maps ``"encoder"``, ``"actor"`` and ``"critic"`` to the attribute names holding such a network
    (e.g. ``{"encoder": ("encoder", "fixed_encoder"), ...}``).
    """
    with torch.device("meta"):
        nets = {
            "encoder": SALEEncoder(obs_dim, action_dim, embedding_dim, encoder_net_arch),
            "actor": SALEActor(obs_dim, action_dim, embedding_dim, pi_arch),
            "critic": SALECritic(obs_dim, action_dim, embedding_dim, qf_arch, n_critics=n_critics),
        }
    shapes: dict[str, tuple[int, ...]] = {}
    for kind, names in groups.items():
        for name in names:
            shapes.update({f"{name}.{k}": tuple(t.shape) for k, t in nets[kind].state_dict().items()})
    return shapes


def check_sale_saved_state(
    observation_space: Any,
    action_space: Any,
    kwargs: dict[str, Any],
    state: Any,
    groups: dict[str, tuple[str, ...]],
    only: tuple[str, ...] | None = None,
) -> None:
    """Refuse a stored state dict that is not exactly that of the SALE networks a file's policy ``kwargs`` declare
    (``net_arch``, ``n_critics``, ``representation_kwargs``, ``normalize_obs``), before building them.

    Raises:
        ModelFileError: the declared networks cannot be built, or a tensor is missing, extra or misshapen.
    """
    try:
        if kwargs.get("representation") != "sale":
            raise ValueError(f"representation must be 'sale', got {kwargs.get('representation')!r}")
        sale = check_sale_kwargs(kwargs.get("representation_kwargs"))
        pi, qf = parse_net_arch(kwargs.get("net_arch", DEFAULT_NET_ARCH))
        if not (isinstance(observation_space, spaces.Box) and isinstance(action_space, spaces.Box)):
            raise ValueError("SALE networks need Box observation and action spaces")
        obs_dim, action_dim = int(np.prod(observation_space.shape)), int(np.prod(action_space.shape))
        n_critics = declared_n_critics(kwargs)
        shapes = sale_state_shapes(
            obs_dim, action_dim, pi, qf, n_critics, sale["embedding_dim"], sale["net_arch"], groups
        )
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"the declared SALE networks cannot be built: {exc}") from exc
    if kwargs.get("normalize_obs", False) is True:
        shape = tuple(observation_space.shape)
        shapes.update({"obs_normalizer.mean": shape, "obs_normalizer.var": shape, "obs_normalizer.count": ()})
    check_sale_state(shapes, state, only)


def check_sale_state(expected: dict[str, tuple[int, ...]], state: Any, only: tuple[str, ...] | None = None) -> None:
    """Refuse a stored state dict whose tensors are not exactly ``expected`` (names and shapes; with ``only``,
    those of ``expected`` whose names start so).

    Raises:
        ModelFileError: naming the first missing, extra or misshapen tensor.
    """
    if not isinstance(state, dict) or not all(isinstance(t, torch.Tensor) for t in state.values()):
        raise ModelFileError("the policy entry is not a state dict of tensors")
    if only is not None:
        expected = {name: shape for name, shape in expected.items() if name.startswith(only)}
    stored = {name: tuple(t.shape) for name, t in state.items()}
    if set(stored) != set(expected):
        missing, extra = sorted(set(expected) - set(stored)), sorted(set(stored) - set(expected))
        raise ModelFileError(
            f"the stored tensors do not match the declared SALE networks: missing {missing[:6]}, extra {extra[:6]}"
        )
    for name, shape in expected.items():
        if stored[name] != shape:
            raise ModelFileError(f"tensor {name!r} has shape {stored[name]}, the declared SALE networks need {shape}")

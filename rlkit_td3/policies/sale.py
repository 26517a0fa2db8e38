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

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules import module as _module_mod

from rlkit_td3.policies.networks import _mlp


def avg_l1_norm(x: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """``x`` divided by the mean of its absolute values over the last dimension (at least ``eps``): AvgL1Norm."""
    return x / x.abs().mean(dim=-1, keepdim=True).clamp(min=eps)


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


def _has_hooks(module: nn.Module) -> bool:
    return bool(
        module._forward_hooks or module._forward_pre_hooks or module._backward_hooks or module._backward_pre_hooks
    )


def _global_hooks() -> bool:
    return bool(
        getattr(_module_mod, "_global_forward_hooks", None)
        or getattr(_module_mod, "_global_forward_pre_hooks", None)
        or getattr(_module_mod, "_global_backward_hooks", None)
        or getattr(_module_mod, "_global_backward_pre_hooks", None)
    )


def _run(net: nn.Module, x: torch.Tensor, start: int = 0) -> torch.Tensor:
    """``net(x)`` for a ``Linear`` or an ``nn.Sequential`` (from its module ``start`` on), calling the functions
    ``Linear``, ``ELU``, ``ReLU`` and ``Tanh`` call themselves, without ``nn.Module``'s call dispatch (about a tenth
    of a TD7 update's time on a CPU goes to the Python around its operations). Any other module, a module with
    hooks, or any global module hook: the module is called."""
    hooked = _global_hooks()
    if start == 0 and (hooked or _has_hooks(net)):
        return net(x)
    modules = net._modules.values() if type(net) is nn.Sequential else (net,)
    for i, module in enumerate(modules):
        if i < start:
            continue
        kind = type(module)
        if hooked or _has_hooks(module):
            x = module(x)
        elif kind is nn.Linear:
            params = module._parameters
            x = F.linear(x, params["weight"], params["bias"])
        elif kind is nn.ELU:
            x = F.elu(x, module.alpha, module.inplace)
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
        or _has_hooks(first)
        or _has_hooks(net)
        or _global_hooks()
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

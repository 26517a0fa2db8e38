"""TD7's three trained steps (SALE encoders, critics, actor) with their backward passes written out.

`rlkit_td3.td7.TD7._train_step` is the readable update: autograd differentiates the losses. At TD7's sizes on a CPU
(HalfCheetah: networks of 256, batches of 256, one thread) three quarters of an update is matrix products, and
building and walking autograd's graph is a good part of the rest. `train_step` makes the same update from the
same formulas without autograd: each network's forward keeps the activations its backward needs, and each backward
is the chain rule of the layers it crosses:

* ``Linear`` ``y = x W^T + b``: ``dW = g^T x``, ``db = sum_rows g``, ``dx = g W`` (only the input columns that
  reach a trained network: none for the critics' embeddings in the critic step, none for ``z_s`` in the actor
  step);
* ELU, from its output ``y``: ``g * (min(y, 0) + 1)``; ReLU: ``g`` where ``y > 0``; tanh: ``g * (1 - y^2)``;
* AvgL1Norm ``y = x / m``, ``m = max(mean|x|, eps)``: ``dx = (g - sign(x) mean(g y)) / m``;
* the losses: the encoders' mean squared error, the critics' (LAP's Huber loss, or the mean squared error with a
  uniform buffer), the actor's ``-mean Q`` over both critics (whose weights get no gradient).

The gradients are set as the parameters' ``.grad`` and the optimizers step as in the readable update. The values
are those of the readable update up to the rounding of sums taken in another order (float64: equal to about 1e-15
relative per update, `tests/test_td7_fused.py`; the authors' update, `tests/test_td7_equivalence.py`, is checked
through both paths). `eligible` says when it applies: the library's own SALE networks (ELU or ReLU hidden layers),
no module, parameter or global hooks, float32 or float64 on the CPU, a uniform or a LAP batch. Anything else, or
``model.use_fused_update = False``, takes the readable update.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from rlkit_td3.buffers import (
    NStepReplayBufferSamples,
    PrioritizedReplayBuffer,
    PrioritizedReplayBufferSamples,
    ReplayBufferSamples,
)
from rlkit_td3.policies.sale import SALEActor, SALECritic, SALEEncoder
from rlkit_td3.policies.sale_functions import avg_l1_norm_backward, avg_l1_norm_saving, elu, elu_backward
from rlkit_td3.update.optim import optimizer_step
from rlkit_td3.utils import global_module_hooks, module_has_hooks

_relu_backward = torch.ops.aten.threshold_backward
_tanh_backward = torch.ops.aten.tanh_backward
_EPS = 1e-8  # AvgL1Norm's floor (`sale_functions.avg_l1_norm`'s default, which the SALE networks use)

Layers = list[tuple[nn.Linear, str]]
"""A network as its ``Linear`` layers, each with the activation after it: ``"elu"``, ``"relu"``, ``"tanh"`` or
``""``."""


def _layers(net: nn.Module) -> Layers | None:
    """``net`` (a ``Linear`` or an ``nn.Sequential`` of ``Linear`` layers, each followed by at most one ELU with
    ``alpha`` 1, ReLU or Tanh) as `Layers`, or None."""
    modules = list(net) if type(net) is nn.Sequential else [net]
    layers: Layers = []
    for module in modules:
        kind = type(module)
        if kind is nn.Linear and module.bias is not None:
            layers.append((module, ""))
            continue
        if not layers or layers[-1][1]:
            return None
        if kind is nn.ELU and module.alpha == 1.0:
            layers[-1] = (layers[-1][0], "elu")
        elif kind is nn.ReLU:
            layers[-1] = (layers[-1][0], "relu")
        elif kind is nn.Tanh:
            layers[-1] = (layers[-1][0], "tanh")
        else:
            return None
    return layers or None


def _forward(layers: Layers, x: torch.Tensor) -> list[torch.Tensor]:
    """``[x, output of layer 1, ..., output of the last layer]`` (after each activation)."""
    outputs = [x]
    for linear, act in layers:
        x = torch.addmm(linear.bias, x, linear.weight.t())
        if act == "elu":
            x = elu(x)
        elif act == "relu":
            x = x.relu_()
        elif act == "tanh":
            x = x.tanh_()
        outputs.append(x)
    return outputs


def _backward(
    layers: Layers,
    outputs: list[torch.Tensor],
    grad: torch.Tensor,
    columns: tuple[int, int] | None = None,
    train: bool = True,
) -> torch.Tensor | None:
    """Back from ``grad`` (the loss's gradient at the last layer's output) through ``layers``: sets each layer's
    ``.grad`` (with ``train``) and returns the gradient of the input's ``columns`` (None without them)."""
    for i in range(len(layers) - 1, -1, -1):
        linear, act = layers[i]
        out = outputs[i + 1]
        if act == "elu":
            grad = elu_backward(grad, out)
        elif act == "relu":
            grad = _relu_backward(grad, out, 0)
        elif act == "tanh":
            grad = _tanh_backward(grad, out)
        if train:
            linear.weight.grad = grad.t().mm(outputs[i])
            linear.bias.grad = grad.sum(0)
        if i > 0:
            grad = grad.mm(linear.weight)
        elif columns is not None:
            return grad.mm(linear.weight[:, columns[0] : columns[1]])
    return None


def _avg_l1(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return avg_l1_norm_saving(x, _EPS)


_avg_l1_backward = avg_l1_norm_backward


def _flat(obs: torch.Tensor) -> torch.Tensor:
    return obs.reshape(obs.shape[0], -1)


class _Networks:
    """The `Layers` of a `TD7Policy`'s trained networks and of the fixed encoder the actor step reads."""

    def __init__(self, policy: Any) -> None:
        encoder, fixed, actor, critic = policy.encoder, policy.fixed_encoder, policy.actor, policy.critic
        self.f = _layers(encoder.state_encoder)
        self.g = _layers(encoder.state_action_encoder)
        self.fixed_g = _layers(fixed.state_action_encoder)
        self.actor_embedding = _layers(actor.obs_embedding)
        self.mu = _layers(actor.mu)
        self.critics = [(_layers(q.sa_embedding), _layers(q.q)) for q in critic.q_networks]

    def complete(self) -> bool:
        parts = [self.f, self.g, self.fixed_g, self.actor_embedding, self.mu]
        parts += [part for pair in self.critics for part in pair]
        if any(part is None for part in parts):
            return False
        hidden_ok = all(act in ("elu", "relu") for part in (self.f, self.g, self.fixed_g) for _, act in part[:-1])
        ends_ok = all(part[-1][1] == "" for part in (self.f, self.g, self.fixed_g, self.actor_embedding))
        actor_ok = self.mu[-1][1] == "tanh" and all(act == "relu" for _, act in self.mu[:-1])
        critics_ok = all(
            emb[-1][1] == "" and len(emb) == 1 and q[-1][1] == "" and all(act in ("elu", "relu") for _, act in q[:-1])
            for emb, q in self.critics
        )
        return hidden_ok and ends_ok and actor_ok and critics_ok


def eligible(model: Any, batch: ReplayBufferSamples) -> _Networks | None:
    """The networks when ``train_step`` can make ``model``'s update on ``batch`` (see the module's docstring), else
    None."""
    policy = model.policy
    if not model.use_fused_update or not torch.is_grad_enabled() or global_module_hooks():
        return None
    if (
        type(policy.encoder) is not SALEEncoder
        or type(policy.fixed_encoder) is not SALEEncoder
        or type(policy.actor) is not SALEActor
        or type(policy.critic) is not SALECritic
    ):
        return None
    trained = (policy.encoder, policy.actor, policy.critic)
    for net in (*trained, policy.fixed_encoder):
        if any(module_has_hooks(m) for m in net.modules()):
            return None
    params = [p for net in trained for p in net.parameters()]
    dtype = params[0].dtype
    for p in params:
        if (
            not p.requires_grad
            or p.dtype != dtype
            or p.device.type != "cpu"
            or p._backward_hooks
            or getattr(p, "_post_accumulate_grad_hooks", None)
        ):
            return None
    if dtype not in (torch.float32, torch.float64) or next(policy.fixed_encoder.parameters()).dtype != dtype:
        return None
    if batch.observations.dtype != dtype or batch.actions.dtype != dtype:
        return None
    if isinstance(batch, PrioritizedReplayBufferSamples):
        buffer = model.replay_buffer
        if batch.weights is not None or type(buffer).critic_loss is not PrioritizedReplayBuffer.critic_loss:
            return None
    elif type(batch) not in (ReplayBufferSamples, NStepReplayBufferSamples):
        return None
    nets = _Networks(policy)
    return nets if nets.complete() else None


def encoder_step(
    nets: _Networks, policy: Any, obs: torch.Tensor, actions: torch.Tensor, next_obs: torch.Tensor
) -> torch.Tensor:
    """SALE: ``g(f(s), a)`` learns ``f(s')`` (mean squared error); sets the encoder's gradients and steps its
    optimizer. Returns the loss."""
    next_zs = _avg_l1(_forward(nets.f, _flat(next_obs))[-1])[0]
    f_out = _forward(nets.f, _flat(obs))
    zs, scale, through = _avg_l1(f_out[-1])
    g_out = _forward(nets.g, torch.cat([zs, actions], dim=1))
    diff = g_out[-1] - next_zs
    loss = diff.pow(2).mean()
    grad = _backward(nets.g, g_out, diff * (2.0 / diff.numel()), columns=(0, zs.shape[1]))
    _backward(nets.f, f_out, _avg_l1_backward(grad, zs, scale, through))
    optimizer_step(policy.encoder_optimizer)
    return loss


def _critic_forward(nets: _Networks, sa: torch.Tensor, zsa: torch.Tensor, zs: torch.Tensor) -> list[tuple]:
    """Each critic's outputs and AvgL1Norm state: ``Q_i(s, a, z_sa, z_s)`` with what its backward reads."""
    runs = []
    for emb, q in nets.critics:
        e, scale, through = _avg_l1(_forward(emb, sa)[-1])
        runs.append((_forward(q, torch.cat([e, zsa, zs], dim=1)), e, scale, through))
    return runs


def critic_step(
    nets: _Networks,
    model: Any,
    batch: ReplayBufferSamples,
    zs: torch.Tensor,
    zsa: torch.Tensor,
    target_q: torch.Tensor,
) -> torch.Tensor:
    """The critics' step on ``target_q`` (LAP's Huber loss and new priorities, or the mean squared error): sets the
    critics' gradients and steps their optimizer. Returns the loss."""
    sa = torch.cat([_flat(batch.observations), batch.actions], dim=1)
    runs = _critic_forward(nets, sa, zsa, zs)
    current_q = torch.stack([outputs[-1].squeeze(-1) for outputs, *_ in runs])
    delta = current_q - target_q
    n = delta.shape[1]
    if isinstance(batch, PrioritizedReplayBufferSamples):
        loss = model.replay_buffer.critic_loss(batch, current_q, target_q)  # LAP: Huber, new priorities
        grad_q = torch.where(delta.abs() < 1.0, delta, delta.sign()).div_(n)
    else:
        loss = delta.pow(2).mean(dim=1).sum()
        grad_q = delta * (2.0 / n)
    width = runs[0][1].shape[1]
    for (emb, q), (outputs, e, scale, through), grad in zip(nets.critics, runs, grad_q):
        grad_e = _backward(q, outputs, grad.unsqueeze(1), columns=(0, width))
        _backward(emb, [sa, None], _avg_l1_backward(grad_e, e, scale, through))
    optimizer_step(model.policy.critic_optimizer)
    return loss


def actor_step(nets: _Networks, policy: Any, obs: torch.Tensor, zs: torch.Tensor) -> torch.Tensor:
    """The actor ascends the mean of every critic's ``Q(s, pi(s))`` (the critics' and the fixed encoder's weights
    are constants): sets the actor's gradients and steps its optimizer. Returns the loss."""
    flat = _flat(obs)
    s_emb, s_scale, s_through = _avg_l1(_forward(nets.actor_embedding, flat)[-1])
    mu_out = _forward(nets.mu, torch.cat([s_emb, zs], dim=1))
    pi = mu_out[-1]
    zs_width, action_width = zs.shape[1], pi.shape[1]
    g_out = _forward(nets.fixed_g, torch.cat([zs, pi], dim=1))
    zsa = g_out[-1]
    sa = torch.cat([flat, pi], dim=1)
    runs = _critic_forward(nets, sa, zsa, zs)
    q_values = torch.stack([outputs[-1].squeeze(-1) for outputs, *_ in runs])
    loss = -q_values.mean()
    grad_q = torch.full_like(runs[0][0][-1], -1.0 / q_values.numel())
    grad_pi = grad_zsa = None
    e_width, obs_width = runs[0][1].shape[1], flat.shape[1]
    for (emb, q), (outputs, e, scale, through) in zip(nets.critics, runs):
        grad_in = _backward(q, outputs, grad_q, columns=(0, e_width + zsa.shape[1]), train=False)
        grad_e = _avg_l1_backward(grad_in[:, :e_width], e, scale, through)
        grad_a = grad_e.mm(emb[0][0].weight[:, obs_width:])
        grad_pi = grad_a if grad_pi is None else grad_pi + grad_a
        grad_zsa = grad_in[:, e_width:] if grad_zsa is None else grad_zsa + grad_in[:, e_width:]
    grad_pi = grad_pi + _backward(
        nets.fixed_g, g_out, grad_zsa, columns=(zs_width, zs_width + action_width), train=False
    )
    grad_emb = _backward(nets.mu, mu_out, grad_pi, columns=(0, s_emb.shape[1]))
    _backward(nets.actor_embedding, [flat, None], _avg_l1_backward(grad_emb, s_emb, s_scale, s_through))
    optimizer_step(policy.actor_optimizer)
    return loss

"""Issue 19 experiment: the TD3 update with a hand-written backward over preallocated buffers, no autograd.

`FusedTD3` computes what ``OffPolicyAlgorithm._train_step`` computes for the plain case (uniform
``ReplayBuffer``, one-step targets, no ``normalize_obs``, no LayerNorm, the default flatten extractor, ReLU hidden
layers, tanh actor output): target actions from the actor target plus clipped smoothing noise drawn from the
model's ``_smoothing_rng`` (same draw, same order), ``y = r + gamma (1 - terminated) min_i Q'_i(s', a')``, the
critic loss as the sum over critics of each MSE, and every ``policy_delay``-th update the actor loss
``-Q1(s, pi(s)).mean()`` and the Polyak lerp of the targets. The forward and backward passes are explicit
``addmm`` / ``baddbmm`` / ``bmm`` / ``mm`` calls with ``out=`` into buffers allocated once; ReLU outputs serve as
the masks of the backward (``threshold_backward``); gradients are written into preallocated tensors that stay
installed as the parameters' ``.grad``, and the step is the library's own (`rlkit_td3.update.optim.optimizer_step` on
the model's fused Adam, then the same ``torch._foreach_lerp_``).

Ideas, each a switch of `FusedTD3` so that it can be timed on its own:

1. ``cat_layer0``: critic layer 0 of all critics as ONE ``addmm`` (the input ``[s, a]`` is shared): ``x @ W0cat``
   with ``W0cat`` of shape ``(obs+act, n_critics * width)`` gathered from the weights, and its weight gradient as
   one ``mm``; otherwise a ``baddbmm`` on the expanded input, as the library does.
2. ``action_rows``: in the actor step only the action rows of critic 0's layer-0 weight are used for the input
   gradient (``act`` of the ``obs + act`` rows); otherwise the full input gradient is computed and sliced.
3. the target forwards (actor target, critic targets) with preallocated outputs. Timed once inside the library's
   autograd step (``_train_step`` with only the target computation replaced, in commit ``16ec614``): no gain
   (x1.014 and x0.995 in two runs), so that variant was removed; the fused paths here include it.
4. ``outer_elementwise``: the gradient through a width-1 output layer (``dq @ W_last^T``, a rank-1 product) as
   a broadcast multiply instead of a ``bmm``/``mm`` with inner size 1; in the actor step this product is a
   constant row (``-W_last / B``) and is not recomputed per sample.
5. ``bias_row`` (found with the profiler: ``addmm``/``baddbmm`` with a broadcast bias first copy the bias into the
   whole ``(B, width)`` output, ~40 us per call at these sizes): the layer-0 biases (critics, critic 0 in the
   actor step, actor and actor target) ride inside the GEMM as an extra weight row against a column of ones in
   the input (``[s, 1, a]``), so layer 0 is a plain ``mm`` and its bias gradient is the extra row (column) of the
   weight-gradient ``mm``, no ``sum``. Costs a copy of the small ``(in + 1, width)`` weights instead of the
   ``(B, width)`` bias broadcast; only pays where ``in + 1 < B``, i.e. layer 0. Needs ``cat_layer0``.

Usage::

    python benchmarks/fused_update.py --check          # equivalence checks (a) 1 update, (b) 1,000 updates, (c)
    python benchmarks/fused_update.py --time [--steps 60 --reps 7]
    python benchmarks/fused_update.py --profile        # torch.profiler table of the fused update
    python benchmarks/fused_update.py --library [--steps 60 --reps 7 --out FILE]   # the library's switch on/off

The library's version of the bitwise variant (no ``cat_layer0``, ``bias_row`` or ``action_rows``, and the rank-1
products as autograd's ``bmm`` / ``mm``) is `rlkit_td3.update.fused_update.FusedUpdate`, used by ``model.train`` by
default;
``--library`` times ``model.train`` with ``model.use_fused_update`` True against False.

Run with one thread (``OMP_NUM_THREADS=1``); the script sets ``torch.set_num_threads(1)``.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))

from throughput import BATCH, ShapeEnv, build, fill_buffer, gemm_bound_ms  # noqa: E402

from rlkit_td3.buffers import ReplayBuffer, ReplayBufferSamples  # noqa: E402
from rlkit_td3.update.optim import MOMENT_FLUSH_EVERY, flush_tiny_moments, optimizer_step  # noqa: E402

_threshold_backward = torch.ops.aten.threshold_backward.grad_input
_tanh_backward = torch.ops.aten.tanh_backward.grad_input


class FusedTD3:
    """The TD3/DDPG update of ``model`` without autograd, over buffers allocated for ``batch_size``."""

    def __init__(
        self,
        model,
        batch_size: int = BATCH,
        cat_layer0: bool = True,
        action_rows: bool = True,
        outer_elementwise: bool = True,
        bias_row: bool = True,
    ) -> None:
        policy = model.policy
        if type(model.replay_buffer) is not ReplayBuffer or model.n_steps != 1:
            raise ValueError("the fused update covers the plain ReplayBuffer with one-step targets only")
        if policy.normalize_obs or policy.critic_layer_norm or policy.activation_fn is not nn.ReLU:
            raise ValueError("the fused update covers ReLU networks without normalize_obs or LayerNorm only")
        self.model, self.policy = model, policy
        if bias_row and not cat_layer0:
            raise ValueError("bias_row needs cat_layer0")
        self.cat_layer0, self.action_rows, self.outer_elementwise = cat_layer0, action_rows, outer_elementwise
        self.bias_row = bias_row
        actor, critic = policy.actor, policy.critic
        self.a_lin = [m for m in actor.mu if isinstance(m, nn.Linear)]
        self.ta_lin = [m for m in policy.actor_target.mu if isinstance(m, nn.Linear)]
        self.c_w, self.c_b = list(critic.weights), list(critic.biases)
        self.tc_w, self.tc_b = list(policy.critic_target.weights), list(policy.critic_target.biases)
        p = self.c_w[0]
        dtype, device = p.dtype, p.device
        self.C, self.D_in = p.shape[0], p.shape[1]
        self.A = self.a_lin[-1].out_features
        self.D = self.D_in - self.A
        self.B = B = batch_size

        def buf(*shape):
            return torch.empty(shape, dtype=dtype, device=device)

        C, D_in = self.C, self.D_in
        a_widths = [m.out_features for m in self.a_lin[:-1]]
        c_widths = [w.shape[2] for w in self.c_w[:-1]]
        h0 = c_widths[0]
        # inputs [s, a] of the critics: target (s', a'), critic loss (s, a), actor step (s, pi(s)); with bias_row
        # [s, 1, a]: the column of ones carries the layer-0 biases inside the GEMM (actor: columns [s, 1])
        E = int(bias_row)
        self.ac = self.D + E  # first action column
        self.x_next, self.x, self.x_pi = buf(B, D_in + E), buf(B, D_in + E), buf(B, D_in + E)
        for x in (self.x_next, self.x, self.x_pi):
            x[:, self.D : self.ac] = 1.0
        self.noise = torch.empty(B, self.A, device=device)  # drawn in float32, as torch.randn's default dtype
        self.y = buf(B)
        # actor forwards (target and online): hidden activations and the pre-tanh output
        self.ta_h = [buf(B, w) for w in a_widths]
        self.a_h = [buf(B, w) for w in a_widths]
        self.a_u = buf(B, self.A)
        # critic forwards: layer 0 as (B, C * width) when concatenated, else (C, B, width)
        if cat_layer0:
            self.w0cat, self.b0cat = buf(D_in + E, C * h0), buf(C * h0)
            self.tz0flat, self.z0flat, self.dz0flat = buf(B, C * h0), buf(B, C * h0), buf(B, C * h0)
            self.g0cat = buf(D_in + E, C * h0)

            def tr(t):
                return t.view(B, C, h0).transpose(0, 1)

            z0, tz0, dz0 = tr(self.z0flat), tr(self.tz0flat), tr(self.dz0flat)
        else:
            z0, tz0, dz0 = buf(C, B, h0), buf(C, B, h0), buf(C, B, h0)
        if bias_row:
            self.a_w0aug = buf(self.D + 1, a_widths[0])  # actor layer 0: [W0^T; b0]
            self.ga0aug = buf(a_widths[0], self.D + 1)
            self.q_w0aug = buf(D_in + 1, h0)  # critic 0's layer 0 as [W_obs; b; W_act]
        self.tz = [tz0] + [buf(C, B, w) for w in c_widths[1:]]
        self.z = [z0] + [buf(C, B, w) for w in c_widths[1:]]
        self.dz = [dz0] + [buf(C, B, w) for w in c_widths[1:]]
        self.tq, self.q, self.dq = buf(C, B, 1), buf(C, B, 1), buf(C, B, 1)
        self.next_q = buf(B)
        # actor step: critic 0 forward/backward, actor backward
        self.g = [buf(B, w) for w in c_widths]
        self.dg = [buf(B, w) for w in c_widths]
        self.q1 = buf(B, 1)
        self.dx_pi = buf(B, D_in + E)
        self.da, self.du = buf(B, self.A), buf(B, self.A)
        self.dah = [buf(B, w) for w in a_widths]
        # gradients, installed as .grad of every trained parameter
        self.critic_params = list(critic.parameters())
        self.actor_params = list(actor.parameters())
        self.critic_grads = [torch.zeros_like(t) for t in self.critic_params]
        self.actor_grads = [torch.zeros_like(t) for t in self.actor_params]
        index = {id(t): i for i, t in enumerate(self.critic_params)}
        self.gc_w = [self.critic_grads[index[id(w)]] for w in self.c_w]
        self.gc_b = [self.critic_grads[index[id(b)]] for b in self.c_b]
        index = {id(t): i for i, t in enumerate(self.actor_params)}
        self.ga_w = [self.actor_grads[index[id(m.weight)]] for m in self.a_lin]
        self.ga_b = [self.actor_grads[index[id(m.bias)]] for m in self.a_lin]
        self.loss_c = torch.zeros((), dtype=dtype, device=device)
        self.loss_a = torch.zeros((), dtype=dtype, device=device)

    def install_grads(self) -> None:
        """Make the preallocated tensors the parameters' ``.grad`` (the library's ``zero_grad`` sets them None)."""
        for param, grad in zip(self.critic_params, self.critic_grads):
            param.grad = grad
        for param, grad in zip(self.actor_params, self.actor_grads):
            param.grad = grad

    # ------------------------------------------------------------------ pieces
    def _actor_forward(self, lin: list[nn.Linear], obs: torch.Tensor, hidden: list[torch.Tensor], out: torch.Tensor):
        """tanh(MLP(obs)) written into ``out`` (hidden ReLU outputs kept in ``hidden``, pre-tanh in ``a_u``)."""
        x = obs
        for i, (m, h) in enumerate(zip(lin[:-1], hidden)):
            if i == 0 and self.bias_row:  # obs is [s, 1]
                D = self.D
                self.a_w0aug[:D].copy_(m.weight.t())
                self.a_w0aug[D].copy_(m.bias)
                torch.mm(x, self.a_w0aug, out=h)
            else:
                torch.addmm(m.bias, x, m.weight.t(), out=h)
            h.clamp_min_(0.0)
            x = h
        torch.addmm(lin[-1].bias, x, lin[-1].weight.t(), out=self.a_u)
        torch.tanh(self.a_u, out=out)

    def _critic_forward(self, weights, biases, x: torch.Tensor, z: list[torch.Tensor], q: torch.Tensor, flat):
        """All critics at ``x`` (B, obs+act): hidden ReLU outputs into ``z``, Q-values into ``q`` (C, B, 1)."""
        if self.bias_row:
            C, h0, D, A = self.C, weights[0].shape[2], self.D, self.A
            w = self.w0cat
            w[:D].view(D, C, h0).copy_(weights[0][:, :D].transpose(0, 1))
            w[D].view(C, h0).copy_(biases[0].view(C, h0))
            w[D + 1 :].view(A, C, h0).copy_(weights[0][:, D:].transpose(0, 1))
            torch.mm(x, w, out=flat)
            flat.clamp_min_(0.0)
        elif self.cat_layer0:
            C, h0 = self.C, weights[0].shape[2]
            self.w0cat.view(self.D_in, C, h0).copy_(weights[0].transpose(0, 1))
            self.b0cat.view(C, h0).copy_(biases[0].view(C, h0))
            torch.addmm(self.b0cat, x, self.w0cat, out=flat)
            flat.clamp_min_(0.0)
        else:
            torch.baddbmm(biases[0], x.expand(self.C, -1, -1), weights[0], out=z[0])
            z[0].clamp_min_(0.0)
        h = z[0]
        for w, b, out in zip(weights[1:-1], biases[1:-1], z[1:]):
            torch.baddbmm(b, h, w, out=out)
            out.clamp_min_(0.0)
            h = out
        torch.baddbmm(biases[-1], h, weights[-1], out=q)

    @torch.no_grad()
    def target(self, batch: ReplayBufferSamples) -> torch.Tensor:
        """``y = r + gamma (1 - terminated) min_i Q'_i(s', a')`` into ``self.y`` (no autograd anywhere)."""
        model, D = self.model, self.D
        x = self.x_next
        x[:, :D].copy_(batch.next_observations)
        action = x[:, self.ac :]
        obs = x[:, : D + 1] if self.bias_row else batch.next_observations
        self._actor_forward(self.ta_lin, obs, self.ta_h, action)
        if model.target_policy_noise > 0.0:
            noise = self.noise
            torch.randn(noise.shape, generator=model._smoothing_rng, out=noise)
            noise.mul_(model.target_policy_noise).clamp_(-model.target_noise_clip, model.target_noise_clip)
            action.add_(noise).clamp_(-1.0, 1.0)
        self._critic_forward(self.tc_w, self.tc_b, x, self.tz, self.tq, getattr(self, "tz0flat", None))
        torch.amin(self.tq.view(self.C, self.B), dim=0, out=self.next_q)
        # same operation order as the library: r + (gamma * (1 - terminated)) * next_q
        y = self.y
        y.copy_(batch.terminated).neg_().add_(1.0)
        y.mul_(model.gamma).mul_(self.next_q).add_(batch.rewards)
        return y

    def critic_grads_step(self, batch: ReplayBufferSamples, y: torch.Tensor) -> None:
        C, B, D = self.C, self.B, self.D
        x = self.x
        x[:, :D].copy_(batch.observations)
        x[:, self.ac :].copy_(batch.actions)
        self._critic_forward(self.c_w, self.c_b, x, self.z, self.q, getattr(self, "z0flat", None))
        dq = self.dq
        torch.sub(self.q, y.view(1, B, 1), out=dq)
        self.loss_c = torch.vdot(dq.view(-1), dq.view(-1)) / B  # sum over critics of each MSE (statistic only)
        dq.mul_(2.0 / B)
        z, dz, w = self.z, self.dz, self.c_w
        last = len(w) - 1
        torch.bmm(z[last - 1].transpose(1, 2), dq, out=self.gc_w[last])
        torch.sum(dq, dim=1, keepdim=True, out=self.gc_b[last])
        if self.outer_elementwise:
            torch.mul(dq, w[last].transpose(1, 2), out=dz[last - 1])
        else:
            torch.bmm(dq, w[last].transpose(1, 2), out=dz[last - 1])
        _threshold_backward(dz[last - 1], z[last - 1], 0.0, grad_input=dz[last - 1])
        for i in range(last - 1, 0, -1):
            torch.bmm(z[i - 1].transpose(1, 2), dz[i], out=self.gc_w[i])
            torch.sum(dz[i], dim=1, keepdim=True, out=self.gc_b[i])
            torch.bmm(dz[i], w[i].transpose(1, 2), out=dz[i - 1])
            _threshold_backward(dz[i - 1], z[i - 1], 0.0, grad_input=dz[i - 1])
        if self.bias_row:
            h0, A = w[0].shape[2], self.A
            g = self.g0cat
            torch.mm(x.t(), self.dz0flat, out=g)
            self.gc_w[0][:, :D].copy_(g[:D].view(D, C, h0).transpose(0, 1))
            self.gc_w[0][:, D:].copy_(g[D + 1 :].view(A, C, h0).transpose(0, 1))
            self.gc_b[0].view(C, h0).copy_(g[D].view(C, h0))
        elif self.cat_layer0:
            h0 = w[0].shape[2]
            torch.mm(x.t(), self.dz0flat, out=self.g0cat)
            self.gc_w[0].copy_(self.g0cat.view(self.D_in, C, h0).transpose(0, 1))
            torch.sum(self.dz0flat, dim=0, out=self.gc_b[0].view(C * h0))
        else:
            torch.bmm(x.t().expand(C, -1, -1), dz[0], out=self.gc_w[0])
            torch.sum(dz[0], dim=1, keepdim=True, out=self.gc_b[0])

    def actor_grads_step(self, batch: ReplayBufferSamples) -> None:
        B, D = self.B, self.D
        obs = batch.observations
        x = self.x_pi
        x[:, :D].copy_(obs)
        a = x[:, self.ac :]
        if self.bias_row:
            obs = x[:, : D + 1]
        self._actor_forward(self.a_lin, obs, self.a_h, a)
        # Q1(s, pi(s)) with critic 0 (already stepped, as in the library)
        w = [t[0] for t in self.c_w]
        b = [t[0] for t in self.c_b]
        g, dg = self.g, self.dg
        h = x
        for i, (wi, bi, out) in enumerate(zip(w[:-1], b[:-1], g)):
            if i == 0 and self.bias_row:
                q_w = self.q_w0aug
                q_w[:D].copy_(wi[:D])
                q_w[D].copy_(bi[0])
                q_w[D + 1 :].copy_(wi[D:])
                torch.mm(h, q_w, out=out)
            else:
                torch.addmm(bi, h, wi, out=out)
            out.clamp_min_(0.0)
            h = out
        torch.addmm(b[-1], h, w[-1], out=self.q1)
        self.loss_a = -self.q1.mean()
        # d(-mean Q1)/dq1 = -1/B for every sample
        last = len(w) - 1
        if self.outer_elementwise:
            row = w[last].t().mul(-1.0 / B)  # (1, width): the same row for every sample
            _threshold_backward(row.expand(B, -1), g[last - 1], 0.0, grad_input=dg[last - 1])
        else:
            dq1 = torch.full((B, 1), -1.0 / B, dtype=x.dtype, device=x.device)
            torch.mm(dq1, w[last].t(), out=dg[last - 1])
            _threshold_backward(dg[last - 1], g[last - 1], 0.0, grad_input=dg[last - 1])
        for i in range(last - 1, 0, -1):
            torch.mm(dg[i], w[i].t(), out=dg[i - 1])
            _threshold_backward(dg[i - 1], g[i - 1], 0.0, grad_input=dg[i - 1])
        if self.action_rows:
            torch.mm(dg[0], w[0][D:].t(), out=self.da)
            da = self.da
        elif self.bias_row:
            torch.mm(dg[0], self.q_w0aug.t(), out=self.dx_pi)
            da = self.dx_pi[:, self.ac :]
        else:
            torch.mm(dg[0], w[0].t(), out=self.dx_pi)
            da = self.dx_pi[:, D:]
        _tanh_backward(da, a, grad_input=self.du)
        # actor backward
        lin, hs, dh = self.a_lin, self.a_h, self.dah
        n = len(lin) - 1
        grad = self.du
        for i in range(n, -1, -1):
            if i == 0 and self.bias_row:  # obs is [s, 1]: the bias gradient is the last column
                torch.mm(grad.t(), obs, out=self.ga0aug)
                self.ga_w[0].copy_(self.ga0aug[:, :D])
                self.ga_b[0].copy_(self.ga0aug[:, D])
            else:
                torch.mm(grad.t(), hs[i - 1] if i > 0 else obs, out=self.ga_w[i])
                torch.sum(grad, dim=0, out=self.ga_b[i])
            if i > 0:
                torch.mm(grad, lin[i].weight, out=dh[i - 1])
                _threshold_backward(dh[i - 1], hs[i - 1], 0.0, grad_input=dh[i - 1])
                grad = dh[i - 1]

    # ------------------------------------------------------------------ the update
    @torch.no_grad()
    def step(self, batch: ReplayBufferSamples, update_actor: bool) -> None:
        """One update, as ``model._train_step(batch, update_actor)`` (grads must be installed)."""
        model, policy = self.model, self.policy
        y = self.target(batch)
        self.critic_grads_step(batch, y)
        optimizer_step(policy.critic_optimizer)
        model._critic_loss_sum += self.loss_c
        model._n_critic_losses += 1
        if update_actor:
            self.actor_grads_step(batch)
            optimizer_step(policy.actor_optimizer)
            model._actor_loss_sum += self.loss_a
            model._n_actor_losses += 1
            torch._foreach_lerp_(model._critic_target_params, model._critic_params, model.tau)
            torch._foreach_lerp_(model._actor_target_params, model._actor_params, model.tau)

    def train(self, gradient_steps: int, batch_size: int) -> None:
        """``model.train(gradient_steps, batch_size)`` with the fused update (same sampling, flushes, counters)."""
        model = self.model
        assert batch_size == self.B
        model._update_learning_rate()
        self.install_grads()
        for _ in range(gradient_steps):
            model._n_updates += 1
            self.step(model.replay_buffer.sample(batch_size), model._n_updates % model.policy_delay == 0)
            if model._n_updates % MOMENT_FLUSH_EVERY == 0:
                flush_tiny_moments(model.policy.critic_optimizer)
                flush_tiny_moments(model.policy.actor_optimizer)


# ---------------------------------------------------------------------------------------------------------
# checks


def make_model(seed: int = 0, n: int = 20_000):
    """TD3 at HalfCheetah sizes with a buffer of ``n`` random transitions (5 % of them terminal)."""
    model = build("rlkit_td3", "td3", ShapeEnv(), buffer_size=n, seed=seed)
    fill_buffer("rlkit_td3", model, n, seed=seed)
    model.replay_buffer.terminated[:n] = np.random.default_rng(seed + 1).random(n) < 0.05
    return model


def tensors(model) -> dict[str, torch.Tensor]:
    """Parameters, gradients and Adam moments of a model, by name."""
    out = {name: t.detach() for name, t in model.policy.named_parameters()}
    for name, t in model.policy.named_parameters():
        if t.grad is not None:
            out[name + ".grad"] = t.grad
    for opt_name in ("actor_optimizer", "critic_optimizer"):
        opt = getattr(model.policy, opt_name)
        for i, p in enumerate(opt.param_groups[0]["params"]):
            for key in ("exp_avg", "exp_avg_sq"):
                if key in opt.state.get(p, {}):
                    out[f"{opt_name}.{i}.{key}"] = opt.state[p][key]
    return out


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    scale = a.abs().max().item()
    return (a - b).abs().max().item() / (scale if scale > 0 else 1.0)


def cast_batch(batch: ReplayBufferSamples, dtype: torch.dtype) -> ReplayBufferSamples:
    return ReplayBufferSamples(*(t.to(dtype) for t in batch))


def check_one_update(dtype: torch.dtype, **flags) -> dict[str, float]:
    """Check (a): two identical models, 3 identical library updates, then update 4 (critic + actor + lerp) by
    the library on one and the fused path on the other; max relative differences of parameters, of the
    parameter changes of update 4, of the gradients and of the Adam moments."""
    ref, fus = make_model(), make_model()
    if dtype == torch.float64:
        ref.policy.double()
        fus.policy.double()
    fused = FusedTD3(fus, **flags)
    for _ in range(3):
        for model in (ref, fus):
            model._n_updates += 1
            model._train_step(cast_batch(model.replay_buffer.sample(BATCH), dtype), model._n_updates % 2 == 0)
    a, b = tensors(ref), tensors(fus)
    assert all(torch.equal(a[k], b[k]) for k in a), "the library is not deterministic here"
    before = {k: v.clone() for k, v in a.items()}
    ref._n_updates += 1
    fus._n_updates += 1
    assert ref._n_updates % 2 == 0
    ref._train_step(cast_batch(ref.replay_buffer.sample(BATCH), dtype), True)
    fused.install_grads()
    fused.step(cast_batch(fus.replay_buffer.sample(BATCH), dtype), True)
    a, b = tensors(ref), tensors(fus)
    params = [k for k in a if not (k.endswith(".grad") or "optimizer" in k)]
    trained = [k for k in params if not k.startswith(("actor_target", "critic_target"))]
    targets = [k for k in params if k.startswith(("actor_target", "critic_target"))]
    grads = [k for k in a if k.endswith(".grad")]
    moments = [k for k in a if "optimizer" in k]
    return {
        "param": max(rel(a[k], b[k]) for k in params),
        "update (trained params)": max(rel(a[k] - before[k], b[k] - before[k]) for k in trained),
        "update (targets)": max(rel(a[k] - before[k], b[k] - before[k]) for k in targets),
        "grad": max(rel(a[k], b[k]) for k in grads),
        "adam moments": max(rel(a[k], b[k]) for k in moments),
        "critic loss sum": rel(ref._critic_loss_sum, fus._critic_loss_sum),
        "actor loss sum": rel(ref._actor_loss_sum, fus._actor_loss_sum),
    }


def check_long(updates: int, flags: dict | None = None) -> tuple[float, str, list[float]]:
    """Check (b): ``updates`` updates by ``model.train`` vs the fused path from identical starts (float32).

    ``flags=None`` runs the library on both sides, one critic weight moved by one ulp on the second: the scale of
    the drift that float32 rounding alone causes. Returns the worst relative difference of a parameter tensor, its
    name, and the relative L2 difference of all parameters every ``updates // 10`` updates."""
    ref, other = make_model(), make_model()
    if flags is None:
        with torch.no_grad():
            w = other.policy.critic.weights[1]
            w[0, 0, 0] = torch.nextafter(w[0, 0, 0], torch.tensor(1.0))

        def step(n):
            other.train(gradient_steps=n, batch_size=BATCH)
    else:
        fused = FusedTD3(other, **flags)

        def step(n):
            fused.train(n, BATCH)

    curve = []
    for _ in range(10):
        ref.train(gradient_steps=updates // 10, batch_size=BATCH)
        step(updates // 10)
        flat_a = torch.cat([t.detach().flatten() for t in ref.policy.parameters()])
        flat_b = torch.cat([t.detach().flatten() for t in other.policy.parameters()])
        curve.append(((flat_a - flat_b).norm() / flat_a.norm()).item())
    a = dict(ref.policy.named_parameters())
    b = dict(other.policy.named_parameters())
    diffs = {k: rel(a[k].detach(), b[k].detach()) for k in a}
    worst = max(diffs, key=diffs.get)
    return diffs[worst], worst, curve


def check_bitwise(updates: int) -> bool:
    """Check (c): two fused runs from the same start give bitwise equal parameters and Adam moments."""
    runs = []
    for _ in range(2):
        model = make_model()
        FusedTD3(model).train(updates, BATCH)
        runs.append(tensors(model))
    return all(torch.equal(runs[0][k], runs[1][k]) for k in runs[0]) and runs[0].keys() == runs[1].keys()


def run_checks(long_updates: int) -> None:
    print("(a) one update (update 4: critic + actor + lerp), library vs fused, max relative difference")
    variants = {
        "all ideas": {},
        "no bias_row": {"bias_row": False},
        "no cat_layer0/bias_row": {"cat_layer0": False, "bias_row": False},
        "no action_rows": {"action_rows": False},
        "no outer_elementwise": {"outer_elementwise": False},
    }
    for dtype in (torch.float32, torch.float64):
        for name, flags in variants.items():
            res = check_one_update(dtype, **flags)
            print(f"  {str(dtype):14s} {name:22s} " + "  ".join(f"{k} {v:.2e}" for k, v in res.items()), flush=True)
    for label, flags in (
        ("fused, all ideas", {}),
        ("fused, no cat_layer0/bias_row", {"cat_layer0": False, "bias_row": False}),
        ("library vs library with one weight +1 ulp", None),
    ):
        worst, name, curve = check_long(long_updates, flags)
        print(
            f"(b) {long_updates} updates, float32, {label}: max relative difference of a parameter tensor "
            f"{worst:.3e} ({name}); relative L2 difference of all parameters every {long_updates // 10} updates "
            f"{[float(f'{c:.1e}') for c in curve]}",
            flush=True,
        )
    print(f"(c) two fused runs of 200 updates bitwise equal: {check_bitwise(200)}", flush=True)


# ---------------------------------------------------------------------------------------------------------
# timing


def timed(fn, steps: int) -> float:
    start = time.perf_counter()
    fn(steps)
    return (time.perf_counter() - start) / steps * 1e3


def run_timing(steps: int, reps: int) -> None:
    model = make_model(n=50_000)
    variants = {
        "fused (1+2+4+5)": FusedTD3(model),
        "fused no (5) bias_row": FusedTD3(model, bias_row=False),
        "fused no (1),(5)": FusedTD3(model, cat_layer0=False, bias_row=False),
        "fused no (2) action_rows": FusedTD3(model, action_rows=False),
        "fused no (4) outer_elem": FusedTD3(model, outer_elementwise=False),
    }
    sink = io.StringIO()

    def library(n):
        with redirect_stdout(sink):
            model.train(gradient_steps=n, batch_size=BATCH)

    fns = {"library model.train": library}
    for name, fused in variants.items():
        fns[name] = lambda n, f=fused: f.train(n, BATCH)
    for fn in fns.values():  # warm-up
        fn(10)
    res: dict[str, list[float]] = {name: [] for name in fns}
    bounds = []
    for _ in range(reps):
        for name, fn in fns.items():
            res[name].append(timed(fn, steps))
        bounds.append(gemm_bound_ms(2, 2, reps=20)[1])
    mflop = gemm_bound_ms(2, 2, reps=1)[0]
    lib = res["library model.train"]
    print(
        f"ms per update, {reps} interleaved reps of {steps} updates, torch threads {torch.get_num_threads()}, "
        f"{mflop:.0f} MFLOP/update; GEMM bound per rep (ms) {[round(b, 2) for b in bounds]}"
    )
    print(
        f"{'variant':32s} {'median ms':>9s} {'lib/variant min/median/max':>28s} "
        f"{'variant/fused-all min/median/max':>34s} {'bound fraction':>15s}"
    )
    best = res["fused (1+2+4+5)"]
    for name, times in res.items():
        ratios = [x / y for x, y in zip(lib, times)]
        vs_all = [y / x for x, y in zip(best, times)]
        fractions = [b / t for b, t in zip(bounds, times)]
        print(
            f"{name:32s} {statistics.median(times):9.2f} "
            f"{min(ratios):8.3f} {statistics.median(ratios):8.3f} {max(ratios):8.3f}   "
            f"{min(vs_all):10.3f} {statistics.median(vs_all):10.3f} {max(vs_all):10.3f}   "
            f"{statistics.median(fractions):12.1%}   (per rep {[round(t, 2) for t in times]})",
            flush=True,
        )


def run_library_timing(steps: int, reps: int, out: str | None) -> None:
    """The library's ``model.train`` with ``use_fused_update`` on and off (`rlkit_td3.update.fused_update`), TD3 and
    DDPG,
    timed interleaved in one process (on, off, on, off, ...); the same model, buffer and batch size."""
    lines = [
        f"model.train(gradient_steps={steps}, batch_size={BATCH}), obs 26, act 6, net [400, 300], "
        f"torch threads {torch.get_num_threads()}, {reps} interleaved reps, torch {torch.__version__}, "
        f"CPU capability {torch.backends.cpu.get_cpu_capability()}",
        f"{'algo':6s} {'on ms':>7s} {'off ms':>7s}   off/on min/median/max   (per rep on | off)",
    ]
    print(lines[0])
    print(lines[1], flush=True)
    sink = io.StringIO()
    for algo in ("td3", "ddpg"):
        model = build("rlkit_td3", algo, ShapeEnv(), buffer_size=50_000, seed=0)
        fill_buffer("rlkit_td3", model, 50_000, seed=0)

        def train(n: int, fused: bool, model=model) -> float:
            model.use_fused_update = fused
            start = time.perf_counter()
            with redirect_stdout(sink):
                model.train(gradient_steps=n, batch_size=BATCH)
            return (time.perf_counter() - start) / n * 1e3

        for fused in (True, False):  # warm-up, and the fused buffers are built
            train(20, fused)
        on, off = [], []
        for _ in range(reps):
            on.append(train(steps, True))
            off.append(train(steps, False))
        assert model._fused_update is not None and model._fused_update[1] is not None
        ratios = [b / a for a, b in zip(on, off)]
        line = (
            f"{algo:6s} {statistics.median(on):7.2f} {statistics.median(off):7.2f}   "
            f"x{statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})   "
            f"({' '.join(f'{t:.2f}' for t in on)} | {' '.join(f'{t:.2f}' for t in off)})"
        )
        lines.append(line)
        print(line, flush=True)
    if out:
        Path(out).write_text("\n".join(lines) + "\n")


def run_profile(steps: int) -> None:
    from torch.profiler import ProfilerActivity, profile

    model = make_model(n=50_000)
    fused = FusedTD3(model)
    fused.train(20, BATCH)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        fused.train(steps, BATCH)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with redirect_stdout(io.StringIO()):
            model.train(gradient_steps=steps, batch_size=BATCH)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="equivalence checks (a), (b), (c)")
    parser.add_argument("--time", action="store_true", help="interleaved timing of the library and the variants")
    parser.add_argument("--profile", action="store_true", help="profiler tables of the fused and library updates")
    parser.add_argument(
        "--library", action="store_true", help="the library's model.train with use_fused_update on vs off, interleaved"
    )
    parser.add_argument("--out", default=None, help="with --library: also write its table to this file")
    parser.add_argument("--long-updates", type=int, default=1000, help="updates of check (b)")
    parser.add_argument("--steps", type=int, default=60, help="updates per timed repetition")
    parser.add_argument("--reps", type=int, default=7, help="interleaved repetitions")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.check:
        run_checks(args.long_updates)
    if args.time:
        run_timing(args.steps, args.reps)
    if args.profile:
        run_profile(args.steps)
    if args.library:
        run_library_timing(args.steps, args.reps, args.out)


if __name__ == "__main__":
    main()

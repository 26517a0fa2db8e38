"""The TD3/DDPG update without autograd: the same tensor operations as `OffPolicyAlgorithm._train_step`, with the
backward pass written out, over buffers allocated once.

Why: at the sizes TD3 is usually run at on a CPU (observations of a few dozen numbers, ``[400, 300]`` networks,
batches of 256, one thread), building the autograd graph and allocating a fresh tensor for every forward and
backward operation cost about 1 ms of a 7-9 ms update. `FusedUpdate` makes the very calls autograd makes (``addmm``
/ ``baddbmm`` forwards, the ``mm`` / ``bmm`` / ``sum`` / ``threshold_backward`` / ``tanh_backward`` of their
derivative formulas) but writes them into preallocated tensors (``out=``), and keeps its gradient tensors installed
as the parameters' ``.grad``. The optimizer steps, the Polyak averaging and the loss statistics are the library's.
At more than one torch thread, the products that are not batched over critics run as row blocks, one per thread, of
one batched call (`FusedUpdate._gemm`): the same dot products, faster than letting BLAS split a single product, used
for a shape only after a trial product came out bit for bit the same both ways on this CPU. The parameters, the views
the products read (transposes, one critic's slice) and each product's call are made once too: the Python between
the operations is what is left to save once the operations themselves are autograd's (at two threads, making those
views at every step cost about 0.3 ms of a 4.4 ms update).

It must equal `OffPolicyAlgorithm._train_step` (the readable reference, unchanged) bit for bit: parameters, target
networks, optimizer states, ``.grad`` values and loss sums. That is why it only mirrors autograd: every operation has
the operand shapes, strides and reduction order the reference's forward and autograd's backward give it (BLAS
libraries such as MKL choose kernels per CPU, but both paths then make the same calls on the same machine). So it
computes the full input gradient of the critic at ``[s, pi(s)]`` and slices the action columns out, as autograd
does, rather than a smaller product of another shape, and computes the rank-1 products through a width-1 output layer
with the same ``bmm`` / ``mm`` autograd uses. ``tests/test_fused_update.py`` checks the equality (float32 and
float64, TD3 and DDPG, through ``learn`` and through an exact resume).

One exception, chosen by ``model.fused_update_matmul`` (`resolve_matmul`): on AMD CPUs, where MKL (torch's BLAS on
x86) takes an AVX2 code path, float32 products whose dimensions are all at least 64 are computed by oneDNN's inner
product (the kernel torch.compile's CPU backend uses for ``Linear``), which uses the AVX-512 units of those CPUs.
On a Zen 5 EPYC (full-width AVX-512) that is about 1.5-2 times the speed of MKL for every product (``"onednn"``). On
a Zen 4 EPYC, whose AVX-512 instructions run on 256-bit units, MKL's AVX2 kernels are nearly as fast, and at two
threads the critic ensemble's products are faster as MKL's one batched call (one critic per thread) than as one
oneDNN product per critic split over the threads, and a weight gradient is faster as MKL's product on the
transposed activations than as oneDNN's, which copies them first: there, at several threads, only the forward and
input-gradient products of a single network go to oneDNN (``"mixed"``). oneDNN sums each dot product in its
own order, so that update equals the reference to float32 rounding, not bit for bit (one update from the same state:
at most 4e-5 of a tensor's largest value, measured; whole runs go apart after a few hundred updates, as runs on two
CPUs do); it is deterministic, and the choice is saved with a checkpoint, so runs still repeat and resume bit for
bit. ``fused_update_matmul = "reference"`` keeps the reference calls on every CPU.

Eligibility (`FusedUpdate.ineligibility`), checked when the fused step is built; anything else uses ``_train_step``:

* the model does not override ``_train_step``, the policy is on the CPU and gradients are enabled;
* the actor and its target are `Actor` modules built as the library builds them: the default flatten extractor,
  float input passed through unchanged, ``Linear`` / ``ReLU`` hidden layers (at least one), a ``Linear`` output and
  ``Tanh``; the critic and its target are `CriticEnsemble` modules with the flatten extractor (not shared),
  ``ReLU``, no LayerNorm and at least one hidden layer; no module or parameter hooks;
* all parameters have one floating dtype, float32 or float64, and every actor and critic parameter requires a
  gradient; the optimizers hold exactly the actor's and the critic's parameters.

And per batch (`FusedUpdate.accepts`): a plain `ReplayBufferSamples` (not a prioritized or n-step batch) whose
observations and actions have the parameters' dtype and the expected shapes. ``normalize_obs`` is no obstacle: the
batch is normalised by ``policy.normalize_batch`` before either step sees it.

`OffPolicyAlgorithm.train` keeps one `FusedUpdate` per model and, at every call, compares a cheap key
(`FusedUpdate.state_key`: identities of the policy, optimizers, modules and parameters, the parameters' storage,
shape, dtype and ``requires_grad``, hooks, the batch size) with the one it was built for: a swapped policy, module or
parameter, a cast, a new hook or another batch size rebuilds it (or falls back to autograd).
``model.use_fused_update = False`` turns it off.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from rlkit_td3.buffers import ReplayBufferSamples
from rlkit_td3.fileio.serialization import ModelFileError
from rlkit_td3.policies.networks import Actor, CriticEnsemble, ScaleImages, _FlattenBatch
from rlkit_td3.torch_layers import FlattenExtractor
from rlkit_td3.update.matmul_choice import (  # noqa: F401  (the choice's names: importable from here, as before)
    _ONEDNN_CHOICES,
    _ONEDNN_MIN_SIZE,
    MATMUL_CHOICES,
    _dot_rows,
    _linear_pointwise,
    _onednn_product,
    _onednn_products,
    check_matmul_choice,
    cpu_family,
    cpu_vendor,
    onednn_matmul_available,
    resolve_matmul,
)
from rlkit_td3.update.optim import optimizer_step
from rlkit_td3.utils import global_module_hooks, module_has_hooks

_threshold_backward = torch.ops.aten.threshold_backward.grad_input
_tanh_backward = torch.ops.aten.tanh_backward.grad_input
_FLATTEN_TYPES = (FlattenExtractor, _FlattenBatch)
_DTYPES = (torch.float32, torch.float64)


def _param_has_hooks(param: torch.Tensor) -> bool:
    return bool(param._backward_hooks or getattr(param, "_post_accumulate_grad_hooks", None))


def _actor_linears(actor: Any) -> list[nn.Linear] | None:
    """The ``Linear`` layers of an actor built as the library builds it (``Linear``/``ReLU`` pairs, ``Linear``,
    ``Tanh``), or None."""
    if type(actor) is not Actor:
        return None
    pre, ext, mu = actor.preprocess, actor.features_extractor, actor.mu
    if type(pre) is not ScaleImages or pre.scale or type(ext) not in _FLATTEN_TYPES or type(mu) is not nn.Sequential:
        return None
    layers = list(mu)
    if len(layers) < 4 or len(layers) % 2 or type(layers[-1]) is not nn.Tanh:
        return None
    linears = layers[0:-1:2]
    if any(type(m) is not nn.Linear or m.bias is None for m in linears):
        return None
    if any(type(m) is not nn.ReLU for m in layers[1:-1:2]):
        return None
    for a, b in zip(linears[:-1], linears[1:]):
        if a.out_features != b.in_features:
            return None
    return linears


def _critic_ok(critic: Any) -> bool:
    if type(critic) is not CriticEnsemble or critic.layer_norm or critic.shared_features_extractor is not None:
        return False
    pre = critic.preprocess
    if type(pre) is not ScaleImages or pre.scale or type(critic.features_extractor) not in _FLATTEN_TYPES:
        return False
    if type(critic.activation) is not nn.ReLU or len(critic.weights) < 2 or len(critic.biases) != len(critic.weights):
        return False
    n = critic.weights[0].shape[0]
    for i, (w, b) in enumerate(zip(critic.weights, critic.biases)):
        if w.dim() != 3 or w.shape[0] != n or tuple(b.shape) != (n, 1, w.shape[2]):
            return False
        if i and w.shape[1] != critic.weights[i - 1].shape[2]:
            return False
    return critic.weights[-1].shape[2] == 1


def _modules(policy: Any) -> list[nn.Module]:
    nets = (policy.actor, policy.actor_target, policy.critic, policy.critic_target)
    return [m for net in nets for m in net.modules()]


def fused_reference(train_step: Any) -> Any:
    """Mark ``train_step`` as the update `FusedUpdate` equals bit for bit (``OffPolicyAlgorithm._train_step``).

    A subclass that overrides ``_train_step`` loses the mark, and with it the fused update. The mark keeps this
    module below the training loop: it needs no import of ``OffPolicyAlgorithm`` to recognise its update.
    """
    train_step.fused_reference = True
    return train_step


class FusedUpdate:
    """The update of ``model`` (`OffPolicyAlgorithm._train_step`, bit for bit with the reference products) over buffers
    for ``batch_size``.

    Build it only for a model `ineligibility` accepts; `OffPolicyAlgorithm.train` does that, compares `state_key`
    at every call and passes only batches `accepts` takes.

    Args:
        model: the TD3/DDPG model whose update this is.
        batch_size: the number of transitions per batch the buffers are allocated for.
    """

    def __init__(self, model: Any, batch_size: int) -> None:
        reason = self.ineligibility(model)
        if reason is not None:
            raise ValueError(f"the fused update does not cover this model: {reason}")
        if batch_size < 2:
            raise ValueError(f"the fused update needs batch_size >= 2, got {batch_size}")
        policy = model.policy
        self.model, self.policy, self.B = model, policy, int(batch_size)
        B = self.B
        self.actor_linears = _actor_linears(policy.actor) or []
        self.target_linears = _actor_linears(policy.actor_target) or []
        self.critic, self.critic_target = policy.critic, policy.critic_target
        weight = self.critic.weights[0]
        self.dtype, self.device = dtype, device = weight.dtype, weight.device
        self.A = self.actor_linears[-1].out_features
        self.D = self.actor_linears[0].in_features
        self.D_in = self.D + self.A

        def buf(*shape: int) -> torch.Tensor:
            return torch.empty(shape, dtype=dtype, device=device)

        # critic inputs [s, a] (what torch.cat gives the reference): target (s', a'), loss (s, a), actor (s, pi(s))
        self.x_next, self.x, self.x_pi = buf(B, self.D_in), buf(B, self.D_in), buf(B, self.D_in)
        # actor forwards: hidden ReLU outputs, pre-tanh outputs, tanh outputs (contiguous, as the reference's)
        self.ta_h = [buf(B, m.out_features) for m in self.target_linears[:-1]]
        self.ta_u, self.ta_out = buf(B, self.A), buf(B, self.A)
        self.a_h = [buf(B, m.out_features) for m in self.actor_linears[:-1]]
        self.a_u, self.a_out = buf(B, self.A), buf(B, self.A)
        self.da_h = [buf(B, m.out_features) for m in self.actor_linears[:-1]]
        self.du = buf(B, self.A)
        # critic forwards and backward
        tc, c = self.critic_target, self.critic
        self.tz = [buf(w.shape[0], B, w.shape[2]) for w in tc.weights]  # the last one holds Q'(s', a')
        self.z = [buf(w.shape[0], B, w.shape[2]) for w in c.weights]  # the last one holds Q(s, a)
        self.dz = [buf(w.shape[0], B, w.shape[2]) for w in c.weights]
        C = c.weights[0].shape[0]
        self.next_q = buf(B)
        self.next_q_idx = torch.empty(B, dtype=torch.long, device=device)
        self.diff = buf(C, B)
        # 1/B as the reference's mean backward computes it (a division in the parameters' dtype)
        self.inv_b = torch.ones((), dtype=dtype, device=device).div(B)
        # actor step: critic 0 at [s, pi(s)] and its backward to the input
        self.g = [buf(B, w.shape[2]) for w in c.weights]  # the last one holds Q1(s, pi(s))
        self.dg = [buf(B, w.shape[2]) for w in c.weights[:-1]]
        # d(-mean Q1)/dQ1 = (-1) / B for every sample, as NegBackward then MeanBackward give it
        self.dq1 = torch.full((B, 1), -1.0, dtype=dtype, device=device).div_(B)
        self.dx_pi = buf(B, self.D_in)
        # gradients, installed as the parameters' .grad before each backward
        self.critic_params = list(c.parameters())
        self.actor_params = list(policy.actor.parameters())
        self.critic_grads = [torch.zeros_like(p, memory_format=torch.contiguous_format) for p in self.critic_params]
        self.actor_grads = [torch.zeros_like(p, memory_format=torch.contiguous_format) for p in self.actor_params]
        index = {id(p): g for p, g in zip(self.critic_params, self.critic_grads)}
        self.gc_w = [index[id(w)] for w in c.weights]
        self.gc_b = [index[id(b)] for b in c.biases]
        index = {id(p): g for p, g in zip(self.actor_params, self.actor_grads)}
        self.ga_w = [index[id(m.weight)] for m in self.actor_linears]
        self.ga_b = [index[id(m.bias)] for m in self.actor_linears]
        self._make_views()
        self.matmul = resolve_matmul(getattr(model, "fused_update_matmul", "auto"), dtype)
        """Who computes the matrix products: ``"reference"`` (the calls autograd makes), ``"onednn"`` or ``"mixed"``
        (`resolve_matmul`)."""
        self.parts = 1  # row blocks of the single (not per-critic) matrix products, set per step: see _gemm
        self._plans: dict[int, tuple] = {}  # see _gemm
        self.blocks_agree: dict[tuple, bool] = {}
        """Per product shape and thread count: whether its row blocks matched the plain product bit for bit."""
        self.updates = 0
        """Number of updates this object has made (for tests and benchmarks)."""
        self.key = self.state_key(model, batch_size)

    def _make_views(self) -> None:
        """The parameters, and the views of parameters and buffers that the products read, made once.

        Reading a parameter from an ``nn.ParameterList`` or a module attribute and making a transposed or selected
        view costs Python time at every use: about 0.1 ms per update at one thread, 0.3 ms at two. The views are the
        ones the step made before (same shapes and strides, so the same calls); parameters change in place, and a
        parameter swapped or given new storage changes `state_key`, which rebuilds this object.
        """
        D, c, tc = self.D, self.critic, self.critic_target
        self.actor_w = [m.weight for m in self.actor_linears]
        self.actor_wt = [m.weight.t() for m in self.actor_linears]
        self.actor_b = [m.bias for m in self.actor_linears]
        self.target_wt = [m.weight.t() for m in self.target_linears]
        self.target_b = [m.bias for m in self.target_linears]
        # per critic ensemble: weights, biases, and critic 0's (a single critic's) weight and bias
        self.critic_p = (list(c.weights), list(c.biases), [w[0] for w in c.weights], [b[0] for b in c.biases])
        self.target_p = (list(tc.weights), list(tc.biases), [w[0] for w in tc.weights], [b[0] for b in tc.biases])
        self.cw_T = [w.transpose(1, 2) for w in c.weights]  # the input gradient's batch2^T
        self.cw0_t = [w[0].t() for w in c.weights]  # critic 0's (a single critic's) input gradient
        C = c.weights[0].shape[0]
        # the inputs [s, a] (their two column blocks), expanded over the critics
        self.x_parts = [(x[:, :D], x[:, D:]) for x in (self.x_next, self.x, self.x_pi)]
        self.x_next_e, self.x_e = self.x_next.expand(C, -1, -1), self.x.expand(C, -1, -1)
        self.x_e_T = self.x_e.transpose(1, 2)
        self.z0, self.tz0, self.dz0 = [t[0] for t in self.z], [t[0] for t in self.tz], [t[0] for t in self.dz]
        self.z_T = [t.transpose(1, 2) for t in self.z]  # a layer's input, as its weight gradient reads it
        self.z0_t = [t[0].t() for t in self.z]
        self.x_e0_t = self.x_e[0].t()
        self.gc_w0 = [g[0] for g in self.gc_w]
        self.next_q_all = self.tz[-1].squeeze(-1)
        self.q = self.z[-1].squeeze(-1)
        self.diff_e = self.diff.unsqueeze(-1)
        self.q1 = self.g[-1].squeeze(-1)
        self.dx_pi_a = self.dx_pi.narrow(1, D, self.A)
        self.du_t = self.du.t()
        self.da_h_t = [t.t() for t in self.da_h]
        self.ga_b_row = [g.view(1, -1) for g in self.ga_b]  # a bias gradient as the batch sum (keepdim) writes it

    # ------------------------------------------------------------------ eligibility
    @staticmethod
    def ineligibility(model: Any) -> str | None:
        """Why the fused update cannot stand for ``model._train_step``, or None when it can (see the module
        docstring for the rules)."""
        if not getattr(type(model)._train_step, "fused_reference", False) or "_train_step" in vars(model):
            return "_train_step is overridden"
        policy = model.policy
        actor, critic = _actor_linears(policy.actor), policy.critic
        target_actor, target_critic = _actor_linears(policy.actor_target), policy.critic_target
        if actor is None or target_actor is None:
            return "the actor is not the library's flatten/Linear/ReLU/Tanh actor"
        if not (_critic_ok(critic) and _critic_ok(target_critic)):
            return "the critic is not a CriticEnsemble with the flatten extractor, ReLU and no LayerNorm"
        obs_dim, act_dim = actor[0].in_features, actor[-1].out_features
        for linears in (actor, target_actor):
            if linears[0].in_features != obs_dim or linears[-1].out_features != act_dim:
                return "the actor and its target differ in their input or output sizes"
        for ens in (critic, target_critic):
            if ens.weights[0].shape[1] != obs_dim + act_dim:
                return "the critic's input size is not observations + actions"
        params = [p for net in (policy.actor, policy.actor_target, critic, target_critic) for p in net.parameters()]
        dtypes = {p.dtype for p in params}
        if len(dtypes) != 1 or next(iter(dtypes)) not in _DTYPES:
            return f"the parameters' dtypes are {sorted(map(str, dtypes))}, not one of float32 or float64"
        if any(p.device.type != "cpu" for p in params):
            return "the networks are not on the CPU"
        if any(p.is_sparse or not p.is_contiguous() for p in params):
            return "a parameter is sparse or not contiguous"
        for net, opt in ((policy.actor, policy.actor_optimizer), (critic, policy.critic_optimizer)):
            own = list(net.parameters())
            if not all(p.requires_grad for p in own):
                return "an actor or critic parameter does not require a gradient"
            held = [p for group in opt.param_groups for p in group["params"]]
            if len(held) != len(own) or {id(p) for p in held} != {id(p) for p in own}:
                return "an optimizer does not hold exactly its network's parameters"
        hooked = any(module_has_hooks(m) for m in _modules(policy)) or any(map(_param_has_hooks, params))
        if global_module_hooks() or hooked:
            return "a module or parameter has hooks"
        return None

    @staticmethod
    def state_key(model: Any, batch_size: int) -> tuple:
        """What the buffers and the eligibility depend on: identities of the policy, optimizers, modules and
        parameters, the parameters' storage, shape, dtype and ``requires_grad``, hooks, and the batch size."""
        policy = model.policy
        key: list[Any] = [batch_size, id(policy), id(policy.actor_optimizer), id(policy.critic_optimizer)]
        key.append(getattr(model, "fused_update_matmul", "auto"))
        key.append(type(model)._train_step)
        key.append("_train_step" in vars(model))
        for opt in (policy.actor_optimizer, policy.critic_optimizer):
            key.append(tuple(id(p) for group in opt.param_groups for p in group["params"]))
        append = key.append
        for net in (policy.actor, policy.actor_target, policy.critic, policy.critic_target):
            # plain attributes, read from the instance (nn.Module's __getattr__ is slow for a missing name); a module
            # assigned to either would be registered as a submodule, which the walk below sees
            attrs = vars(net)
            append(attrs.get("layer_norm"))
            append(id(attrs.get("shared_features_extractor")))
            stack = [net]  # net.modules() without its generator machinery (this runs at every train() call)
            while stack:
                module = stack.pop()
                append(id(module))
                append(module_has_hooks(module))
                for p in module._parameters.values():
                    if p is not None:
                        append((id(p), p.data_ptr(), p.shape, p.dtype, p.requires_grad, _param_has_hooks(p)))
                stack.extend(module._modules.values())
        return tuple(key)

    def accepts(self, batch: Any) -> bool:
        """Whether ``batch`` is one the fused step covers: a plain `ReplayBufferSamples` of this batch size whose
        observations and actions have the parameters' dtype and the expected sizes, with gradients enabled and no
        global module hooks."""
        if type(batch) is not ReplayBufferSamples or not torch.is_grad_enabled() or global_module_hooks():
            return False
        B, dtype = self.B, self.dtype
        obs, next_obs, actions = batch.observations, batch.next_observations, batch.actions
        for t in (obs, next_obs, actions):
            if not isinstance(t, torch.Tensor) or t.dtype != dtype or t.device != self.device or t.dim() < 1:
                return False
            if t.shape[0] != B:
                return False
        if obs.numel() != B * self.D or next_obs.numel() != B * self.D or tuple(actions.shape) != (B, self.A):
            return False
        rewards, terminated = batch.rewards, batch.terminated
        return (
            isinstance(rewards, torch.Tensor)
            and isinstance(terminated, torch.Tensor)
            and tuple(rewards.shape) == (B,)
            and tuple(terminated.shape) == (B,)
        )

    # ------------------------------------------------------------------ matrix products
    def _gemm(
        self, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, bias: torch.Tensor | None = None, relu: bool = False
    ) -> None:
        """``out = a @ b`` (plus ``bias``, broadcast over the rows; then ReLU in place for ``relu``), for matrices or
        for one matrix per critic (3-d operands, ``bmm`` / ``baddbmm``).

        With ``matmul == "onednn"`` each product whose dimensions are all at least 64 is one oneDNN inner
        product (`_onednn_product`, the ReLU fused into it), one with a single output column or a contraction of
        length one is computed elementwise (`_narrow_call`), and the rest is as follows. ``"mixed"`` is the same
        except that at ``parts`` > 1 threads the critic ensemble's products (3-d operands) and the products whose left
        operand is not contiguous (the weight gradients, ``activations.T @ grad``) keep the reference call. With the
        reference calls: ``mm`` / ``addmm``, or, at ``parts`` > 1 torch threads, the rows of a 2-d product in
        ``parts`` equal blocks as one ``bmm`` / ``baddbmm`` over the shared ``b``.

        At two threads a single 256-row product is split by the BLAS library inside the product, which leaves
        throughput on the table (the ``[256, 400] @ [400, 300]`` forward ran at 232 GFLOP/s as an ``addmm``, 300 as
        two 128-row blocks of one ``baddbmm``: each thread computes one block). Each output element is the same
        dot product in both forms, but whether the BLAS library sums it in the same order in both is its choice,
        per CPU: so before the first product of each shape (and thread count), both ways are tried on random
        operands of that shape and layout, and the blocks are used only if the two results are equal bit for bit
        (`blocks_agree` records the verdicts).
        Narrow outputs (fewer than 16 columns, such as the width-1 Q output), contractions shorter than 8 and row
        counts that do not divide keep the plain call without a check.
        """
        plan = self._plans.get(id(out))  # every `out` is a buffer or gradient of this object: ids are not reused
        if plan is None or plan[0] is not a or plan[1] is not b or plan[2] != self.parts:
            plan = self._plans[id(out)] = self._plan(a, b, out, bias, relu)
        plan[3](*plan[4], out=plan[5])
        if plan[6]:
            torch.relu_(out)

    def _plan(
        self, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, bias: torch.Tensor | None, relu: bool
    ) -> tuple:
        """The call `_gemm` makes for these operands at ``parts`` threads, with its views made: ``(a, b, parts,
        function, arguments, out, relu after it)``. Kept per output buffer and reused while the operands are the
        same objects (only the observations are new at every step)."""
        parts = self.parts
        if self.matmul != "reference":  # "onednn", or "mixed": see resolve_matmul
            if min(out.shape[-2], out.shape[-1], a.shape[-1]) >= _ONEDNN_MIN_SIZE:
                if self.matmul == "onednn" or parts == 1 or (out.dim() == 2 and a.is_contiguous()):
                    return (a, b, parts, *self._onednn_call(a, b, out, bias, relu), False)
            elif out.shape[-1] == 1 or (a.shape[-1] == 1 and bias is None):
                return (a, b, parts, *self._narrow_call(a, b, out, bias), relu)
        if out.dim() == 3:  # one product per critic
            fn, args = (torch.bmm, (a, b)) if bias is None else (torch.baddbmm, (bias, a, b))
            return (a, b, parts, fn, args, out, relu)
        rows, cols = out.shape
        blocked = False
        if parts > 1 and cols >= 16 and a.shape[1] >= 8 and rows % parts == 0 and rows // parts >= 16:
            key = (parts, tuple(a.shape), a.stride(), tuple(b.shape), b.stride(), bias is None)
            blocked = self.blocks_agree.get(key)
            if blocked is None:
                blocked = self.blocks_agree[key] = self._blocks_match(a, b, out, bias, parts)
        return (a, b, parts, *self._call(a, b, out, bias, parts if blocked else 1), relu)

    @staticmethod
    def _narrow_call(
        a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, bias: torch.Tensor | None
    ) -> tuple[Any, tuple, torch.Tensor]:
        """``(function, arguments, out)`` of a product with one output column (the Q layer and its weight
        gradient) as a product and a sum over the contraction, or with a contraction of length one (the gradient
        through the Q layer) as the product of a column and a row: BLAS libraries spend 70-160 µs on those
        (matrix-vector and rank-1 shapes), the elementwise forms 7-20 µs. Used with oneDNN's products only (the
        sums run in another order than the reference's)."""
        if a.shape[-1] == 1 and bias is None:  # column times row: one multiplication per element, as in the product
            return torch.mul, (a, b), out
        if a.stride(-1) == 1:  # a row-major: out[m] = sum_k a[m, k] b[k]
            x, y, dim, dest = a, b.transpose(-1, -2), -1, out
        else:  # a is the transposed view of a row-major [K, M]: sum over its rows, written as one row of M
            x, y, dim = a.transpose(-1, -2), b, -2
            dest = out.view(*out.shape[:-2], 1, out.shape[-2])
        tmp = torch.empty(x.shape, dtype=out.dtype, device=out.device)
        return _dot_rows, (x, y, tmp, dim, bias, dest), out

    @staticmethod
    def _onednn_call(
        a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, bias: torch.Tensor | None, relu: bool
    ) -> tuple[Any, tuple, torch.Tensor]:
        """``(function, arguments, out)`` of the product as oneDNN inner products: ``a @ b`` is ``a`` times the
        weight ``b.T`` (a view: oneDNN reads it with its strides), one product per critic for 3-d operands."""
        attr = "relu" if relu else "none"
        if out.dim() == 2:
            return _onednn_product, (a, b.t(), None if bias is None else bias.reshape(-1), attr), out
        items = tuple(
            (a[c], b[c].t(), None if bias is None else bias[c].reshape(-1), out[c]) for c in range(out.shape[0])
        )
        return _onednn_products, (items, attr), out

    @staticmethod
    def _call(
        a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, bias: torch.Tensor | None, parts: int
    ) -> tuple[Any, tuple, torch.Tensor]:
        """``(function, arguments, out)`` of the product: ``mm`` / ``addmm``, or at ``parts`` > 1 the rows in
        ``parts`` blocks of one ``bmm`` / ``baddbmm`` over ``b`` expanded."""
        if parts == 1:
            return (torch.mm, (a, b), out) if bias is None else (torch.addmm, (bias, a, b), out)
        rows, cols = out.shape
        a3 = a.view(parts, rows // parts, a.shape[1])
        b3 = b.expand(parts, b.shape[0], cols)
        out3 = out.view(parts, rows // parts, cols)
        return (torch.bmm, (a3, b3), out3) if bias is None else (torch.baddbmm, (bias, a3, b3), out3)

    @classmethod
    def _blocks_match(
        cls, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, bias: torch.Tensor | None, parts: int
    ) -> bool:
        """Whether the row blocks give bit for bit the plain product, on random operands with the shapes and
        strides of these (drawn from a private generator: the global torch RNG is not touched)."""
        gen = torch.Generator(device=out.device).manual_seed(0)

        def like(t: torch.Tensor) -> torch.Tensor:
            return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device).normal_(generator=gen)

        try:
            a_, b_, bias_ = like(a), like(b), (None if bias is None else like(bias))
            plain, blocked = torch.empty_like(out), torch.empty_like(out)
            for dest, n in ((plain, 1), (blocked, parts)):
                fn, args, dest_view = cls._call(a_, b_, dest, bias_, n)
                fn(*args, out=dest_view)
        except RuntimeError:  # rows that are not one strided block, or operands with overlapping (expanded) memory
            return False
        return bool(torch.equal(plain, blocked))

    # ------------------------------------------------------------------ forwards
    def _actor_forward(
        self,
        weights_t: list[torch.Tensor],
        biases: list[torch.Tensor],
        obs: torch.Tensor,
        hidden: list[torch.Tensor],
        u: torch.Tensor,
        out: torch.Tensor,
    ) -> torch.Tensor:
        """``Actor.forward``: ``F.linear`` is ``addmm(bias, x, weight.t())``, ReLU is ``relu``, then ``tanh``."""
        x = obs
        for w_t, b, h in zip(weights_t, biases, hidden):
            self._gemm(x, w_t, h, b, relu=True)
            x = h
        self._gemm(x, weights_t[-1], u, biases[-1])
        return torch.tanh(u, out=out)

    def _critic_forward(
        self, params: tuple[list[torch.Tensor], ...], x_e: torch.Tensor, z: list[torch.Tensor], z0: list[torch.Tensor]
    ) -> torch.Tensor:
        """``CriticEnsemble.forward`` at ``x = cat([s, a], 1)``, expanded over the critics (``x_e``): one ``baddbmm``
        per layer (a single critic at several threads: row blocks, `_gemm`); returns the Q-values, shape
        ``(n_critics, B, 1)``. ``params``: weights, biases, and critic 0's weights and biases."""
        weights, biases, weights0, biases0 = params
        last = len(z) - 1
        if z[0].shape[0] == 1 and self.parts > 1:
            h = x_e[0]
            for i, (w, b, out) in enumerate(zip(weights0, biases0, z0)):
                self._gemm(h, w, out, b, relu=i < last)
                h = out
            return z[last]
        h = x_e
        for i, (w, b, out) in enumerate(zip(weights, biases, z)):
            self._gemm(h, w, out, b, relu=i < last)
            h = out
        return z[last]

    # ------------------------------------------------------------------ the update
    @torch.no_grad()
    def step(self, batch: ReplayBufferSamples, update_actor: bool) -> None:
        """One update: exactly ``model._train_step(batch, update_actor)``; ``batch`` must pass `accepts`."""
        model, policy, B = self.model, self.policy, self.B
        self.parts = torch.get_num_threads()  # see _gemm
        obs = batch.observations.reshape(B, -1)  # the flatten extractor
        next_obs = batch.next_observations.reshape(B, -1)
        (next_s, next_a), (s, a), _ = self.x_parts

        # y = r + gamma (1 - terminated) min_i Q'_i(s', a'), a' = pi'(s') + clipped smoothing noise
        next_actions = self._actor_forward(self.target_wt, self.target_b, next_obs, self.ta_h, self.ta_u, self.ta_out)
        if model.target_policy_noise > 0.0:
            noise = torch.randn(next_actions.shape, generator=model._smoothing_rng, device=next_actions.device).mul_(
                model.target_policy_noise
            )
            noise = noise.clamp(-model.target_noise_clip, model.target_noise_clip)
            next_actions = (next_actions + noise).clamp(-1.0, 1.0)
        next_s.copy_(next_obs)
        next_a.copy_(next_actions)
        self._critic_forward(self.target_p, self.x_next_e, self.tz, self.tz0)
        next_q = torch.min(self.next_q_all, dim=0, out=(self.next_q, self.next_q_idx)).values
        target_q = batch.rewards + model.gamma * (1.0 - batch.terminated) * next_q

        # critic: loss sum_i mean_b (Q_i - y)^2, its gradient, the optimizer step
        s.copy_(obs)
        a.copy_(batch.actions)
        self._critic_forward(self.critic_p, self.x_e, self.z, self.z0)
        diff = torch.sub(self.q, target_q, out=self.diff)
        critic_loss = diff.pow(2).mean(dim=1).sum()
        for param, grad in zip(self.critic_params, self.critic_grads):
            if param.grad is not grad:  # installed once; reading is cheaper than setting
                param.grad = grad
        # PowBackward (grad * (2 * diff)) after MeanBackward (1 / B) and SumBackward (1)
        dq = self.dz[-1]
        torch.mul(self.diff_e, 2.0, out=dq)
        dq.mul_(self.inv_b)
        self._critic_backward()
        optimizer_step(policy.critic_optimizer)
        model._critic_loss_sum += critic_loss
        model._n_critic_losses += 1

        if update_actor:
            actor_loss = self._actor_loss_and_grads(obs)
            optimizer_step(policy.actor_optimizer)
            model._actor_loss_sum += actor_loss
            model._n_actor_losses += 1
            torch._foreach_lerp_(model._critic_target_params, model._critic_params, model.tau)
            torch._foreach_lerp_(model._actor_target_params, model._actor_params, model.tau)
        self.updates += 1

    def _critic_backward(self) -> None:
        """BaddbmmBackward / ReluBackward from the output gradient in ``dz[-1]`` down to layer 0's weights (the
        input ``x`` is ``[s, a]``)."""
        z, dz = self.z, self.dz
        if z[0].shape[0] == 1 and self.parts > 1:  # one critic at several threads: row blocks, `_gemm`
            z0_t, dz0, w0_t = self.z0_t, self.dz0, self.cw0_t
            for i in range(len(z) - 1, -1, -1):
                self._gemm(z0_t[i - 1] if i > 0 else self.x_e0_t, dz0[i], self.gc_w0[i])
                torch.sum(dz[i], dim=[1], keepdim=True, out=self.gc_b[i])  # the broadcast bias: sum_to
                if i > 0:
                    self._gemm(dz0[i], w0_t[i], dz0[i - 1])
                    _threshold_backward(dz[i - 1], z[i - 1], 0.0, grad_input=dz[i - 1])
            return
        z_T, w_T = self.z_T, self.cw_T
        for i in range(len(z) - 1, -1, -1):
            self._gemm(z_T[i - 1] if i > 0 else self.x_e_T, dz[i], self.gc_w[i])  # batch2: batch1^T @ grad
            torch.sum(dz[i], dim=[1], keepdim=True, out=self.gc_b[i])  # the broadcast bias: sum_to
            if i > 0:  # batch1: grad @ batch2^T, then the ReLU's threshold_backward
                self._gemm(dz[i], w_T[i], dz[i - 1])
                _threshold_backward(dz[i - 1], z[i - 1], 0.0, grad_input=dz[i - 1])

    def _actor_loss_and_grads(self, obs: torch.Tensor) -> torch.Tensor:
        """``-Q1(s, pi(s)).mean()`` with the critic 0's detached parameters, and the actor's gradients."""
        a = self._actor_forward(self.actor_wt, self.actor_b, obs, self.a_h, self.a_u, self.a_out)
        s_part, a_part = self.x_parts[2]
        s_part.copy_(obs)
        a_part.copy_(a)
        _, _, weights0, biases0 = self.critic_p
        g, dg, w0_t = self.g, self.dg, self.cw0_t
        h = self.x_pi
        last = len(g) - 1
        for i, (w, b, out) in enumerate(zip(weights0, biases0, g)):
            self._gemm(h, w, out, b, relu=i < last)
            h = out
        actor_loss = -self.q1.mean()
        for param, grad in zip(self.actor_params, self.actor_grads):
            if param.grad is not grad:  # installed once; reading is cheaper than setting
                param.grad = grad
        # AddmmBackward (mat1: grad @ mat2^T) and ReluBackward down to the input [s, pi(s)]
        grad = self.dq1
        for i in range(last, -1, -1):
            out = dg[i - 1] if i > 0 else self.dx_pi
            self._gemm(grad, w0_t[i], out)
            if i > 0:
                _threshold_backward(out, g[i - 1], 0.0, grad_input=out)
            grad = out
        # CatBackward: the action columns; TanhBackward
        _tanh_backward(self.dx_pi_a, a, grad_input=self.du)
        # the actor's Linear layers: weight grad^T @ input, bias sum over the batch, input grad @ weight
        hs, dh, weights = self.a_h, self.da_h, self.actor_w
        grad, grad_t = self.du, self.du_t
        for i in range(len(weights) - 1, -1, -1):
            self._gemm(grad_t, hs[i - 1] if i > 0 else obs, self.ga_w[i])
            torch.sum(grad, dim=[0], keepdim=True, out=self.ga_b_row[i])
            if i > 0:
                self._gemm(grad, weights[i], dh[i - 1])
                _threshold_backward(dh[i - 1], hs[i - 1], 0.0, grad_input=dh[i - 1])
                grad, grad_t = dh[i - 1], self.da_h_t[i - 1]
        return actor_loss


class FusedUpdateState:
    """The fused update's part of a run, as a component of the state protocol: which library computes its
    matrix products (``model.fused_update_matmul``), so that a resumed run makes the same choice. The
    `FusedUpdate` itself holds no state a run depends on: it is rebuilt from the model when needed.
    """

    keys = ("fused_update_matmul",)
    """The entries of the state."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def state_dict(self) -> dict[str, Any]:
        """``{"fused_update_matmul": choice}``."""
        return {"fused_update_matmul": check_matmul_choice(getattr(self.model, "fused_update_matmul", "auto"))}

    def load_state_dict(self, state: Any) -> None:
        """Restore the choice (``"auto"`` where the state lacks it: files written before it was saved).

        Raises:
            ModelFileError: the choice is not one of `MATMUL_CHOICES`.
        """
        matmul = state.get("fused_update_matmul", "auto") if isinstance(state, dict) else None
        if not isinstance(matmul, str) or matmul not in MATMUL_CHOICES:
            raise ModelFileError(
                f"training_state: fused_update_matmul must be one of {', '.join(MATMUL_CHOICES)}, got {matmul!r}"
            )
        self.model.fused_update_matmul = matmul

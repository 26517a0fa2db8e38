"""Optimizer calls of the update loop, without ``torch.optim.Optimizer``'s per-call Python wrapper.

Each TD3/DDPG update clears gradients and steps an optimizer twice. On a CPU, with the default [400, 300]
networks, the Python around those calls is measurable: ``Optimizer.zero_grad`` and the wrapper of
``Optimizer.step`` (profiler record, hook dispatch, grad-mode switching, per-parameter state checks) cost 50-100 µs
per call inside an update, as much as the fused Adam kernel itself; skipping it makes a DDPG update about 5 %
faster (the Performance page has the measurement). The two functions here do the same work with less of it:

* `zero_grad()` sets every gradient to ``None``, what ``optimizer.zero_grad(set_to_none=True)`` does;
* `optimizer_step()` calls torch's functional Adam (``torch.optim.adam.adam``, the function ``Adam.step``
  itself calls) for a plain ``torch.optim.Adam`` or ``AdamW`` whose state exists, and ``optimizer.step()`` in
  every other case: other optimizers, subclasses, hooks, a patched ``step`` (e.g. by an LR scheduler), missing
  gradients, AMSGrad, the first step (which creates the state).

Both give bit-identical parameters and optimizer state (``tests/test_optim.py``).
"""

from __future__ import annotations

import torch
from torch.optim import optimizer as _optimizer_module
from torch.optim.adam import adam as _functional_adam

_ADAM_TYPES = (torch.optim.Adam, torch.optim.AdamW)
_ONE = torch.ones(())  # added to the CPU step counts (1.0 is exact in any float dtype)


def zero_grad(optimizer: torch.optim.Optimizer) -> None:
    """Set the gradient of every parameter of ``optimizer`` to ``None``, like ``zero_grad(set_to_none=True)``."""
    for group in optimizer.param_groups:
        for param in group["params"]:
            param.grad = None


def _has_hooks(optimizer: torch.optim.Optimizer) -> bool:
    return bool(
        getattr(optimizer, "_optimizer_step_pre_hooks", None)
        or getattr(optimizer, "_optimizer_step_post_hooks", None)
        or getattr(_optimizer_module, "_global_optimizer_pre_hooks", None)
        or getattr(_optimizer_module, "_global_optimizer_post_hooks", None)
    )


def _fused_kernel_applies(optimizer: torch.optim.Optimizer, group: dict, params: list[torch.Tensor]) -> bool:
    """Whether a ``fused=True`` group's step is one call of torch's fused Adam kernel: CPU parameters of one
    dtype, plain float hyperparameters, not capturable, no gradient scaler attached."""
    if group.get("fused") is not True or group.get("capturable", True) or not params:
        return False
    if getattr(optimizer, "grad_scale", None) is not None or getattr(optimizer, "found_inf", None) is not None:
        return False
    beta1, beta2 = group["betas"]
    if not all(type(v) is float for v in (group["lr"], beta1, beta2, group["eps"])):
        return False
    dtype = params[0].dtype
    return all(p.is_cpu and p.dtype is dtype for p in params)


def optimizer_step(optimizer: torch.optim.Optimizer) -> None:
    """Do ``optimizer.step()``; for a plain Adam/AdamW, through torch's functional Adam directly.

    The direct path is taken only when nothing the wrapper of ``Optimizer.step`` would do can matter: the
    optimizer's type is exactly ``torch.optim.Adam`` or ``AdamW``, ``step`` is not patched on the instance, no
    step hooks are registered (on it or globally), no parameter group uses AMSGrad or ``differentiable``, every
    parameter has a gradient and an initialised state, and torch's Adam handles AdamW too (the
    ``decoupled_weight_decay`` group key of recent torch). Otherwise this calls ``optimizer.step()``.
    A ``fused=True`` group on the CPU (the library's default Adam) goes one level further down, to the fused
    kernel itself (``torch._fused_adam_`` / ``_fused_adamw_`` after the step counts' increment), since its Python
    wrapper regroups the tensor lists by device and dtype at every call.
    """
    if type(optimizer) not in _ADAM_TYPES or "step" in vars(optimizer) or _has_hooks(optimizer):
        optimizer.step()
        return
    state = optimizer.state
    calls = []
    for group in optimizer.param_groups:
        params = group["params"]
        # Older torch (AdamW as its own class, no "decoupled_weight_decay" key) keeps the plain step.
        if group.get("amsgrad", True) or group.get("differentiable", True) or "decoupled_weight_decay" not in group:
            optimizer.step()
            return
        grads, exp_avgs, exp_avg_sqs, steps = [], [], [], []
        for param in params:
            param_state = state.get(param)
            if param.grad is None or not param_state or param.grad.is_sparse or param.is_complex():
                optimizer.step()
                return
            grads.append(param.grad)
            exp_avgs.append(param_state["exp_avg"])
            exp_avg_sqs.append(param_state["exp_avg_sq"])
            steps.append(param_state["step"])
        calls.append((group, params, grads, exp_avgs, exp_avg_sqs, steps))
    # the optimizer's own no_grad, switched only when gradients are on (the fused update calls this with them off)
    grad_enabled = torch.is_grad_enabled()
    if grad_enabled:
        torch.set_grad_enabled(False)
    try:
        for group, params, grads, exp_avgs, exp_avg_sqs, steps in calls:
            beta1, beta2 = group["betas"]
            if _fused_kernel_applies(optimizer, group, params):
                # what torch's fused Adam does for one device and dtype, without its regrouping of the lists (the
                # counts are incremented by a list of one-valued tensors: the same sums, without wrapping the scalar 1
                # into a tensor for each count, which halves the call)
                torch._foreach_add_(steps, [_ONE] * len(steps))
                kernel = torch._fused_adamw_ if group["decoupled_weight_decay"] else torch._fused_adam_
                kernel(
                    params,
                    grads,
                    exp_avgs,
                    exp_avg_sqs,
                    [],
                    steps,
                    amsgrad=False,
                    lr=group["lr"],
                    beta1=beta1,
                    beta2=beta2,
                    weight_decay=group["weight_decay"],
                    eps=group["eps"],
                    maximize=group["maximize"],
                    grad_scale=None,
                    found_inf=None,
                )
                continue
            _functional_adam(
                params,
                grads,
                exp_avgs,
                exp_avg_sqs,
                [],
                steps,
                foreach=group["foreach"],
                capturable=group["capturable"],
                differentiable=False,
                fused=group["fused"],
                grad_scale=getattr(optimizer, "grad_scale", None),
                found_inf=getattr(optimizer, "found_inf", None),
                has_complex=False,
                decoupled_weight_decay=group["decoupled_weight_decay"],
                amsgrad=False,
                beta1=beta1,
                beta2=beta2,
                lr=group["lr"],
                weight_decay=group["weight_decay"],
                eps=group["eps"],
                maximize=group["maximize"],
            )
    finally:
        if grad_enabled:
            torch.set_grad_enabled(True)


TINY_MOMENT = 1e-30
"""Optimizer moments smaller than this in magnitude are set to zero every ``MOMENT_FLUSH_EVERY`` updates."""
MOMENT_FLUSH_EVERY = 64
"""Updates between two flushes: a moment decaying by Adam's β1 = 0.9 needs ~170 updates to go from 1e-30 to the
subnormal range (< 1.2e-38), so none ever gets there."""


def flush_tiny_moments(optimizer: torch.optim.Optimizer, below: float = TINY_MOMENT) -> None:
    """Set to zero the entries of Adam-style moments (``exp_avg``, ``exp_avg_sq``) smaller than ``below``.

    Why: a ReLU unit that stops firing gets zero gradients, and its first moment decays by β1 each update until
    it is a subnormal float. CPUs handle subnormals in microcode, many times slower: measured here, after 1,000
    HalfCheetah updates, half of a critic layer's ``exp_avg`` was subnormal and the fused Adam step took 7x
    longer (0.90 vs 0.12 ms), a quarter of the whole update. Zeroing them cannot change the weights: such a
    moment moves a weight by at most ``lr * 1e-30 / eps`` (1e-25 with Adam's eps 1e-8), below the float32
    resolution of any weight larger than 1e-18, and a zero moment decays as zero, never subnormal.
    """
    with torch.no_grad():
        for state in optimizer.state.values():
            for key in ("exp_avg", "exp_avg_sq"):
                moment = state.get(key)
                if isinstance(moment, torch.Tensor) and moment.is_floating_point():
                    moment.masked_fill_(moment.abs() < below, 0.0)

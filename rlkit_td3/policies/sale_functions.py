"""The elementwise functions of the SALE networks, AvgL1Norm and ELU, with hand-written gradients.

``elu`` is ``torch.nn.functional.elu`` (``alpha`` 1) computed as ``max(x, expm1(min(x, 0)))`` with NumPy's
``expm1`` for CPU tensors, on CPUs where NumPy runs a vectorised ``expm1`` loop (its SVML loop, built for AVX-512:
`numpy_expm1_vectorised` asks NumPy's ``opt_func_info``); elsewhere with torch's own ELU. On AMD EPYC Zen 4 (one
thread) torch 2.13's CPU kernel takes about 100 us for a 256 x 256 float32 batch and NumPy's vectorised ``expm1``
about 25 us; on Zen 3 (AVX2 only) NumPy's ``expm1`` is its scalar loop, about 940 us against torch's 170, and a TD7
update on HalfCheetah computes 25 such ELUs (``benchmarks/td7_speed.py`` measures the whole update against the
authors' code). The choice depends on the machine and the dtype only, never on a timing. NumPy's values differ from
torch's by a few units in the last place (measured on Zen 4: NumPy's float32 ``expm1`` within 2.2 of the exact
value, torch's within 0.6; in float64 the two within one of each other). The gradient is read from the output
(``1`` where ``x > 0``, ``elu(x) + 1 = exp(x)`` elsewhere), as torch's in-place ELU reads it, on either path. An
exported actor (TorchScript) computes with torch's own ELU.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


class _AvgL1Norm(torch.autograd.Function):
    """AvgL1Norm with its gradient written out: for ``y = x / m``, ``m = max(mean|x|, eps)``, the input gradient is
    ``(g - sign(x) * mean(g * y)) / m`` (the second term only where ``mean|x| >= eps``), in six passes over the
    batch where autograd's graph of the formula makes about a dozen (measured: 195 against 323 us for a 256 x 256
    float32 forward and backward)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, eps: float) -> torch.Tensor:  # type: ignore[override]
        out, scale, through = avg_l1_norm_saving(x, eps)
        ctx.save_for_backward(out, scale, through)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:  # type: ignore[override]
        return avg_l1_norm_backward(grad, *ctx.saved_tensors), None


def avg_l1_norm_saving(x: torch.Tensor, eps: float = 1e-8) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """AvgL1Norm's output and what its backward reads: the divisor and where the mean is at least ``eps``."""
    mean = x.abs().mean(dim=-1, keepdim=True)
    scale = mean.clamp(min=eps)
    return x / scale, scale, mean >= eps


def avg_l1_norm_backward(
    grad: torch.Tensor, out: torch.Tensor, scale: torch.Tensor, through: torch.Tensor
) -> torch.Tensor:
    """The input gradient of AvgL1Norm from `avg_l1_norm_saving`'s results: ``(g - sign(x) mean(g y)) / m``."""
    dot = (grad * out).mean(dim=-1, keepdim=True).mul_(through)
    return torch.addcmul(grad, out.sign(), dot, value=-1.0).div_(scale)


def elu_backward(grad: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """ELU's (``alpha`` 1) input gradient from its output: ``grad * (min(out, 0) + 1)``."""
    return out.clamp(max=0.0).add_(1.0).mul_(grad)


def avg_l1_norm_values(x: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """AvgL1Norm's formula as plain tensor operations (TorchScript can compile it; an exported actor uses it)."""
    return x / x.abs().mean(dim=-1, keepdim=True).clamp(min=eps)


def avg_l1_norm(x: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """``x`` divided by the mean of its absolute values over the last dimension (at least ``eps``): AvgL1Norm
    (Fujimoto et al. 2023); while a gradient is recorded, with the backward of `_AvgL1Norm`."""
    if torch.is_grad_enabled() and x.requires_grad:
        return _AvgL1Norm.apply(x, eps)
    return avg_l1_norm_values(x, eps)


def numpy_expm1_vectorised(dtype: torch.dtype) -> bool:
    """Whether NumPy computes ``expm1`` at ``dtype`` (float32 or float64) with a vectorised loop on this CPU, as
    NumPy's own dispatch reports it (``numpy.lib.introspect.opt_func_info``, NumPy 2.0 on: a target other than the
    baseline); ``False`` for another dtype or an older NumPy, whose dispatch cannot be asked."""
    return _EXPM1_VECTORISED.get(dtype, False)


def _expm1_dispatch() -> dict[torch.dtype, bool]:
    try:
        from numpy.lib.introspect import opt_func_info
    except ImportError:  # NumPy < 2.0
        return {}
    loops = opt_func_info(func_name="^expm1$").get("expm1", {})
    return {
        dtype: not str(loops.get(code, {}).get("current", "baseline")).startswith("baseline")
        for dtype, code in ((torch.float32, "ff"), (torch.float64, "dd"))
    }


_EXPM1_VECTORISED = _expm1_dispatch()


def _elu_values(x: torch.Tensor) -> torch.Tensor:
    if not numpy_expm1_vectorised(x.dtype):
        return F.elu(x)
    return _numpy_elu(x)


def _numpy_elu(x: torch.Tensor) -> torch.Tensor:
    # expm1(x) >= x for x <= 0, and expm1(min(x, 0)) = 0 < x for x > 0: the maximum picks each branch of the ELU
    # (NaN stays NaN, -inf gives -1)
    out = x.clamp(max=0.0)
    values = out.numpy()
    np.expm1(values, out=values)
    return torch.maximum(out, x, out=out)


class _ELU(torch.autograd.Function):
    """ELU (``alpha`` 1) whose backward reads the output: ``grad * (min(elu(x), 0) + 1)``."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        out = _elu_values(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        (out,) = ctx.saved_tensors
        return elu_backward(grad, out)


def elu(x: torch.Tensor, alpha: float = 1.0, inplace: bool = False) -> torch.Tensor:
    """``torch.nn.functional.elu(x, alpha, inplace)``; for a contiguous float32 or float64 CPU tensor with ``alpha``
    1, not in place, computed with NumPy's ``expm1`` where NumPy vectorises it (`numpy_expm1_vectorised`; the
    module's docstring says why), to within a few units in the last place of torch's values, and with its gradient
    read from the output."""
    if (
        alpha != 1.0
        or inplace
        or x.device.type != "cpu"
        or x.dtype not in (torch.float32, torch.float64)
        or not x.is_contiguous()
        or x.is_conj()
        or x.is_neg()
    ):
        return F.elu(x, alpha, inplace)
    if torch.is_grad_enabled() and x.requires_grad:
        return _ELU.apply(x)
    return _elu_values(x)

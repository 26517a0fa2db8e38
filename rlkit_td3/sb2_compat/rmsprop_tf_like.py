"""RMSprop as TensorFlow 1 computes it (SB3's ``RMSpropTFLike``), for results comparable with SB2 / TF runs.

Two things differ from ``torch.optim.RMSprop``: the running average of squared gradients starts at one, not zero,
and ``eps`` is added inside the square root (``sqrt(v + eps)``, not ``sqrt(v) + eps``). With ``momentum`` the
buffer accumulates ``lr * grad / sqrt(v + eps)`` and the parameter moves by the buffer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.optim import Optimizer


class RMSpropTFLike(Optimizer):
    """TensorFlow-style RMSprop; usable as ``policy_kwargs={"optimizer_class": RMSpropTFLike}``.

    Args:
        params: the parameters (or parameter groups) to optimise.
        lr: learning rate (>= 0).
        alpha: smoothing constant of the squared-gradient average (>= 0).
        eps: added inside the square root (>= 0).
        weight_decay: L2 penalty added to the gradient (>= 0).
        momentum: momentum factor (>= 0).
        centered: divide by the estimated variance (subtracting the squared mean gradient) instead of the second
            moment.

    Raises:
        ValueError: a negative setting ("Invalid learning rate", "Invalid epsilon", ...).
    """

    def __init__(
        self,
        params: Iterable[torch.Tensor] | Iterable[dict[str, Any]],
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
    ) -> None:
        for name, value in (
            ("learning rate", lr),
            ("epsilon", eps),
            ("momentum", momentum),
            ("weight_decay", weight_decay),
            ("alpha", alpha),
        ):
            if not value >= 0.0:
                raise ValueError(f"Invalid {name} value: {value}")
        defaults = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum, centered=centered)
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        """One update of every parameter that has a gradient; ``closure`` re-evaluates the loss (returned)."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                grad = param.grad
                if grad.is_sparse:
                    raise RuntimeError("RMSpropTFLike does not support sparse gradients")
                state = self.state[param]
                if not state:
                    state["step"] = 0
                    state["square_avg"] = torch.ones_like(param)  # TensorFlow starts the average at one
                    if group["momentum"] > 0:
                        state["momentum_buffer"] = torch.zeros_like(param)
                    if group["centered"]:
                        state["grad_avg"] = torch.zeros_like(param)
                state["step"] += 1
                if group["weight_decay"] != 0:
                    grad = grad.add(param, alpha=group["weight_decay"])
                square_avg = state["square_avg"]
                square_avg.mul_(group["alpha"]).addcmul_(grad, grad, value=1 - group["alpha"])
                if group["centered"]:
                    grad_avg = state["grad_avg"]
                    grad_avg.mul_(group["alpha"]).add_(grad, alpha=1 - group["alpha"])
                    denom = square_avg.addcmul(grad_avg, grad_avg, value=-1).add_(group["eps"]).sqrt_()
                else:
                    denom = square_avg.add(group["eps"]).sqrt_()  # eps inside the square root
                if group["momentum"] > 0:
                    buf = state["momentum_buffer"]
                    buf.mul_(group["momentum"]).addcdiv_(grad, denom, value=group["lr"])
                    param.add_(-buf)
                else:
                    param.addcdiv_(grad, denom, value=-group["lr"])
        return loss

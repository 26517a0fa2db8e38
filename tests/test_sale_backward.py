"""The SALE networks' first layer on a joined input (`_CatLinear`): the same values and gradients as ``nn.Linear`` on
``torch.cat`` through autograd, with no gradient computed for the parts that need none."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from rlkit_td3.policies.sale import _CatLinear, _mlp_on_joined


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(
    ("widths", "needs"),
    [
        ((40, 96, 96), (True, False, False)),  # the critic step: no gradient for [z_sa, z_s]
        ((40, 96, 96), (True, True, False)),  # the actor step: none for z_s
        ((96, 3), (False, True)),  # g in the actor step: the action only (a narrow part)
        ((96, 3), (True, False)),  # g in the encoder step
        ((5, 7), (True, True)),
    ],
)
def test_cat_linear_matches_autograd_linear_on_the_joined_input(widths, needs, dtype):
    gen = torch.Generator().manual_seed(sum(widths) + sum(needs))
    layer = nn.Linear(sum(widths), 24).to(dtype)
    parts = [torch.randn(32, w, generator=gen, dtype=dtype).requires_grad_(n) for w, n in zip(widths, needs)]
    grad = torch.randn(32, 24, generator=gen, dtype=dtype)

    expected = layer(torch.cat(parts, dim=1))
    expected_grads = torch.autograd.grad(
        expected, [layer.weight, layer.bias, *[p for p in parts if p.requires_grad]], grad
    )
    out = _CatLinear.apply(layer.weight, layer.bias, *parts)
    got_grads = torch.autograd.grad(out, [layer.weight, layer.bias, *[p for p in parts if p.requires_grad]], grad)

    tol = dict(rtol=1e-12, atol=1e-12) if dtype == torch.float64 else dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)  # the forward is the same addmm
    for got, want in zip(got_grads, expected_grads):
        torch.testing.assert_close(got, want, **tol)


def test_parts_without_gradient_get_none_and_the_mlp_helper_matches_the_sequential():
    net = nn.Sequential(nn.Linear(10, 8), nn.ELU(), nn.Linear(8, 1))
    a = torch.randn(4, 6, requires_grad=True)
    b = torch.randn(4, 4)  # needs no gradient
    out = _mlp_on_joined(net, (a, b))
    # the same products; the ELU (`sale_functions.elu`) is within one unit in the last place of torch's
    torch.testing.assert_close(out, net(torch.cat([a, b], dim=1)), rtol=1e-6, atol=1e-7)
    out.sum().backward()
    assert a.grad is not None and b.grad is None
    expected = torch.autograd.grad(net(torch.cat([a, b], dim=1)).sum(), a)[0]
    torch.testing.assert_close(a.grad, expected)

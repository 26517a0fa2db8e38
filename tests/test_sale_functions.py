"""`rlkit_td3.policies.sale_functions`: ``elu`` is torch's ELU to within a few units in the last place, with the
same gradient, on both of its paths (NumPy's ``expm1`` where NumPy vectorises it, torch's ELU elsewhere), and torch's
own function wherever the fast path does not apply; ``avg_l1_norm`` has the gradient of its formula."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from rlkit_td3.policies import sale_functions
from rlkit_td3.policies.sale_functions import avg_l1_norm, elu, numpy_expm1_vectorised


@pytest.fixture(params=["numpy", "torch"])
def elu_path(request, monkeypatch):
    """Each ELU test on both paths, whichever this CPU picks (NumPy's scalar expm1 is slow, not wrong)."""
    on = request.param == "numpy"
    monkeypatch.setattr(sale_functions, "_EXPM1_VECTORISED", {torch.float32: on, torch.float64: on})
    return request.param


def _ulps(got: torch.Tensor, want: torch.Tensor) -> float:
    spacing = torch.nextafter(want.abs(), torch.tensor(float("inf"), dtype=want.dtype)) - want.abs()
    return float(((got - want).abs() / spacing).max())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_values_within_a_few_ulps_of_torch_and_special_values_exact(dtype, elu_path):
    gen = torch.Generator().manual_seed(0)
    x = torch.cat(
        [
            torch.randn(256, 256, generator=gen, dtype=dtype).flatten() * 3,
            torch.logspace(-30, 2, 1000, dtype=dtype).neg(),  # tiny to large negative inputs
            torch.logspace(-30, 2, 1000, dtype=dtype),
        ]
    )
    got, want = elu(x), F.elu(x)
    assert got.dtype == dtype and got.shape == x.shape
    # measured on Zen 4: NumPy's float32 expm1 within 2.2 ulp of the exact value, torch's within 0.6, each other
    # within 2; float64 within 1 of each other (a wrong formula, exp(x) - 1 or a missed branch, is off by thousands)
    assert _ulps(got, want) <= (4.0 if elu_path == "numpy" else 0.0)
    assert torch.equal(got[x > 0], x[x > 0])  # the positive branch is the identity, exactly
    special = torch.tensor([float("nan"), float("inf"), float("-inf"), 0.0, -0.0, -1e4], dtype=dtype)
    out = elu(special)
    assert torch.isnan(out[0]) and out[1] == float("inf") and out[2] == -1.0
    assert out[3] == 0.0 and out[4] == 0.0 and out[5] == -1.0


def test_the_input_is_not_changed(elu_path):
    x = torch.randn(64, 32)
    copy = x.clone()
    elu(x)
    assert torch.equal(x, copy)


def test_gradient_matches_torch_and_gradcheck(elu_path):
    gen = torch.Generator().manual_seed(1)
    x = (torch.randn(64, 48, generator=gen, dtype=torch.float64) * 3).requires_grad_()
    grad = torch.randn(64, 48, generator=gen, dtype=torch.float64)
    (got,) = torch.autograd.grad(elu(x), x, grad)
    (want,) = torch.autograd.grad(F.elu(x), x, grad)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-15)
    small = torch.randn(6, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(elu, (small,))


def test_without_gradient_nothing_is_recorded(elu_path):
    x = torch.randn(8, 8, requires_grad=True)
    with torch.no_grad():
        assert elu(x).grad_fn is None
    assert elu(torch.randn(8, 8)).grad_fn is None
    assert elu(x).grad_fn is not None


@pytest.mark.parametrize(
    ("loops", "want"),
    [
        ({"ff": {"current": "X86_V4"}, "dd": {"current": "AVX512_SKX"}}, (True, True)),  # NumPy's SVML loops
        ({"ff": {"current": "baseline(X86_V2)"}, "dd": {"current": "baseline(X86_V2)"}}, (False, False)),  # scalar
        ({"ff": {"current": "X86_V4"}}, (True, False)),  # a dtype the report leaves out: not vectorised
        ({}, (False, False)),
    ],
)
def test_the_path_follows_numpys_dispatch_report(monkeypatch, loops, want):
    from numpy.lib import introspect

    asked = []

    def report(func_name=None, signature=None):
        asked.append(func_name)
        return {"expm1": loops} if loops else {}

    monkeypatch.setattr(introspect, "opt_func_info", report)
    got = sale_functions._expm1_dispatch()
    assert (got[torch.float32], got[torch.float64]) == want and asked == ["^expm1$"]
    monkeypatch.setattr(sale_functions, "_EXPM1_VECTORISED", got)
    assert (numpy_expm1_vectorised(torch.float32), numpy_expm1_vectorised(torch.float64)) == want
    assert not numpy_expm1_vectorised(torch.bfloat16)


@pytest.mark.parametrize("vectorised", [True, False])
def test_the_machines_path_is_the_one_computed(monkeypatch, vectorised):
    # torch's own values on the torch path, bit for bit, and NumPy's on the NumPy path: the two differ in the last
    # place for some of these inputs (measured: 10,138 of 200,001 on Zen 3's scalar expm1), so each side can fail
    monkeypatch.setattr(sale_functions, "_EXPM1_VECTORISED", {torch.float32: vectorised})
    x = torch.linspace(-20, 1, 200_001)
    numpy_values = torch.from_numpy(np.maximum(np.expm1(np.minimum(x.numpy(), 0)), x.numpy()))
    assert not torch.equal(numpy_values, F.elu(x))
    got = elu(x)
    if vectorised:
        assert torch.equal(got, numpy_values)
    else:
        assert torch.equal(got, F.elu(x))


@pytest.mark.parametrize(
    ("make", "alpha", "inplace"),
    [
        (lambda: torch.randn(8, 6), 0.5, False),  # another alpha
        (lambda: torch.randn(6, 8).t(), 1.0, False),  # not contiguous
        (lambda: torch.randn(8, 6, dtype=torch.bfloat16), 1.0, False),  # a dtype NumPy has not
    ],
)
def test_other_inputs_are_torchs_own_elu(make, alpha, inplace):
    x = make()
    torch.testing.assert_close(elu(x, alpha, inplace), F.elu(x, alpha, inplace), rtol=0, atol=0)


def test_in_place_is_torchs_own_elu():
    x = torch.randn(8, 6)
    want = F.elu(x.clone())
    out = elu(x, inplace=True)
    assert out.data_ptr() == x.data_ptr()
    torch.testing.assert_close(out, want, rtol=0, atol=0)


def _avg_l1_formula(x: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    return x / x.abs().mean(dim=-1, keepdim=True).clamp(min=eps)


def test_avg_l1_norm_values_and_gradient_equal_autograds_of_the_formula():
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(64, 48, generator=gen, dtype=torch.float64)
    x[3] = 0.0  # a row whose mean is below eps: divided by eps, no gradient through the mean
    x[5] = 1e-10
    x = x.requires_grad_()
    grad = torch.randn(64, 48, generator=gen, dtype=torch.float64)
    out = avg_l1_norm(x)
    want = _avg_l1_formula(x)
    torch.testing.assert_close(out, want, rtol=0, atol=0)  # the same forward operations
    (got_grad,) = torch.autograd.grad(out, x, grad)
    (want_grad,) = torch.autograd.grad(want, x, grad)
    torch.testing.assert_close(got_grad, want_grad, rtol=1e-12, atol=1e-12 * float(want_grad.abs().max()))
    small = torch.randn(6, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(avg_l1_norm, (small,))
    assert out.grad_fn is not None
    with torch.no_grad():
        assert avg_l1_norm(x).grad_fn is None

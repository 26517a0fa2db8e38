"""The optimizer calls of the update loop: same numbers as ``Optimizer.step`` / ``zero_grad``, and the fallbacks."""

from __future__ import annotations

from unittest import mock

import pytest
import torch
from torch import nn

from rlkit_td3 import DDPG, TD3
from rlkit_td3.update.optim import optimizer_step, zero_grad


def _pair(optimizer_class, **kwargs):
    torch.manual_seed(0)
    nets = [nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 3)) for _ in range(2)]
    nets[1].load_state_dict(nets[0].state_dict())
    return nets, [optimizer_class(net.parameters(), lr=1e-2, **kwargs) for net in nets]


def _backward(net: nn.Module, step: int) -> None:
    gen = torch.Generator().manual_seed(step)
    x = torch.randn(32, 5, generator=gen)
    net(x).pow(2).mean().backward()


def _assert_same(nets, optimizers) -> None:
    for a, b in zip(nets[0].parameters(), nets[1].parameters()):
        assert torch.equal(a, b)
    state_a, state_b = optimizers[0].state_dict()["state"], optimizers[1].state_dict()["state"]
    assert state_a.keys() == state_b.keys() and state_a
    for key in state_a:
        for name in state_a[key]:
            assert torch.equal(state_a[key][name], state_b[key][name]), name


@pytest.mark.parametrize(
    "optimizer_class, kwargs",
    [
        (torch.optim.Adam, {"fused": True}),
        (torch.optim.Adam, {"foreach": True, "weight_decay": 1e-2}),
        (torch.optim.Adam, {"foreach": False, "maximize": True}),
        (torch.optim.AdamW, {"fused": True, "weight_decay": 0.1}),
    ],
)
def test_direct_adam_step_is_bitwise_the_optimizer_step(optimizer_class, kwargs):
    nets, optimizers = _pair(optimizer_class, **kwargs)
    for step in range(25):
        for i, (net, opt) in enumerate(zip(nets, optimizers)):
            for group in opt.param_groups:
                group["lr"] = 1e-2 / (1 + step)  # a schedule, as the algorithms set it
            if i == 0:
                opt.zero_grad(set_to_none=True)
                _backward(net, step)
                opt.step()
            else:
                zero_grad(opt)
                _backward(net, step)
                if step == 0:
                    optimizer_step(opt)  # creates the state through optimizer.step()
                else:
                    with mock.patch.object(optimizer_class, "step", side_effect=AssertionError("wrapper called")):
                        optimizer_step(opt)  # the direct path: Optimizer.step is never reached
    _assert_same(nets, optimizers)


@pytest.mark.parametrize(
    "optimizer_class, kwargs",
    [(torch.optim.Adam, {"fused": True}), (torch.optim.AdamW, {"fused": True, "weight_decay": 0.1})],
)
def test_fused_groups_call_the_kernel_directly_and_bitwise(optimizer_class, kwargs):
    """A fused CPU group skips torch's functional Adam (and its regrouping) and calls the fused kernel itself,
    with the same result bit for bit."""
    nets, optimizers = _pair(optimizer_class, **kwargs)
    for step in range(25):
        for i, (net, opt) in enumerate(zip(nets, optimizers)):
            for group in opt.param_groups:
                group["lr"] = 1e-2 / (1 + step)
            zero_grad(opt)
            _backward(net, step)
            if i == 0:
                opt.step()
            elif step == 0:
                optimizer_step(opt)
            else:
                with mock.patch(
                    "rlkit_td3.update.optim._functional_adam", side_effect=AssertionError("functional called")
                ):
                    optimizer_step(opt)
    _assert_same(nets, optimizers)


def test_the_direct_step_leaves_the_grad_mode_as_it_found_it():
    """The step runs without gradients (in-place updates of leaf parameters), and gives the caller's mode back, also
    when the kernel raises."""
    nets, optimizers = _pair(torch.optim.Adam, fused=True)
    net, opt = nets[0], optimizers[0]
    _backward(net, 0)
    opt.step()  # creates the state: later calls take the direct path
    seen = []

    def kernel(*args, **kwargs):
        seen.append(torch.is_grad_enabled())
        raise RuntimeError("kernel failed")

    _backward(net, 1)
    for enabled in (True, False):
        with torch.set_grad_enabled(enabled), mock.patch("torch._fused_adam_", side_effect=kernel):
            with pytest.raises(RuntimeError, match="kernel failed"):
                optimizer_step(opt)
            assert torch.is_grad_enabled() is enabled
    assert seen == [False, False]
    optimizer_step(opt)
    assert torch.is_grad_enabled()


def test_zero_grad_sets_every_gradient_to_none():
    nets, optimizers = _pair(torch.optim.Adam)
    _backward(nets[0], 0)
    assert all(p.grad is not None for p in nets[0].parameters())
    zero_grad(optimizers[0])
    assert all(p.grad is None for p in nets[0].parameters())


def test_hooks_amsgrad_other_optimizers_and_patched_steps_go_through_optimizer_step():
    # A step hook must run: the wrapper is used.
    nets, optimizers = _pair(torch.optim.Adam, fused=True)
    calls = []
    optimizers[1].register_step_pre_hook(lambda opt, args, kwargs: calls.append("pre"))
    for step in range(3):
        _backward(nets[1], step)
        optimizer_step(optimizers[1])
    assert calls == ["pre"] * 3

    # AMSGrad and SGD: same numbers as optimizer.step(), through it.
    for optimizer_class, kwargs in ((torch.optim.Adam, {"amsgrad": True}), (torch.optim.SGD, {"momentum": 0.9})):
        nets, optimizers = _pair(optimizer_class, **kwargs)
        for step in range(5):
            for i, (net, opt) in enumerate(zip(nets, optimizers)):
                zero_grad(opt)
                _backward(net, step)
                opt.step() if i == 0 else optimizer_step(opt)
        _assert_same(nets, optimizers)

    # A step patched on the instance (as torch's LR schedulers do) is called.
    nets, optimizers = _pair(torch.optim.Adam)
    _backward(nets[1], 0)
    optimizer_step(optimizers[1])
    patched = mock.Mock(wraps=optimizers[1].step)
    optimizers[1].step = patched
    _backward(nets[1], 1)
    optimizer_step(optimizers[1])
    assert patched.call_count == 1

    # A parameter without a gradient: the plain step, which skips it.
    nets, optimizers = _pair(torch.optim.Adam)
    _backward(nets[1], 0)
    optimizer_step(optimizers[1])
    zero_grad(optimizers[1])
    nets[1][2].weight.grad = torch.ones_like(nets[1][2].weight)
    before = nets[1][0].weight.detach().clone()
    optimizer_step(optimizers[1])
    assert torch.equal(nets[1][0].weight, before)


@pytest.mark.parametrize("algo", [TD3, DDPG])
def test_training_is_bitwise_the_same_as_with_the_optimizer_wrapper(algo):
    """learn() with the direct path equals learn() forced through Optimizer.step (a no-op hook disables it)."""
    models = []
    for force_wrapper in (False, True):
        model = algo("MlpPolicy", "Pendulum-v1", learning_starts=100, seed=3, policy_kwargs={"net_arch": [32, 32]})
        if force_wrapper:
            for opt in (model.policy.actor_optimizer, model.policy.critic_optimizer):
                opt.register_step_post_hook(lambda *args: None)
        model.learn(400)
        models.append(model)
    for a, b in zip(models[0].policy.state_dict().values(), models[1].policy.state_dict().values()):
        assert torch.equal(a, b)
    for name in ("actor_optimizer", "critic_optimizer"):
        state_a = getattr(models[0].policy, name).state_dict()["state"]
        state_b = getattr(models[1].policy, name).state_dict()["state"]
        for key in state_a:
            for entry in state_a[key]:
                assert torch.equal(state_a[key][entry], state_b[key][entry])

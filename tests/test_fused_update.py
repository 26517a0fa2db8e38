"""The fused update (`rlkit_td3.update.fused_update`) is `_train_step` bit for bit, is used only where it is
eligible, and
notices when what it was built for changes."""

from __future__ import annotations

import copy
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from torch import nn

from rlkit_td3 import DDPG, TD3
from rlkit_td3.buffers import PrioritizedReplayBuffer, ReplayBufferSamples
from rlkit_td3.schedules import LinearSchedule
from rlkit_td3.torch_layers import BaseFeaturesExtractor
from rlkit_td3.update.fused_update import (
    FusedUpdate,
    _onednn_product,
    _onednn_products,
    cpu_family,
    cpu_vendor,
    onednn_matmul_available,
    resolve_matmul,
)
from rlkit_td3.utils import NonFiniteError
from tests.test_resume import _assert_same_run, _entries

ALGOS = {"td3": TD3, "ddpg": DDPG}


def _filled(
    algo: str,
    fused: bool,
    arch=(64, 48),
    batch_size: int = 32,
    dtype=torch.float32,
    n: int = 1000,
    matmul: str = "reference",
    **kw,
):
    """A model on Pendulum's spaces with ``n`` random transitions (5 % terminal) in its buffer. ``matmul``: its
    ``fused_update_matmul`` (the bit-for-bit tests use the reference calls, whatever the CPU)."""
    model = ALGOS[algo](
        "MlpPolicy",
        "Pendulum-v1",
        learning_starts=0,
        batch_size=batch_size,
        buffer_size=n,
        policy_kwargs={"net_arch": list(arch), **kw.pop("policy_kwargs", {})},
        seed=0,
        **kw,
    )
    model.use_fused_update = fused
    model.fused_update_matmul = matmul
    rng = np.random.default_rng(0)
    for _ in range(n):
        obs = rng.normal(size=(1, 3)).astype(np.float32)
        next_obs = obs + 0.1 * rng.normal(size=(1, 3)).astype(np.float32)
        model.replay_buffer.add(
            obs, next_obs, rng.uniform(-1, 1, (1, 1)), rng.normal(size=1), rng.random(1) < 0.05, np.array([False])
        )
    if dtype == torch.float64:
        model.policy.double()
        sample = model.replay_buffer.sample
        model.replay_buffer.sample = lambda b: ReplayBufferSamples(*(t.double() for t in sample(b)))
    return model


def _state(model) -> dict[str, torch.Tensor]:
    """Every parameter and target, every optimizer state tensor, every ``.grad``, the loss sums and counters."""
    out = {f"policy.{k}": v for k, v in model.policy.state_dict().items()}
    for name in ("actor_optimizer", "critic_optimizer"):
        opt = getattr(model.policy, name)
        for i, p in enumerate(opt.param_groups[0]["params"]):
            for key, value in opt.state[p].items():
                out[f"{name}.{i}.{key}"] = value
            out[f"{name}.{i}.grad"] = p.grad if p.grad is not None else torch.tensor([])  # None
            out[f"{name}.{i}.lr"] = torch.tensor(opt.param_groups[0]["lr"])
    out["critic_loss_sum"], out["actor_loss_sum"] = model._critic_loss_sum, model._actor_loss_sum
    out["counters"] = torch.tensor([model._n_updates, model._n_critic_losses, model._n_actor_losses])
    return out


def _assert_bitwise(a, b) -> None:
    sa, sb = _state(a), _state(b)
    assert sa.keys() == sb.keys()
    different = [k for k in sa if not (sa[k].dtype == sb[k].dtype and torch.equal(sa[k], sb[k]))]
    assert not different, different


def _fused_updates(model) -> int:
    cached = model._fused_update
    return 0 if cached is None or cached[1] is None else cached[1].updates


@pytest.fixture
def backward_calls(monkeypatch):
    """How many times autograd's backward ran (``_train_step`` calls it once or twice per update)."""
    calls = []
    original = torch.Tensor.backward

    def counting(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "backward", counting)
    return calls


# ---------------------------------------------------------------------------- (a) bit for bit
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("algo", ["td3", "ddpg"])
@pytest.mark.parametrize("batch_size", [32, 48])  # 48: 1/B is rounded, as in the reference's mean backward
def test_fused_train_is_bitwise_the_autograd_train(algo, dtype, batch_size, backward_calls):
    ref = _filled(algo, False, batch_size=batch_size, dtype=dtype, learning_rate=LinearSchedule(1e-3, 1e-4))
    fus = _filled(algo, True, batch_size=batch_size, dtype=dtype, learning_rate=LinearSchedule(1e-3, 1e-4))
    for steps, progress in ((1, 1.0), (63, 0.9), (100, 0.6), (136, 0.3)):  # 300 updates, across moment flushes
        for model in (ref, fus):
            model._current_progress_remaining = progress  # the learning-rate schedule moves
            model.train(steps)
    assert len(backward_calls) == 300 + ref._n_actor_losses  # the reference ran autograd, the fused model did not
    assert _fused_updates(fus) == 300 and _fused_updates(ref) == 0
    assert fus._n_actor_losses == (150 if algo == "td3" else 300)
    _assert_bitwise(ref, fus)


def test_fused_train_stays_bitwise_over_a_thousand_updates():
    ref = _filled("td3", False, n=2000)
    fus = _filled("td3", True, n=2000)
    for model in (ref, fus):
        model.train(1000)
    assert _fused_updates(fus) == 1000 and fus._n_actor_losses == 500
    _assert_bitwise(ref, fus)


def test_fused_train_is_bitwise_at_the_default_sizes():
    ref = _filled("td3", False, arch=(400, 300), batch_size=256, n=3000)
    fus = _filled("td3", True, arch=(400, 300), batch_size=256, n=3000)
    for model in (ref, fus):
        model.train(50)
    assert _fused_updates(fus) == 50
    _assert_bitwise(ref, fus)


@pytest.mark.parametrize(
    ("threads", "algo", "dtype", "arch", "batch_size"),
    [
        (2, "td3", torch.float32, (400, 300), 256),
        (2, "ddpg", torch.float64, (64, 48), 48),
        (2, "ddpg", torch.float32, (400, 300), 256),  # one critic: its products in row blocks too
        (3, "td3", torch.float32, (64, 48), 48),  # three row blocks of 16
    ],
)
def test_fused_train_is_bitwise_at_several_threads(threads, algo, dtype, arch, batch_size):
    """Both paths agree at any torch thread count, not only the suite's one thread (matrix products split their
    work by thread count, which changes roundings between thread counts), including the fused path's row-blocked
    products (`FusedUpdate._gemm`), which it uses at more than one thread."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        ref = _filled(algo, False, arch=arch, batch_size=batch_size, n=3000, dtype=dtype)
        fus = _filled(algo, True, arch=arch, batch_size=batch_size, n=3000, dtype=dtype)
        for model in (ref, fus):
            model.train(40)
    finally:
        torch.set_num_threads(before)
    assert _fused_updates(fus) == 40
    assert fus._fused_update[1].parts == threads  # the row-blocked products were used
    _assert_bitwise(ref, fus)


def test_the_planned_calls_follow_the_thread_count():
    """Each product's call is planned once and reused (`FusedUpdate._gemm`); a new torch thread count plans it again:
    row blocks at two threads, plain calls at one, and the model stays autograd's bit for bit throughout."""
    blocked = (torch.bmm, torch.baddbmm)
    ref = _filled("td3", False, arch=(64, 48), batch_size=64)
    fus = _filled("td3", True, arch=(64, 48), batch_size=64)
    before = torch.get_num_threads()
    seen = []
    try:
        for threads in (1, 2, 1):
            torch.set_num_threads(threads)
            for model in (ref, fus):
                model.train(6)
            plans = fus._fused_update[1]._plans.values()
            seen.append({plan[2] for plan in plans})
            assert any(plan[3] in blocked and plan[0].dim() == 2 for plan in plans) == (threads == 2)  # 2-d in
    finally:
        torch.set_num_threads(before)
    assert seen == [{1}, {2}, {1}]
    assert _fused_updates(fus) == 18
    _assert_bitwise(ref, fus)


def test_switching_paths_on_one_model_stays_bitwise():
    """Autograd's update leaves its own ``.grad`` tensors on the parameters; the fused update installs its own again
    before its backward (it installs them only when they are not there already)."""
    ref = _filled("td3", False)
    mixed = _filled("td3", True)
    ref.train(15)
    for fused in (True, False, True):
        mixed.use_fused_update = fused
        mixed.train(5)
    assert _fused_updates(mixed) == 10
    _assert_bitwise(ref, mixed)


def test_row_blocks_that_disagree_with_the_plain_product_are_not_used(monkeypatch):
    """On a CPU whose BLAS sums a row block differently from the whole product, the trial product catches it and
    the plain calls stay: the update is still autograd's bit for bit. Simulated by blocks that are one ulp off."""
    original = FusedUpdate._call

    def off_by_one_ulp(a, b, out, bias, parts):
        fn, args, dest = original(a, b, out, bias, parts)
        if parts == 1:
            return fn, args, dest

        def nudged(*args, out):
            fn(*args, out=out)
            out.copy_(torch.nextafter(out, torch.full_like(out, float("inf"))))

        return nudged, args, dest

    monkeypatch.setattr(FusedUpdate, "_call", staticmethod(off_by_one_ulp))
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        ref = _filled("td3", False, n=2000)
        fus = _filled("td3", True, n=2000)
        rng_state = torch.get_rng_state()
        for model in (ref, fus):
            model.train(20)
    finally:
        torch.set_num_threads(before)
    verdicts = fus._fused_update[1].blocks_agree
    assert verdicts and not any(verdicts.values())  # every shape was tried, none kept
    assert torch.equal(torch.get_rng_state(), rng_state)  # the trials draw from their own generator
    _assert_bitwise(ref, fus)


def test_the_row_block_trial_declines_operands_it_cannot_copy():
    """Operands whose rows overlap in memory (an expanded tensor) cannot be drawn at random with their layout:
    the trial says no instead of raising, and the plain call is used."""
    w = torch.randn(8, 32)
    assert FusedUpdate._blocks_match(torch.randn(1, 8).expand(64, 8), w, torch.empty(64, 32), None, 2) is False
    assert FusedUpdate._blocks_match(torch.randn(63, 8), w, torch.empty(63, 32), None, 2) is False  # 63 rows


@pytest.mark.parametrize(
    ("algo", "kwargs"),
    [
        ("td3", {}),
        ("ddpg", {}),
        ("td3", {"policy_kwargs": {"net_arch": [32, 24], "normalize_obs": True}, "train_freq": 4, "gradient_steps": 3}),
    ],
)
def test_learn_is_bitwise_the_autograd_learn(algo, kwargs):
    def run(fused):
        base = {"learning_starts": 100, "batch_size": 32, "seed": 5, "policy_kwargs": {"net_arch": [64, 48]}}
        model = ALGOS[algo]("MlpPolicy", gym.make("Pendulum-v1"), **{**base, **kwargs})
        model.use_fused_update = fused
        model.fused_update_matmul = "reference"
        return model.learn(800)

    ref, fus = run(False), run(True)
    assert _fused_updates(fus) == fus._n_updates > 0
    assert [e["r"] for e in ref.ep_info_buffer] == [e["r"] for e in fus.ep_info_buffer]
    _assert_bitwise(ref, fus)


def test_non_finite_losses_raise_on_the_fused_path():
    model = _filled("td3", True)
    model.replay_buffer.rewards[:] = np.inf
    with pytest.raises(NonFiniteError, match="training loss became non-finite"):
        model.train(2)
    assert _fused_updates(model) == 2


# ---------------------------------------------------------------------------- (b) fallbacks
class TinyExtractor(BaseFeaturesExtractor):
    def __init__(self, observation_space: spaces.Box, features_dim: int = 5):
        super().__init__(observation_space, features_dim)
        self.net = nn.Linear(int(np.prod(observation_space.shape)), features_dim)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.net(observations)


FALLBACKS = {
    "per": {"replay_buffer_class": PrioritizedReplayBuffer},
    "lap": {"replay_buffer_class": PrioritizedReplayBuffer, "replay_buffer_kwargs": {"prioritization": "lap"}},
    "n_steps": {"n_steps": 3},
    "layer_norm": {"policy_kwargs": {"critic_layer_norm": True}},
    "tanh_activation": {"policy_kwargs": {"activation_fn": nn.Tanh}},
    "custom_extractor": {"policy_kwargs": {"features_extractor_class": TinyExtractor}},
    "shared_extractor": {"policy_kwargs": {"share_features_extractor": True}},
}


@pytest.mark.parametrize("case", list(FALLBACKS))
def test_unusual_models_use_the_autograd_step(case, backward_calls):
    model = TD3("MlpPolicy", gym.make("Pendulum-v1"), learning_starts=50, batch_size=16, seed=0, **FALLBACKS[case])
    model.learn(120)
    assert model._n_updates > 0 and _fused_updates(model) == 0
    assert len(backward_calls) == model._n_critic_losses + model._n_actor_losses


def test_an_overridden_train_step_is_called(backward_calls):
    calls = []

    class MyTD3(TD3):
        def _train_step(self, batch, update_actor):
            calls.append(update_actor)
            super()._train_step(batch, update_actor)

    model = MyTD3("MlpPolicy", gym.make("Pendulum-v1"), learning_starts=50, batch_size=16, seed=0)
    model.learn(80)
    assert len(calls) == model._n_updates > 0 and _fused_updates(model) == 0


def test_the_switch_turns_it_off_and_on(backward_calls):
    model = _filled("td3", True)
    model.train(4)
    assert _fused_updates(model) == 4 and not backward_calls
    model.use_fused_update = False
    model.train(4)
    assert _fused_updates(model) == 4 and len(backward_calls) == 4 + 2
    model.use_fused_update = True
    model.train(4)
    assert _fused_updates(model) == 8


# ---------------------------------------------------------------------------- (c) changes are noticed
def test_another_batch_size_rebuilds_the_buffers():
    ref, fus = _filled("td3", False), _filled("td3", True)
    for model in (ref, fus):
        model.train(10)
    first = fus._fused_update[1]
    for model in (ref, fus):
        model.train(10, batch_size=20)
    second = fus._fused_update[1]
    assert second is not first and second.B == 20 and second.updates == 10
    _assert_bitwise(ref, fus)


@pytest.mark.parametrize("change", ["data", "cast", "module", "policy_flag"])
def test_swapped_parameters_and_modules_are_noticed(change, backward_calls):
    ref, fus = _filled("td3", False), _filled("td3", True)
    for model in (ref, fus):
        model.train(10)
    first = fus._fused_update[1]
    for model in (ref, fus):
        policy = model.policy
        if change == "data":  # new storage behind the same Parameter object
            weight = policy.critic.weights[1]
            weight.data = weight.data.clone()
        elif change == "cast":
            policy.double()
            for opt in (policy.actor_optimizer, policy.critic_optimizer):
                opt.state.clear()  # Adam's float32 moments would not take float64 gradients
            sample = model.replay_buffer.sample
            model.replay_buffer.sample = lambda b, sample=sample: ReplayBufferSamples(*(t.double() for t in sample(b)))
        elif change == "module":  # a new Linear (same weights) that the actor optimizer does not hold
            old = policy.actor.mu[2]
            new = nn.Linear(old.in_features, old.out_features)
            new.load_state_dict(old.state_dict())
            policy.actor.mu[2] = new
        else:
            policy.critic.layer_norm = True  # the reference would now look for LayerNorm parameters: don't train
    if change == "policy_flag":
        assert FusedUpdate.state_key(fus, 32) != first.key
        return
    backward_calls.clear()
    for model in (ref, fus):
        model.train(10)
    if change == "module":
        assert fus._fused_update[1] is None and len(backward_calls) == 2 * (10 + 5)  # both fell back to autograd
    else:
        assert fus._fused_update[1] is not first and fus._fused_update[1].updates == 10
        assert len(backward_calls) == 10 + 5  # the reference only
    _assert_bitwise(ref, fus)


def test_a_parameter_hook_falls_back_to_autograd(backward_calls):
    model = _filled("td3", True)
    model.train(2)
    seen = []
    model.policy.critic.weights[0].register_hook(lambda grad: seen.append(1))
    model.train(2)
    assert _fused_updates(model) == 0 and len(seen) == 2


# ---------------------------------------------------------------------------- (d) exact resume
def _straight_run(tmp_path, fused: bool, matmul: str, net=(32, 32), batch_size: int = 32):
    """A 600-step Pendulum run saved to ``straight.zip``, with a checkpoint (buffer included) at step 400 in
    ``k.zip``."""
    kwargs = dict(learning_starts=200, batch_size=batch_size, policy_kwargs={"net_arch": list(net)}, seed=7)

    def save_at_400(locals_, globals_):
        if locals_["self"].num_timesteps == 400:
            locals_["self"].save(tmp_path / "k.zip", include_buffer=True)
        return True

    straight = TD3("MlpPolicy", gym.make("Pendulum-v1"), **kwargs)
    straight.use_fused_update = fused
    straight.fused_update_matmul = matmul
    straight.learn(600, callback=save_at_400)
    straight.save(tmp_path / "straight.zip", include_buffer=True)
    return straight


@pytest.mark.parametrize("straight_fused", [False, True])
def test_exact_resume_across_the_two_paths(tmp_path, straight_fused):
    """A run checkpointed with its buffer and resumed on the other path ends bit for bit where the straight one
    does."""
    straight = _straight_run(tmp_path, straight_fused, "reference")
    resumed = TD3.load(tmp_path / "k.zip", env=gym.make("Pendulum-v1"))
    assert resumed.use_fused_update  # not saved: a loaded model starts with the default
    assert resumed.fused_update_matmul == "reference"  # saved with the training state
    resumed.use_fused_update = not straight_fused
    resumed.learn(200, reset_num_timesteps=False)
    resumed.save(tmp_path / "resumed.zip", include_buffer=True)
    assert _fused_updates(straight if straight_fused else resumed) > 0
    _assert_same_run(_entries(tmp_path / "straight.zip"), _entries(tmp_path / "resumed.zip"))


# ---------------------------------------------------------------------------- (e) oneDNN's products
needs_onednn = pytest.mark.skipif(
    not onednn_matmul_available(torch.float32), reason="this torch build has no oneDNN inner product"
)


def _max_relative_difference(a, b) -> tuple[float, str]:
    """The largest ``|a - b| / max|a|`` over the state tensors of two models, and where."""
    sa, sb = _state(a), _state(b)
    assert sa.keys() == sb.keys()
    worst = (0.0, "")
    for key in sa:
        x, y = sa[key].double(), sb[key].double()
        if x.numel():
            worst = max(worst, (float((x - y).abs().max() / x.abs().max().clamp_min(1e-12)), key))
    return worst


# Sizes at which oneDNN computes products (every dimension at least 64): the hidden layers, not the input layer
ONEDNN_SIZES = dict(arch=(64, 64), batch_size=64)


def _onednn_plans(model) -> tuple[int, int, int]:
    """How many of the fused update's planned products are oneDNN products of one matrix, oneDNN products of the
    critic ensemble (one per critic), and reference calls (3-d ``bmm`` / ``baddbmm``) on the ensemble at sizes oneDNN
    takes (a plan is ``(a, b, parts, function, arguments, out, relu)``)."""
    plans = model._fused_update[1]._plans.values()
    single = sum(plan[3] is _onednn_product for plan in plans)
    ensemble = sum(plan[3] is _onednn_products for plan in plans)
    big = [plan for plan in plans if min(*plan[5].shape[-2:], plan[0].shape[-1]) >= 64]
    batched = sum(plan[3] in (torch.bmm, torch.baddbmm) and plan[5].dim() == 3 for plan in big)
    return single, ensemble, batched


def _onednn_weight_gradients(model) -> int:
    """How many planned oneDNN products of one matrix read a left operand that is not contiguous: the weight
    gradients, ``activations.T @ grad``."""
    plans = model._fused_update[1]._plans.values()
    return sum(plan[3] is _onednn_product and not plan[0].is_contiguous() for plan in plans)


def _copy_training_state(dst, src) -> None:
    """Give ``dst`` the networks, optimizer states, counters, loss sums and random generators of ``src``, so that
    the next update of each starts from the same state and draws the same batch and noise."""
    dst.policy.load_state_dict(src.policy.state_dict())
    for name in ("actor_optimizer", "critic_optimizer"):
        # a copy: loading a live optimizer's state dict would share its moment tensors with the other optimizer
        getattr(dst.policy, name).load_state_dict(copy.deepcopy(getattr(src.policy, name).state_dict()))
    for name in ("_n_updates", "_n_critic_losses", "_n_actor_losses"):
        setattr(dst, name, getattr(src, name))
    dst._critic_loss_sum.copy_(src._critic_loss_sum)
    dst._actor_loss_sum.copy_(src._actor_loss_sum)
    dst._smoothing_rng.set_state(src._smoothing_rng.get_state())
    dst.replay_buffer._rng.bit_generator.state = src.replay_buffer._rng.bit_generator.state


def _worst_difference_from_copied_states(ref, fus, rounds: int, gap: int) -> tuple[float, str]:
    """``rounds`` times: give ``fus`` the training state of ``ref``, make two updates with each, compare them
    (`_max_relative_difference`), then ``gap`` more updates of ``ref``. The largest difference seen, and where."""
    worst = (0.0, "")
    for _ in range(rounds):
        _copy_training_state(fus, ref)
        for model in (ref, fus):
            model.train(2)
        worst = max(worst, _max_relative_difference(ref, fus))
        ref.train(gap)
    return worst


@needs_onednn
@pytest.mark.parametrize("matmul", ["onednn", "mixed"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("algo", ["td3", "ddpg"])
def test_onednn_updates_stay_within_float_tolerance_of_autograd_along_a_thousand_updates(algo, threads, matmul):
    """oneDNN sums the dot products in its own order: not the same bits as autograd, the same update to float32
    rounding. Every 100 updates of a 1,000-update autograd run, the oneDNN path makes two updates (the critic's, then
    the critic's and the actor's) from the very same state and batches: measured at most 4e-5 of a tensor's largest
    value (the first updates, where Adam's step is near ``lr * sign(grad)``), about 1e-6 later. Whole runs are not
    compared: training amplifies any rounding difference (after a few hundred updates two runs that differ in the
    last bit of one product are different runs, as two CPUs' runs are)."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        ref = _filled(algo, False, n=2000, **ONEDNN_SIZES)
        fus = _filled(algo, True, n=2000, matmul=matmul, **ONEDNN_SIZES)
        worst = _worst_difference_from_copied_states(ref, fus, rounds=10, gap=98)
    finally:
        torch.set_num_threads(before)
    assert fus._fused_update[1].matmul == matmul and _fused_updates(fus) == 20 and ref._n_updates == 1000
    single, ensemble, batched = _onednn_plans(fus)
    assert single > 0  # the actor's hidden layer, forward and backward
    if algo == "ddpg" and threads > 1:  # a single critic at several threads: 2-d products, oneDNN's in both modes
        assert ensemble == 0 and batched == 0
    elif matmul == "onednn" or threads == 1:  # "mixed" at one thread is "onednn"
        assert ensemble > 0 and batched == 0
    else:  # "mixed" at several threads: the ensemble's hidden-layer products stay one batched reference call
        assert ensemble == 0 and batched > 0
    assert worst[0] < 1e-4, worst  # the plans above show that oneDNN computed products


@needs_onednn
@pytest.mark.parametrize("algo", ["td3", "ddpg"])
def test_mixed_products_follow_the_thread_count_on_one_model(algo):
    """``"mixed"`` sends the critic ensemble's products and the weight gradients (a transposed left operand) to
    oneDNN at one thread and to the reference calls at several, re-planned when the thread count changes between two
    ``train`` calls; the other products of a single network stay on oneDNN."""
    model = _filled(algo, True, matmul="mixed", **ONEDNN_SIZES)
    before = torch.get_num_threads()
    seen = []
    try:
        for threads in (1, 2, 1):
            torch.set_num_threads(threads)
            model.train(4)
            seen.append((*_onednn_plans(model), _onednn_weight_gradients(model)))
    finally:
        torch.set_num_threads(before)
    (single_1, ensemble_1, batched_1, grads_1), (single_2, ensemble_2, batched_2, grads_2), again = seen
    assert grads_1 > 0 and grads_2 == 0 and single_2 > 0
    if algo == "td3":
        assert ensemble_1 > 0 and batched_1 == 0
        assert ensemble_2 == 0 and batched_2 > 0
    # back at one thread the same plans again (a single critic's two-thread plans stay in the table, unused)
    assert again[1:] == seen[0][1:] and (algo == "ddpg" or again == seen[0]) and _fused_updates(model) == 12


def test_copying_the_training_state_makes_the_next_updates_the_same():
    """The control for the tolerance test above: with the reference products, updates from a copied state are the
    reference's bit for bit (a state not copied in full, or shared moments, would show here)."""
    ref = _filled("td3", False, n=2000, **ONEDNN_SIZES)
    fus = _filled("td3", True, n=2000, **ONEDNN_SIZES)
    ref.train(101)
    _copy_training_state(fus, ref)
    for model in (ref, fus):
        model.train(2)
    assert _fused_updates(fus) == 2
    _assert_bitwise(ref, fus)


@needs_onednn
@pytest.mark.parametrize("matmul", ["onednn", "mixed"])
@pytest.mark.parametrize("threads", [1, 2])
def test_onednn_products_repeat_bit_for_bit(threads, matmul):
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        runs = [_filled("td3", True, matmul=matmul, **ONEDNN_SIZES) for _ in range(2)]
        for model in runs:
            model.train(200)
    finally:
        torch.set_num_threads(before)
    assert all(_fused_updates(model) == 200 and _onednn_plans(model)[0] > 0 for model in runs)
    _assert_bitwise(*runs)


@needs_onednn
@pytest.mark.parametrize("matmul", ["onednn", "mixed"])
def test_exact_resume_with_onednn_products(tmp_path, matmul):
    """The choice is saved with the training state: a resumed run makes the same products and ends where the
    straight one does, bit for bit."""
    _straight_run(tmp_path, True, matmul, net=ONEDNN_SIZES["arch"], batch_size=ONEDNN_SIZES["batch_size"])
    resumed = TD3.load(tmp_path / "k.zip", env=gym.make("Pendulum-v1"))
    assert resumed.fused_update_matmul == matmul
    resumed.learn(200, reset_num_timesteps=False)
    resumed.save(tmp_path / "resumed.zip", include_buffer=True)
    assert resumed._fused_update[1].matmul == matmul and _fused_updates(resumed) > 0
    assert _onednn_plans(resumed)[0] > 0
    _assert_same_run(_entries(tmp_path / "straight.zip"), _entries(tmp_path / "resumed.zip"))


def test_auto_picks_onednn_on_amd_cpus_by_family(monkeypatch):
    import rlkit_td3.update.matmul_choice as fu  # the choice moved there from fused_update

    fast = onednn_matmul_available(torch.float32) and torch.backends.mkl.is_available()
    monkeypatch.setattr(fu, "cpu_vendor", lambda: "AuthenticAMD")
    for family, expected in ((26, "onednn"), (27, "onednn"), (25, "mixed"), (23, "mixed"), (0, "mixed")):
        monkeypatch.setattr(fu, "cpu_family", lambda family=family: family)
        assert resolve_matmul("auto", torch.float32) == (expected if fast else "reference"), family
        assert resolve_matmul("auto", torch.float64) == "reference"  # oneDNN has no float64 kernels
        assert resolve_matmul("reference", torch.float32) == "reference"
    monkeypatch.setattr(fu, "cpu_vendor", lambda: "HygonGenuine")
    monkeypatch.setattr(fu, "cpu_family", lambda: 24)
    assert resolve_matmul("auto", torch.float32) == ("mixed" if fast else "reference")
    monkeypatch.setattr(fu, "cpu_vendor", lambda: "GenuineIntel")
    for family in (6, 26):
        monkeypatch.setattr(fu, "cpu_family", lambda family=family: family)
        assert resolve_matmul("auto", torch.float32) == "reference"
    model = _filled("td3", True, matmul="auto")
    model.train(2)
    assert model._fused_update[1].matmul == "reference"
    monkeypatch.setattr(fu, "cpu_vendor", lambda: "AuthenticAMD")
    model.train(2)  # the setting is part of the state key, not the vendor: the object built stays
    assert model._fused_update[1].matmul == "reference"
    model.fused_update_matmul = "reference"
    model.train(2)
    assert model._fused_update[1].matmul == "reference" and _fused_updates(model) == 2  # rebuilt


def test_the_vendor_is_read_from_the_cpu():
    vendor = cpu_vendor()
    assert isinstance(vendor, str)
    if Path("/proc/cpuinfo").exists():
        assert f"vendor_id\t: {vendor}" in Path("/proc/cpuinfo").read_text() or vendor == ""


def test_the_family_is_read_from_the_cpu():
    family = cpu_family()
    assert isinstance(family, int) and family >= 0
    if Path("/proc/cpuinfo").exists() and "cpu family" in Path("/proc/cpuinfo").read_text():
        assert f"cpu family\t: {family}\n" in Path("/proc/cpuinfo").read_text()


def test_the_cpu_id_is_read_from_the_windows_processor_name(monkeypatch):
    import rlkit_td3.update.matmul_choice as fu  # the choice moved there from fused_update

    original = Path.read_text

    def no_cpuinfo(self, *args, **kwargs):
        if str(self) == "/proc/cpuinfo":
            raise OSError("no /proc here")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", no_cpuinfo)
    monkeypatch.setattr(fu.platform, "processor", lambda: "AMD64 Family 25 Model 17 Stepping 1, AuthenticAMD")
    fu._cpu_id.cache_clear()
    try:
        assert (fu.cpu_vendor(), fu.cpu_family()) == ("AuthenticAMD", 25)
        monkeypatch.setattr(fu.platform, "processor", lambda: "Intel64 Family 6 Model 85 Stepping 7, GenuineIntel")
        fu._cpu_id.cache_clear()
        assert (fu.cpu_vendor(), fu.cpu_family()) == ("GenuineIntel", 6)
    finally:
        fu._cpu_id.cache_clear()


@pytest.mark.parametrize("value", ["mkl", "", None, 1, "ONEDNN"])
def test_a_bad_matmul_choice_is_refused_naming_it(value):
    model = _filled("td3", True, matmul=value)
    with pytest.raises(
        ValueError, match=r"fused_update_matmul=.* is not allowed: use one of auto, reference, onednn, mixed$"
    ):
        model.train(1)


@pytest.mark.parametrize("matmul", ["onednn", "mixed"])
def test_onednn_in_float64_is_refused(matmul):
    model = _filled("td3", True, dtype=torch.float64, matmul=matmul)
    with pytest.raises(ValueError, match=f"fused_update_matmul='{matmul}' needs float32 parameters"):
        model.train(1)


def test_saving_a_bad_matmul_choice_is_refused(tmp_path):
    model = _filled("td3", True, matmul="mkl")
    with pytest.raises(ValueError, match="fused_update_matmul='mkl' is not allowed"):
        model.save(tmp_path / "m.zip")
    assert not (tmp_path / "m.zip").exists()


@needs_onednn
@pytest.mark.parametrize("arch", [(64, 1), (1, 64)])
def test_onednn_mode_covers_width_one_hidden_layers(arch):
    """A hidden layer of width 1 makes products with one output column or a contraction of length one *with* a bias
    (the actor's output layer after it, the next layer): the elementwise forms must add the bias."""
    ref = _filled("td3", False, arch=arch)
    fus = _filled("td3", True, arch=arch, matmul="onednn")
    for model in (ref, fus):
        model.train(200)
    assert _fused_updates(fus) == 200
    worst, where = _max_relative_difference(ref, fus)
    assert worst < 1e-4, (worst, where)


class _WideEnv(gym.Env):
    """Observations and actions wide enough (80 and 70) for the input layer's products to reach oneDNN."""

    observation_space = spaces.Box(-1.0, 1.0, (80,), np.float32)
    action_space = spaces.Box(-1.0, 1.0, (70,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(80, np.float32), {}

    def step(self, action):
        return np.zeros(80, np.float32), 0.0, False, False, {}


def _wide_model(fused: bool, matmul: str, batch_size: int = 97) -> TD3:
    model = TD3(
        "MlpPolicy",
        _WideEnv(),
        learning_starts=0,
        batch_size=batch_size,
        buffer_size=2000,
        policy_kwargs={"net_arch": [64, 64, 64]},
        seed=0,
    )
    model.use_fused_update, model.fused_update_matmul = fused, matmul
    rng = np.random.default_rng(0)
    for _ in range(2000):
        obs = rng.normal(size=(1, 80)).astype(np.float32)
        next_obs = obs + 0.1 * rng.normal(size=(1, 80)).astype(np.float32)
        model.replay_buffer.add(
            obs, next_obs, rng.uniform(-1, 1, (1, 70)), rng.normal(size=1), rng.random(1) < 0.05, np.array([False])
        )
    return model


@needs_onednn
@pytest.mark.parametrize("matmul", ["onednn", "mixed"])
@pytest.mark.parametrize("threads", [1, 2])
def test_onednn_products_of_the_input_layer_and_deeper_networks(threads, matmul):
    """Wide observations (80) and actions (70), three hidden layers and an odd batch (97): the input layer's products
    go to oneDNN too, among them the actor's first layer on the freshly sampled observations (planned again at each
    update) and its weight gradient, whose left operand is a transposed view ("mixed" at two threads keeps the
    weight gradients on the reference calls). Updates from copied states stay within float tolerance of
    autograd's."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        ref, fus = _wide_model(False, "reference"), _wide_model(True, matmul)
        worst = _worst_difference_from_copied_states(ref, fus, rounds=5, gap=20)
    finally:
        torch.set_num_threads(before)
    assert _fused_updates(fus) == 10
    plans = fus._fused_update[1]._plans.values()
    # the actor's first layer reads the observations: a oneDNN product with a contraction of 80
    assert any(plan[3] is _onednn_product and plan[0].shape == (97, 80) for plan in plans)
    # its weight gradient: [64, 97] (a transposed view) @ [97, 80], on oneDNN except in "mixed" at two threads
    weight_gradient = [plan for plan in plans if plan[0].shape == (64, 97) and plan[1].shape == (97, 80)]
    assert len(weight_gradient) == 1
    assert (weight_gradient[0][3] is _onednn_product) == (matmul == "onednn" or threads == 1)
    assert worst[0] < 1e-4, worst

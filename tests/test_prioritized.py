"""Prioritized replay (PER) and LAP: the sum-tree, sampling frequencies, importance weights, losses, persistence."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from rlkit_td3 import TD3
from rlkit_td3.buffers import LAPReplayBuffer, PrioritizedReplayBuffer, PrioritizedReplayBufferSamples
from rlkit_td3.buffers.prioritized import SumTree
from rlkit_td3.fileio.serialization import ModelFileError

OBS = spaces.Box(-np.inf, np.inf, (2,), np.float32)
ACT = spaces.Box(-1, 1, (1,), np.float32)


def _filled(buffer: PrioritizedReplayBuffer, n: int) -> PrioritizedReplayBuffer:
    """``n`` steps of one continuing episode per env; each transition's action holds its step number."""
    k = buffer.n_envs
    for i in range(n):
        obs = np.full((k, 2), i, dtype=np.float32)
        buffer.add(obs, obs + 1, np.full((k, 1), i), np.full(k, float(i)), np.zeros(k, bool), np.zeros(k, bool))
    return buffer


def _find_from_root(tree: SumTree, targets: np.ndarray) -> np.ndarray:
    """`SumTree.find` walked from the root at every level (the tree's own walk skips the levels it would go left)."""
    nodes, idx, u = tree.nodes, np.ones(len(targets), dtype=np.int64), targets.astype(np.float64)
    while idx[0] < tree.capacity:
        left = 2 * idx
        right = ((u >= nodes[left]) & (nodes[left + 1] > 0.0)) | (nodes[left] <= 0.0)
        u = np.where(right, u - nodes[left], u)
        idx = left + right
    return idx - tree.capacity


@settings(max_examples=60, deadline=None)
@given(
    n_leaves=st.integers(1, 70),
    updates=st.lists(st.tuples(st.integers(0, 69), st.floats(0.0, 1e3)), min_size=1, max_size=40),
    chunk=st.integers(1, 20),  # up to 8 leaves are walked up one by one, more level by level
)
def test_sum_tree_invariants(n_leaves, updates, chunk):
    tree = SumTree(n_leaves)
    updates = [(i % n_leaves, v) for i, v in updates]
    for start in range(0, len(updates), chunk):
        part = updates[start : start + chunk]
        tree.update(np.array([i for i, _ in part]), np.array([v for _, v in part]))
    nodes, cap = tree.nodes, tree.capacity
    inner = np.arange(1, cap)
    np.testing.assert_array_equal(nodes[inner], nodes[2 * inner] + nodes[2 * inner + 1])  # every inner node
    assert tree.total == pytest.approx(tree.leaves.sum(), rel=1e-12)
    assert not nodes[cap + n_leaves :].any()
    rebuilt = SumTree(n_leaves)
    rebuilt.leaves[:] = tree.leaves
    rebuilt.rebuild()
    np.testing.assert_array_equal(rebuilt.nodes, nodes)  # a function of the leaves: bitwise after a reload
    if tree.total > 0:
        targets = np.linspace(0.0, np.nextafter(tree.total, 0.0), 97)
        leaves = tree.find(targets)
        np.testing.assert_array_equal(leaves, _find_from_root(tree, targets))
        assert np.all(tree.leaves[leaves] > 0)
        cumulative = np.cumsum(tree.leaves)
        # each target lies in its leaf's cumulative range (up to rounding of the inner sums)
        assert np.all(cumulative[leaves] >= targets * (1 - 1e-9))
        assert np.all(cumulative[leaves] - tree.leaves[leaves] <= targets * (1 + 1e-9) + 1e-9)


def _frequencies(buffer: PrioritizedReplayBuffer, draws: int, batch: int = 256) -> np.ndarray:
    counts = np.zeros(len(buffer.rewards), dtype=np.int64)
    for _ in range(draws // batch):
        np.add.at(counts, buffer.sample(batch).indices, 1)
    return counts


@pytest.mark.parametrize("alpha", [0.6, 1.0])
def test_sampling_frequencies_are_proportional_to_priority_to_the_alpha(alpha):
    buffer = _filled(PrioritizedReplayBuffer(40, OBS, ACT, seed=3, alpha=alpha, epsilon=0.0), 40)
    errors = np.random.default_rng(0).uniform(0.05, 3.0, size=40)
    buffer.update_priorities(np.arange(40), errors)
    counts = _frequencies(buffer, 60_000)
    expected = errors**alpha / (errors**alpha).sum() * counts.sum()
    assert stats.chisquare(counts, expected).pvalue > 1e-3
    # the same counts are far from the frequencies of another exponent: the test can fail
    other = errors ** (alpha / 2) / (errors ** (alpha / 2)).sum() * counts.sum()
    assert stats.chisquare(counts, other).pvalue < 1e-6


def test_alpha_zero_samples_uniformly():
    buffer = _filled(PrioritizedReplayBuffer(50, OBS, ACT, n_envs=2, seed=4, alpha=0.0), 25)
    buffer.update_priorities(np.arange(50), np.random.default_rng(1).uniform(0.0, 10.0, size=50))
    counts = _frequencies(buffer, 50_000)
    assert stats.chisquare(counts).pvalue > 1e-3
    assert torch.equal(buffer.sample(64).weights, torch.ones(64))


def test_importance_weights_equal_the_reference_formula_with_annealed_beta():
    buffer = _filled(PrioritizedReplayBuffer(64, OBS, ACT, seed=5, beta=0.4, beta_final=1.0), 30)
    buffer.update_priorities(np.arange(30), np.linspace(0.1, 4.0, 30))
    p = buffer.priorities_from_errors(np.linspace(0.1, 4.0, 30))
    for progress, beta in ((0.0, 0.4), (0.5, 0.7), (1.0, 1.0)):
        buffer.set_progress(progress)
        assert buffer.current_beta == pytest.approx(beta)
        batch = buffer.sample(32)
        w = (30 * p[batch.indices] / p.sum()) ** -beta
        np.testing.assert_allclose(batch.weights.numpy(), w / w.max(), rtol=1e-6)
        assert batch.weights.max().item() == 1.0


def test_new_transitions_get_the_largest_priority_and_samples_carry_their_rows():
    buffer = _filled(PrioritizedReplayBuffer(20, OBS, ACT, seed=0, alpha=1.0, epsilon=0.0), 10)
    buffer.update_priorities(np.arange(10), np.arange(10.0))
    _filled(buffer, 1)
    assert buffer.tree.leaves[10] == 9.0 and buffer.max_priority == 9.0
    batch = buffer.sample(16)
    assert isinstance(batch, PrioritizedReplayBufferSamples)
    np.testing.assert_array_equal(batch.actions[:, 0].numpy(), buffer.actions[batch.indices, 0])
    assert 0 not in batch.indices  # priority 0 (alpha=1, epsilon=0, error 0) is never drawn


def test_memory_optimized_layout_never_samples_the_rows_holding_next_observations():
    buffer = _filled(PrioritizedReplayBuffer(12, OBS, ACT, n_envs=2, optimize_memory_usage=True, seed=1), 20)
    counts = _frequencies(buffer, 20_000)
    stored = buffer._rows_of(np.arange(buffer.size()))
    assert counts[stored].all() and counts.sum() == counts[stored].sum()
    assert np.count_nonzero(buffer.tree.leaves) == buffer.size() == 10


def test_per_loss_and_priorities_against_a_hand_computation():
    buffer = _filled(PrioritizedReplayBuffer(8, OBS, ACT, seed=0, alpha=0.5, epsilon=0.01), 4)
    batch = buffer.sample(2)._replace(indices=np.array([1, 3]), weights=torch.tensor([0.5, 1.0]))
    current = torch.tensor([[1.0, 2.0], [3.0, -1.0]])  # two critics
    target = torch.tensor([0.0, 1.0])
    loss = buffer.critic_loss(batch, current, target)
    # deltas: critic 1 (1, 1), critic 2 (3, -2); weighted MSE per critic, summed
    assert loss.item() == pytest.approx((0.5 * 1 + 1 * 1) / 2 + (0.5 * 9 + 1 * 4) / 2)
    np.testing.assert_allclose(buffer.tree.leaves[[1, 3]], [(3 + 0.01) ** 0.5, (2 + 0.01) ** 0.5])


def test_lap_priorities_and_huber_loss_against_a_hand_computation():
    buffer = _filled(LAPReplayBuffer(8, OBS, ACT, seed=0), 4)
    assert buffer.alpha == 0.4 and buffer.prioritization == "lap"
    batch = buffer.sample(3)
    assert batch.weights is None
    batch = batch._replace(indices=np.array([0, 1, 2]))
    current = torch.tensor([[0.5, 3.0, 0.0], [0.2, -1.0, 0.1]], requires_grad=True)
    target = torch.zeros(3)
    loss = buffer.critic_loss(batch, current, target)
    # Huber with threshold 1 (0.5 d^2 below, |d| above), mean over the batch, summed over the critics
    assert loss.item() == pytest.approx((0.125 + 3.0 + 0.0) / 3 + (0.02 + 1.0 + 0.005) / 3)
    # priorities: max(max_critics |d|, 1) ** 0.4
    np.testing.assert_allclose(buffer.tree.leaves[:3], [1.0, 3.0**0.4, 1.0])
    loss.backward()
    np.testing.assert_allclose(current.grad.numpy(), [[0.5 / 3, 1 / 3, 0.0], [0.2 / 3, -1 / 3, 0.1 / 3]], rtol=1e-6)


@pytest.mark.parametrize("optimize", [False, True])
def test_save_load_keeps_the_tree_bitwise_and_the_same_draws(optimize):
    kwargs = dict(n_envs=2, n_steps=3, gamma=0.9, optimize_memory_usage=optimize)
    buffer = _filled(PrioritizedReplayBuffer(30, OBS, ACT, seed=9, **kwargs), 25)
    rows = buffer._rows_of(np.arange(buffer.size())) if optimize else np.arange(30)
    buffer.update_priorities(rows, np.random.default_rng(2).uniform(0, 5, len(rows)))
    buffer.set_progress(0.25)
    copy = PrioritizedReplayBuffer(30, OBS, ACT, **kwargs)
    copy.load(io.BytesIO(buffer.to_bytes()))
    np.testing.assert_array_equal(copy.tree.nodes, buffer.tree.nodes)
    assert copy.max_priority == buffer.max_priority and copy.current_beta == buffer.current_beta
    a, b = buffer.sample(16), copy.sample(16)
    np.testing.assert_array_equal(a.indices, b.indices)
    for name in ("rewards", "discounts", "weights", "next_observations"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name


def test_bad_arguments_and_forged_priorities_are_refused():
    with pytest.raises(ValueError, match="prioritization must be one of"):
        PrioritizedReplayBuffer(10, OBS, ACT, prioritization="rank")
    with pytest.raises(ValueError, match="alpha must be a finite float >= 0, got -1"):
        PrioritizedReplayBuffer(10, OBS, ACT, alpha=-1)
    buffer = _filled(PrioritizedReplayBuffer(10, OBS, ACT), 5)
    with pytest.raises(ValueError, match="non-finite"):
        buffer.update_priorities(np.arange(2), np.array([1.0, np.nan]))
    buffer.max_priority = 0.5  # the file then claims leaves above its max priority
    with pytest.raises(ModelFileError, match="priorities must be finite"):
        PrioritizedReplayBuffer(10, OBS, ACT).load(io.BytesIO(buffer.to_bytes()))


@pytest.mark.parametrize("buffer_class", [PrioritizedReplayBuffer, LAPReplayBuffer])
def test_model_trains_with_prioritized_n_step_replay_and_two_envs(buffer_class):
    import gymnasium as gym

    env = gym.make_vec("Pendulum-v1", num_envs=2)
    model = TD3("MlpPolicy", env, replay_buffer_class=buffer_class, n_steps=3, learning_starts=50, batch_size=32,
                policy_kwargs=dict(net_arch=[32]), seed=1)  # fmt: skip
    model.learn(150)
    buffer = model.replay_buffer
    assert isinstance(buffer, buffer_class) and buffer.n_steps == 3 and buffer.gamma == model.gamma
    updated = buffer.tree.leaves[: buffer.size()]
    assert len(np.unique(updated)) > 20  # priorities moved away from the initial maximum
    if buffer_class is PrioritizedReplayBuffer:
        assert buffer.progress == pytest.approx(1.0 - 1 / 75, abs=0.02)  # beta annealed with training progress


@pytest.mark.parametrize("buffer_name", ["PrioritizedReplayBuffer", "LAPReplayBuffer"])
def test_exact_resume_with_prioritized_n_step_replay_is_bitwise(tmp_path, buffer_name):
    """Checkpoint at an episode boundary, resume in a new process: parameters, optimizers, buffer (tree, links)
    and training state end bit for bit as in the uninterrupted run."""
    from tests.test_resume import _assert_same_run, _run

    kwargs = f"dict(replay_buffer_class=__import__('rlkit_td3.buffers', fromlist=['_']).{buffer_name}, n_steps=3)"
    straight, resumed, model, at_k = _run(tmp_path, "pendulum_x2", 400, 600, 100, kwargs)
    assert at_k["all_ended"] and model._n_updates > 0
    assert "priorities" in straight["buffer"] and "next_row" in straight["buffer"]
    _assert_same_run(straight, resumed)


def test_a_non_finite_td_error_keeps_the_tree_finite_and_training_reports_it():
    buffer = _filled(PrioritizedReplayBuffer(8, OBS, ACT, seed=0), 4)
    batch = buffer.sample(2)._replace(indices=np.array([0, 1]))
    loss = buffer.critic_loss(batch, torch.tensor([[np.nan, 1.0]]), torch.zeros(2))
    assert not torch.isfinite(loss) and np.all(np.isfinite(buffer.tree.nodes))
    import gymnasium as gym

    from rlkit_td3.utils import NonFiniteError

    model = TD3("MlpPolicy", gym.make("Pendulum-v1"), replay_buffer_class=PrioritizedReplayBuffer, learning_starts=40,
                batch_size=16, policy_kwargs=dict(net_arch=[16]), seed=0)  # fmt: skip
    model.learn(50)
    model.replay_buffer.rewards[:] = np.inf
    with pytest.raises(NonFiniteError, match="training loss became non-finite"):
        model.train(gradient_steps=2)
    assert np.all(np.isfinite(model.replay_buffer.tree.nodes))


@pytest.mark.parametrize("optimize", [False, True])
def test_alpha_zero_trains_bitwise_like_the_uniform_buffer(optimize):
    def trained(**kwargs):
        model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=100, batch_size=32, seed=3,
                    policy_kwargs={"net_arch": [16]}, optimize_memory_usage=optimize, **kwargs)  # fmt: skip
        model.fused_update_matmul = "reference"  # the uniform run's fused update makes autograd's products
        return model.learn(400)

    uniform = trained()
    per = trained(replay_buffer_class=PrioritizedReplayBuffer, replay_buffer_kwargs={"alpha": 0.0})
    assert isinstance(per.replay_buffer, PrioritizedReplayBuffer)
    for name, value in uniform.policy.state_dict().items():
        assert torch.equal(value, per.policy.state_dict()[name]), name
    shifted = trained(replay_buffer_class=PrioritizedReplayBuffer, replay_buffer_kwargs={"alpha": 0.1})
    assert not torch.equal(
        shifted.policy.state_dict()["actor.mu.0.weight"], uniform.policy.state_dict()["actor.mu.0.weight"]
    )


@pytest.mark.parametrize("buffer_class", [PrioritizedReplayBuffer, LAPReplayBuffer])
@pytest.mark.parametrize("optimize", [False, True])
def test_loading_a_smaller_buffer_rebuilds_the_tree_from_its_rows_alone(buffer_class, optimize):
    small = _filled(buffer_class(1000, OBS, ACT, seed=1, optimize_memory_usage=optimize), 300)
    full = _filled(buffer_class(1000, OBS, ACT, seed=2, optimize_memory_usage=optimize), 1200)
    full.update_priorities(np.arange(0, 1000, 3), np.full(334, 7.0))  # old priorities everywhere
    before = full.tree.nodes.copy()
    small.max_priority = 1e-3  # a file whose max_priority is below its priorities is refused, the tree unchanged
    with pytest.raises(ModelFileError, match="priorities must be finite"):
        full.load(io.BytesIO(small.to_bytes()))
    np.testing.assert_array_equal(full.tree.nodes, before)
    small.max_priority = 1.0
    full.load(io.BytesIO(small.to_bytes()))
    assert full.size() == 300
    np.testing.assert_array_equal(full.tree.nodes, small.tree.nodes)
    rows = np.concatenate([full.sample(64).indices for _ in range(20)])
    stored = np.arange(300) if not optimize else full._rows_of(np.arange(300))
    assert np.isin(rows, stored).all(), f"{np.mean(~np.isin(rows, stored)):.0%} of the draws are unloaded rows"

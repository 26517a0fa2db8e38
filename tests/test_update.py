"""The TD3 update: bootstrapping through truncation, delayed actor, Polyak targets, schedules."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rlkit_td3 import TD3
from rlkit_td3.schedules import LinearSchedule


def _model(**kwargs):
    base = dict(learning_starts=0, batch_size=16, buffer_size=64, policy_kwargs={"net_arch": [16]}, seed=0)
    return TD3("MlpPolicy", "Pendulum-v1", **{**base, **kwargs})


def _fill(model, terminated=False, truncated=False):
    rng = np.random.default_rng(0)
    for _ in range(64):
        obs = rng.normal(size=(1, 3)).astype(np.float32)
        model.replay_buffer.add(
            obs,
            obs + 0.1,
            rng.uniform(-1, 1, (1, 1)),
            rng.normal(size=1),
            np.array([terminated]),
            np.array([truncated]),
        )


def _train(terminated, truncated, steps=3):
    torch.manual_seed(0)
    model = _model()
    _fill(model, terminated, truncated)
    model.train(steps)
    return [p.detach().clone() for p in model.policy.critic.parameters()]


def test_truncation_bootstraps_termination_does_not():
    plain = _train(False, False)
    truncated = _train(False, True)
    terminated = _train(True, False)
    assert all(torch.equal(a, b) for a, b in zip(plain, truncated))
    assert not all(torch.equal(a, b) for a, b in zip(plain, terminated))


def test_target_is_reward_only_when_terminated():
    model = _model()
    _fill(model, terminated=True)
    batch = model.replay_buffer.sample(16)
    with torch.no_grad():
        q_before = model.policy.critic(batch.observations, batch.actions)
    model.replay_buffer.seed(123)
    model.replay_buffer.sample = lambda n: batch  # the same batch for the update
    model.train(1)
    # one SGD step on sum_i mean (Q_i - r)^2: the loss must equal it for the recorded value
    expected = ((q_before - batch.rewards) ** 2).mean(dim=1).sum()
    assert model._critic_loss_sum.item() == pytest.approx(expected.item(), rel=1e-5)


def test_actor_and_targets_move_only_on_delayed_steps():
    model = _model(policy_delay=3, tau=0.5)
    _fill(model)
    actor0 = [p.clone() for p in model.policy.actor.parameters()]
    target0 = [p.clone() for p in model.policy.critic_target.parameters()]
    model.train(2)
    assert all(torch.equal(a, b) for a, b in zip(actor0, model.policy.actor.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(target0, model.policy.critic_target.parameters()))
    model.train(1)  # third update: critic step, actor step, then Polyak
    assert not all(torch.equal(a, b) for a, b in zip(actor0, model.policy.actor.parameters()))
    critic_after = list(model.policy.critic.parameters())
    for t0, c, t1 in zip(target0, critic_after, model.policy.critic_target.parameters()):
        torch.testing.assert_close(t1, 0.5 * t0 + 0.5 * c)
    assert model._n_actor_losses == 1 and model._n_critic_losses == 3


def test_separate_learning_rates_and_schedule():
    model = _model(learning_rate=LinearSchedule(1e-3, 0.0), critic_learning_rate=5e-4)
    _fill(model)
    model._current_progress_remaining = 0.25
    model.train(1)
    assert model.policy.actor_optimizer.param_groups[0]["lr"] == pytest.approx(2.5e-4)
    assert model.policy.critic_optimizer.param_groups[0]["lr"] == pytest.approx(5e-4)


def test_flush_tiny_moments_zeroes_only_negligible_entries():
    from rlkit_td3.update.optim import flush_tiny_moments

    param = torch.nn.Parameter(torch.zeros(5))
    optimizer = torch.optim.Adam([param])
    values = torch.tensor([1e-39, -1e-31, 1e-29, -0.5, 0.0])  # a subnormal, two tiny, a normal, a zero
    optimizer.state[param] = {"step": torch.tensor(1.0), "exp_avg": values.clone(), "exp_avg_sq": values.abs()}
    flush_tiny_moments(optimizer)
    assert optimizer.state[param]["exp_avg"].tolist() == pytest.approx([0.0, 0.0, 1e-29, -0.5, 0.0], rel=1e-6)
    assert optimizer.state[param]["exp_avg_sq"].tolist() == pytest.approx([0.0, 0.0, 1e-29, 0.5, 0.0], rel=1e-6)


def test_moment_flush_leaves_training_bitwise_unchanged_and_subnormal_free(monkeypatch):
    """Dead ReLU units leave Adam moments decaying into subnormals (slow on CPUs); the periodic flush removes
    them without changing a single bit of the trained networks."""
    import rlkit_td3.off_policy as off_policy

    tiny = torch.finfo(torch.float32).tiny

    def train(flush_every):
        monkeypatch.setattr(off_policy, "MOMENT_FLUSH_EVERY", flush_every)
        model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=100, batch_size=64, seed=3)
        model.learn(2_100)
        moments = [
            m
            for opt in (model.policy.critic_optimizer, model.policy.actor_optimizer)
            for state in opt.state.values()
            for m in (state["exp_avg"], state["exp_avg_sq"])
        ]
        subnormal = sum(int(((m != 0) & (m.abs() < tiny)).sum()) for m in moments)
        return model.policy.state_dict(), subnormal

    flushed, subnormal_flushed = train(64)
    plain, subnormal_plain = train(10**9)
    assert subnormal_plain > 0  # the problem is real at this seed and length: the check below is not vacuous
    assert subnormal_flushed == 0
    assert all(torch.equal(flushed[k], plain[k]) for k in plain)

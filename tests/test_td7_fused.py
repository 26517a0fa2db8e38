"""`rlkit_td3.td7.fused`: TD7's update with its backward passes written out equals the autograd update (float64: to
1e-12 relative over dozens of updates, through actor delays and target refreshes; float32: to float32 rounding), with
LAP, uniform and n-step batches and ELU or ReLU networks; everything it does not cover takes the autograd update."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from rlkit_td3 import TD7
from rlkit_td3.buffers import NStepReplayBuffer, PrioritizedReplayBuffer, ReplayBuffer
from rlkit_td3.td7 import fused

SMALL = dict(net_arch=[24, 24], embedding_dim=16, encoder_net_arch=[24, 24])
UPDATES, BATCH = 30, 32


def _model(dtype: torch.dtype, **overrides) -> TD7:
    settings = dict(
        buffer_size=1_000,
        learning_starts=0,
        batch_size=BATCH,
        target_update_interval=10,
        use_checkpoints=False,
        policy_kwargs=SMALL,
        seed=0,
        device="cpu",
    )
    settings.update(overrides)
    model = TD7("MlpPolicy", "Pendulum-v1", **settings)
    if dtype == torch.float64:
        model.policy.double()
    rng = np.random.default_rng(1)
    for _ in range(200):
        obs = rng.normal(size=(1, 3))
        model.replay_buffer.add(
            obs, obs + 0.1, rng.uniform(-1, 1, (1, 1)), rng.normal(size=1), rng.random(1) < 0.1, np.zeros(1)
        )
    return model


def _cast(batch, dtype):
    return batch._replace(**{k: v.to(dtype) for k, v in batch._asdict().items() if torch.is_tensor(v)})


def _train_both(dtype: torch.dtype, updates: int = UPDATES, **overrides) -> tuple[TD7, TD7]:
    ours, theirs = _model(dtype, **overrides), _model(dtype, **overrides)
    theirs.use_fused_update = False
    for _ in range(updates):
        batch = _cast(ours.replay_buffer.sample(BATCH), dtype)
        assert fused.eligible(ours, batch) is not None and fused.eligible(theirs, batch) is None
        for model in (ours, theirs):
            model.replay_buffer.sample = lambda batch_size, env=None, batch=batch: batch
            model._smoothing_rng.manual_seed(model._n_updates)  # the same smoothing draws
            model.train(1)
            del model.replay_buffer.sample
    return ours, theirs


def _worst(ours: TD7, theirs: TD7) -> float:
    """The largest difference, relative to the tensor's largest value, over every network, optimizer moment, loss
    sum and the replay priorities."""
    pairs = list(zip(ours.policy.state_dict().values(), theirs.policy.state_dict().values()))
    for name in ours.policy.optimizer_names:
        a, b = getattr(ours.policy, name).state_dict(), getattr(theirs.policy, name).state_dict()
        for key, state in a["state"].items():
            pairs += [(state[k], b["state"][key][k]) for k in ("exp_avg", "exp_avg_sq")]
    pairs += [(ours._critic_loss_sum, theirs._critic_loss_sum), (ours._actor_loss_sum, theirs._actor_loss_sum)]
    if isinstance(ours.replay_buffer, PrioritizedReplayBuffer):
        pairs.append((torch.as_tensor(ours.replay_buffer.tree.nodes), torch.as_tensor(theirs.replay_buffer.tree.nodes)))
    worst = 0.0
    for a, b in pairs:
        scale = float(b.abs().max()) or 1.0
        worst = max(worst, float((a - b).abs().max()) / scale)
    assert ours._value_bounds.state_dict() == pytest.approx(theirs._value_bounds.state_dict(), rel=1e-12)
    return worst


@pytest.mark.parametrize(
    "overrides",
    [
        dict(),  # LAP, ELU: TD7's own
        dict(replay_buffer_class=ReplayBuffer, policy_kwargs={**SMALL, "activation_fn": nn.ReLU}),
        dict(replay_buffer_class=NStepReplayBuffer, replay_buffer_kwargs=dict(n_steps=3)),
        dict(policy_kwargs={**SMALL, "n_critics": 3}, policy_delay=3),
    ],
    ids=["lap_elu", "uniform_relu", "nstep", "three_critics_delay_3"],
)
def test_float64_equals_autograd(overrides):
    ours, theirs = _train_both(torch.float64, **overrides)
    assert ours._n_updates == UPDATES and ours._n_actor_losses == UPDATES // ours.policy_delay
    assert _worst(ours, theirs) <= 1e-12


def test_float32_equals_autograd_to_rounding_and_the_comparison_can_fail():
    ours, theirs = _train_both(torch.float32, updates=3)
    assert _worst(ours, theirs) <= 1e-4
    # a control: one update more on one side is far apart
    theirs.train(1)
    assert _worst(ours, theirs) > 1e-3


def test_what_it_does_not_cover_takes_the_autograd_update():
    model = _model(torch.float32)
    batch = model.replay_buffer.sample(BATCH)
    assert fused.eligible(model, batch) is not None
    model.use_fused_update = False
    assert fused.eligible(model, batch) is None
    model.use_fused_update = True
    handle = model.policy.critic.q_networks[0].q[0].register_forward_hook(lambda *args: None)
    assert fused.eligible(model, batch) is None  # a hook sees the module called
    handle.remove()
    model.policy.actor.obs_embedding.weight.requires_grad_(False)
    assert fused.eligible(model, batch) is None  # a frozen parameter
    model.policy.actor.obs_embedding.weight.requires_grad_(True)
    assert fused.eligible(model, batch._replace(observations=batch.observations.double())) is None
    with torch.no_grad():
        assert fused.eligible(model, batch) is None
    tanh = _model(torch.float32, policy_kwargs={**SMALL, "activation_fn": nn.Tanh})
    assert fused.eligible(tanh, tanh.replay_buffer.sample(BATCH)) is None  # an activation it does not write out
    per = _model(torch.float32, replay_buffer_class=PrioritizedReplayBuffer)
    assert fused.eligible(per, per.replay_buffer.sample(BATCH)) is None  # importance weights
    assert fused.eligible(model, batch) is not None

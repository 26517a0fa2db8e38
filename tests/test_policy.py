"""Policy: action scaling with asymmetric bounds, the batched critic ensemble, the actor step."""

from __future__ import annotations

import numpy as np
import torch
from gymnasium import spaces

from rlkit_td3 import TD3
from rlkit_td3.policies import MlpPolicy, TD3Policy
from tests.conftest import make_counter

OBS = spaces.Box(-np.inf, np.inf, (4,), np.float32)
ACT = spaces.Box(np.array([-2.0, 0.0, 10.0], np.float32), np.array([1.0, 5.0, 10.5], np.float32))


def test_mlp_policy_is_td3_policy():
    assert MlpPolicy is TD3Policy


def test_scale_unscale_round_trip_asymmetric_bounds():
    policy = TD3Policy(OBS, ACT, net_arch=[8])
    np.testing.assert_allclose(policy.unscale_action(np.array([-1.0, -1.0, -1.0])), ACT.low)
    np.testing.assert_allclose(policy.unscale_action(np.array([1.0, 1.0, 1.0])), ACT.high)
    np.testing.assert_allclose(policy.unscale_action(np.zeros(3)), [-0.5, 2.5, 10.25])
    actions = np.random.default_rng(0).uniform(ACT.low, ACT.high, size=(50, 3))
    np.testing.assert_allclose(policy.unscale_action(policy.scale_action(actions)), actions, rtol=1e-5, atol=1e-5)


def test_predict_stays_within_asymmetric_bounds():
    env = make_counter(act_low=(-2.0, 0.0), act_high=(1.0, 5.0))
    model = TD3("MlpPolicy", env, learning_starts=10, batch_size=8, policy_kwargs={"net_arch": [8]}, seed=0)
    model.learn(60)  # the env asserts every action lies inside its Box
    actions, _ = model.predict(np.random.default_rng(1).normal(size=(200, 2)).astype(np.float32) * 100)
    assert actions.shape == (200, 2)
    assert np.all(actions >= [-2.0, 0.0]) and np.all(actions <= [1.0, 5.0])


def test_critic_ensemble_matches_independent_mlps():
    policy = TD3Policy(OBS, ACT, net_arch=[16, 8], n_critics=3)
    critic = policy.critic
    obs, act = torch.randn(5, 4), torch.rand(5, 3)
    q = critic(obs, act)
    assert q.shape == (3, 5)
    for i in range(3):
        x = torch.cat([obs, act], dim=1)
        for j, (w, b) in enumerate(zip(critic.weights, critic.biases)):
            x = x @ w[i] + b[i]
            if j < len(critic.weights) - 1:
                x = torch.relu(x)
        torch.testing.assert_close(q[i], x.squeeze(-1))
    torch.testing.assert_close(critic.q1_forward(obs, act), q[0])


def test_actor_step_computes_no_critic_gradients():
    policy = TD3Policy(OBS, ACT, net_arch=[16])
    obs = torch.randn(7, 4)
    loss = -policy.critic.q1_forward(obs, policy.actor(obs)).mean()
    loss.backward()
    assert all(p.grad is None for p in policy.critic.parameters())
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in policy.actor.parameters())


def test_targets_start_equal_and_do_not_require_grad():
    policy = TD3Policy(OBS, ACT, net_arch=[16])
    for src, tgt in ((policy.actor, policy.actor_target), (policy.critic, policy.critic_target)):
        for p, q in zip(src.parameters(), tgt.parameters()):
            assert torch.equal(p, q) and not q.requires_grad and p.data_ptr() != q.data_ptr()

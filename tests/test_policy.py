"""Policy: action scaling with asymmetric bounds, the batched critic ensemble, the actor step."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces

from rlkit_td3 import TD3
from rlkit_td3.policies import MlpPolicy, TD3Policy
from tests.conftest import make_counter

OBS = spaces.Box(-np.inf, np.inf, (4,), np.float32)
ACT = spaces.Box(np.array([-2.0, 0.0, 10.0], np.float32), np.array([1.0, 5.0, 10.5], np.float32))
NET = {"policy_kwargs": {"net_arch": [8]}}


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


# ---------------------------------------------------------------- spaces: served end to end, or refused up front


class SpaceEnv(gym.Env):
    """Random observations from ``observation_space``; checks each action lies in ``action_space``."""

    def __init__(self, observation_space, action_space, obs_scale=1.0):
        self.observation_space, self.action_space = observation_space, action_space
        self.obs_scale = obs_scale
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.observation_space.seed(int(self.np_random.integers(2**31)))
        self.t = 0
        return self._obs(), {}

    def _obs(self):
        obs = self.observation_space.sample()
        return (obs * self.obs_scale).astype(obs.dtype) if obs.dtype.kind == "f" else obs

    def step(self, action):
        action = np.asarray(action)
        assert action.shape == self.action_space.shape and self.action_space.contains(action), action
        self.t += 1
        return self._obs(), float(self.t), False, self.t >= 7, {}


WIDE = float(np.finfo(np.float32).max)
SERVED = {
    "scalar observations": (spaces.Box(-1, 1, (), np.float32), spaces.Box(-1, 1, (2,), np.float32)),
    "2-D observations (flattened)": (spaces.Box(-1, 1, (2, 3), np.float32), spaces.Box(-1, 1, (2,), np.float32)),
    "uint8 observations": (spaces.Box(0, 255, (4,), np.uint8), spaces.Box(-1, 1, (2,), np.float32)),
    "bool observations": (spaces.Box(0, 1, (3,), np.bool_), spaces.Box(-1, 1, (1,), np.float32)),
    "float16 observations": (spaces.Box(-1, 1, (3,), np.float16), spaces.Box(-1, 1, (1,), np.float32)),
    "scalar actions": (spaces.Box(-1, 1, (3,), np.float32), spaces.Box(-2, 3, (), np.float32)),
    "2-D actions": (spaces.Box(-1, 1, (3,), np.float32), spaces.Box(-1, 1, (2, 2), np.float32)),
    "float64 actions": (spaces.Box(-1, 1, (3,), np.float32), spaces.Box(-1, 1, (2,), np.float64)),
    "float32 bounds whose span overflows": (
        spaces.Box(-1, 1, (3,), np.float32),
        spaces.Box(np.array([-WIDE, 0.0], np.float32), np.array([WIDE, 1.0], np.float32)),
    ),
    "float64 bounds whose span overflows": (
        spaces.Box(-1, 1, (3,), np.float32),
        spaces.Box(-1.7e308, 1.7e308, (2,), np.float64),
    ),
}


@pytest.mark.parametrize("case", list(SERVED))
def test_space_is_served_end_to_end(case, tmp_path):
    obs_space, act_space = SERVED[case]
    model = TD3("MlpPolicy", SpaceEnv(obs_space, act_space), learning_starts=10, batch_size=8, seed=0, **NET)
    model.learn(30)  # warm-up, then the actor acts and trains; the env asserts every action is inside its Box
    assert model._n_updates > 0 and all(torch.isfinite(p).all() for p in model.policy.parameters())
    obs_space.seed(1)
    one = obs_space.sample()
    batch = np.stack([obs_space.sample() for _ in range(5)])
    action, _ = model.predict(one)
    actions, _ = model.predict(batch, deterministic=False)
    assert action.shape == act_space.shape and act_space.contains(action)
    assert actions.shape == (5, *act_space.shape) and all(act_space.contains(np.asarray(a)) for a in actions)
    model.save(tmp_path / "m.zip")
    loaded = TD3.load(tmp_path / "m.zip", env=SpaceEnv(obs_space, act_space))
    np.testing.assert_array_equal(loaded.predict(batch)[0], model.predict(batch)[0])
    loaded.learn(10, reset_num_timesteps=False)


def test_wide_bounds_scale_in_float64():
    act = spaces.Box(np.array([-WIDE, 0.0], np.float32), np.array([WIDE, 1.0], np.float32))
    policy = TD3Policy(spaces.Box(-1, 1, (2,), np.float32), act, net_arch=[4])
    np.testing.assert_array_equal(policy.unscale_action(np.array([[-1.0, -1.0], [1.0, 1.0]])), [act.low, act.high])
    np.testing.assert_array_equal(policy.unscale_action(np.zeros(2, np.float32)), [0.0, 0.5])
    np.testing.assert_allclose(policy.scale_action(np.array([WIDE / 2, 0.25], np.float32)), [0.5, -0.5])


REFUSED = {
    "integer actions": (spaces.Box(-1, 1, (3,), np.float32), spaces.Box(-3, 3, (2,), np.int64), TypeError),
    "boolean actions": (spaces.Box(-1, 1, (3,), np.float32), spaces.Box(0, 1, (2,), np.bool_), TypeError),
    "zero-size actions": (spaces.Box(-1, 1, (3,), np.float32), spaces.Box(-1, 1, (0,), np.float32), ValueError),
    "zero-size observations": (spaces.Box(-1, 1, (2, 0), np.float32), spaces.Box(-1, 1, (1,), np.float32), ValueError),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_space_the_policy_cannot_serve_is_refused_at_construction(case):
    obs_space, act_space, error = REFUSED[case]
    which = "action_space" if "action" in case else "observation_space"
    with pytest.raises(error, match=rf"SpaceEnv: {which} must"):
        TD3("MlpPolicy", SpaceEnv(obs_space, act_space))

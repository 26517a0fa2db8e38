"""DDPG is TD3 with its three switches off, bit for bit; constructors never mutate caller dicts."""

from __future__ import annotations

import torch

from rlkit_td3 import DDPG, TD3

COMMON = dict(learning_starts=200, batch_size=64, seed=3, policy_kwargs={"net_arch": [32, 32]})


def _params(model) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.policy.state_dict().values()]


def test_ddpg_equals_td3_with_switches_off_bitwise():
    ddpg = DDPG("MlpPolicy", "Pendulum-v1", **COMMON).learn(2000)
    td3 = TD3(
        "MlpPolicy",
        "Pendulum-v1",
        **{**COMMON, "policy_kwargs": {"net_arch": [32, 32], "n_critics": 1}},
        target_policy_noise=0.0,
        policy_delay=1,
    ).learn(2000)
    assert ddpg.num_timesteps == td3.num_timesteps == 2000
    assert ddpg.policy.critic.n_critics == td3.policy.critic.n_critics == 1
    a, b = _params(ddpg), _params(td3)
    assert len(a) == len(b)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    # and the run really trained: parameters moved away from a fresh model's
    fresh = _params(DDPG("MlpPolicy", "Pendulum-v1", **COMMON))
    assert not all(torch.equal(x, y) for x, y in zip(a, fresh))


def test_td3_defaults_differ_from_ddpg():
    td3 = TD3("MlpPolicy", "Pendulum-v1", **COMMON)
    ddpg = DDPG("MlpPolicy", "Pendulum-v1", **COMMON)
    assert (
        td3.policy.critic.n_critics,
        td3.target_policy_noise,
        td3.target_noise_clip,
        td3.policy_delay,
    ) == (
        2,
        0.2,
        0.5,
        2,
    )
    assert (ddpg.policy.critic.n_critics, ddpg.target_policy_noise, ddpg.policy_delay) == (1, 0.0, 1)


def test_constructors_do_not_mutate_caller_dicts():
    policy_kwargs = {"net_arch": {"pi": [16], "qf": [16]}}
    buffer_kwargs: dict = {}
    snapshot = {"net_arch": {"pi": [16], "qf": [16]}}
    DDPG("MlpPolicy", "Pendulum-v1", policy_kwargs=policy_kwargs, replay_buffer_kwargs=buffer_kwargs)
    assert policy_kwargs == snapshot and buffer_kwargs == {}
    td3 = TD3("MlpPolicy", "Pendulum-v1", policy_kwargs=policy_kwargs)
    assert td3.policy.critic.n_critics == 2
    td3.policy.net_arch["pi"].append(99)
    assert policy_kwargs == snapshot

"""TD7 learns: Pendulum-v1 solved (mean deterministic return of its checkpoint policy >= -400, random play ~-1200)
within 7k steps, for each of three seeds, at one torch thread, with small networks."""

from __future__ import annotations

import pytest

from rlkit_td3 import TD7
from rlkit_td3.evaluation import evaluate_policy

PENDULUM = dict(
    learning_starts=1_000,
    buffer_size=10_000,
    batch_size=64,
    gamma=0.98,
    target_update_interval=100,
    policy_kwargs=dict(net_arch=[64, 64], embedding_dim=32, encoder_net_arch=[64, 64]),
)
THRESHOLD = -400.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_td7_learns_pendulum(seed):
    model = TD7("MlpPolicy", "Pendulum-v1", seed=seed, **PENDULUM)
    model.torch_num_threads = 1  # learn() trains at this count, then restores the caller's
    model.learn(7_000)
    mean, std = evaluate_policy(model, "Pendulum-v1", n_eval_episodes=10, seed=1000)
    print(f"TD7 seed {seed}: mean return {mean:.1f} ± {std:.1f} after {model._n_updates} updates")
    assert model._n_updates >= 5_000
    assert mean >= THRESHOLD

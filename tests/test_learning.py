"""Learning tests: TD3 and DDPG solve Pendulum-v1 (mean deterministic return >= -300) within 12k steps."""

from __future__ import annotations

import pytest

from rlkit_td3 import DDPG, TD3
from rlkit_td3.evaluation import evaluate_policy

PENDULUM = dict(learning_starts=1000, gamma=0.98, policy_kwargs={"net_arch": [64, 64]}, seed=0)


@pytest.mark.parametrize(
    ("algo", "matmul", "threads"),
    [(TD3, "reference", 1), (DDPG, "reference", 1), (TD3, "onednn", 1), (TD3, "mixed", 2)],
    ids=["td3", "ddpg", "td3-onednn", "td3-mixed-2threads"],
)
def test_pendulum_learns(algo, matmul, threads):
    """Each algorithm through the fused update with the reference products, and TD3 with oneDNN's for every large
    product (the default on AMD Zen 5 CPUs) and, at two threads, with ``"mixed"`` (the default on earlier AMD CPUs;
    at one thread it is ``"onednn"``), on any CPU."""
    model = algo("MlpPolicy", "Pendulum-v1", **PENDULUM)
    model.fused_update_matmul = matmul
    model.torch_num_threads = threads  # learn() trains at this count, then restores the caller's
    model.learn(12_000)
    mean, std = evaluate_policy(model, "Pendulum-v1", n_eval_episodes=10, seed=1000)
    print(f"{algo.__name__} ({matmul}, {threads} thread(s)): mean return {mean:.1f} ± {std:.1f}")
    assert mean >= -300.0
    fused = model._fused_update[1]  # every update went through the fused (non-autograd) update
    assert fused is not None and fused.updates == model._n_updates > 10_000
    assert fused.matmul == matmul and fused.parts == threads  # the updates ran at that thread count

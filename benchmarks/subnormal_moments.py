"""Subnormal Adam moments: how many appear in TD3's optimizers on HalfCheetahBulletEnv-v0, and what they cost.

Two identical TD3 models (the throughput benchmark's settings) learn the same 1,500 steps, one with
``flush_tiny_moments`` every 64 updates (the default) and one without; then their ``train()`` is timed
interleaved on the same process. Prints the subnormal counts per optimizer and the ms per update.

    python benchmarks/subnormal_moments.py            # ~30 s on 2 cores
"""

from __future__ import annotations

import io
import statistics
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

import gymnasium as gym
import torch

import rlkit_td3.off_policy as off_policy

sys.path.insert(0, str(Path(__file__).parent))
import throughput  # noqa: E402  (the shared model builder)


def subnormal_count(optimizer: torch.optim.Optimizer) -> int:
    tiny = torch.finfo(torch.float32).tiny
    return sum(
        int(((m != 0) & (m.abs() < tiny)).sum())
        for state in optimizer.state.values()
        for m in (state["exp_avg"], state["exp_avg_sq"])
    )


def trained(flush_every: int):
    off_policy.MOMENT_FLUSH_EVERY = flush_every
    env = gym.make("HalfCheetahBulletEnv-v0")
    model = throughput.build("rlkit_td3", "td3", env, buffer_size=200_000, learning_starts=500, seed=0)
    with redirect_stdout(io.StringIO()):
        model.learn(1500)
    return model


def main() -> None:
    torch.set_num_threads(2)
    models = {"without flush": trained(10**12), "with flush": trained(64)}
    for name, model in models.items():
        counts = {opt: subnormal_count(getattr(model.policy, opt)) for opt in ("critic_optimizer", "actor_optimizer")}
        print(f"{name}: subnormal moments after 1,500 steps {counts}")
    times: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(3):
        for name, model in models.items():
            off_policy.MOMENT_FLUSH_EVERY = 64 if name == "with flush" else 10**12
            start = time.perf_counter()
            model.train(gradient_steps=150, batch_size=throughput.BATCH)
            times[name].append((time.perf_counter() - start) / 150 * 1e3)
    for name, values in times.items():
        print(f"{name}: {statistics.median(values):.2f} ms per update (median of 3 interleaved reps)")


if __name__ == "__main__":
    main()

"""Per-step cost of rlkit_td3's DummyVecEnv against a bare loop over the same envs and gymnasium's SyncVectorEnv.

``python benchmarks/vec_env_overhead.py [env_id] [n_envs] [n_steps] [reps]``: prints the best of ``reps``
interleaved repetitions (so that the three see the same machine load), in microseconds per env step.
"""

from __future__ import annotations

import sys
import time

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from rlkit_td3.vec_env import DummyVecEnv


def main(env_id: str = "Pendulum-v1", n_envs: int = 4, n_steps: int = 5000, reps: int = 9) -> dict[str, float]:
    make = [lambda: gym.make(env_id) for _ in range(n_envs)]
    actions = np.stack([gym.make(env_id).action_space.sample() * 0 for _ in range(n_envs)])

    def plain() -> float:
        envs = [fn() for fn in make]
        for i, env in enumerate(envs):
            env.reset(seed=i)
        start = time.perf_counter()
        for _ in range(n_steps):
            for i, env in enumerate(envs):
                _, _, terminated, truncated, _ = env.step(actions[i])
                if terminated or truncated:
                    env.reset()
        return time.perf_counter() - start

    def dummy() -> float:
        venv = DummyVecEnv(make)
        venv.reset()
        start = time.perf_counter()
        for _ in range(n_steps):
            venv.step(actions)
        return time.perf_counter() - start

    def sync() -> float:
        venv = SyncVectorEnv(make, autoreset_mode=AutoresetMode.SAME_STEP)
        venv.reset(seed=0)
        start = time.perf_counter()
        for _ in range(n_steps):
            venv.step(actions)
        return time.perf_counter() - start

    runs: dict[str, list[float]] = {"bare loop": [], "DummyVecEnv": [], "SyncVectorEnv (same-step)": []}
    for _ in range(reps):
        for name, fn in zip(runs, (plain, dummy, sync)):
            runs[name].append(fn())
    result = {name: min(times) / (n_envs * n_steps) * 1e6 for name, times in runs.items()}
    for name, us in result.items():
        print(f"{name:28s} {us:7.2f} us per env step")
    return result


if __name__ == "__main__":
    args = sys.argv[1:]
    main(*(args[:1]), *(int(a) for a in args[1:4]))

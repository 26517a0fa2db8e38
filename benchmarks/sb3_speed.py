"""Env-steps/s of ``learn()``: rlkit_td3 vs Stable-Baselines3, TD3, interleaved A B A B in one process.

Each repetition builds a fresh model of each library with identical hyperparameters (RL Zoo Pendulum
settings, [400, 300]), runs ``--warmup`` steps of ``learn`` (the random warm-up plus some updates, not
timed), then times ``--steps`` further steps of ``learn`` with one update per env step. The median of the
per-repetition ratios is the result; on a shared machine, look at the spread too.

Usage: ``python benchmarks/sb3_speed.py [--env Pendulum-v1] [--reps 5] [--steps 3000]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym
import numpy as np
import torch

import rlkit_td3  # noqa: F401  (registers the Bullet ids for --env)

SETTINGS = dict(
    learning_rate=1e-3, buffer_size=200_000, batch_size=256, tau=0.005, gamma=0.98, train_freq=1, gradient_steps=1
)


def build(library: str, env_id: str, learning_starts: int, seed: int):
    env = gym.make(env_id)
    dim = env.action_space.shape[0]
    kwargs = dict(SETTINGS, learning_starts=learning_starts, policy_kwargs={"net_arch": [400, 300]}, seed=seed)
    if library == "rlkit_td3":
        from rlkit_td3 import TD3
        from rlkit_td3.noise import NormalActionNoise

        return TD3("MlpPolicy", env, action_noise=NormalActionNoise(np.zeros(dim), 0.1 * np.ones(dim)), **kwargs)
    from stable_baselines3 import TD3 as SB3TD3
    from stable_baselines3.common.noise import NormalActionNoise as SB3Noise

    return SB3TD3("MlpPolicy", env, action_noise=SB3Noise(np.zeros(dim), 0.1 * np.ones(dim)), device="cpu", **kwargs)


def steps_per_second(library: str, env_id: str, warmup: int, steps: int, seed: int) -> float:
    model = build(library, env_id, learning_starts=warmup // 2, seed=seed)
    model.learn(warmup)
    start = time.perf_counter()
    model.learn(steps, reset_num_timesteps=False)
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="Pendulum-v1")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=3000)
    args = parser.parse_args()
    ours, theirs, ratios = [], [], []
    for rep in range(args.reps):
        a = steps_per_second("rlkit_td3", args.env, args.warmup, args.steps, seed=rep)
        b = steps_per_second("sb3", args.env, args.warmup, args.steps, seed=rep)
        ours.append(a)
        theirs.append(b)
        ratios.append(a / b)
        print(f"rep {rep}: rlkit_td3 {a:6.1f}  SB3 {b:6.1f} env-steps/s  ratio {a / b:.3f}", flush=True)
    print(
        f"\n{args.env}, TD3 [400, 300], {args.steps} timed steps x {args.reps} reps, torch threads "
        f"{torch.get_num_threads()}"
    )
    print(f"median env-steps/s: rlkit_td3 {statistics.median(ours):.1f}, SB3 {statistics.median(theirs):.1f}")
    print(
        f"ratio rlkit_td3 / SB3: median {statistics.median(ratios):.3f}, min {min(ratios):.3f}, max {max(ratios):.3f}"
    )


if __name__ == "__main__":
    main()

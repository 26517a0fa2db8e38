"""rlkit_td3 vs Stable-Baselines3: TD3 on Pendulum-v1 with identical hyperparameters.

Runs the two libraries interleaved in one process (A B A B ...), one seed at a time, and reports
each run's final mean deterministic return and its env-steps/s, then the median speed ratio.
Hyperparameters: the RL Zoo's TD3 Pendulum-v1 entry (rl-baselines3-zoo ``hyperparams/td3.yml``):
20k steps, 10k random warm-up steps, Gaussian exploration noise σ = 0.1, [400, 300], lr 1e-3,
buffer 200k, γ = 0.98, batch 256, train_freq 1, gradient_steps 1. The zoo reports −152 ± 90 at 20k.

Usage: ``python benchmarks/sb3_side_by_side.py [--seeds 0 1 2] [--timesteps 20000] [--out FILE.json]``
(needs the ``benchmark`` extra: ``pip install -e .[benchmark]``).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from datetime import date

import gymnasium as gym
import numpy as np
import torch

ZOO_PENDULUM = dict(
    learning_rate=1e-3,
    buffer_size=200_000,
    learning_starts=10_000,
    batch_size=256,
    tau=0.005,
    gamma=0.98,
    train_freq=1,
    gradient_steps=1,
)
NET_ARCH = [400, 300]
NOISE_SIGMA = 0.1
EVAL_EPISODES = 20


def evaluate(model, seed: int) -> float:
    env = gym.make("Pendulum-v1")
    returns = []
    for episode in range(EVAL_EPISODES):
        obs, _ = env.reset(seed=seed + episode)
        done, total = False, 0.0
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


def run_rlkit(seed: int, timesteps: int):
    from rlkit_td3 import TD3
    from rlkit_td3.noise import NormalActionNoise

    model = TD3(
        "MlpPolicy",
        gym.make("Pendulum-v1"),
        **ZOO_PENDULUM,
        action_noise=NormalActionNoise([0.0], [NOISE_SIGMA]),
        policy_kwargs={"net_arch": NET_ARCH},
        seed=seed,
    )
    start = time.perf_counter()
    model.learn(timesteps)
    return model, timesteps / (time.perf_counter() - start)


def run_sb3(seed: int, timesteps: int):
    from stable_baselines3 import TD3 as SB3TD3
    from stable_baselines3.common.noise import NormalActionNoise as SB3Noise

    model = SB3TD3(
        "MlpPolicy",
        gym.make("Pendulum-v1"),
        **ZOO_PENDULUM,
        action_noise=SB3Noise(np.zeros(1), NOISE_SIGMA * np.ones(1)),
        policy_kwargs={"net_arch": NET_ARCH},
        seed=seed,
        device="cpu",
    )
    start = time.perf_counter()
    model.learn(timesteps)
    return model, timesteps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--timesteps", type=int, default=20_000)
    parser.add_argument("--out", default=None, help="also write the results as JSON here")
    args = parser.parse_args()

    rows = []
    for seed in args.seeds:
        for name, runner in (("rlkit_td3", run_rlkit), ("sb3", run_sb3)):
            model, sps = runner(seed, args.timesteps)
            ret = evaluate(model, seed=10_000 + 100 * seed)
            rows.append({"library": name, "seed": seed, "final_return": ret, "steps_per_s": sps})
            print(f"{name:10s} seed {seed}: final return {ret:8.1f}   {sps:6.1f} env-steps/s", flush=True)

    def summary(name: str) -> dict:
        mine = [r for r in rows if r["library"] == name]
        rets = [r["final_return"] for r in mine]
        return {
            "mean_return": statistics.mean(rets),
            "std_return": statistics.pstdev(rets),
            "min_return": min(rets),
            "max_return": max(rets),
            "median_steps_per_s": statistics.median(r["steps_per_s"] for r in mine),
        }

    ours, theirs = summary("rlkit_td3"), summary("sb3")
    ratios = [
        a["steps_per_s"] / b["steps_per_s"]
        for a, b in zip(rows[0::2], rows[1::2])  # each seed's interleaved pair
    ]
    print()
    threads = torch.get_num_threads()
    print(f"TD3 Pendulum-v1, {args.timesteps} steps, seeds {args.seeds}, torch threads {threads}")
    print("| library | mean final return | std | min | max | median env-steps/s |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, s in (("rlkit_td3", ours), ("SB3", theirs)):
        print(
            f"| {name} | {s['mean_return']:.1f} | {s['std_return']:.1f} | {s['min_return']:.1f} | "
            f"{s['max_return']:.1f} | {s['median_steps_per_s']:.1f} |"
        )
    within = theirs["min_return"] <= ours["mean_return"] <= theirs["max_return"]
    print(f"\nrlkit_td3 mean return within SB3's spread [min, max]: {within}")
    per_seed = [round(r, 3) for r in ratios]
    print(f"speed ratio rlkit_td3 / SB3 per seed: {per_seed}; median {statistics.median(ratios):.3f}")
    if args.out:
        result = {
            "date": date.today().isoformat(),
            "machine": f"{platform.processor() or platform.machine()}, {threads} torch threads",
            "timesteps": args.timesteps,
            "rows": rows,
            "rlkit_td3": ours,
            "sb3": theirs,
            "speed_ratios": ratios,
            "within_sb3_spread": within,
        }
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=2)


if __name__ == "__main__":
    main()

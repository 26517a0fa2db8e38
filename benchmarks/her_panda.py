"""TD3+HER (and DDPG+HER) on panda-gym's PandaReach-v3 (or another task, ``--env``), rlkit_td3 and SB3 alike.

The issue's acceptance: success rate >= 0.9 over 50 deterministic evaluation episodes within 20,000 steps
(MultiInputPolicy, goal_selection_strategy "future", n_sampled_goal 4). Each run trains for ``--timesteps``
steps, evaluating every ``--eval-every`` steps on 50 episodes (seeded, deterministic actions), and reports the
success-rate curve, the first step where the rate reached 0.9 and the wall time (one torch thread).

Settings (`SETTINGS`, also on the HER page of the docs): [256, 256] networks, lr 1e-3, buffer 1M, batch 256,
gamma 0.95, tau 0.05, 1,000 random warm-up steps, Gaussian exploration noise sigma 0.1, train_freq 1,
gradient_steps 1.

Usage: ``python benchmarks/her_panda.py [--env PandaReach-v3] [--lib rlkit sb3] [--algo td3 ddpg] [--seeds 0]
[--timesteps 20000] [--out FILE.json] [--plot FILE.png]`` (needs the ``robotics`` and ``benchmark`` extras);
``--plot`` draws the success-rate curves (docs/img/her_panda_reach.png), ``--from FILE.json`` redraws them from a
saved report.
``--out`` is rewritten after every evaluation, so a long run stopped early (``PandaPush-v3``: "for as long as fits")
keeps its curve so far. Results: benchmarks/results/her_panda_reach.json, her_panda_push.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import gymnasium as gym
import numpy as np
import panda_gym  # noqa: F401  (registers the Panda tasks)
import torch

DEFAULT_ENV_ID = "PandaReach-v3"
SETTINGS = dict(
    learning_rate=1e-3,
    buffer_size=1_000_000,
    learning_starts=1000,
    batch_size=256,
    tau=0.05,
    gamma=0.95,
    train_freq=1,
    gradient_steps=1,
)
NET_ARCH = [256, 256]
NOISE_SIGMA = 0.1
HER_KWARGS = dict(n_sampled_goal=4, goal_selection_strategy="future")
EVAL_EPISODES = 50


class SeedEachReset(gym.Wrapper):
    """panda-gym reseeds its task's generator at every ``reset`` (from OS entropy when ``seed`` is None), so the
    goals after the first episode differ from run to run: seed every reset from the env's own generator (seeded
    by the first reset), which makes a seeded run repeatable."""

    def reset(self, *, seed=None, options=None):
        if seed is None:
            seed = int(self.env.unwrapped.np_random.integers(2**31))
        return self.env.reset(seed=seed, options=options)


def success_rate(model, seed: int, env_id: str, episodes: int = EVAL_EPISODES) -> float:
    """Fraction of ``episodes`` deterministic episodes (seeds ``seed .. seed + episodes - 1``) that succeed."""
    env = gym.make(env_id)
    successes = 0
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        done, info = False, {}
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        successes += bool(info.get("is_success", False))
    env.close()
    return successes / episodes


def make_model(lib: str, algo: str, seed: int, env_id: str):
    env = SeedEachReset(gym.make(env_id))
    n_actions = env.action_space.shape[0]
    if lib == "rlkit":
        from rlkit_td3 import DDPG, TD3, HerReplayBuffer
        from rlkit_td3.noise import NormalActionNoise
    else:
        from stable_baselines3 import DDPG, TD3, HerReplayBuffer
        from stable_baselines3.common.noise import NormalActionNoise
    cls = TD3 if algo == "td3" else DDPG
    noise = NormalActionNoise(np.zeros(n_actions), NOISE_SIGMA * np.ones(n_actions))
    return cls(
        "MultiInputPolicy",
        env,
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs=dict(HER_KWARGS),
        action_noise=noise,
        policy_kwargs=dict(net_arch=NET_ARCH),
        seed=seed,
        device="cpu",
        **SETTINGS,
    )


def run(lib: str, algo: str, seed: int, timesteps: int, eval_every: int, env_id: str, on_eval=None) -> dict:
    """One training run, evaluated every ``eval_every`` steps; ``on_eval(partial_result)`` after each evaluation."""
    torch.set_num_threads(1)
    model = make_model(lib, algo, seed, env_id)
    curve, train_time, reached = [], 0.0, None
    for step in range(eval_every, timesteps + 1, eval_every):
        start = time.perf_counter()
        model.learn(eval_every, reset_num_timesteps=False)
        train_time += time.perf_counter() - start
        rate = success_rate(model, seed=10_000 + seed * 1000, env_id=env_id)
        curve.append([step, rate])
        if reached is None and rate >= 0.9:
            reached = step
        print(f"{lib} {algo} seed {seed} step {step}: success {rate:.2f} ({train_time:.0f} s training)", flush=True)
        if on_eval is not None:
            on_eval(_result(lib, algo, seed, curve, reached, train_time))
    return _result(lib, algo, seed, curve, reached, train_time)


def _result(lib: str, algo: str, seed: int, curve: list, reached: int | None, train_time: float) -> dict:
    return {
        "lib": lib,
        "algo": algo,
        "seed": seed,
        "curve": curve,
        "final_success": curve[-1][1],
        "first_step_at_0.9": reached,
        "train_seconds": round(train_time, 1),
    }


def plot(report: dict, path: str) -> None:
    """Success rate against env steps, one line per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for run_ in report["runs"]:
        steps, rates = zip(*run_["curve"])
        name = {"rlkit": "rlkit_td3", "sb3": "Stable-Baselines3"}[run_["lib"]]
        ax.plot(steps, rates, marker="o", label=f"{name} {run_['algo'].upper()}+HER (seed {run_['seed']})")
    ax.axhline(0.9, color="grey", linestyle="--", linewidth=1)
    ax.set_xlabel("env steps")
    ax.set_ylabel(f"success rate ({EVAL_EPISODES} deterministic episodes)")
    ax.set_title(f"{report['env']}: HER (future, n_sampled_goal=4)")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default=DEFAULT_ENV_ID, help="a panda-gym task id")
    parser.add_argument("--lib", nargs="+", default=["rlkit", "sb3"], choices=["rlkit", "sb3"])
    parser.add_argument("--algo", nargs="+", default=["td3"], choices=["td3", "ddpg"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--timesteps", type=int, default=20_000)
    parser.add_argument("--eval-every", type=int, default=2000)
    parser.add_argument("--out", default=None)
    parser.add_argument("--plot", default=None)
    parser.add_argument("--from", dest="source", default=None, help="redraw --plot from this report")
    args = parser.parse_args()
    if args.source:
        with open(args.source) as fh:
            plot(json.load(fh), args.plot)
        return
    report = {"env": args.env, "settings": SETTINGS, "net_arch": NET_ARCH, "her": HER_KWARGS, "runs": []}
    report["machine"] = platform.processor() or platform.machine()

    def write(partial: dict | None = None) -> None:
        """Write the report so far (with the running run's curve so far) atomically."""
        if args.out:
            runs = report["runs"] + ([partial] if partial is not None else [])
            tmp = f"{args.out}.tmp"
            with open(tmp, "w") as fh:
                json.dump({**report, "runs": runs}, fh, indent=1)
            os.replace(tmp, args.out)

    for seed in args.seeds:
        for algo in args.algo:
            for lib in args.lib:
                report["runs"].append(run(lib, algo, seed, args.timesteps, args.eval_every, args.env, on_eval=write))
                write()
    print(json.dumps(report, indent=1))
    if args.plot:
        plot(report, args.plot)


if __name__ == "__main__":
    main()

"""``python -m rlkit_td3.demo``: train TD3 on Pendulum-v1 briefly, save the model and a learning curve.

This is what ``make demo`` runs. It prints one progress line per evaluation and writes
``<out>/td3_pendulum.zip`` and ``<out>/learning_curve.png``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

from rlkit_td3 import TD3
from rlkit_td3.callbacks import BaseCallback
from rlkit_td3.evaluation import evaluate_policy

DEMO_ENV = "Pendulum-v1"
DEMO_SETTINGS = dict(learning_starts=1000, gamma=0.98, policy_kwargs={"net_arch": [64, 64]}, seed=0)
"""A small, fast configuration: RL Zoo's Pendulum γ = 0.98 with a 64-64 network."""


class _EvalProgress(BaseCallback):
    """Records training episode returns; every ``every`` steps evaluates the deterministic policy and
    prints a progress line."""

    def __init__(self, every: int, total: int) -> None:
        super().__init__()
        self.every, self.total = every, total
        self.eval_env = gym.make(DEMO_ENV)
        self.points: list[tuple[int, float, float]] = []
        self.episodes: list[tuple[int, float]] = []

    def _on_training_start(self) -> None:
        self.start = time.perf_counter()
        self.running = np.zeros(self.training_env.num_envs)

    def _on_step(self) -> bool:
        self.running += self.locals["rewards"]
        for i in np.flatnonzero(self.locals["dones"]):
            self.episodes.append((self.num_timesteps, float(self.running[i])))
            self.running[i] = 0.0
        if self.num_timesteps % self.every == 0:
            mean, std = evaluate_policy(self.model, self.eval_env, n_eval_episodes=5, seed=self.num_timesteps)
            self.points.append((self.num_timesteps, mean, std))
            speed = self.num_timesteps / (time.perf_counter() - self.start)
            print(
                f"[{self.num_timesteps:>6}/{self.total}] eval return {mean:8.1f} ± {std:6.1f}   ({speed:5.0f} steps/s)",
                flush=True,
            )
        return True


def plot_curve(points: list[tuple[int, float, float]], episodes: list[tuple[int, float]], path: Path) -> None:
    """Write the learning curve: training episode returns and the periodic evaluations."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    if episodes:
        steps, returns = zip(*episodes)
        ax.plot(steps, returns, ".", alpha=0.4, label="training episode return")
    steps, means, stds = (np.array(v) for v in zip(*points))
    ax.plot(steps, means, "-o", label="evaluation (deterministic, 5 episodes)")
    ax.fill_between(steps, means - stds, means + stds, alpha=0.2)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("return")
    ax.set_title(f"TD3 on {DEMO_ENV}")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, format="png")
    plt.close(fig)
    tmp.replace(path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Train TD3 on Pendulum-v1 and save the model and a plot.")
    parser.add_argument("--out", default="demo_output", help="output folder")
    parser.add_argument("--timesteps", type=int, default=10_000)
    parser.add_argument("--eval-every", type=int, default=1_000)
    args = parser.parse_args(argv)
    out = Path(args.out)

    print(f"Training TD3 on {DEMO_ENV} for {args.timesteps} steps ({DEMO_SETTINGS})", flush=True)
    model = TD3("MlpPolicy", DEMO_ENV, **DEMO_SETTINGS)
    progress = _EvalProgress(args.eval_every, args.timesteps)
    model.learn(args.timesteps, callback=progress)
    model_path = out / "td3_pendulum.zip"
    model.save(model_path)
    plot_path = out / "learning_curve.png"
    plot_curve(progress.points, progress.episodes, plot_path)
    print(f"saved {model_path} and {plot_path}")


if __name__ == "__main__":
    main()

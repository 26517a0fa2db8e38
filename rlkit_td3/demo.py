"""``python -m rlkit_td3.demo``: train TD3 on Pendulum-v1 briefly, save the model and a learning curve.

This is what ``make demo`` runs. It prints one progress line per evaluation and writes
``<out>/td3_pendulum.zip`` and ``<out>/learning_curve.png``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rlkit_td3.callbacks import BaseCallback
from rlkit_td3.evaluation import evaluate_policy
from rlkit_td3.td3 import TD3

DEMO_ENV = "Pendulum-v1"
DEMO_SETTINGS = dict(learning_starts=1000, gamma=0.98, policy_kwargs={"net_arch": [64, 64]}, seed=0)
"""A small, fast configuration: RL Zoo's Pendulum γ = 0.98 with a 64-64 network."""
EVAL_EPISODES = 5
# What a Pendulum-v1 episode can score: 200 steps of reward -(θ² + 0.1·θ̇² + 0.001·u²) with |θ| <= π, |θ̇| <= 8 and
# |u| <= 2 (gymnasium's pendulum.py), so each step is in [-(π² + 6.4 + 0.004), 0].
DEMO_RETURN_RANGE = (-200 * (np.pi**2 + 6.4 + 0.004), 0.0)


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
            mean, std = evaluate_policy(
                self.model, self.eval_env, n_eval_episodes=EVAL_EPISODES, seed=self.num_timesteps
            )
            self.points.append((self.num_timesteps, mean, std))
            speed = self.num_timesteps / (time.perf_counter() - self.start)
            print(
                f"[{self.num_timesteps:>6}/{self.total}] eval return {mean:8.1f} ± {std:6.1f}   ({speed:5.0f} steps/s)",
                flush=True,
            )
        return True


def evaluation_band(
    means: np.ndarray, stds: np.ndarray, low: float = DEMO_RETURN_RANGE[0], high: float = DEMO_RETURN_RANGE[1]
) -> tuple[np.ndarray, np.ndarray]:
    """``mean ± std`` of each evaluation, clipped to the returns the env can score (``[low, high]``)."""
    return np.clip(means - stds, low, high), np.clip(means + stds, low, high)


def learning_curve_figure(points: list[tuple[int, float, float]], episodes: list[tuple[int, float]]) -> Any:
    """The learning curve: training episode returns, and the periodic evaluations with their ±1 std band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    if episodes:
        steps, returns = zip(*episodes)
        ax.plot(steps, returns, ".", alpha=0.4, label="training episode return")
    steps, means, stds = (np.array(v) for v in zip(*points))
    ax.plot(steps, means, "-o", label=f"evaluation: mean of {EVAL_EPISODES} deterministic episodes")
    low, high = evaluation_band(means, stds)
    ax.fill_between(steps, low, high, alpha=0.2, label=f"±1 std over those {EVAL_EPISODES} episodes (clipped at 0)")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("return (at most 0 on Pendulum)")
    ax.set_title(f"TD3 on {DEMO_ENV}")
    ax.grid(alpha=0.3)
    # below the axes: a learning curve fills every corner of them sooner or later
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2, fontsize="small", frameon=False)
    fig.tight_layout()
    return fig


def plot_curve(points: list[tuple[int, float, float]], episodes: list[tuple[int, float]], path: Path) -> None:
    """Write the learning curve (`learning_curve_figure`) to ``path``, a PNG."""
    import matplotlib.pyplot as plt

    fig = learning_curve_figure(points, episodes)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, format="png", bbox_inches="tight")
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

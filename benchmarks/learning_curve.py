"""Make the learning-curve picture of the docs (docs/img/learning_curve.png) with ``plot_results``.

Two seeds of TD3 on Pendulum-v1 for 15k steps, each env wrapped in ``Monitor``; about a minute per seed on a
laptop CPU. Run: ``python benchmarks/learning_curve.py [out_dir]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import gymnasium as gym
import torch

from rlkit_td3 import TD3
from rlkit_td3.monitor import Monitor, load_results, plot_results

ROOT = Path(__file__).resolve().parents[1]


def main(out_dir: Path) -> None:
    torch.set_num_threads(1)
    dirs = []
    for seed in (0, 1):
        folder = out_dir / f"td3_seed{seed}"
        folder.mkdir(parents=True, exist_ok=True)
        env = Monitor(gym.make("Pendulum-v1"), folder)
        TD3("MlpPolicy", env, learning_starts=1000, seed=seed).learn(15_000)
        print(f"seed {seed}: last 10 episodes mean return {load_results(folder)['r'].tail(10).mean():.1f}")
        dirs.append(folder)
    png = ROOT / "docs" / "img" / "learning_curve.png"
    plot_results(dirs, path=png, task_name="TD3 on Pendulum-v1", window=10)
    print(f"wrote {png}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("learning_curve_runs"))

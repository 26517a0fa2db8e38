"""Monitor two training runs, then plot their learning curves with results_plotter."""

import os

import gymnasium as gym
import matplotlib.pyplot as plt

from rlkit_td3 import TD3, results_plotter
from rlkit_td3.monitor import Monitor, load_results

log_dirs = []
for seed in (0, 1):
    log_dir = f"monitor_runs/seed_{seed}/"
    os.makedirs(log_dir, exist_ok=True)
    env = Monitor(gym.make("Pendulum-v1", max_episode_steps=50), log_dir)
    TD3("MlpPolicy", env, learning_starts=100, policy_kwargs={"net_arch": [32]}, seed=seed).learn(300)
    log_dirs.append(log_dir)

results_plotter.plot_results(log_dirs, 300, results_plotter.X_TIMESTEPS, "TD3 Pendulum-v1")
plt.savefig("learning_curves.png")  # or plt.show()

# Smoothed curve of one run, with a window shorter than the default 100 episodes:
x, y = results_plotter.ts2xy(load_results(log_dirs[0]), results_plotter.X_TIMESTEPS)
x, y_mean = results_plotter.window_func(x, y, 3, lambda windows, axis: windows.mean(axis=axis))
print(f"{len(x)} smoothed points, last mean return {y_mean[-1]:.1f}")

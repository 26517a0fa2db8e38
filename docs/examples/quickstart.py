"""Quickstart: train TD3 on Pendulum-v1, evaluate it, save it, load it back
and act with it.

Run: ``python docs/examples/quickstart.py`` (about a minute;
``RLKIT_EXAMPLES_FAST=1`` for a few seconds).
"""

import os

import gymnasium as gym
import numpy as np
import torch

from rlkit_td3 import TD3
from rlkit_td3.evaluation import evaluate_policy

FAST = os.environ.get("RLKIT_EXAMPLES_FAST") == "1"
# Small networks: one thread is fastest, and safe on a busy machine (see Tips).
torch.set_num_threads(1)

env = gym.make("Pendulum-v1")
model = TD3(
    "MlpPolicy",
    env,
    learning_starts=1_000,
    gamma=0.98,
    policy_kwargs={"net_arch": [64, 64]},
    seed=0,
)
model.learn(total_timesteps=1_500 if FAST else 15_000)

mean_return, std_return = evaluate_policy(model, env, n_eval_episodes=5)
# After 15k steps: -265.1 +- 81.3 here (a random policy: about -1,200).
print(f"mean return {mean_return:.1f} +- {std_return:.1f}")

model.save("td3_pendulum")  # writes td3_pendulum.zip, as Stable-Baselines3 does
loaded = TD3.load("td3_pendulum")

obs, _ = env.reset(seed=1)
action, _ = loaded.predict(obs, deterministic=True)
print(
    "same action after loading:",
    bool(np.array_equal(action, model.predict(obs, deterministic=True)[0])),
)

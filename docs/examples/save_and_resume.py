"""Checkpoint a run in the middle and resume it from the file: it ends bit for
bit where the uninterrupted run ends.

Run: ``python docs/examples/save_and_resume.py`` (``RLKIT_EXAMPLES_FAST=1`` for
a short run).
"""

import os

import gymnasium as gym
import torch

from rlkit_td3 import TD3
from rlkit_td3.callbacks import BaseCallback

FAST = os.environ.get("RLKIT_EXAMPLES_FAST") == "1"
torch.set_num_threads(1)
CHECKPOINT_AT, TOTAL = (
    (1_000, 1_400) if FAST else (6_000, 10_000)
)  # 1_000, 6_000: Pendulum episode boundaries


class SaveAt(BaseCallback):
    """Write a checkpoint (the model with its replay buffer) at one step."""

    def __init__(self, step: int, path: str) -> None:
        super().__init__()
        self.step, self.path = step, path

    def _on_step(self) -> bool:
        if self.num_timesteps == self.step:
            self.model.save(self.path, include_buffer=True)
        return True


settings = dict(
    learning_starts=500, policy_kwargs={"net_arch": [64, 64]}, seed=0
)
straight = TD3("MlpPolicy", "Pendulum-v1", **settings)
straight.learn(TOTAL, callback=SaveAt(CHECKPOINT_AT, "checkpoint.zip"))

# Later (in this process or another one), with a freshly made env:
resumed = TD3.load("checkpoint.zip", env=gym.make("Pendulum-v1"))
resumed.learn(TOTAL - CHECKPOINT_AT, reset_num_timesteps=False)

same = all(
    torch.equal(a, b)
    for a, b in zip(straight.policy.parameters(), resumed.policy.parameters())
)
print(f"resumed from step {CHECKPOINT_AT} to {resumed.num_timesteps};")
print(f"weights equal to the uninterrupted run's: {same}")

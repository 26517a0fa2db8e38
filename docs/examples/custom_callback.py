"""A custom callback: log a value of your own and stop training once the
recent episodes are good enough.

Run: ``python docs/examples/custom_callback.py`` (``RLKIT_EXAMPLES_FAST=1`` for
a short run).
"""

import os

import numpy as np
import torch

from rlkit_td3 import TD3
from rlkit_td3.callbacks import BaseCallback
from rlkit_td3.logger import configure

FAST = os.environ.get("RLKIT_EXAMPLES_FAST") == "1"
torch.set_num_threads(1)


class StopWhenGoodEnough(BaseCallback):
    """Record the mean return of the last 10 training episodes; stop once it
    exceeds ``threshold``."""

    def __init__(self, threshold: float, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.threshold = threshold
        self.best = -np.inf

    def _on_step(self) -> bool:
        episodes = self.model.ep_info_buffer[-10:]
        if not episodes:
            return True  # keep training
        recent = float(np.mean([episode["r"] for episode in episodes]))
        self.logger.record(
            "custom/recent_return", recent
        )  # written with the other keys of the log
        if len(episodes) < 10:
            return True
        self.best = max(self.best, recent)
        return recent < self.threshold  # False stops learn()


model = TD3(
    "MlpPolicy",
    "Pendulum-v1",
    learning_starts=1_000,
    gamma=0.98,
    policy_kwargs={"net_arch": [64, 64]},
    seed=0,
)
model.set_logger(configure("logs", ["csv"]))  # logs/progress.csv
callback = StopWhenGoodEnough(threshold=-1_600 if FAST else -250)
model.learn(
    total_timesteps=3_000 if FAST else 30_000, callback=callback, log_interval=1
)
steps, best = model.num_timesteps, callback.best
print(f"stopped after {steps} steps; best recent return {best:.1f}")

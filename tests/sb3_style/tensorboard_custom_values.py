"""Log extra values to TensorBoard from a callback: a scalar, an image and a matplotlib figure.

SB3 equivalent: the imports would be ``stable_baselines3`` / ``stable_baselines3.common.*``.
Run: ``python tensorboard_custom_values.py`` then ``tensorboard --logdir td3_pendulum_tb``.
"""

import matplotlib.pyplot as plt
import numpy as np

from rlkit_td3 import TD3
from rlkit_td3.callbacks import BaseCallback
from rlkit_td3.logger import Figure, Image

TEXT_FORMATS = ("stdout", "log", "json", "csv")  # the writers that cannot show images or figures


class ActionStatsCallback(BaseCallback):
    """Mean |action| in every log row; every 200 steps a picture of the recent actions."""

    def __init__(self):
        super().__init__()
        self.actions = []

    def _on_step(self) -> bool:
        action = np.asarray(self.locals["actions"]).ravel()
        self.actions.append(float(action[0]))
        self.logger.record_mean("custom/abs_action", float(np.abs(action).mean()))
        if self.n_calls % 200 == 0:
            recent = np.array(self.actions[-200:])
            # a 20 x 200 strip: one column per step, bright where the action was large
            strip = np.tile(((recent + 1.0) * 127.5).astype(np.uint8), (20, 1))
            self.logger.record("custom/action_strip", Image(strip, "HW"), exclude=TEXT_FORMATS)
            figure = plt.figure(figsize=(4, 2))
            plt.plot(recent)
            plt.ylabel("action")
            self.logger.record("custom/action_plot", Figure(figure, close=True), exclude=TEXT_FORMATS)
        return True


model = TD3(
    "MlpPolicy",
    "Pendulum-v1",
    learning_starts=100,
    policy_kwargs={"net_arch": [32]},
    tensorboard_log="td3_pendulum_tb",
    verbose=1,
    seed=0,
)
model.learn(400, callback=ActionStatsCallback(), log_interval=1)

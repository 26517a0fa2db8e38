"""Record a video of the current policy to TensorBoard every few thousand steps.

The frames are drawn with numpy (a dot at the pendulum's tip), so no renderer is needed; with an env that
renders, pass ``env.render()`` frames (H, W, C) stacked and transposed to (1, T, C, H, W) the same way.
Run: ``python tensorboard_video.py`` then ``tensorboard --logdir video_tb`` (IMAGES tab).
"""

import gymnasium as gym
import numpy as np

from rlkit_td3 import TD3
from rlkit_td3.callbacks import BaseCallback
from rlkit_td3.logger import Video

SIZE = 32


def draw(obs: np.ndarray) -> np.ndarray:
    """One (3, SIZE, SIZE) uint8 frame: the pendulum tip, from its (cos, sin) observation."""
    frame = np.zeros((3, SIZE, SIZE), np.uint8)
    cos, sin = float(obs[0]), float(obs[1])
    row = int(round((1 - cos) / 2 * (SIZE - 3)))  # upright (cos = 1) at the top
    col = int(round((1 + sin) / 2 * (SIZE - 3)))
    frame[:, row : row + 3, col : col + 3] = 255
    return frame


class VideoRecorderCallback(BaseCallback):
    def __init__(self, eval_env: gym.Env, render_freq: int, n_frames: int = 30):
        super().__init__()
        self.eval_env = eval_env
        self.render_freq = render_freq
        self.n_frames = n_frames

    def _on_step(self) -> bool:
        if self.n_calls % self.render_freq == 0:
            obs, _ = self.eval_env.reset(seed=0)
            frames = []
            for _ in range(self.n_frames):
                action, _ = self.model.predict(obs, deterministic=True)
                obs, _, terminated, truncated, _ = self.eval_env.step(action)
                frames.append(draw(obs))
                if terminated or truncated:
                    break
            video = Video(np.stack(frames)[None], fps=15)  # (1, T, C, H, W)
            self.logger.record("trajectory/video", video, exclude=("stdout", "log", "json", "csv"))
        return True


model = TD3(
    "MlpPolicy", "Pendulum-v1", learning_starts=100, policy_kwargs={"net_arch": [32]}, tensorboard_log="video_tb"
)
model.learn(400, callback=VideoRecorderCallback(gym.make("Pendulum-v1"), render_freq=200), log_interval=1)

"""A PyBullet robot (HalfCheetahBulletEnv-v0) trained briefly, then filmed
with VecVideoRecorder.

The Bullet ids are registered by ``import rlkit_td3`` (through
pybullet_envs_gymnasium); the video needs the ``video`` extra (imageio with
ffmpeg). Run: ``python docs/examples/bullet_video.py`` (60,000 steps: 10 to 20
minutes on one core at the speeds of the Performance page; the Results page
shows how far TD3 gets on this robot in 100,000 steps);
``RLKIT_EXAMPLES_FAST=1`` for a short run.
"""

import os

import torch

from rlkit_td3 import TD3
from rlkit_td3.env_util import make_vec_env
from rlkit_td3.vec_env import VecVideoRecorder

FAST = os.environ.get("RLKIT_EXAMPLES_FAST") == "1"
torch.set_num_threads(1)
ENV_ID = "HalfCheetahBulletEnv-v0"

model = TD3(
    "MlpPolicy", ENV_ID, learning_starts=1_000 if not FAST else 100, seed=0
)
model.learn(300 if FAST else 60_000)

video_length = 100 if FAST else 1_000
env = make_vec_env(
    ENV_ID, n_envs=1, seed=0, env_kwargs={"render_mode": "rgb_array"}
)
env = VecVideoRecorder(
    env,
    "videos",
    record_video_trigger=lambda step: step == 0,
    video_length=video_length,
)
obs = env.reset()
for _ in range(video_length + 1):
    action, _ = model.predict(obs, deterministic=True)
    obs, _, _, _ = env.step(action)
env.close()  # finishes the file
print("videos:", sorted(os.listdir("videos")))

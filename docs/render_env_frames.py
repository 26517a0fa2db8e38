"""Render a still frame of each Bullet robot for the Environments page
(headless, pybullet's software renderer).

    # writes docs/img/<env id>.png (320x240)
    .venv/bin/python docs/render_env_frames.py

Each env is reset with seed 0 and stepped ``STEPS`` times with zero actions,
so the robot has settled on the floor (walkers) or the pole is slightly off
vertical (pendulums); then ``env.render()`` gives the frame. Only the Reacher's
camera is moved closer. The PNGs are stored with a 64-colour palette to keep
them small.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
from PIL import Image

import rlkit_td3  # noqa: F401  (registers the Bullet ids)
from rlkit_td3.envs import BULLET_ENV_IDS

OUT = Path(__file__).resolve().parent / "img"
STEPS = 10
# The envs' camera is 3 m away, pitched down 30 degrees; the Reacher's arm is
# 0.2 m long, so look at it closer.
CAMERA = {"ReacherBulletEnv-v0": {"_cam_dist": 0.55, "_cam_pitch": -60}}


def render_frame(env_id: str) -> np.ndarray:
    """The ``rgb_array`` frame of ``env_id`` after a seeded reset and ``STEPS``
    zero-action steps."""
    env = gymnasium.make(env_id, render_mode="rgb_array")
    for attribute, value in CAMERA.get(env_id, {}).items():
        setattr(env.unwrapped, attribute, value)
    env.reset(seed=0)
    for _ in range(STEPS):
        env.step(np.zeros(env.action_space.shape, dtype=np.float32))
    frame = env.render()
    env.close()
    return frame


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for env_id in BULLET_ENV_IDS:
        image = Image.fromarray(render_frame(env_id)).quantize(colors=64)
        path = OUT / f"{env_id}.png"
        image.save(path, optimize=True)
        width, height = image.size
        name = path.relative_to(OUT.parent.parent)
        print(f"{name}: {width}x{height}, {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()

"""SB3-style script: stacking frames, checking for NaNs, monitoring and recording a video of a VecEnv.

Imports as an SB3 user writes them, changed to rlkit_td3; random actions. Exits 0 when every check passes.
"""

import os
import tempfile

import gymnasium as gym
import numpy as np

from rlkit_td3.env_util import make_vec_env
from rlkit_td3.vec_env import DummyVecEnv, VecCheckNan, VecFrameStack, VecMonitor, VecVideoRecorder


def main() -> None:
    env = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
    env = VecCheckNan(env, raise_exception=True)
    env = VecFrameStack(env, n_stack=4)
    env = VecVideoRecorder(env, "videos", record_video_trigger=lambda step: step == 0, video_length=20)
    assert env.observation_space.shape == (12,)
    obs = env.reset()
    assert obs.shape == (2, 12) and (obs[:, :9] == 0).all()
    for _ in range(30):
        obs, rewards, dones, infos = env.step(np.zeros((2, 1), dtype=np.float32))
    assert (obs[:, :9] != 0).any()
    env.close()
    videos = os.listdir("videos")
    assert len(videos) == 1 and videos[0].startswith("rl-agent-video-step-0-to-step-20"), videos

    # one VecMonitor over all envs instead of a Monitor per env
    env = VecMonitor(DummyVecEnv([lambda: gym.make("Pendulum-v1")] * 2), filename="monitor_dir/")
    env.reset()
    episodes = []
    for _ in range(200):
        _, _, dones, infos = env.step(np.zeros((2, 1), dtype=np.float32))
        episodes += [info["episode"] for info in infos if "episode" in info]
    assert [episode["l"] for episode in episodes] == [200, 200]
    print("ok")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as workdir:  # the files it writes go to a scratch folder
        os.chdir(workdir)
        main()

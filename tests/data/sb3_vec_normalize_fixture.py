"""How tests/data/sb3_vec_normalize.pkl was made (Stable-Baselines3 2.9.2, gymnasium 1.4.0, numpy 2.4.6).

Run with stable-baselines3 importable: ``python tests/data/sb3_vec_normalize_fixture.py``. The same rollout is
repeated with rlkit_td3 in tests/test_vec_normalize.py, which reads the pickle with ``allow_pickle=True``.
"""

from pathlib import Path

import gymnasium as gym
import numpy as np

N_ENVS, N_STEPS, SEED = 2, 30, 0


def rollout(dummy_cls, normalize_cls):
    venv = normalize_cls(dummy_cls([lambda: gym.make("Pendulum-v1") for _ in range(N_ENVS)]), gamma=0.9)
    venv.seed(SEED)
    venv.reset()
    for t in range(N_STEPS):
        venv.step(np.full((N_ENVS, 1), np.sin(t), dtype=np.float32))
    return venv


if __name__ == "__main__":
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    rollout(DummyVecEnv, VecNormalize).save(str(Path(__file__).with_name("sb3_vec_normalize.pkl")))

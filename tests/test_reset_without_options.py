"""An env whose ``reset()`` takes ``seed`` but no ``options`` trains and evaluates (SB3 passes only ``seed``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rlkit_td3 import TD3
from rlkit_td3.env_util import make_vec_env
from rlkit_td3.evaluation import evaluate_policy


class NoOptionsEnv(gym.Env):
    observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, seed=None):  # type: ignore[override]
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.uniform(-1, 1, 2).astype(np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(2, np.float32), float(action[0]), False, self.t >= 5, {}


def test_env_without_reset_options_trains_and_evaluates():
    # Before, gymnasium's vector env passed options=None to reset() and learn() raised a TypeError.
    model = TD3("MlpPolicy", NoOptionsEnv(), learning_starts=5, seed=0, policy_kwargs={"net_arch": [8]})
    model.learn(20)
    assert model.num_timesteps == 20
    vec_model = TD3(
        "MlpPolicy", make_vec_env(NoOptionsEnv, n_envs=2), learning_starts=5, policy_kwargs={"net_arch": [8]}
    )
    vec_model.learn(20)
    mean, _ = evaluate_policy(model, NoOptionsEnv(), n_eval_episodes=2)
    assert np.isfinite(mean)

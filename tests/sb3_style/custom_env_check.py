"""Check a custom env with check_env, then train TD3 on it (the SB3 "custom env" workflow)."""

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rlkit_td3 import TD3
from rlkit_td3.env_checker import check_env
from rlkit_td3.evaluation import evaluate_policy
from rlkit_td3.monitor import Monitor


class ReachTarget(gym.Env):
    """Move a point on a line towards 0; the reward is minus the distance."""

    metadata = {"render_modes": []}

    def __init__(self):
        self.observation_space = spaces.Box(-5.0, 5.0, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self.position = 0.0
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.position = float(self.np_random.uniform(-4.0, 4.0))
        self.steps = 0
        return np.array([self.position], dtype=np.float32), {}

    def step(self, action):
        self.position = float(np.clip(self.position + 0.5 * float(action[0]), -5.0, 5.0))
        self.steps += 1
        reward = -abs(self.position)
        return np.array([self.position], dtype=np.float32), reward, False, self.steps >= 20, {}


env = ReachTarget()
check_env(env)  # raises if the env breaks gymnasium's API (as SB3's checker judges it)

model = TD3("MlpPolicy", env, learning_starts=100, policy_kwargs=dict(net_arch=[32, 32]), seed=0, verbose=0)
model.learn(total_timesteps=200)
mean_reward, std_reward = evaluate_policy(model, Monitor(ReachTarget()), n_eval_episodes=3)
print(f"mean_reward={mean_reward:.2f} +/- {std_reward:.2f}")
assert np.isfinite(mean_reward)

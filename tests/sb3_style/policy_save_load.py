"""SB3's "save and load the policy only" example, with only the imports changed: save ``model.policy``, load
it with ``MlpPolicy.load`` and evaluate it without the model (SB3's ``stable_baselines3.td3.policies`` is
``rlkit_td3.policies`` here)."""

import gymnasium as gym
import numpy as np

from rlkit_td3 import TD3
from rlkit_td3.evaluation import evaluate_policy
from rlkit_td3.policies import MlpPolicy

env = gym.make("Pendulum-v1")
model = TD3("MlpPolicy", env, learning_starts=50, policy_kwargs=dict(net_arch=[64, 64]), seed=0)
model.learn(100)

policy = model.policy
policy.save("td3_policy_pendulum.zip")
del policy

saved_policy = MlpPolicy.load("td3_policy_pendulum.zip", device="cpu")
mean_reward, std_reward = evaluate_policy(saved_policy, env, n_eval_episodes=2, deterministic=True)
print(f"mean_reward={mean_reward:.2f} +/- {std_reward:.2f}")

observation = np.array([0.6, -0.8, 1.5], dtype=np.float32)
action, _ = saved_policy.predict(observation, deterministic=True)
assert np.array_equal(action, model.predict(observation, deterministic=True)[0])

# The parameters as one flat vector, e.g. for evolution strategies:
params = saved_policy.parameters_to_vector()
saved_policy.load_from_vector(params + 0.01)
assert not np.array_equal(saved_policy.predict(observation)[0], action)

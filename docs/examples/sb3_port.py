"""A Stable-Baselines3-style script, ported by changing its imports only.

Every ``stable_baselines3.common.X`` is ``rlkit_td3.X``; ``from
stable_baselines3 import TD3`` is ``from rlkit_td3 import TD3`` (see "Coming
from Stable-Baselines3"). The rest is SB3 code as its users write it: vectorized
envs with ``make_vec_env``, ``VecNormalize``, an ``EvalCallback`` and a
``CheckpointCallback``, then ``evaluate_policy`` on the normalised env. Run:
``python docs/examples/sb3_port.py``; ``RLKIT_EXAMPLES_FAST=1`` for a short run.
"""

import os

import numpy as np
import torch

from rlkit_td3 import TD3  # was: from stable_baselines3 import TD3
from rlkit_td3.callbacks import (
    CallbackList,
    CheckpointCallback,
    EvalCallback,
)  # was: stable_baselines3.common...
from rlkit_td3.env_util import make_vec_env
from rlkit_td3.evaluation import evaluate_policy
from rlkit_td3.noise import NormalActionNoise
from rlkit_td3.vec_env import VecNormalize

FAST = os.environ.get("RLKIT_EXAMPLES_FAST") == "1"
torch.set_num_threads(1)
TOTAL = 2_000 if FAST else 20_000

# Observations normalised; rewards not: on Pendulum norm_reward=True slowed
# learning in our runs (mean reward -711 against -141 after 20k steps).
env = VecNormalize(
    make_vec_env("Pendulum-v1", n_envs=2, seed=0),
    norm_obs=True,
    norm_reward=False,
)
eval_env = VecNormalize(
    make_vec_env("Pendulum-v1", n_envs=1, seed=100),
    training=False,
    norm_reward=False,
)

n_actions = env.action_space.shape[-1]
model = TD3(
    "MlpPolicy",
    env,
    action_noise=NormalActionNoise(
        mean=np.zeros(n_actions), sigma=0.1 * np.ones(n_actions)
    ),
    learning_starts=1_000,
    gradient_steps=-1,  # an update per transition collected (2 per step)
    gamma=0.98,
    policy_kwargs=dict(net_arch=[64, 64]),
    verbose=0,
    seed=0,
)
callbacks = CallbackList(
    [
        # EvalCallback copies the training statistics into eval_env before
        # each evaluation, as in SB3.
        EvalCallback(
            eval_env,
            eval_freq=TOTAL // 4,
            n_eval_episodes=3,
            best_model_save_path="best",
            log_path="eval",
        ),
        CheckpointCallback(
            save_freq=TOTAL // 2,
            save_path="checkpoints",
            save_vecnormalize=True,
        ),
    ]
)
model.learn(total_timesteps=TOTAL, callback=callbacks)

model.save("td3_pendulum")
env.save(
    "vec_normalize.json"
)  # the running statistics, to normalise the same way at test time

test_env = VecNormalize.load(
    "vec_normalize.json", make_vec_env("Pendulum-v1", n_envs=1, seed=200)
)
test_env.training, test_env.norm_reward = False, False
mean_reward, std_reward = evaluate_policy(
    TD3.load("td3_pendulum"), test_env, n_eval_episodes=5
)
print(f"mean reward {mean_reward:.1f} +- {std_reward:.1f}")
print("checkpoints:", sorted(os.listdir("checkpoints")))

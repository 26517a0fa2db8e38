"""Evaluate during training and stop once the mean evaluation reward reaches a threshold."""

import tempfile

import gymnasium as gym

from rlkit_td3 import TD3
from rlkit_td3.callbacks import EvalCallback, StopTrainingOnRewardThreshold
from rlkit_td3.monitor import Monitor

with tempfile.TemporaryDirectory() as log_dir:
    eval_env = Monitor(gym.make("Pendulum-v1"))
    # A threshold any policy reaches on Pendulum, so that the example stops at its first evaluation.
    callback_on_best = StopTrainingOnRewardThreshold(reward_threshold=-2000, verbose=1)
    eval_callback = EvalCallback(
        eval_env,
        callback_on_new_best=callback_on_best,
        n_eval_episodes=2,
        eval_freq=200,
        best_model_save_path=log_dir,
        log_path=log_dir,
        verbose=1,
    )
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=100, policy_kwargs=dict(net_arch=[32]), seed=0)
    model.learn(total_timesteps=2_000, callback=eval_callback)
    print(f"stopped after {model.num_timesteps} timesteps, best mean reward {eval_callback.best_mean_reward:.1f}")
    assert model.num_timesteps == 200, model.num_timesteps
    best = TD3.load(f"{log_dir}/best_model.zip")

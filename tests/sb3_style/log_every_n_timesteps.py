"""Write the training log every N timesteps instead of every N episodes."""

from rlkit_td3 import TD3
from rlkit_td3.callbacks import LogEveryNTimesteps
from rlkit_td3.logger import configure

model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=100, policy_kwargs={"net_arch": [32]})
model.set_logger(configure("every_n_logs", ["stdout", "csv"]))
# log_interval=None: no row at episode ends; the callback writes one each 150 timesteps instead.
model.learn(600, callback=LogEveryNTimesteps(n_steps=150), log_interval=None)

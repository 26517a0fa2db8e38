"""Record the run's hyperparameters with the metrics to compare runs on (TensorBoard's HPARAMS tab)."""

from rlkit_td3 import TD3
from rlkit_td3.callbacks import BaseCallback
from rlkit_td3.logger import HParam


class HParamCallback(BaseCallback):
    def _on_training_start(self) -> None:
        hparam_dict = {
            "algorithm": self.model.__class__.__name__,
            "learning rate": self.model.learning_rate,  # shown as text when it is not a plain number
            "gamma": self.model.gamma,
            "batch size": self.model.batch_size,
        }
        # The metrics must be logged scalars: TensorBoard shows their values next to the hyperparameters.
        metric_dict = {"rollout/ep_rew_mean": 0, "train/critic_loss": 0.0}
        self.logger.record("hparams", HParam(hparam_dict, metric_dict), exclude=("stdout", "log", "json", "csv"))

    def _on_step(self) -> bool:
        return True


for gamma in (0.9, 0.98):
    model = TD3(
        "MlpPolicy",
        "Pendulum-v1",
        gamma=gamma,
        learning_starts=100,
        policy_kwargs={"net_arch": [32]},
        tensorboard_log="hparams_tb",
        verbose=1,
    )
    model.learn(200, callback=HParamCallback(), log_interval=1, tb_log_name=f"gamma_{gamma}")

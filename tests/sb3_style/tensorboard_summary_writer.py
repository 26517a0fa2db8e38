"""Write to TensorBoard's SummaryWriter directly, for what the logger has no value type for (text here)."""

from rlkit_td3 import TD3
from rlkit_td3.callbacks import BaseCallback
from rlkit_td3.logger import TensorBoardOutputFormat


class SummaryWriterCallback(BaseCallback):
    def _on_training_start(self) -> None:
        self._log_freq = 100  # steps
        output_formats = self.logger.output_formats
        # The TensorBoard writer the model's logger holds (it has one because tensorboard_log is set).
        self.tb_formatter = next(f for f in output_formats if isinstance(f, TensorBoardOutputFormat))

    def _on_step(self) -> bool:
        if self.n_calls % self._log_freq == 0:
            writer = self.tb_formatter.writer  # a torch.utils.tensorboard.SummaryWriter
            writer.add_text("direct_access", f"{self.num_timesteps} steps done", self.num_timesteps)
            writer.flush()
        return True


model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=100, policy_kwargs={"net_arch": [32]}, tensorboard_log="sw_tb")
model.learn(300, callback=SummaryWriterCallback())

"""The callback hook protocol: order, locals, stopping, function callbacks."""

from __future__ import annotations

from rlkit_td3 import TD3
from rlkit_td3.callbacks import BaseCallback, CallbackList

KW = dict(learning_starts=50, batch_size=8, policy_kwargs={"net_arch": [8]}, seed=0)


class Recorder(BaseCallback):
    def __init__(self, stop_at: int | None = None):
        super().__init__()
        self.events: list[str] = []
        self.stop_at = stop_at

    def _init_callback(self):
        self.events.append("init")

    def _on_training_start(self):
        self.events.append("training_start")

    def _on_rollout_start(self):
        self.events.append("rollout_start")

    def _on_step(self):
        self.events.append("step")
        assert {"actions", "new_obs", "rewards", "dones", "infos"} <= set(self.locals)
        return self.stop_at is None or self.num_timesteps < self.stop_at

    def _on_rollout_end(self):
        self.events.append("rollout_end")

    def _on_training_end(self):
        self.events.append("training_end")


def test_hook_order():
    rec = Recorder()
    TD3("MlpPolicy", "Pendulum-v1", train_freq=4, **KW).learn(12, callback=rec)
    body = ["rollout_start", "step", "step", "step", "step", "rollout_end"]
    assert rec.events == ["init", "training_start", *body * 3, "training_end"]
    assert rec.n_calls == 12 and rec.num_timesteps == 12


def test_returning_false_stops_at_that_step():
    rec = Recorder(stop_at=500)
    model = TD3("MlpPolicy", "Pendulum-v1", **KW).learn(2000, callback=rec)
    assert model.num_timesteps == 500 and rec.events[-1] == "training_end"


def test_function_and_list_callbacks():
    seen = []

    def fn(locals_, globals_):
        seen.append(locals_["self"].num_timesteps)
        return len(seen) < 30

    a, b = Recorder(), Recorder()
    model = TD3("MlpPolicy", "Pendulum-v1", **KW).learn(100, callback=[CallbackList([a, b]), fn])
    assert model.num_timesteps == 30 and seen[-1] == 30
    assert a.n_calls == b.n_calls == 30

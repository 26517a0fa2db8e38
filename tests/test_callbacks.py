"""Built-in callbacks: hook order with vector envs, EvalCallback, CheckpointCallback, stop callbacks."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from conftest import make_counter
from test_callbacks_protocol import Recorder

from rlkit_td3 import TD3
from rlkit_td3.callbacks import (
    BaseCallback,
    CheckpointCallback,
    EvalCallback,
    EveryNTimesteps,
    StopTrainingOnMaxEpisodes,
    StopTrainingOnNoModelImprovement,
    StopTrainingOnRewardThreshold,
)

KW = dict(batch_size=16, policy_kwargs={"net_arch": [32, 32]}, seed=0)


def pendulums(n: int) -> gym.vector.SyncVectorEnv:
    return gym.vector.SyncVectorEnv([lambda: gym.make("Pendulum-v1") for _ in range(n)])


class TimestepLog(BaseCallback):
    def __init__(self):
        super().__init__()
        self.seen: list[int] = []

    def _on_step(self):
        self.seen.append(self.num_timesteps)
        return True


def test_hook_order_with_four_envs():
    rec = Recorder()
    model = TD3("MlpPolicy", pendulums(4), train_freq=3, learning_starts=8, **KW)
    model.learn(36, callback=rec)  # 9 calls of env.step, 3 rollouts of 3 calls
    body = ["rollout_start", "step", "step", "step", "rollout_end"]
    assert rec.events == ["init", "training_start", *body * 3, "training_end"]
    assert rec.n_calls == 9 and rec.num_timesteps == 36 == model.num_timesteps
    assert rec.locals["new_obs"].shape == (4, 3) and rec.locals["rewards"].shape == (4,)
    assert rec.training_env is model.get_env() and rec.logger is model.logger


def test_returning_false_at_500_stops_at_500_with_four_envs():
    rec = Recorder(stop_at=500)
    model = TD3("MlpPolicy", pendulums(4), learning_starts=600, **KW).learn(2000, callback=rec)
    assert model.num_timesteps == 500 and rec.n_calls == 125 and rec.events[-1] == "training_end"


def test_every_n_timesteps_fires_when_a_multiple_is_crossed():
    log = TimestepLog()
    model = TD3("MlpPolicy", pendulums(3), learning_starts=1000, **KW)
    model.learn(30, callback=EveryNTimesteps(10, log))
    assert log.seen == [12, 21, 30]


@pytest.mark.parametrize("n_envs", [1, 2])
def test_eval_callback_rows_and_best_model(tmp_path, n_envs):
    env = "Pendulum-v1" if n_envs == 1 else pendulums(2)
    eval_cb = EvalCallback(
        gym.make("Pendulum-v1"),
        n_eval_episodes=2,
        eval_freq=1000,
        log_path=tmp_path,
        best_model_save_path=tmp_path,
        verbose=0,
    )
    model = TD3("MlpPolicy", env, learning_starts=4800, **KW).learn(5000, callback=eval_cb)
    data = np.load(tmp_path / "evaluations.npz")
    assert data["timesteps"].tolist() == [1000, 2000, 3000, 4000, 5000]
    assert data["results"].shape == (5, 2) and data["ep_lengths"].tolist() == [[200, 200]] * 5
    assert eval_cb.last_mean_reward == pytest.approx(data["results"][-1].mean())
    assert eval_cb.best_mean_reward == pytest.approx(data["results"].mean(axis=1).max())
    best = TD3.load(tmp_path / "best_model.zip")
    action, _ = best.predict(np.zeros(3, dtype=np.float32))
    assert action.shape == (1,) and -2.0 <= action[0] <= 2.0
    assert model.num_timesteps == 5000


def test_stop_on_reward_threshold(tmp_path):
    def run(threshold: float) -> tuple[int, EvalCallback]:
        stop = StopTrainingOnRewardThreshold(threshold)
        cb = EvalCallback("Pendulum-v1", callback_on_new_best=stop, n_eval_episodes=1, eval_freq=400, verbose=0)
        model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=2000, **KW).learn(1200, callback=cb)
        return model.num_timesteps, cb

    # Pendulum's returns are above -3300 (200 steps of at most 16.3 cost): this threshold is met at once.
    steps, cb = run(-5000.0)
    assert steps == 400 and cb.best_mean_reward >= -5000.0
    steps, cb = run(1.0)  # returns are <= 0: never met
    assert steps == 1200 and len(cb.evaluations_timesteps) == 3


def test_stop_on_no_model_improvement():
    # The counter env's return is 1+2+...+5 = 15 whatever the policy: only the first evaluation improves.
    stop = StopTrainingOnNoModelImprovement(max_no_improvement_evals=2)
    cb = EvalCallback(make_counter(5), callback_after_eval=stop, n_eval_episodes=1, eval_freq=10, verbose=0)
    model = TD3("MlpPolicy", make_counter(5), learning_starts=1000, **KW).learn(200, callback=cb)
    assert cb.evaluations_timesteps == [10, 20, 30, 40] and model.num_timesteps == 40
    assert cb.best_mean_reward == 15.0


def test_stop_on_max_episodes():
    model = TD3("MlpPolicy", make_counter(5), learning_starts=1000, **KW)
    model.learn(200, callback=StopTrainingOnMaxEpisodes(3))
    assert model.num_timesteps == 15


def test_stop_callbacks_need_an_eval_parent():
    with pytest.raises(TypeError, match="EvalCallback"):
        TD3("MlpPolicy", "Pendulum-v1", **KW).learn(10, callback=StopTrainingOnRewardThreshold(0.0))


@pytest.mark.parametrize("freq", [0, -5, 2.5, True])
def test_frequencies_are_validated(tmp_path, freq):
    with pytest.raises(ValueError, match="save_freq"):
        CheckpointCallback(freq, tmp_path)
    with pytest.raises(ValueError, match="eval_freq"):
        EvalCallback("Pendulum-v1", eval_freq=freq)


def test_checkpoints_at_timesteps_with_buffer(tmp_path):
    cb = CheckpointCallback(100, tmp_path / "ckpt", save_replay_buffer=True)
    model = TD3("MlpPolicy", pendulums(2), learning_starts=50, **KW).learn(300, callback=cb)
    names = sorted(p.name for p in (tmp_path / "ckpt").iterdir())
    assert names == [
        "rl_model_100_steps.zip",
        "rl_model_200_steps.zip",
        "rl_model_300_steps.zip",
        "rl_model_replay_buffer_100_steps.npz",
        "rl_model_replay_buffer_200_steps.npz",
        "rl_model_replay_buffer_300_steps.npz",
    ]
    for t in (100, 200, 300):
        loaded = TD3.load(tmp_path / "ckpt" / f"rl_model_{t}_steps.zip", env=pendulums(2))
        assert loaded.num_timesteps == t
        loaded.load_replay_buffer(tmp_path / "ckpt" / f"rl_model_replay_buffer_{t}_steps.npz")
        # Callbacks run once the step is complete (its transitions stored): a checkpoint holds all of them.
        assert loaded.replay_buffer.size() == t
        assert loaded.predict(np.zeros((2, 3), dtype=np.float32))[0].shape == (2, 1)
    final = model.predict(np.ones(3, dtype=np.float32))[0]
    assert np.allclose(TD3.load(tmp_path / "ckpt" / "rl_model_300_steps.zip").predict(np.ones(3))[0], final)

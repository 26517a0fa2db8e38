"""Exact resume: a run checkpointed at an episode boundary and continued in a new process ends bit for bit
where the uninterrupted run does (parameters, optimizer states, replay buffer)."""

from __future__ import annotations

import importlib.metadata
import io
import json
import os
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import rlkit_td3  # noqa: F401  (registers the Bullet ids)
from rlkit_td3 import TD3
from rlkit_td3.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise
from rlkit_td3.schedules import LinearSchedule
from rlkit_td3.utils import InexactResumeWarning
from rlkit_td3.vec_env import DummyVecEnv, VecNormalize

SMALL = dict(batch_size=32, policy_kwargs={"net_arch": [32, 32]}, seed=7)
ROOT = Path(__file__).resolve().parents[1]


class CallCountingSchedule:
    """A user schedule with state: the learning rate shrinks with every call, whatever the progress."""

    def __init__(self, start: float) -> None:
        self.start, self.calls = start, 0

    def __call__(self, progress_remaining: float) -> float:
        self.calls += 1
        return self.start * 0.99**self.calls

    def get_state(self) -> dict:
        return {"calls": self.calls}

    def set_state(self, state: dict) -> None:
        self.calls = int(state["calls"])


# env name -> how the child process and the parent make it
ENVS = {
    "pendulum": "gym.make('Pendulum-v1')",
    "pendulum_x2": (
        "SyncVectorEnv([lambda: gym.make('Pendulum-v1') for _ in range(2)], autoreset_mode=AutoresetMode.DISABLED)"
    ),
    "cheetah": "gym.make('HalfCheetahBulletEnv-v0')",
    # gymnasium's defaults: next-step autoreset, sync or async
    "pendulum_x2_sync": "gym.make_vec('Pendulum-v1', num_envs=2)",
    "pendulum_x2_async": "gym.make_vec('Pendulum-v1', num_envs=2, vectorization_mode='async')",
    "pendulum_x2_async_disabled": (
        "gym.make_vec('Pendulum-v1', num_envs=2, vectorization_mode='async', "
        "vector_kwargs={'autoreset_mode': AutoresetMode.DISABLED})"
    ),
    # a Bullet robot draws its resets from the env's generator, which set_attr replaces in the workers
    "cheetah_x2_async": (
        "gym.vector.AsyncVectorEnv([lambda: gym.make('HalfCheetahBulletEnv-v0', max_episode_steps=100)] * 2)"
    ),
    # Stable-Baselines3-style VecEnvs (same-step autoreset inside step): DummyVecEnv records what a resume needs
    "pendulum_x2_dummy": "DummyVecEnv([lambda: gym.make('Pendulum-v1')] * 2)",
    "cheetah_x2_dummy": "DummyVecEnv([lambda: gym.make('HalfCheetahBulletEnv-v0', max_episode_steps=100)] * 2)",
}

# The child starts at another torch thread count than the parent (1, see conftest.py): the resumed learn()
# must run at the saved count (checked inside it by a callback) and give the caller's back afterwards.
CHILD = """
import sys
import numpy as np
import torch
torch.set_num_threads(2)
import gymnasium as gym
from gymnasium.vector import AutoresetMode, SyncVectorEnv
import rlkit_td3
from rlkit_td3 import TD3
from rlkit_td3.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise
from rlkit_td3.schedules import LinearSchedule
from rlkit_td3.vec_env import DummyVecEnv
from tests.test_resume import CallCountingSchedule
threads = set()
def record_threads(locals_, globals_):
    threads.add(torch.get_num_threads())
    return True
model = TD3.load(sys.argv[1], env={env}{load_kwargs})
model.learn(int(sys.argv[2]), reset_num_timesteps=False, callback=record_threads)
assert threads == {{1}}, threads
assert torch.get_num_threads() == 2
model.save(sys.argv[3], include_buffer=True)
model.env.close()
"""

NAMESPACE = {
    "gym": gym,
    "SyncVectorEnv": SyncVectorEnv,
    "AutoresetMode": AutoresetMode,
    "LinearSchedule": LinearSchedule,
    "OrnsteinUhlenbeckActionNoise": OrnsteinUhlenbeckActionNoise,
    "NormalActionNoise": NormalActionNoise,
    "CallCountingSchedule": CallCountingSchedule,
    "np": np,
    "DummyVecEnv": DummyVecEnv,
}


def _make(name: str):
    return eval(ENVS[name], NAMESPACE)


def _entries(path) -> dict:
    with zipfile.ZipFile(path) as archive:
        out = {
            n[:-4]: torch.load(io.BytesIO(archive.read(n)), weights_only=True)
            for n in archive.namelist()
            if n.endswith(".pth")
        }
        with np.load(io.BytesIO(archive.read("replay_buffer.npz")), allow_pickle=False) as buf:
            out["buffer"] = {k: buf[k] for k in buf.files if k != "meta"}
        out["metadata"] = json.loads(archive.read("metadata.json"))
    return out


def _assert_equal(a, b, where="") -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _assert_equal(a[key], b[key], f"{where}/{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_equal(x, y, f"{where}[{i}]")
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b), where
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=where)
    else:
        assert a == b, where


def _run(tmp_path, env_name: str, k: int, n: int, learning_starts: int, model_kwargs: str = "{}", load_kwargs=""):
    """The uninterrupted run to ``n`` here, checkpointed at ``k``; the checkpoint resumed in a new process."""
    checkpoint, straight, resumed = tmp_path / "k.zip", tmp_path / "straight.zip", tmp_path / "resumed.zip"
    at_k = {}

    def save_at_k(locals_, globals_):
        model = locals_["self"]
        if model.num_timesteps == k:
            model.save(checkpoint, include_buffer=True)
            dones = locals_["dones"]  # the step's episode ends, whatever the autoreset mode
            at_k["all_ended"] = bool(model._needs_reset.all() or dones.all())
        return True

    kwargs = {**SMALL, **eval(model_kwargs, NAMESPACE)}
    model = TD3("MlpPolicy", _make(env_name), learning_starts=learning_starts, **kwargs)
    model.learn(n, callback=save_at_k)
    model.save(straight, include_buffer=True)
    model.env.close()
    assert checkpoint.exists()
    child = CHILD.format(env=ENVS[env_name], load_kwargs=load_kwargs)
    subprocess.run(
        [sys.executable, "-c", child, str(checkpoint), str(n - k), str(resumed)],
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
    )
    return _entries(straight), _entries(resumed), model, at_k


def _assert_same_run(straight: dict, resumed: dict) -> None:
    for key in ("policy", "actor_optimizer", "critic_optimizer", "training_state", "buffer"):
        _assert_equal(straight[key], resumed[key], key)
    for key in ("counters", "training_state"):
        _assert_equal(straight["metadata"][key], resumed["metadata"][key], key)


@pytest.mark.parametrize(
    ("env_name", "k", "n", "learning_starts"),
    [
        ("pendulum", 1000, 1400, 200),
        ("pendulum_x2", 800, 1200, 200),
        ("cheetah", 1000, 1200, 500),
        # next-step autoreset: the episodes of both envs end at 400 and 802 (the step between only resets)
        ("pendulum_x2_sync", 802, 1000, 200),
        ("pendulum_x2_async", 802, 1000, 200),
        ("pendulum_x2_async_disabled", 800, 1000, 200),
        ("cheetah_x2_async", 402, 500, 100),
        ("pendulum_x2_dummy", 800, 1000, 200),
        ("cheetah_x2_dummy", 400, 500, 100),
    ],
)
def test_resume_at_episode_boundary_is_bitwise_exact(tmp_path, env_name, k, n, learning_starts):
    straight, resumed, model, at_k = _run(tmp_path, env_name, k, n, learning_starts)
    assert at_k["all_ended"]
    assert model.num_timesteps == n and model._n_updates > 0
    _assert_same_run(straight, resumed)


STATEFUL = {
    # the schedules' progress is continued, not restarted at 1 (actor and critic each on their own schedule)
    "lr_schedule": ("dict(learning_rate=LinearSchedule(3e-3, 1e-5))", ""),
    "actor_critic_schedules": (
        "dict(actor_learning_rate=LinearSchedule(2e-3, 1e-4), critic_learning_rate=LinearSchedule(3e-3, 0.0, 0.8))",
        "",
    ),
    # noise mid-way through its decay, and the OU process state
    "decaying_ou_noise": (
        "dict(action_noise=OrnsteinUhlenbeckActionNoise(np.zeros(1), 0.5 * np.ones(1), decay=0.998, min_sigma=0.05))",
        "",
    ),
    # a user schedule with state, passed again through custom_objects: load gives it the saved state
    "stateful_user_schedule": (
        "dict(learning_rate=CallCountingSchedule(2e-3))",
        ", custom_objects={'learning_rate': CallCountingSchedule(2e-3)}",
    ),
}


@pytest.mark.parametrize("config", list(STATEFUL))
def test_resume_continues_every_stateful_piece(tmp_path, config):
    model_kwargs, load_kwargs = STATEFUL[config]
    straight, resumed, model, _ = _run(tmp_path, "pendulum", 400, 600, 100, model_kwargs, load_kwargs)
    assert model._n_updates > 0
    _assert_same_run(straight, resumed)


def test_resume_mid_episode_restarts_the_episode_in_flight(tmp_path):
    # 1100 is mid-episode on Pendulum (200-step episodes): the resumed run restarts that episode, so it
    # differs from the uninterrupted one, but it runs to the requested total and keeps everything else.
    straight, resumed, _, _ = _run(tmp_path, "pendulum", 1100, 1300, 200)
    assert len(resumed["buffer"]["rewards"]) == len(straight["buffer"]["rewards"]) == 1300
    np.testing.assert_array_equal(resumed["buffer"]["rewards"][:1100], straight["buffer"]["rewards"][:1100])
    assert not np.array_equal(resumed["buffer"]["observations"][1100], straight["buffer"]["observations"][1100])


def test_checkpoint_callback_files_resume_exactly(tmp_path):
    from rlkit_td3.callbacks import CheckpointCallback

    kw = dict(learning_starts=200, **SMALL)
    straight = TD3("MlpPolicy", gym.make("Pendulum-v1"), **kw)
    straight.learn(1200, callback=CheckpointCallback(400, tmp_path, save_replay_buffer=True))
    resumed = TD3.load(tmp_path / "rl_model_800_steps.zip", env=gym.make("Pendulum-v1"))
    resumed.load_replay_buffer(tmp_path / "rl_model_replay_buffer_800_steps.npz")
    resumed.learn(400, reset_num_timesteps=False)
    for a, b in zip(straight.policy.parameters(), resumed.policy.parameters()):
        assert torch.equal(a, b)


# ---------------------------------------------------------------------------- in-process checks (fast)
def _pendulum(**kwargs) -> TD3:
    return TD3("MlpPolicy", gym.make("Pendulum-v1"), learning_starts=50, **{**SMALL, **kwargs})


def test_a_call_that_finishes_an_unfinished_one_continues_its_progress():
    seen = []

    def record(locals_, globals_):
        seen.append(locals_["self"]._current_progress_remaining)
        return True

    def stop_at_120(locals_, globals_):
        record(locals_, globals_)
        return locals_["self"].num_timesteps < 120

    model = _pendulum(learning_rate=LinearSchedule(3e-3, 0.0)).learn(300, callback=stop_at_120)
    assert model.num_timesteps == 120 and seen[-1] == 1.0 - 120 / 300
    # ends where the stopped call would have: its progress goes on from 120/300 instead of restarting at 1
    model.learn(180, reset_num_timesteps=False, callback=record)
    assert seen[120] == 1.0 - 121 / 300 and seen[-1] == 0.0
    assert model.policy.actor_optimizer.param_groups[0]["lr"] == LinearSchedule(3e-3, 0.0)(0.0)


def test_a_new_call_after_a_finished_one_starts_its_progress_at_one():
    model = _pendulum(learning_rate=LinearSchedule(3e-3, 0.0)).learn(100)
    seen = []

    def record(locals_, globals_):
        seen.append(locals_["self"]._current_progress_remaining)
        return True

    model.learn(50, reset_num_timesteps=False, callback=record)
    assert seen[0] == 1.0 - 1 / 50 and seen[-1] == 0.0
    # unlike Stable-Baselines3, whose progress would run from 1 - 100/150 here (1 - num_timesteps/total)
    assert model.num_timesteps == 150


def test_logging_does_not_call_the_schedules():
    # a schedule with state must see the same calls whether the run logs or not, or a resumed run with other
    # log settings would diverge
    quiet = _pendulum(learning_rate=CallCountingSchedule(1e-3)).learn(220)
    logged = _pendulum(learning_rate=CallCountingSchedule(1e-3), verbose=1).learn(220, log_interval=1)
    assert logged.learning_rate.calls == quiet.learning_rate.calls > 0


def test_learn_trains_at_torch_num_threads_and_gives_the_callers_count_back_even_on_errors():
    assert torch.get_num_threads() == 1  # conftest.py
    model = _pendulum()
    seen = []

    def fail_at_60(locals_, globals_):
        seen.append(torch.get_num_threads())
        if locals_["self"].num_timesteps == 60:
            raise RuntimeError("boom")
        return True

    model.torch_num_threads = 2
    with pytest.raises(RuntimeError, match="boom"):
        model.learn(100, callback=fail_at_60)
    assert set(seen) == {2} and torch.get_num_threads() == 1
    model.torch_num_threads = None  # None: the caller's count
    seen.clear()
    model.learn(10, reset_num_timesteps=False, callback=fail_at_60)
    assert set(seen) == {1}


def test_a_checkpoint_records_the_training_thread_count_and_load_restores_it(tmp_path):
    import pybullet  # noqa: F401  (the file records the simulators' versions when they are imported)

    model = _pendulum().learn(60)
    torch.set_num_threads(2)  # after training: the file still records what training ran at
    model.save(tmp_path / "m.zip")
    torch.set_num_threads(1)
    with zipfile.ZipFile(tmp_path / "m.zip") as archive:
        metadata = json.loads(archive.read("metadata.json"))
    state = metadata["training_state"]
    assert state["torch_num_threads"] == 1
    assert metadata["system"]["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert metadata["system"]["pybullet"] == importlib.metadata.version("pybullet")
    assert (state["start_timesteps"], state["total_timesteps"]) == (0, 60)
    loaded = TD3.load(tmp_path / "m.zip", env=gym.make("Pendulum-v1"))
    assert loaded.torch_num_threads == 1
    assert (loaded._start_timesteps, loaded._total_timesteps) == (0, 60)


def _rewrite_training_state(path, change) -> None:
    with zipfile.ZipFile(path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    metadata = json.loads(entries["metadata.json"])
    change(metadata["training_state"])
    entries["metadata.json"] = json.dumps(metadata).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)


def test_files_without_the_new_fields_still_load(tmp_path):
    model = _pendulum(learning_rate=CallCountingSchedule(1e-3)).learn(60)
    model.save(tmp_path / "old.zip")
    new_fields = (
        "start_timesteps",
        "total_timesteps",
        "torch_num_threads",
        "schedules",
        "needs_reset",
        "fused_update_matmul",
    )
    _rewrite_training_state(tmp_path / "old.zip", lambda state: [state.pop(key) for key in new_fields])
    loaded = TD3.load(
        tmp_path / "old.zip", env=gym.make("Pendulum-v1"), custom_objects={"learning_rate": CallCountingSchedule(1e-3)}
    )
    assert loaded.torch_num_threads is None and loaded._total_timesteps == 0
    assert loaded.fused_update_matmul == "auto"
    loaded.learn(20, reset_num_timesteps=False)
    assert loaded.num_timesteps == 80


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("torch_num_threads", 0),
        ("torch_num_threads", "2"),
        ("torch_num_threads", 10**6),
        ("fused_update_matmul", "mkl"),
        ("fused_update_matmul", None),
        ("start_timesteps", -1),
        ("start_timesteps", 61),  # after num_timesteps
        ("total_timesteps", 1.5),
        ("needs_reset", [True, False]),  # one env
        ("needs_reset", "yes"),
        ("schedules", ["calls"]),
        ("schedules", {"gamma": {}}),
    ],
)
def test_malformed_new_fields_are_refused(tmp_path, key, value):
    from rlkit_td3.fileio.serialization import ModelFileError

    _pendulum().learn(60).save(tmp_path / "m.zip")
    _rewrite_training_state(tmp_path / "m.zip", lambda state: state.__setitem__(key, value))
    with pytest.raises(ModelFileError, match=key):
        TD3.load(tmp_path / "m.zip", env=gym.make("Pendulum-v1"))


def test_start_after_total_is_refused(tmp_path):
    from rlkit_td3.fileio.serialization import ModelFileError

    _pendulum().learn(60).save(tmp_path / "m.zip")
    _rewrite_training_state(tmp_path / "m.zip", lambda state: state.update(start_timesteps=50, total_timesteps=40))
    with pytest.raises(ModelFileError, match="start_timesteps=50 is after total_timesteps=40"):
        TD3.load(tmp_path / "m.zip", env=gym.make("Pendulum-v1"))


def test_checkpoints_of_same_step_autoreset_vector_envs_are_refused(tmp_path):
    env = gym.make_vec("Pendulum-v1", num_envs=2, vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})
    model = TD3("MlpPolicy", env, learning_starts=10, **SMALL).learn(20)
    with pytest.raises(ValueError, match="same-step autoreset .*AutoresetMode.SAME_STEP"):
        model.save(tmp_path / "k.zip", include_buffer=True)
    assert not (tmp_path / "k.zip").exists()
    model.save(tmp_path / "model.zip")  # a model file without the buffer is fine
    assert TD3.load(tmp_path / "model.zip").num_timesteps == 20
    from rlkit_td3.callbacks import CheckpointCallback

    with pytest.raises(ValueError, match=r"CheckpointCallback\(save_replay_buffer=True\) refused: .*SAME_STEP"):
        model.learn(20, callback=CheckpointCallback(10, tmp_path / "ckpt", save_replay_buffer=True))
    model.learn(20, callback=CheckpointCallback(10, tmp_path / "ckpt"))  # without the buffer: allowed
    assert (tmp_path / "ckpt" / "rl_model_20_steps.zip").exists()


def _checkpoint_at(path, k: int):
    def save_at_k(locals_, globals_):
        if locals_["self"].num_timesteps == k:
            locals_["self"].save(path, include_buffer=True)
        return True

    return save_at_k


def _same_parameters(a: TD3, b: TD3) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.policy.parameters(), b.policy.parameters()))


def test_resume_on_another_models_env_is_exact(tmp_path):
    """``TD3.load(path, env=other.get_env())``: the view of the other model's single env reaches its generator, so
    the checkpoint's env state is restored and the run goes on bit for bit (main: silently other bits)."""
    kwargs = dict(learning_starts=100, batch_size=16, policy_kwargs={"net_arch": [8]}, seed=3)
    straight = TD3("MlpPolicy", "Pendulum-v1", **kwargs).learn(600, callback=_checkpoint_at(tmp_path / "k.zip", 400))
    other = TD3("MlpPolicy", "Pendulum-v1", **{**kwargs, "seed": 11}).learn(150)  # its env mid-episode
    with warnings.catch_warnings():
        warnings.simplefilter("error", InexactResumeWarning)
        resumed = TD3.load(tmp_path / "k.zip", env=other.get_env())
    resumed.learn(200, reset_num_timesteps=False)
    assert _same_parameters(straight, resumed)


def test_resume_on_another_models_next_step_vector_env_is_exact(tmp_path):
    """Another model's ``get_env()`` of a ``gym.make_vec`` env (next-step autoreset): the loaded model trains on the
    vector env behind the view, as the saved run did, so the run goes on bit for bit (main: through the view's
    same-step resets, with an ``InexactResumeWarning`` and other bits)."""
    kwargs = dict(learning_starts=100, batch_size=16, policy_kwargs={"net_arch": [8]}, seed=3)
    straight = TD3("MlpPolicy", gym.make_vec("Pendulum-v1", 2), **kwargs)
    straight.learn(800, callback=_checkpoint_at(tmp_path / "k.zip", 400))
    other = TD3("MlpPolicy", gym.make_vec("Pendulum-v1", 2), **{**kwargs, "seed": 11}).learn(150)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InexactResumeWarning)
        resumed = TD3.load(tmp_path / "k.zip", env=other.get_env())
    resumed.learn(400, reset_num_timesteps=False)
    assert _same_parameters(straight, resumed)


def test_resume_on_an_env_whose_generators_are_out_of_reach_warns(tmp_path):
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=10, **SMALL).learn(20)
    model.save(tmp_path / "k.zip", include_buffer=True)
    with pytest.warns(InexactResumeWarning, match="cannot be reached through a GymnasiumVecEnv"):
        TD3.load(tmp_path / "k.zip", env=VecNormalize(DummyVecEnv([lambda: gym.make("Pendulum-v1")])))
    with warnings.catch_warnings():
        warnings.simplefilter("error", InexactResumeWarning)
        TD3.load(tmp_path / "k.zip", env=gym.make("Pendulum-v1"))
        TD3.load(tmp_path / "k.zip", env=DummyVecEnv([lambda: gym.make("Pendulum-v1")]))

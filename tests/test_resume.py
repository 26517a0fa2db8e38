"""Exact resume: a run checkpointed at an episode boundary and continued in a new process ends bit for bit
where the uninterrupted run does (parameters, optimizer states, replay buffer)."""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import rlkit_td3  # noqa: F401  (registers the Bullet ids)
from rlkit_td3 import TD3

SMALL = dict(batch_size=32, policy_kwargs={"net_arch": [32, 32]}, seed=7)

# env name -> how the child process and the parent make it
ENVS = {
    "pendulum": "gym.make('Pendulum-v1')",
    "pendulum_x2": (
        "SyncVectorEnv([lambda: gym.make('Pendulum-v1') for _ in range(2)], autoreset_mode=AutoresetMode.DISABLED)"
    ),
    "cheetah": "gym.make('HalfCheetahBulletEnv-v0')",
}

CHILD = """
import sys
import gymnasium as gym
from gymnasium.vector import AutoresetMode, SyncVectorEnv
import rlkit_td3
from rlkit_td3 import TD3
model = TD3.load(sys.argv[1], env={env})
model.learn(int(sys.argv[2]), reset_num_timesteps=False)
model.save(sys.argv[3], include_buffer=True)
"""


def _make(name: str):
    return eval(ENVS[name], {"gym": gym, "SyncVectorEnv": SyncVectorEnv, "AutoresetMode": AutoresetMode})


def _entries(path) -> dict:
    with zipfile.ZipFile(path) as archive:
        out = {
            n[:-4]: torch.load(io.BytesIO(archive.read(n)), weights_only=True)
            for n in archive.namelist()
            if n.endswith(".pth")
        }
        with np.load(io.BytesIO(archive.read("replay_buffer.npz")), allow_pickle=False) as buf:
            out["buffer"] = {k: buf[k] for k in buf.files if k != "meta"}
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


def _run(tmp_path, env_name: str, k: int, n: int, learning_starts: int):
    checkpoint, straight, resumed = tmp_path / "k.zip", tmp_path / "straight.zip", tmp_path / "resumed.zip"

    def save_at_k(locals_, globals_):
        model = locals_["self"]
        if model.num_timesteps == k:
            model.save(checkpoint, include_buffer=True)
        return True

    model = TD3("MlpPolicy", _make(env_name), learning_starts=learning_starts, **SMALL)
    model.learn(n, callback=save_at_k)
    model.save(straight, include_buffer=True)
    assert checkpoint.exists()
    child = CHILD.format(env=ENVS[env_name])
    subprocess.run([sys.executable, "-c", child, str(checkpoint), str(n - k), str(resumed)], check=True)
    return _entries(straight), _entries(resumed), model


@pytest.mark.parametrize(
    ("env_name", "k", "n", "learning_starts"),
    [("pendulum", 1000, 1400, 200), ("pendulum_x2", 800, 1200, 200), ("cheetah", 1000, 1200, 500)],
)
def test_resume_at_episode_boundary_is_bitwise_exact(tmp_path, env_name, k, n, learning_starts):
    straight, resumed, model = _run(tmp_path, env_name, k, n, learning_starts)
    assert model.num_timesteps == n and model._n_updates > 0
    _assert_equal(straight["policy"], resumed["policy"], "policy")
    _assert_equal(straight["actor_optimizer"], resumed["actor_optimizer"], "actor_optimizer")
    _assert_equal(straight["critic_optimizer"], resumed["critic_optimizer"], "critic_optimizer")
    _assert_equal(straight["buffer"], resumed["buffer"], "buffer")
    assert len(straight["buffer"]["rewards"]) == n


def test_resume_mid_episode_restarts_the_episode_in_flight(tmp_path):
    # 1100 is mid-episode on Pendulum (200-step episodes): the resumed run restarts that episode, so it
    # differs from the uninterrupted one, but it runs to the requested total and keeps everything else.
    straight, resumed, _ = _run(tmp_path, "pendulum", 1100, 1300, 200)
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

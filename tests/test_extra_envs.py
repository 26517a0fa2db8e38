"""The box2d and mujoco extras: gymnasium's Box2D and MuJoCo envs make, step and reproduce from a seed."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

EXTRA_ENV_IDS = [
    "BipedalWalker-v3",  # [box2d]
    "BipedalWalkerHardcore-v3",  # [box2d]
    "LunarLanderContinuous-v3",  # [box2d]
    "HalfCheetah-v5",  # [mujoco]
    "Hopper-v5",  # [mujoco]
]


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    # MuJoCo 4 appends deprecation warnings about gymnasium's model files to MUJOCO_LOG.TXT in the working directory.
    monkeypatch.chdir(tmp_path)


def _rollout(env_id: str, seed: int, n_steps: int = 30) -> tuple[np.ndarray, np.ndarray]:
    env = gymnasium.make(env_id)
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    observations, rewards = [obs], []
    for _ in range(n_steps):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert env.observation_space.shape == obs.shape
        observations.append(obs)
        rewards.append(reward)
        if terminated or truncated:
            obs, _ = env.reset()
    env.close()
    return np.array(observations), np.array(rewards)


@pytest.mark.parametrize("env_id", EXTRA_ENV_IDS)
def test_extra_env_steps_reproducibly(env_id):
    obs, rewards = _rollout(env_id, seed=4)
    assert np.isfinite(obs).all() and np.isfinite(rewards).all()
    assert np.ptp(obs, axis=0).max() > 0, "the state should change"
    again_obs, again_rewards = _rollout(env_id, seed=4)
    assert np.array_equal(obs, again_obs) and np.array_equal(rewards, again_rewards)


def test_box2d_renders_headless():
    env = gymnasium.make("BipedalWalker-v3", render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    env.close()
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.std() > 10


def test_td3_trains_on_a_mujoco_env():
    from rlkit_td3 import TD3

    model = TD3("MlpPolicy", "HalfCheetah-v5", policy_kwargs={"net_arch": [16]}, learning_starts=20, seed=0)
    model.learn(40)
    assert model.num_timesteps == 40

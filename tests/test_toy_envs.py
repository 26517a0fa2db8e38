"""SB3's toy envs under `rlkit_td3.envs`: spaces, rewards, episode lengths, seeding."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env as gymnasium_check_env

from rlkit_td3 import TD3
from rlkit_td3.envs import (
    FakeImageEnv,
    IdentityEnv,
    IdentityEnvBox,
    IdentityEnvMultiBinary,
    IdentityEnvMultiDiscrete,
    SimpleMultiObsEnv,
)

ENVS = [
    IdentityEnv,
    IdentityEnvBox,
    IdentityEnvMultiBinary,
    IdentityEnvMultiDiscrete,
    FakeImageEnv,
    SimpleMultiObsEnv,
    lambda: SimpleMultiObsEnv(discrete_actions=False, channel_last=False),
    lambda: FakeImageEnv(discrete=False, channel_first=True),
]


@pytest.mark.parametrize("make", ENVS)
def test_toy_envs_pass_gymnasiums_checker_and_seed_their_draws(make):
    gymnasium_check_env(make(), skip_render_check=True)  # determinism under reset(seed=...) included
    env = make()
    env.action_space.seed(0)
    before = env.action_space.sample()
    env.reset(seed=1)
    env.action_space.seed(0)
    assert np.array_equal(env.action_space.sample(), before)  # the env's draws leave the caller's space alone


@pytest.mark.parametrize(
    ("env", "space"),
    [
        (IdentityEnv(4), spaces.Discrete(4)),
        (IdentityEnvMultiDiscrete(3), spaces.MultiDiscrete([3, 3])),
        (IdentityEnvMultiBinary(5), spaces.MultiBinary(5)),
        (IdentityEnvBox(-2.0, 2.0), spaces.Box(-2.0, 2.0, (1,), np.float32)),
    ],
)
def test_identity_rewards_the_action_equal_to_the_observation(env, space):
    assert env.observation_space == space and env.action_space == space
    obs, _ = env.reset(seed=0)
    total, steps, truncated = 0.0, 0, False
    while not truncated:
        obs, reward, terminated, truncated, _ = env.step(obs)
        total, steps = total + reward, steps + 1
        assert not terminated
    assert (total, steps) == (100.0, 100)
    env.reset(seed=0)
    wrong = env.state + 1 if isinstance(space, (spaces.Discrete, spaces.Box)) else 1 - env.state
    if isinstance(space, spaces.MultiDiscrete):
        wrong = (env.state + 1) % 3
    assert env.step(wrong)[1] == 0.0


def test_identity_box_tolerance():
    env = IdentityEnvBox(eps=0.5)
    obs, _ = env.reset(seed=0)
    assert env.step(obs + 0.4)[1] == 1.0
    assert env.step(env.state + 0.6)[1] == 0.0


def test_fake_image_env_shapes_and_length():
    env = FakeImageEnv(screen_height=40, screen_width=50, n_channels=3, channel_first=True, discrete=False)
    assert env.observation_space == spaces.Box(0, 255, (3, 40, 50), np.uint8)
    assert env.action_space == spaces.Box(-1, 1, (6,), np.float32)
    env.reset(seed=0)
    flags = [env.step(env.action_space.sample())[2:4] for _ in range(10)]
    assert flags == [(False, False)] * 9 + [(False, True)]


def test_simple_multi_obs_env_reaches_its_goal():
    env = SimpleMultiObsEnv(random_start=False)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs) and obs["img"].shape == (64, 64, 1)
    rewards = []
    for move in (2, 2, 2, 1, 1, 1):  # right three times, down three times: top-left to bottom-right
        obs, reward, terminated, truncated, _ = env.step(move)
        rewards.append(reward)
    assert rewards == [-0.1] * 5 + [1.0] and terminated and not truncated
    assert env.step(0)[0]["img"][0, 0, 0] > 0  # still a valid step after the goal (the caller resets)


def test_td3_runs_on_identity_box_and_multi_obs():
    TD3("MlpPolicy", IdentityEnvBox(), learning_starts=20, seed=0, policy_kwargs={"net_arch": [16]}).learn(40)
    env = SimpleMultiObsEnv(discrete_actions=False)
    TD3("MultiInputPolicy", env, learning_starts=20, buffer_size=100, seed=0, policy_kwargs={"net_arch": [16]}).learn(
        40
    )

"""BitFlippingEnv (SB3's ``common.envs`` name): goal-conditioned bits for HER, with Box actions."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from rlkit_td3.envs import BitFlippingEnv


def test_passes_gymnasiums_checker():
    check_env(BitFlippingEnv(n_bits=5), skip_render_check=True)


def test_positive_components_flip_bits_and_the_all_ones_goal_terminates():
    env = BitFlippingEnv(n_bits=4, max_steps=10)
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs["desired_goal"], np.ones(4))
    env.state = np.array([0, 1, 0, 1], np.float32)
    obs, reward, terminated, truncated, info = env.step(np.array([1.0, 0.5, -1.0, -0.5], np.float32))
    np.testing.assert_array_equal(obs["achieved_goal"], [1, 0, 0, 1])  # positive components flipped their bits
    assert (reward, terminated, truncated, info["is_success"]) == (-1.0, False, False, False)
    obs, reward, terminated, truncated, info = env.step(np.array([-1.0, 1.0, 1.0, 0.0], np.float32))
    np.testing.assert_array_equal(obs["achieved_goal"], np.ones(4))
    assert (reward, terminated, truncated, info["is_success"]) == (0.0, True, False, True)


def test_episodes_are_truncated_after_max_steps():
    env = BitFlippingEnv(n_bits=3, max_steps=2)
    env.reset(seed=1)
    env.state = np.zeros(3, np.float32)
    keep = -np.ones(3, np.float32)  # flips nothing
    assert [env.step(keep)[2:4] for _ in range(2)] == [(False, False), (False, True)]


def test_compute_reward_is_vectorised():
    env = BitFlippingEnv(n_bits=3)
    achieved = np.array([[1, 1, 1], [0, 1, 1], [1, 1, 1]], np.float32)
    desired = np.ones((3, 3), np.float32)
    np.testing.assert_array_equal(env.compute_reward(achieved, desired, [{}] * 3), [0.0, -1.0, 0.0])


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"n_bits": 0}, "n_bits"),
        ({"n_bits": 31, "discrete_obs_space": True}, "n_bits"),
        ({"image_obs_space": True, "discrete_obs_space": True}, "image_obs_space"),
        ({"max_steps": 0}, "max_steps"),
        ({"render_mode": "rgb_array"}, "render_mode"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, name):
    with pytest.raises(ValueError, match=name):
        BitFlippingEnv(**kwargs)


def test_td3_with_her_trains_on_it():
    from rlkit_td3 import TD3, HerReplayBuffer

    env = BitFlippingEnv(n_bits=4)
    model = TD3(
        "MultiInputPolicy",
        env,
        replay_buffer_class=HerReplayBuffer,
        learning_starts=40,
        buffer_size=1_000,
        policy_kwargs={"net_arch": [32]},
        seed=0,
    )
    model.learn(120)
    assert model.num_timesteps == 120 and model._n_updates > 0


@pytest.mark.parametrize(
    "kwargs",
    [{"discrete_obs_space": True}, {"image_obs_space": True}, {"image_obs_space": True, "channel_first": False}],
)
def test_sb3_observation_encodings_round_trip_through_compute_reward(kwargs):
    env = BitFlippingEnv(n_bits=5, max_steps=20, **kwargs)
    check_env(env, skip_render_check=True)
    obs, _ = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    env.state = np.array([1, 0, 1, 1, 1], np.float32)
    obs, reward, terminated, _, _ = env.step(np.array([-1, 1, -1, -1, -1], np.float32))
    assert (reward, terminated) == (0.0, True)
    achieved = np.stack([obs["achieved_goal"], env._encode(np.zeros(5, np.float32))])
    desired = np.stack([obs["desired_goal"], obs["desired_goal"]])
    np.testing.assert_array_equal(env.compute_reward(achieved, desired, [{}, {}]), [0.0, -1.0])
    if kwargs.get("discrete_obs_space"):
        assert obs["achieved_goal"] == 31  # the bits as one integer, bit i worth 2**i
        np.testing.assert_array_equal(env.compute_reward(achieved[:, None], desired[:, None], None), [0.0, -1.0])
    else:
        assert obs["achieved_goal"].dtype == np.uint8 and obs["achieved_goal"].reshape(-1)[:6].tolist() == [255] * 5 + [
            0
        ]


def test_discrete_actions_flip_one_bit():
    env = BitFlippingEnv(n_bits=3, continuous=False)
    assert env.action_space.n == 3
    env.reset(seed=0)
    env.state = np.zeros(3, np.float32)
    obs, *_ = env.step(1)
    np.testing.assert_array_equal(obs["observation"], [0, 1, 0])

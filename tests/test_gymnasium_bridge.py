"""The bridges between gymnasium vector envs and SB3's VecEnv contract (rlkit_td3.vec_env.gymnasium_bridge)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv
from gymnasium.wrappers.vector import RecordEpisodeStatistics

import rlkit_td3  # noqa: F401 - registers the Bullet envs
from rlkit_td3.monitor import Monitor
from rlkit_td3.vec_env import DummyVecEnv
from rlkit_td3.vec_env.gymnasium_bridge import GymnasiumVecEnv, VecEnvView, reset_ended_envs


class Countdown(gym.Env):
    """Terminates after a random number (2..4) of steps drawn at reset; obs = [steps left, episode seed draw]."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float64)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, render_mode: str | None = None) -> None:
        self.render_mode = render_mode
        self.tag = "countdown"

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.left = int(self.np_random.integers(2, 5))
        self.draw = float(self.np_random.random())
        return self._obs(), {"reset_draw": self.draw}

    def _obs(self):
        return np.array([self.left, self.draw])

    def step(self, action):
        self.left -= 1
        return self._obs(), float(action[0]) + self.left, self.left == 0, False, {"left": self.left}

    def render(self):
        return np.full((4, 6, 3), self.left, dtype=np.uint8)

    def double(self, x):
        return 2 * x


def countdown(i: int = 0):
    return lambda: Countdown(render_mode="rgb_array")


def pendulum(i: int = 0):
    return lambda: gym.make("Pendulum-v1", max_episode_steps=5 + i)


MODES = [AutoresetMode.DISABLED, AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP]


def _roll(venv, steps, seed=3):
    venv.seed(seed)
    obs = venv.reset()
    rng = np.random.default_rng(0)
    out = [(obs.copy(),)]
    for _ in range(steps):
        actions = rng.uniform(-1, 1, (venv.num_envs, 1)).astype(np.float32)
        obs, rewards, dones, infos = venv.step(actions)
        out.append((obs.copy(), rewards, dones, infos))
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("make", [countdown, pendulum], ids=["terminating", "truncating"])
def test_view_matches_dummy_vec_env(mode, make):
    reference = _roll(DummyVecEnv([make(i) for i in range(2)]), 14)
    view = VecEnvView(SyncVectorEnv([make(i) for i in range(2)], autoreset_mode=mode))
    got = _roll(view, 14)
    assert np.array_equal(reference[0][0], got[0][0])
    ended = 0
    for (obs, rew, done, infos), (v_obs, v_rew, v_done, v_infos) in zip(reference[1:], got[1:]):
        assert np.array_equal(obs, v_obs)
        assert v_rew.dtype == rew.dtype == np.float32 and np.array_equal(rew, v_rew)
        assert v_done.dtype == bool and np.array_equal(done, v_done)
        for info, v_info in zip(infos, v_infos):
            assert v_info["TimeLimit.truncated"] == info["TimeLimit.truncated"]
            assert ("terminal_observation" in v_info) == ("terminal_observation" in info)
            if "terminal_observation" in info:
                ended += 1
                assert np.array_equal(v_info["terminal_observation"], info["terminal_observation"])
                assert v_info["TimeLimit.truncated"] == (make is pendulum)
    assert ended >= 4


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_view_async_matches_dummy_vec_env(mode):
    reference = _roll(DummyVecEnv([countdown(i) for i in range(2)]), 10)
    venv = AsyncVectorEnv([countdown(i) for i in range(2)], autoreset_mode=mode)
    view = VecEnvView(venv)
    try:
        got = _roll(view, 10)
        for ref, mine in zip(reference[1:], got[1:]):
            assert np.array_equal(ref[0], mine[0]) and np.array_equal(ref[2], mine[2])
            for info, v_info in zip(ref[3], mine[3]):
                assert np.array_equal(info.get("terminal_observation", 0), v_info.get("terminal_observation", 0))
        assert view.get_attr("tag", indices=[1]) == ["countdown"]
        assert view.env_method("double", 3) == [6, 6]
        with pytest.raises(ValueError, match="subset"):
            view.env_method("double", 3, indices=[0])
    finally:
        view.close()


@pytest.mark.parametrize("mode", MODES)
def test_statistics_restart_only_for_the_ended_env(mode):
    venv = RecordEpisodeStatistics(SyncVectorEnv([countdown(i) for i in range(2)], autoreset_mode=mode), stats_key="ep")
    view = VecEnvView(venv)
    view.seed(0)
    view.reset()
    lengths = [0, 0]
    seen = 0
    for _ in range(12):
        _, _, dones, infos = view.step(np.zeros((2, 1), np.float32))
        for i in range(2):
            lengths[i] += 1
            if dones[i]:
                assert infos[i]["ep"]["l"] == lengths[i]  # the other env's reset did not restart this count
                lengths[i] = 0
                seen += 1
            else:
                assert "ep" not in infos[i]
    assert seen >= 4


def test_reset_ended_envs_rejects_a_bad_mask():
    venv = SyncVectorEnv([countdown()], autoreset_mode=AutoresetMode.DISABLED)
    venv.reset(seed=0)
    with pytest.raises(ValueError, match="mask"):
        reset_ended_envs(venv, np.array([False]))


def test_infos_conversion_with_monitor_episode():
    venv = SyncVectorEnv(
        [lambda: Monitor(Countdown()), lambda: Monitor(Countdown())], autoreset_mode=AutoresetMode.DISABLED
    )
    view = VecEnvView(venv)
    view.seed(1)
    obs = view.reset()
    assert [info["reset_draw"] for info in view.reset_infos] == list(obs[:, 1])
    episodes = 0
    for _ in range(8):
        _, _, dones, infos = view.step(np.zeros((2, 1), np.float32))
        for i in range(2):
            assert infos[i]["left"] == (0 if dones[i] else infos[i]["left"])
            assert ("episode" in infos[i]) == bool(dones[i])
            if dones[i]:
                assert set(infos[i]["episode"]) >= {"r", "l"}
                episodes += 1
    assert episodes >= 3


def test_sub_env_access_and_render():
    view = VecEnvView(SyncVectorEnv([countdown(i) for i in range(2)], autoreset_mode=AutoresetMode.DISABLED))
    view.seed(0)
    obs = view.reset()
    assert view.get_attr("left", indices=1) == [int(obs[1, 0])]
    view.set_attr("tag", "x", indices=[0])
    assert view.get_attr("tag") == ["x", "countdown"]
    assert view.env_method("double", 4, indices=[1]) == [8]
    assert view.env_is_wrapped(Monitor) == [False, False]
    frame = view.render(mode="rgb_array")
    assert frame.shape == (4, 12, 3)  # two 4x6 frames tiled side by side (SB3 tile_images)
    assert frame[0, 0, 0] == obs[0, 0] and frame[0, 6, 0] == obs[1, 0]
    assert isinstance(view.gym_env, SyncVectorEnv) and view.unwrapped is view


def test_round_trip_through_gymnasium_vec_env():
    reference = _roll(DummyVecEnv([pendulum(i) for i in range(2)]), 14)
    bridge = GymnasiumVecEnv(DummyVecEnv([pendulum(i) for i in range(2)]))
    assert bridge.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert bridge.observation_space.shape == (2, 3) and bridge.single_action_space.shape == (1,)
    got = _roll(VecEnvView(bridge), 14)
    assert np.array_equal(reference[0][0], got[0][0])
    for ref, mine in zip(reference[1:], got[1:]):
        assert np.array_equal(ref[0], mine[0]) and np.array_equal(ref[1], mine[1]) and np.array_equal(ref[2], mine[2])
        for info, v_info in zip(ref[3], mine[3]):
            assert info["TimeLimit.truncated"] == v_info["TimeLimit.truncated"]
            assert np.array_equal(info.get("terminal_observation", 0), v_info.get("terminal_observation", 0))


def test_gymnasium_vec_env_step_infos():
    bridge = GymnasiumVecEnv(DummyVecEnv([countdown()]))
    obs, _ = bridge.reset(seed=0)
    for _ in range(int(obs[0, 0]) - 1):
        assert "final_obs" not in bridge.step(np.zeros((1, 1), np.float32))[4]
    obs, _, terminated, truncated, infos = bridge.step(np.zeros((1, 1), np.float32))
    assert terminated.tolist() == [True] and truncated.tolist() == [False]
    assert infos["_final_obs"].tolist() == [True] and infos["final_obs"].dtype == object
    assert infos["final_obs"][0][0] == 0 and obs[0, 0] >= 2
    assert infos["final_info"]["left"][0] == 0


def test_sb3_quickstart_loop_on_a_one_env_view():
    view = VecEnvView(
        SyncVectorEnv(
            [lambda: Monitor(gym.make("Pendulum-v1", max_episode_steps=20))], autoreset_mode=AutoresetMode.DISABLED
        )
    )
    view.seed(0)
    obs = view.reset()
    rng = np.random.default_rng(0)
    episodes = steps = 0
    while episodes < 3:
        obs, rewards, dones, infos = view.step(rng.uniform(-2, 2, (1, 1)).astype(np.float32))
        steps += 1
        if dones[0]:
            episodes += 1
            assert infos[0]["episode"]["l"] == 20 and infos[0]["TimeLimit.truncated"]
    assert steps == 60 and obs.shape == (1, 3)


@pytest.mark.parametrize("env_id", ["Pendulum-v1", "HalfCheetahBulletEnv-v0"])
def test_dummy_vec_env_restore_reset_is_bitwise(env_id):
    def make():
        return DummyVecEnv([lambda: gym.make(env_id, max_episode_steps=50)])

    rng = np.random.default_rng(0)
    actions = rng.uniform(-1, 1, (80, 1, *gym.make(env_id).action_space.shape)).astype(np.float32)
    first = make()
    first.seed(5)
    first.reset()
    for t in range(50):
        obs, _, dones, _ = first.step(actions[t])
    assert dones[0] and first.pre_reset_states[0][0] == 49
    reset_obs = obs.copy()
    later = [first.step(actions[50 + t])[0] for t in range(20)]
    second = make()
    second.seed(99)  # another episode entirely: the restore alone must bring back the state
    second.reset()
    restored = second.restore_reset(0, first.pre_reset_states[0][1])
    assert np.array_equal(restored, reset_obs[0])
    for t in range(20):
        assert np.array_equal(second.step(actions[50 + t])[0], later[t])
    with pytest.raises(ValueError, match="pre_reset_state"):
        second.restore_reset(0, {"bad": 1})


def test_reset_infos_follow_the_auto_reset_and_bad_input_is_refused():
    view = VecEnvView(SyncVectorEnv([countdown(i) for i in range(2)], autoreset_mode=AutoresetMode.DISABLED))
    view.seed(2)
    view.reset()
    checked = 0
    for _ in range(8):
        obs, _, dones, _ = view.step(np.zeros((2, 1), np.float32))
        for i in np.flatnonzero(dones):
            assert view.reset_infos[i]["reset_draw"] == obs[i, 1]
            checked += 1
    assert checked >= 3
    view.set_options([{"a": 1}, {"a": 2}])
    with pytest.raises(ValueError, match="one options dict"):
        view.reset()
    with pytest.raises(TypeError, match="gymnasium.vector.VectorEnv"):
        VecEnvView(DummyVecEnv([countdown()]))
    with pytest.raises(TypeError, match="lacks"):
        GymnasiumVecEnv(object())

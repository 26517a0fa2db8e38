"""The SB3 VecEnv contract of DummyVecEnv and SubprocVecEnv, and the VecEnv wrappers (rlkit_td3.vec_env)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from conftest import CounterEnv, make_counter
from gymnasium import spaces

from rlkit_td3.monitor import Monitor, load_results
from rlkit_td3.vec_env import (
    DummyVecEnv,
    SubprocVecEnv,
    VecCheckNan,
    VecEnvWrapper,
    VecExtractDictObs,
    VecFrameStack,
    VecMonitor,
    VecNormalize,
    VecTransposeImage,
    VecVideoRecorder,
    is_vecenv_wrapped,
    sync_envs_normalization,
    tile_images,
    unwrap_vec_normalize,
    unwrap_vec_wrapper,
)

ROOT = Path(__file__).resolve().parents[1]
ZERO = np.zeros((2, 1), dtype=np.float32)


class SeededEnv(gym.Env):
    """Observation: 3 numbers drawn from the env's generator at reset, then ``[t, action, 0]``.

    The reset info echoes the seed and options, so per-env seeding and options can be checked."""

    metadata: dict = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, render_mode: str | None = None, length: int = 3) -> None:
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(3,), dtype=np.float64)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self.render_mode = render_mode
        self.length = length
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.standard_normal(3), {"seed": seed, "options": options}

    def step(self, action):
        self.t += 1
        obs = np.array([self.t, float(np.asarray(action).ravel()[0]), 0.0])
        return obs, 1.0, self.t >= self.length, False, {"t": self.t}

    def render(self):
        return np.full((4, 6, 3), 10 * self.t, dtype=np.uint8)


def counter_pair():
    """Env 0 is truncated by a TimeLimit after 3 steps, env 1 terminates after 2 (TimeLimit of 5)."""
    return [lambda: make_counter(3), lambda: make_counter(5, terminate_at=2)]


def step_contract(venv) -> None:
    """The auto-reset contract on one truncating and one terminating env."""
    obs = venv.reset()
    np.testing.assert_array_equal(obs, [[0, 0], [0, 0]])
    assert obs.dtype == np.float32 and obs.shape == (2, 2)

    obs, rewards, dones, infos = venv.step(ZERO)
    np.testing.assert_array_equal(obs, [[0, 1], [0, 1]])
    assert rewards.dtype == np.float32 and dones.dtype == bool and isinstance(infos, list) and len(infos) == 2
    assert not dones.any() and all("terminal_observation" not in info for info in infos)
    assert [info["TimeLimit.truncated"] for info in infos] == [False, False]

    # step 2: env 1 terminates -> auto-reset obs, terminal obs is the true last obs, not truncated
    obs, rewards, dones, infos = venv.step(ZERO)
    np.testing.assert_array_equal(dones, [False, True])
    np.testing.assert_array_equal(rewards, [2.0, 2.0])
    np.testing.assert_array_equal(obs, [[0, 2], [1, 0]])
    np.testing.assert_array_equal(infos[1]["terminal_observation"], [0, 2])
    assert infos[1]["TimeLimit.truncated"] is False

    # step 3: env 0 is truncated by its TimeLimit
    obs, rewards, dones, infos = venv.step(ZERO)
    np.testing.assert_array_equal(dones, [True, False])
    np.testing.assert_array_equal(obs, [[1, 0], [1, 1]])
    np.testing.assert_array_equal(infos[0]["terminal_observation"], [0, 3])
    assert infos[0]["TimeLimit.truncated"] is True
    assert "terminal_observation" not in infos[1] and infos[1]["TimeLimit.truncated"] is False


def seeding_contract(make_venv) -> None:
    venv = make_venv([lambda: SeededEnv(), lambda: SeededEnv(), lambda: SeededEnv()])
    try:
        assert list(venv.seed(7)) == [7, 8, 9]
        venv.set_options([{"a": 0}, {}, {"a": 2}])
        obs = venv.reset()
        for i in range(3):
            np.testing.assert_array_equal(obs[i], SeededEnv().reset(seed=7 + i)[0])
        assert [info["seed"] for info in venv.reset_infos] == [7, 8, 9]
        assert [info["options"] for info in venv.reset_infos] == [{"a": 0}, None, {"a": 2}]
        # seeds and options apply to one reset only
        again = venv.reset()
        assert [info["seed"] for info in venv.reset_infos] == [None, None, None]
        assert [info["options"] for info in venv.reset_infos] == [None, None, None]
        assert not np.array_equal(again, obs)
        # the same seed gives the same observations again
        venv.seed(7)
        np.testing.assert_array_equal(venv.reset(), obs)
        # the auto-reset at an episode end updates reset_infos
        for _ in range(3):
            _, _, dones, infos = venv.step(np.zeros((3, 1), np.float32))
        assert dones.all() and [info["t"] for info in infos] == [3, 3, 3]
        assert [info["seed"] for info in venv.reset_infos] == [None, None, None]
    finally:
        venv.close()


def test_dummy_vec_env_contract():
    venv = DummyVecEnv(counter_pair())
    assert venv.num_envs == 2 and len(venv.envs) == 2
    assert venv.observation_space == venv.envs[0].observation_space and venv.action_space.shape == (1,)
    step_contract(venv)
    # terminated and truncated on the same step: not a time-limit truncation
    venv = DummyVecEnv([lambda: make_counter(2, terminate_at=2)])
    venv.reset()
    venv.step(ZERO[:1])
    _, _, dones, infos = venv.step(ZERO[:1])
    assert dones[0] and infos[0]["TimeLimit.truncated"] is False


def test_dummy_vec_env_seeding_and_options():
    seeding_contract(DummyVecEnv)


def test_terminal_observation_survives_envs_that_reuse_their_observation_array():
    class InPlaceEnv(CounterEnv):
        """Returns the same array object every time, updated in place (as some simulators do)."""

        def __init__(self):
            super().__init__()
            self.buffer = np.zeros(2, dtype=np.float32)

        def reset(self, *, seed=None, options=None):
            self.buffer[:] = super().reset(seed=seed)[0]
            return self.buffer, {}

        def step(self, action):
            obs, *rest = super().step(action)
            self.buffer[:] = obs
            return self.buffer, *rest

    venv = DummyVecEnv([lambda: gym.wrappers.TimeLimit(InPlaceEnv(), 2)])
    venv.reset()
    venv.step(ZERO[:1])
    obs, _, dones, infos = venv.step(ZERO[:1])
    assert dones[0]
    np.testing.assert_array_equal(infos[0]["terminal_observation"], [0, 2])  # not the reset obs [1, 0]
    np.testing.assert_array_equal(obs, [[1, 0]])


def test_dummy_vec_env_attributes_and_methods():
    venv = DummyVecEnv(counter_pair())
    venv.reset()
    venv.step(ZERO)
    assert venv.get_attr("t") == [1, 1]
    assert venv.get_attr("terminate_at", indices=1) == [2]
    venv.set_attr("terminate_at", 9, indices=[0])
    assert venv.get_attr("terminate_at") == [9, 2]
    assert venv.has_attr("terminate_at") and not venv.has_attr("no_such_attribute")
    obs = venv.env_method("reset", indices=0)
    np.testing.assert_array_equal(obs[0][0], [1, 0])
    assert venv.env_is_wrapped(gym.wrappers.TimeLimit) == [True, True]
    assert venv.env_is_wrapped(Monitor) == [False, False]
    assert venv.unwrapped is venv
    with pytest.raises(IndexError, match="indices"):
        venv.get_attr("t", indices=2)


def test_dummy_vec_env_rejects_bad_input():
    with pytest.raises(ValueError, match="env_fns"):
        DummyVecEnv([])
    with pytest.raises(TypeError, match=r"env_fns\[0\]"):
        DummyVecEnv([make_counter()])  # an env, not a function
    env = make_counter()
    with pytest.raises(ValueError, match="same env object"):
        DummyVecEnv([lambda: env, lambda: env])
    with pytest.raises(ValueError, match="seed"):
        DummyVecEnv([make_counter]).seed(-1)
    with pytest.raises(ValueError, match="options"):
        DummyVecEnv([make_counter]).set_options([{}, {}])
    venv = DummyVecEnv(counter_pair())
    venv.reset()
    with pytest.raises(ValueError, match=r"one action per env \(2\), got ndarray of length 1"):
        venv.step(np.zeros((1, 1), np.float32))
    # more rows than envs: the first ones are used, as SB3's vec envs do, and the caller is warned
    stepped = DummyVecEnv(counter_pair())
    stepped.reset()
    with pytest.warns(UserWarning, match="got 3 actions for 2 env"):
        obs, *_ = venv.step(np.array([[0.5], [-0.5], [9.0]], np.float32))
    assert np.array_equal(obs, stepped.step(np.array([[0.5], [-0.5]], np.float32))[0])


def test_one_env_takes_one_unbatched_action():
    """``env.step(env.action_space.sample())`` on one env: the whole action reaches the env, not its first row."""
    seen = []

    class Recorder(gym.Env):
        observation_space = gym.spaces.Box(-1, 1, (1,))
        action_space = gym.spaces.Box(-1, 1, (3, 2))

        def reset(self, *, seed=None, options=None):
            return np.zeros(1, np.float32), {}

        def step(self, action):
            seen.append(np.array(action))
            return np.zeros(1, np.float32), 0.0, False, False, {}

    venv = DummyVecEnv([Recorder])
    venv.reset()
    action = np.arange(6, dtype=np.float32).reshape(3, 2)
    venv.step(action)  # unbatched
    venv.step(action[None])  # batched
    assert len(seen) == 2 and all(np.array_equal(a, action) for a in seen)


def test_dummy_vec_env_dict_observations():
    def make():
        env = gym.wrappers.TimeLimit(CounterEnv(), max_episode_steps=2)
        space = spaces.Dict({"count": env.observation_space, "flag": spaces.Discrete(2)})
        return gym.wrappers.TransformObservation(env, lambda o: {"count": o, "flag": int(o[1]) % 2}, space)

    venv = DummyVecEnv([make, make])
    obs = venv.reset()
    assert set(obs) == {"count", "flag"} and obs["count"].shape == (2, 2) and obs["flag"].shape == (2,)
    venv.step(ZERO)
    obs, _, dones, infos = venv.step(ZERO)
    assert dones.all()
    assert infos[0]["terminal_observation"]["flag"] == 0
    np.testing.assert_array_equal(infos[0]["terminal_observation"]["count"], [0, 2])
    np.testing.assert_array_equal(obs["count"], [[1, 0], [1, 0]])


def test_render_tiles_rgb_frames_and_warns_on_other_modes():
    venv = DummyVecEnv([lambda: SeededEnv(render_mode="rgb_array") for _ in range(3)])
    venv.reset()
    venv.step(np.zeros((3, 1), np.float32))
    image = venv.render()
    assert image.shape == (8, 12, 3)  # 3 frames of 4x6 on a 2x2 grid
    assert (image[:4, :6] == 10).all() and (image[4:, 6:] == 0).all()
    assert len(venv.get_images()) == 3
    with pytest.warns(UserWarning, match="render_mode"):
        assert venv.render(mode="human") is None
    with pytest.raises(ValueError, match="the same"):
        tile_images([np.zeros((2, 2, 3)), np.zeros((3, 2, 3))])


# ------------------------------------------------------------------ SubprocVecEnv (small: process start-up cost)
# (forkserver/spawn workers import rlkit_td3, hence torch: seconds each on a loaded machine)
def test_subproc_vec_env_contract_and_methods():
    venv = SubprocVecEnv(counter_pair(), start_method="fork")  # fork: no interpreter start-up per worker
    try:
        assert venv.num_envs == 2 and venv.observation_space.shape == (2,)
        step_contract(venv)
        assert venv.get_attr("terminate_at") == [None, 2]
        venv.set_attr("terminate_at", 4, indices=0)
        assert venv.get_attr("terminate_at", indices=[0]) == [4]
        assert venv.has_attr("terminate_at") and not venv.has_attr("no_such_attribute")
        assert venv.env_is_wrapped(gym.wrappers.TimeLimit) == [True, True]
        # an exception in a worker comes back with its traceback, and the worker keeps serving
        with pytest.raises(RuntimeError, match="no_such_method"):
            venv.env_method("no_such_method")
        with pytest.raises(ValueError, match="one action per env"):
            venv.step_async(ZERO[:1])  # would otherwise wait forever for the second worker
        assert venv.env_method("reset", indices=1)[0][0].tolist() == [2.0, 0.0]
    finally:
        venv.close()
    assert venv.closed and not any(p.is_alive() for p in venv.processes)
    venv.close()  # closing twice is fine
    with pytest.raises(RuntimeError, match="closed"):
        venv.reset()


def test_subproc_vec_env_seeding_matches_dummy():
    seeding_contract(SubprocVecEnv)  # the default start method (forkserver): each worker imports rlkit_td3


def test_subproc_vec_env_bad_start_method_and_failing_env():
    with pytest.raises(ValueError, match="start_method"):
        SubprocVecEnv([make_counter], start_method="teleport")

    def broken():
        raise OSError("no such simulator")

    with pytest.raises(RuntimeError, match="no such simulator"):
        SubprocVecEnv([broken], start_method="fork")


# ------------------------------------------------------------------ wrappers
class _Tag(VecEnvWrapper):
    def __init__(self, venv, tag):
        super().__init__(venv)
        self.tag = tag

    def reset(self):
        return self.venv.reset()

    def step_wait(self):
        return self.venv.step_wait()


def test_wrapper_attribute_forwarding_and_ambiguity():
    base = DummyVecEnv(counter_pair())
    inner = _Tag(base, "inner")
    norm = VecNormalize(inner)
    outer = VecMonitor(norm)
    assert outer.obs_rms is norm.obs_rms  # found two layers down
    assert outer.envs is base.envs
    assert outer.unwrapped is base
    assert outer.tag == "inner"
    with pytest.raises(AttributeError, match="ambiguous"):
        _ = VecMonitor(_Tag(_Tag(base, "a"), "b")).tag
    with pytest.raises(AttributeError):
        _ = outer.no_such_attribute
    outer.reset()
    assert outer.reset_infos is base.reset_infos
    assert unwrap_vec_normalize(outer) is norm and unwrap_vec_wrapper(outer, _Tag) is inner
    assert is_vecenv_wrapped(outer, VecNormalize) and not is_vecenv_wrapped(outer, VecFrameStack)
    assert unwrap_vec_normalize(base) is None


def test_sync_envs_normalization_copies_statistics():
    train = VecNormalize(DummyVecEnv(counter_pair()))
    evaluation = VecNormalize(DummyVecEnv(counter_pair()), training=False)
    train.reset()
    for _ in range(4):
        train.step(ZERO)
    sync_envs_normalization(train, evaluation)
    np.testing.assert_array_equal(evaluation.obs_rms.mean, train.obs_rms.mean)
    assert evaluation.ret_rms.var == train.ret_rms.var and evaluation.obs_rms is not train.obs_rms
    train.step(ZERO)  # later training does not move the copied statistics
    assert not np.array_equal(evaluation.obs_rms.mean, train.obs_rms.mean)
    with pytest.raises(TypeError, match="eval_env"):
        sync_envs_normalization(train, DummyVecEnv(counter_pair()))


def test_vec_monitor_episode_info_and_csv(tmp_path):
    keywords = ("TimeLimit.truncated",)
    venv = VecMonitor(DummyVecEnv(counter_pair()), filename=str(tmp_path / "run"), info_keywords=keywords)
    venv.reset()
    episodes = []
    for _ in range(6):
        _, _, dones, infos = venv.step(ZERO)
        episodes += [info["episode"] for info, done in zip(infos, dones) if done]
        assert all(("episode" in info) == done for info, done in zip(infos, dones))
    venv.close()
    # env 1 ends at steps 2, 4, 6 (return 1+2), env 0 at steps 3, 6 (return 1+2+3, truncated)
    assert [(e["r"], e["l"]) for e in episodes] == [(3.0, 2), (6.0, 3), (3.0, 2), (6.0, 3), (3.0, 2)]
    assert [e["TimeLimit.truncated"] for e in episodes] == [False, True, False, True, False]
    data = load_results(tmp_path)
    assert sorted(zip(data["r"], data["l"])) == [(3.0, 2)] * 3 + [(6.0, 3)] * 2
    assert sorted(data["TimeLimit.truncated"].tolist()) == [False, False, False, True, True]
    assert (tmp_path / "run.monitor.csv").exists() and venv.episode_count == 5


def test_vec_monitor_warns_when_envs_already_monitored():
    with pytest.warns(UserWarning, match="already wrapped with a Monitor"):
        VecMonitor(DummyVecEnv([lambda: Monitor(make_counter())]))


def test_vec_frame_stack_stacks_and_zeroes_per_env():
    venv = VecFrameStack(DummyVecEnv(counter_pair()), n_stack=3)
    assert venv.observation_space.shape == (6,)
    obs = venv.reset()
    np.testing.assert_array_equal(obs, [[0, 0, 0, 0, 0, 0]] * 2)
    obs, _, _, _ = venv.step(ZERO)
    np.testing.assert_array_equal(obs, [[0, 0, 0, 0, 0, 1]] * 2)
    obs, _, dones, infos = venv.step(ZERO)  # env 1 terminates: its stack restarts from zeros
    np.testing.assert_array_equal(obs, [[0, 0, 0, 1, 0, 2], [0, 0, 0, 0, 1, 0]])
    np.testing.assert_array_equal(infos[1]["terminal_observation"], [0, 0, 0, 1, 0, 2])
    obs, _, dones, infos = venv.step(ZERO)  # env 0 is truncated
    np.testing.assert_array_equal(obs, [[0, 0, 0, 0, 1, 0], [0, 0, 1, 0, 1, 1]])
    np.testing.assert_array_equal(infos[0]["terminal_observation"], [0, 1, 0, 2, 0, 3])
    with pytest.raises(ValueError, match="n_stack"):
        VecFrameStack(DummyVecEnv(counter_pair()), n_stack=0)
    with pytest.raises(ValueError, match="channels_order"):
        VecFrameStack(DummyVecEnv(counter_pair()), n_stack=2, channels_order="middle")


def test_vec_frame_stack_channels_first_and_dict():
    class ImageEnv(gym.Env):
        observation_space = spaces.Box(0, 255, shape=(1, 2, 2), dtype=np.uint8)
        action_space = spaces.Box(-1, 1, shape=(1,), dtype=np.float32)

        def reset(self, *, seed=None, options=None):
            self.t = 0
            return np.full((1, 2, 2), self.t, np.uint8), {}

        def step(self, action):
            self.t += 1
            return np.full((1, 2, 2), self.t, np.uint8), 0.0, False, False, {}

    venv = VecFrameStack(DummyVecEnv([ImageEnv]), n_stack=2)  # smallest axis first: channels first
    assert venv.observation_space.shape == (2, 2, 2)
    venv.reset()
    obs, *_ = venv.step(ZERO[:1])
    assert obs[0, 0].max() == 0 and obs[0, 1].min() == 1

    def make_dict():
        env = make_counter(3)
        space = spaces.Dict({"x": env.observation_space})
        return gym.wrappers.TransformObservation(env, lambda o: {"x": o}, space)

    venv = VecFrameStack(DummyVecEnv([make_dict]), n_stack=2)
    assert venv.observation_space["x"].shape == (4,)
    venv.reset()
    for _ in range(3):
        obs, _, dones, infos = venv.step(ZERO[:1])
    assert dones[0]
    np.testing.assert_array_equal(infos[0]["terminal_observation"]["x"], [0, 2, 0, 3])
    np.testing.assert_array_equal(obs["x"], [[0, 0, 1, 0]])


def test_vec_check_nan_raises_and_warns():
    class NanEnv(CounterEnv):
        """Reward inf at step 1, NaN at every even step."""

        def step(self, action):
            obs, reward, terminated, truncated, info = super().step(action)
            reward = float("inf") if self.t == 1 else float("nan") if self.t % 2 == 0 else reward
            return obs, reward, terminated, truncated, info

    def make():
        return DummyVecEnv([lambda: gym.wrappers.TimeLimit(NanEnv(), 9)])

    venv = VecCheckNan(make(), raise_exception=True)
    venv.reset()
    with pytest.raises(ValueError, match="inf in rewards"):
        venv.step(ZERO[:1])
    with pytest.raises(ValueError, match="nan in rewards"):
        venv.step(ZERO[:1])
    with pytest.raises(ValueError, match="nan in actions"):
        venv.step_async(np.array([[np.nan]], dtype=np.float32))
    # warn instead of raising, only once; infinities ignored with check_inf=False
    venv = VecCheckNan(make(), check_inf=False)
    venv.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        venv.step(ZERO[:1])  # inf reward: not checked
    with pytest.warns(UserWarning, match="nan in rewards"):
        venv.step(ZERO[:1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        venv.step(ZERO[:1])
        venv.step(ZERO[:1])  # NaN again, already warned


def test_vec_transpose_image_and_extract_dict_obs():
    class DictImageEnv(gym.Env):
        observation_space = spaces.Dict(
            {"img": spaces.Box(0, 255, shape=(2, 3, 1), dtype=np.uint8), "vec": spaces.Box(-1, 1, (2,), np.float32)}
        )
        action_space = spaces.Box(-1, 1, shape=(1,), dtype=np.float32)

        def reset(self, *, seed=None, options=None):
            img = np.arange(6, dtype=np.uint8).reshape(2, 3, 1)
            return {"img": img, "vec": np.zeros(2, np.float32)}, {}

        def step(self, action):
            obs, _ = self.reset()
            return obs, 0.0, True, False, {}

    venv = VecTransposeImage(DummyVecEnv([DictImageEnv]))
    assert venv.observation_space["img"].shape == (1, 2, 3) and venv.observation_space["vec"].shape == (2,)
    obs = venv.reset()
    np.testing.assert_array_equal(obs["img"][0, 0], np.arange(6).reshape(2, 3))
    _, _, _, infos = venv.step(ZERO[:1])
    assert infos[0]["terminal_observation"]["img"].shape == (1, 2, 3)
    extracted = VecExtractDictObs(venv, "img")
    assert extracted.observation_space.shape == (1, 2, 3)
    assert extracted.reset().shape == (1, 1, 2, 3)
    _, _, _, infos = extracted.step(ZERO[:1])
    assert infos[0]["terminal_observation"].shape == (1, 2, 3)
    with pytest.raises(ValueError, match="image"):
        VecTransposeImage(DummyVecEnv(counter_pair()))
    with pytest.raises(ValueError, match="key 'nope'"):
        VecExtractDictObs(venv, "nope")


def test_vec_video_recorder_writes_a_video(tmp_path):
    venv = DummyVecEnv([lambda: SeededEnv(render_mode="rgb_array", length=50) for _ in range(2)])
    recorder = VecVideoRecorder(venv, tmp_path, record_video_trigger=lambda step: step == 0, video_length=5)
    recorder.reset()
    for _ in range(8):
        recorder.step(np.zeros((2, 1), np.float32))
    recorder.close()
    files = sorted(os.listdir(tmp_path))
    assert len(files) == 1 and files[0].startswith("rl-agent-video-step-0-to-step-5.")
    import imageio.v3 as iio

    frames = iio.imread(tmp_path / files[0])
    assert len(frames) == 6  # the reset frame and 5 steps
    with pytest.raises(ValueError, match="rgb_array"):
        VecVideoRecorder(DummyVecEnv([lambda: SeededEnv()]), tmp_path, lambda step: True)


def test_render_human_delegates_to_the_envs_and_get_images_needs_rgb():
    class HumanEnv(SeededEnv):
        metadata: dict = {"render_modes": ["human"]}
        calls = 0

        def render(self):
            HumanEnv.calls += 1

    venv = DummyVecEnv([lambda: HumanEnv(render_mode="human") for _ in range(2)])
    venv.reset()
    assert venv.render() is None and HumanEnv.calls == 2
    with pytest.raises(ValueError, match="render_mode='rgb_array'"):
        venv.get_images()
    with pytest.warns(UserWarning, match="no render_mode"):
        assert DummyVecEnv([SeededEnv]).render() is None


def test_an_unclosed_subproc_vec_env_that_rendered_does_not_hang_the_exit(tmp_path):
    # SB3's examples render a SubprocVecEnv and never close it. pygame's SDL catches SIGTERM in a worker that
    # rendered, so the terminate() multiprocessing sends daemon workers at exit must still end them.
    script = tmp_path / "unclosed.py"
    script.write_text(
        "import gymnasium as gym\n"
        "from rlkit_td3.vec_env import SubprocVecEnv\n"
        "if __name__ == '__main__':\n"
        "    env = SubprocVecEnv([lambda: gym.make('Pendulum-v1', render_mode='rgb_array') for _ in range(2)])\n"
        "    env.reset()\n"
        "    assert env.render().ndim == 3\n"
        "    print('rendered', flush=True)\n"
    )
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=90, cwd=tmp_path)
    assert result.returncode == 0 and "rendered" in result.stdout, result.stderr[-2000:]

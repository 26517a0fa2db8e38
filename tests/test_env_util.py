"""rlkit_td3.env_util.make_vec_env: every argument, with SB3's semantics."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from conftest import CounterEnv

from rlkit_td3.env_util import is_wrapped, make_vec_env, unwrap_wrapper
from rlkit_td3.monitor import Monitor, load_results
from rlkit_td3.vec_env import DummyVecEnv, SubprocVecEnv


def zeros(venv) -> np.ndarray:
    return np.zeros((venv.num_envs, *venv.action_space.shape), dtype=np.float32)


def test_n_envs_and_monitor_wrapping():
    venv = make_vec_env("Pendulum-v1", n_envs=3)
    assert isinstance(venv, DummyVecEnv) and venv.num_envs == 3 and len({id(e) for e in venv.envs}) == 3
    assert venv.env_is_wrapped(Monitor) == [True, True, True]
    assert venv.render_mode == "rgb_array"  # env ids are made with render_mode="rgb_array" by default
    assert venv.reset().shape == (3, 3)


def test_seed_reproducible_and_seed_plus_rank():
    first = make_vec_env("Pendulum-v1", n_envs=2, seed=5)
    obs = first.reset()
    np.testing.assert_array_equal(obs, make_vec_env("Pendulum-v1", n_envs=2, seed=5).reset())
    for rank in range(2):
        np.testing.assert_array_equal(obs[rank], gym.make("Pendulum-v1").reset(seed=5 + rank)[0])
        space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
        space.seed(5 + rank)
        np.testing.assert_array_equal(first.envs[rank].action_space.sample(), space.sample())
    assert not np.array_equal(obs, make_vec_env("Pendulum-v1", n_envs=2, seed=6).reset())
    # seed=None draws the base seed from NumPy's global generator, as SB3
    saved = np.random.get_state()  # noqa: NPY002
    try:
        np.random.seed(3)  # noqa: NPY002 - the global generator is what SB3 draws from
        a = make_vec_env("Pendulum-v1", n_envs=2).reset()
        np.random.seed(3)  # noqa: NPY002
        np.testing.assert_array_equal(a, make_vec_env("Pendulum-v1", n_envs=2).reset())
    finally:
        np.random.set_state(saved)  # noqa: NPY002


def test_start_index_and_monitor_dir(tmp_path):
    venv = make_vec_env("Pendulum-v1", n_envs=2, seed=10, start_index=3, monitor_dir=str(tmp_path / "logs"))
    obs = venv.reset()
    np.testing.assert_array_equal(obs[0], gym.make("Pendulum-v1").reset(seed=13)[0])  # seed + rank
    np.testing.assert_array_equal(obs[1], gym.make("Pendulum-v1").reset(seed=14)[0])
    for _ in range(200):  # one 200-step episode per env
        venv.step(zeros(venv))
    venv.close()
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["3.monitor.csv", "4.monitor.csv"]
    results = load_results(tmp_path / "logs")
    assert results["l"].tolist() == [200, 200]


def test_wrapper_class_and_wrapper_kwargs():
    venv = make_vec_env(
        "Pendulum-v1", n_envs=2, wrapper_class=gym.wrappers.TimeLimit, wrapper_kwargs={"max_episode_steps": 7}
    )
    assert all(isinstance(env, gym.wrappers.TimeLimit) for env in venv.envs)  # outermost, after the Monitor
    assert isinstance(venv.envs[0].env, Monitor)
    venv.reset()
    for _ in range(6):
        _, _, dones, _ = venv.step(zeros(venv))
        assert not dones.any()
    _, _, dones, infos = venv.step(zeros(venv))
    assert dones.all() and all(info["TimeLimit.truncated"] for info in infos)
    assert unwrap_wrapper(venv.envs[0], Monitor) is venv.envs[0].env and is_wrapped(venv.envs[0], Monitor)


def test_env_kwargs_for_ids_and_callables():
    venv = make_vec_env("Pendulum-v1", n_envs=1, env_kwargs={"g": 2.5, "render_mode": None})
    assert venv.envs[0].unwrapped.g == 2.5 and venv.render_mode is None

    def make_counter_env(terminate_at):
        return gym.wrappers.TimeLimit(CounterEnv(terminate_at=terminate_at), 10)

    venv = make_vec_env(make_counter_env, n_envs=2, env_kwargs={"terminate_at": 2})
    assert venv.get_attr("terminate_at") == [2, 2]
    venv.reset()
    venv.step(zeros(venv))
    _, _, dones, infos = venv.step(zeros(venv))
    assert dones.all() and infos[0]["episode"]["l"] == 2


def test_vec_env_cls_subproc_with_vec_env_kwargs():
    venv = make_vec_env(
        "Pendulum-v1", n_envs=2, seed=1, vec_env_cls=SubprocVecEnv, vec_env_kwargs={"start_method": "fork"}
    )
    try:
        assert isinstance(venv, SubprocVecEnv) and venv.num_envs == 2
        np.testing.assert_array_equal(venv.reset(), make_vec_env("Pendulum-v1", n_envs=2, seed=1).reset())
        assert venv.env_is_wrapped(Monitor) == [True, True]
    finally:
        venv.close()


def test_monitor_kwargs(tmp_path):
    class SuccessEnv(CounterEnv):
        def step(self, action):
            obs, reward, terminated, truncated, info = super().step(action)
            return obs, reward, terminated, truncated, {"is_success": self.t == 2}

    venv = make_vec_env(
        lambda: SuccessEnv(terminate_at=2),
        n_envs=1,
        monitor_dir=str(tmp_path),
        monitor_kwargs={"info_keywords": ("is_success",)},
    )
    venv.reset()
    venv.step(zeros(venv))
    venv.step(zeros(venv))
    venv.close()
    results = load_results(tmp_path)
    assert results["is_success"].tolist() == [True]


def test_bad_arguments_are_refused():
    for kwargs, name in (
        ({"n_envs": 0}, "n_envs"),
        ({"seed": -1}, "seed"),
        ({"start_index": -2}, "start_index"),
        ({"env_kwargs": [1]}, "env_kwargs"),
        ({"monitor_kwargs": "x"}, "monitor_kwargs"),
    ):
        with pytest.raises((ValueError, TypeError), match=name):
            make_vec_env("Pendulum-v1", **kwargs)
    with pytest.raises(TypeError, match="env_id"):
        make_vec_env(42)

"""SB3-style script: ``make_vec_env`` with monitor files, Dummy and Subproc envs, random actions.

Written the way SB3's documentation uses ``stable_baselines3.common.env_util.make_vec_env``, with the imports
changed to rlkit_td3. Exits 0 when every check passes.
"""

import os
import tempfile

import numpy as np

from rlkit_td3.env_util import make_vec_env
from rlkit_td3.monitor import load_results
from rlkit_td3.vec_env import DummyVecEnv, SubprocVecEnv


def rollout(vec_env, n_steps):
    obs = vec_env.reset()
    episodes = 0
    for _ in range(n_steps):
        actions = np.stack([vec_env.action_space.sample() for _ in range(vec_env.num_envs)])
        obs, rewards, dones, infos = vec_env.step(actions)
        for info, done in zip(infos, dones):
            if done:
                episodes += 1
                assert info["episode"]["l"] == 200 and info["TimeLimit.truncated"]
                assert info["terminal_observation"].shape == vec_env.observation_space.shape
    return obs, episodes


def main() -> None:
    # Pendulum episodes are cut at 200 steps; 2 envs x 400 steps = 4 episodes in two monitor files
    vec_env = make_vec_env("Pendulum-v1", n_envs=2, seed=0, monitor_dir="pendulum_logs")
    assert isinstance(vec_env, DummyVecEnv) and vec_env.num_envs == 2
    last_obs, episodes = rollout(vec_env, 400)
    vec_env.close()
    assert episodes == 4
    results = load_results("pendulum_logs")
    assert len(results) == 4 and (results["l"] == 200).all()

    # same seed, same first observations
    first = make_vec_env("Pendulum-v1", n_envs=2, seed=0).reset()
    again = make_vec_env("Pendulum-v1", n_envs=2, seed=0).reset()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first[0], first[1])

    # the same with one process per env
    sub_env = make_vec_env("Pendulum-v1", n_envs=2, seed=0, vec_env_cls=SubprocVecEnv)
    np.testing.assert_array_equal(sub_env.reset(), first)
    sub_env.close()
    print("ok")


if __name__ == "__main__":  # needed by SubprocVecEnv's worker processes
    with tempfile.TemporaryDirectory() as workdir:  # the files it writes go to a scratch folder
        os.chdir(workdir)
        main()

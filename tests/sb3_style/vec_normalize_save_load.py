"""SB3-style script: ``VecNormalize`` statistics gathered, saved, loaded for evaluation.

Follows SB3's documented pattern (train with ``VecNormalize``, ``save("vec_normalize.pkl")``, then
``VecNormalize.load(path, venv)`` with ``training = False`` and ``norm_reward = False``), imports changed to
rlkit_td3 and random actions in place of a model. Exits 0 when every check passes.
"""

import os
import tempfile

import numpy as np

from rlkit_td3.env_util import make_vec_env
from rlkit_td3.vec_env import DummyVecEnv, VecNormalize


def main() -> None:
    vec_env = make_vec_env("Pendulum-v1", n_envs=2, seed=1)
    vec_env = VecNormalize(vec_env, norm_obs=True, norm_reward=True, clip_obs=10.0)
    vec_env.reset()
    vec_env.action_space.seed(1)
    for _ in range(300):
        vec_env.step(np.stack([vec_env.action_space.sample() for _ in range(2)]))

    stats_path = os.path.join("logs", "vec_normalize.pkl")
    os.makedirs("logs", exist_ok=True)
    vec_env.save(stats_path)

    # load for evaluation: do not update the statistics, keep the rewards as they are
    eval_env = make_vec_env("Pendulum-v1", n_envs=1, seed=2)
    eval_env = VecNormalize.load(stats_path, eval_env)
    eval_env.training = False
    eval_env.norm_reward = False
    assert isinstance(eval_env.venv, DummyVecEnv)
    np.testing.assert_array_equal(eval_env.obs_rms.mean, vec_env.obs_rms.mean)
    np.testing.assert_array_equal(eval_env.obs_rms.var, vec_env.obs_rms.var)
    assert eval_env.obs_rms.count == vec_env.obs_rms.count == 2 * 301 + 1e-4
    assert eval_env.ret_rms.var == vec_env.ret_rms.var

    obs = eval_env.reset()
    frozen = eval_env.obs_rms.mean.copy()
    for _ in range(50):
        obs, rewards, dones, infos = eval_env.step(np.zeros((1, 1), dtype=np.float32))
        # the reward is the env's own; the observation is normalised with the loaded statistics
        np.testing.assert_array_equal(rewards, eval_env.get_original_reward())
        np.testing.assert_allclose(eval_env.unnormalize_obs(obs), eval_env.get_original_obs(), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(eval_env.obs_rms.mean, frozen)
    print("ok")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as workdir:  # the files it writes go to a scratch folder
        os.chdir(workdir)
        main()

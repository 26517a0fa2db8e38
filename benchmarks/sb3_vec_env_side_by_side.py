"""rlkit_td3.vec_env against stable_baselines3.common.vec_env on the same envs and actions (needs ``.[benchmark]``).

1. ``make_vec_env`` + ``DummyVecEnv``: observations, rewards, dones, terminal observations and episode infos
   must be bit-identical.
2. ``VecFrameStack(VecNormalize(...))``: the same up to float32 rounding (rlkit_td3's ``RunningMeanStd``
   computes batch moments in float64, SB3 in the observations' float32).

``python benchmarks/sb3_vec_env_side_by_side.py`` prints the largest differences and exits 1 on a mismatch.
"""

from __future__ import annotations

import numpy as np
import stable_baselines3.common.env_util as sb3_env_util
import stable_baselines3.common.vec_env as sb3_vec_env

import rlkit_td3.env_util as env_util
import rlkit_td3.vec_env as vec_env


def build(vec_module, env_util_module, n_envs: int, normalise: bool):
    venv = env_util_module.make_vec_env("Pendulum-v1", n_envs=n_envs, seed=4, env_kwargs={"max_episode_steps": 37})
    if normalise:
        venv = vec_module.VecFrameStack(vec_module.VecNormalize(venv, gamma=0.9, clip_obs=2.0), n_stack=3)
    return venv


def compare(normalise: bool, n_envs: int = 3, n_steps: int = 120) -> float:
    """Step both libraries with the same actions; return the largest absolute difference seen."""
    actions = np.random.default_rng(0).uniform(-2, 2, size=(n_steps, n_envs, 1)).astype(np.float32)
    ours, theirs = build(vec_env, env_util, n_envs, normalise), build(sb3_vec_env, sb3_env_util, n_envs, normalise)
    diffs = [np.abs(ours.reset() - theirs.reset()).max()]
    for t in range(n_steps):
        obs, rewards, dones, infos = ours.step(actions[t])
        sb3_obs, sb3_rewards, sb3_dones, sb3_infos = theirs.step(actions[t])
        assert np.array_equal(dones, sb3_dones), t
        diffs += [np.abs(obs - sb3_obs).max(), np.abs(rewards - sb3_rewards).max()]
        for info, sb3_info in zip(infos, sb3_infos):
            assert info.keys() == sb3_info.keys(), (info.keys(), sb3_info.keys())
            assert info["TimeLimit.truncated"] == sb3_info["TimeLimit.truncated"]
            if "terminal_observation" in info:
                diffs.append(np.abs(info["terminal_observation"] - sb3_info["terminal_observation"]).max())
                assert info["episode"]["l"] == sb3_info["episode"]["l"]
                diffs.append(abs(info["episode"]["r"] - sb3_info["episode"]["r"]))
    return float(max(diffs))


if __name__ == "__main__":
    raw = compare(normalise=False)
    normalised = compare(normalise=True)
    print(f"make_vec_env + DummyVecEnv: largest difference {raw!r} (must be 0)")
    print(f"VecFrameStack(VecNormalize(...)): largest difference {normalised!r} (float32 rounding: < 1e-5)")
    raise SystemExit(0 if raw == 0.0 and normalised < 1e-5 else 1)

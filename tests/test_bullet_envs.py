"""The nine PyBullet ids: bit-exact against the original pybullet_envs, registration, API, independence.

``tests/data/*.npz`` are trajectories recorded from the original ``pybullet_envs`` (pybullet 3.2.7, gym 0.21)
with ``env.seed(0)``; their format is described in the project's shared pybullet_envs notes. Each file holds
three episodes of up to 300 steps (stopping on done, gym 0.21's TimeLimit included) and then one more reset
and 300 steps through ``env.unwrapped.step`` past termination (the ``long_*`` keys), all on one env object.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import rlkit_td3
from rlkit_td3.envs import BULLET_ENV_IDS, legacy_np_random, legacy_seed

DATA = Path(__file__).resolve().parent / "data"

# Once the Humanoid has fallen its contacts are chaotic; past ~200 steps its long rollout depends on incidental
# memory layout even in the original, so only its first 100 steps are compared (spec §10).
LONG_STEPS = {env_id: 300 for env_id in BULLET_ENV_IDS} | {"HumanoidBulletEnv-v0": 100}


def _reference(env_id: str) -> dict[str, np.ndarray]:
    with np.load(DATA / f"{env_id}.npz") as ref:
        return {k: ref[k] for k in ref.files}


def _mismatch(where: str, obs, reward, terminated, truncated, ref_obs, ref_reward, ref_term, ref_trunc) -> str | None:
    """Bit-exact comparison of one step; obs compared as float32 (the original's pendulum/reacher obs are float64)."""
    if not np.array_equal(np.asarray(obs, np.float32), np.asarray(ref_obs).astype(np.float32)):
        diff = np.abs(np.asarray(obs, np.float64) - ref_obs).max()
        return f"{where}: obs differs (max abs diff {diff:.3g})"
    if float(reward) != float(ref_reward):
        return f"{where}: reward {float(reward)!r} != {float(ref_reward)!r}"
    if (bool(terminated), bool(truncated)) != (bool(ref_term), bool(ref_trunc)):
        return f"{where}: terminated/truncated {terminated}/{truncated} != {ref_term}/{ref_trunc}"
    return None


@pytest.mark.parametrize("env_id", BULLET_ENV_IDS)
def test_replays_reference_bit_exact(env_id):
    ref = _reference(env_id)
    env = gymnasium.make(env_id)
    legacy_seed(env, int(ref["env_seed"]))
    assert len(ref["ep_start"]) == 3
    for ep, (start, length) in enumerate(zip(ref["ep_start"], ref["ep_len"])):
        obs, _ = env.reset()
        assert np.array_equal(obs.astype(np.float32), ref["reset_obs"][ep].astype(np.float32)), f"ep{ep} reset obs"
        for i in range(start, start + length):
            step = env.step(ref["action"][i])
            term = ref["done"][i] and not ref["truncated"][i]
            problem = _mismatch(
                f"ep{ep} step{i - start}", *step[:4], ref["obs"][i], ref["reward"][i], term, ref["truncated"][i]
            )
            assert problem is None, problem
        assert step[2] or step[3] or length == ref["max_steps_per_episode"], "episode ended where the reference did"

    # The long rollout: same env object, one more reset, then env.unwrapped.step past termination.
    obs, _ = env.reset()
    assert np.array_equal(obs.astype(np.float32), ref["long_reset_obs"].astype(np.float32)), "long reset obs"
    n = LONG_STEPS[env_id]
    for i in range(n):
        step = env.unwrapped.step(ref["long_action"][i])
        problem = _mismatch(
            f"long step{i}", *step[:4], ref["long_obs"][i], ref["long_reward"][i], ref["long_done"][i], False
        )
        assert problem is None, problem
    env.close()


def test_long_rollouts_run_past_termination():
    # The long rollouts are only a guard if they go through terminal states; check the data does.
    dones = {env_id: int(_reference(env_id)["long_done"][: LONG_STEPS[env_id]].sum()) for env_id in BULLET_ENV_IDS}
    assert dones["HopperBulletEnv-v0"] > 0 and dones["HumanoidBulletEnv-v0"] > 0, dones


def test_legacy_np_random_is_gym_021_seeding():
    ref = _reference("HopperBulletEnv-v0")
    expected = np.random.RandomState()
    expected.seed([int(w) for w in ref["gym021_seed_words"]])
    ours = legacy_np_random(0)
    assert np.array_equal(ours.random_sample(8), expected.random_sample(8))
    # Spec §3.2's worked example for seed 0.
    assert legacy_np_random(0).uniform(-0.1, 0.1, size=3).tolist() == [
        -0.08912798874984336,
        0.09307818744846408,
        0.026538189116820654,
    ]


@pytest.mark.parametrize("seed", [-1, 1.5, "0", True])
def test_legacy_np_random_rejects_bad_seed(seed):
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        legacy_np_random(seed)


def test_import_registers_ids_without_loading_pybullet():
    code = (
        "import sys, gymnasium, rlkit_td3\n"
        f"ids = {list(BULLET_ENV_IDS)!r}\n"
        "assert all(i in gymnasium.registry for i in ids), 'ids not registered'\n"
        "assert 'pybullet' not in sys.modules, 'import rlkit_td3 imported pybullet'\n"
        "env = gymnasium.make('HalfCheetahBulletEnv-v0')\n"
        "assert 'pybullet' in sys.modules\n"
        "assert type(env.unwrapped).__module__ == 'rlkit_td3.envs.bullet'\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")


# check_env raises on a failed check. It also warns about the +-inf observation bounds (the original's spaces)
# and about the port's legacy seed() method; those two are expected.
@pytest.mark.parametrize("env_id", BULLET_ENV_IDS)
def test_check_env(env_id):
    env = gymnasium.make(env_id)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any other warning of the checker fails the test
        warnings.filterwarnings("ignore", message=".*observation space m.* value is -?infinity")
        warnings.filterwarnings("ignore", message=".*support for the `seed` function is dropped")
        check_env(env.unwrapped, skip_render_check=True)
    env.close()


@pytest.mark.parametrize("env_id", BULLET_ENV_IDS)
def test_float32_actions_follow_the_float64_trajectory(env_id):
    # A learner passes float32 actions; they must give what the same values give as float64 (the reference's dtype).
    results = []
    for dtype in (np.float32, np.float64):
        env = gymnasium.make(env_id)
        dim = env.action_space.shape[0]
        acts = np.random.default_rng(1).uniform(-1, 1, size=(60, dim)).astype(np.float32)
        legacy_seed(env, 3)
        env.reset()
        results.append([env.unwrapped.step(a.astype(dtype))[:2] for a in acts])
        env.close()
    for t, ((o32, r32), (o64, r64)) in enumerate(zip(*results)):
        assert np.array_equal(o32, o64) and r32 == r64, f"step {t}"


def test_physics_client_is_direct(monkeypatch):
    import pybullet
    from pybullet_utils import bullet_client

    modes = []
    original = bullet_client.BulletClient

    def recording_client(connection_mode=None, **kwargs):
        modes.append(connection_mode)
        return original(connection_mode=connection_mode, **kwargs)

    monkeypatch.setattr(bullet_client, "BulletClient", recording_client)
    env = gymnasium.make("HopperBulletEnv-v0")
    env.reset(seed=0)
    env.close()
    # Not the port's BulletClient() (no mode), which attaches to any running shared-memory server.
    assert modes == [pybullet.DIRECT]


def _rollout(env, seed: int, actions: np.ndarray) -> list[tuple[np.ndarray, float]]:
    legacy_seed(env, seed)
    env.reset()
    return [env.unwrapped.step(a)[:2] for a in actions]


def test_two_envs_of_one_id_are_independent():
    env_id = "AntBulletEnv-v0"
    acts = np.random.default_rng(7).uniform(-1, 1, size=(2, 80, 8))
    alone = [_rollout(gymnasium.make(env_id), seed, acts[k]) for k, seed in enumerate((0, 1))]

    envs = [gymnasium.make(env_id) for _ in range(2)]
    for env, seed in zip(envs, (0, 1)):
        legacy_seed(env, seed)
        env.reset()
    together = [[], []]
    for t in range(80):  # interleaved in one process
        for k, env in enumerate(envs):
            together[k].append(env.unwrapped.step(acts[k, t])[:2])
    assert alone[0][0][1] != alone[1][0][1], "the two seeds should give different trajectories"
    for k in range(2):
        for t in range(80):
            assert np.array_equal(together[k][t][0], alone[k][t][0]) and together[k][t][1] == alone[k][t][1], (k, t)


def test_async_vector_env_matches_single_envs():
    env_id, n_envs, n_steps, seed = "HalfCheetahBulletEnv-v0", 4, 40, 10  # HalfCheetah never terminates
    acts = np.random.default_rng(3).uniform(-1, 1, size=(n_steps, n_envs, 6)).astype(np.float32)
    vec = gymnasium.make_vec(env_id, num_envs=n_envs, vectorization_mode="async")
    try:
        obs, _ = vec.reset(seed=seed)
        vec_obs, vec_rew = [obs], []
        for t in range(n_steps):
            obs, rew, term, trunc, _ = vec.step(acts[t])
            assert not (term.any() or trunc.any())
            vec_obs.append(obs)
            vec_rew.append(rew)
    finally:
        vec.close()
    vec_obs, vec_rew = np.array(vec_obs), np.array(vec_rew)
    for k in range(n_envs):
        env = gymnasium.make(env_id)
        obs, _ = env.reset(seed=seed + k)  # what the vector env does with reset(seed=seed)
        assert np.array_equal(obs, vec_obs[0, k])
        for t in range(n_steps):
            obs, rew, *_ = env.step(acts[t, k])
            assert np.array_equal(obs, vec_obs[t + 1, k]) and rew == vec_rew[t, k], (k, t)
        env.close()
    assert not np.array_equal(vec_obs[:, 0], vec_obs[:, 1])


def test_rgb_array_renders_headless():
    env = gymnasium.make("HopperBulletEnv-v0", render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    env.close()
    assert frame.shape == (240, 320, 3) and frame.dtype == np.uint8
    assert frame.std() > 10, "a blank frame"


def test_td3_accepts_a_bullet_id():
    model = rlkit_td3.TD3("MlpPolicy", "InvertedPendulumBulletEnv-v0", learning_starts=10, seed=0)
    model.learn(20)
    assert model.observation_space.shape == (5,)


def test_a_generator_set_from_outside_drives_the_robots_resets():
    # An async vector env restores a sub-env's generator with set_attr("np_random", ...), which replaces the
    # object: the robot (which draws the initial joint positions) must follow, or resets would differ.
    def reset_with(rng_seed: int) -> np.ndarray:
        env = gymnasium.make("HopperBulletEnv-v0")
        env.reset(seed=0)
        env.unwrapped.np_random = np.random.default_rng(rng_seed)
        assert env.unwrapped.robot.np_random is env.unwrapped.np_random
        obs, _ = env.reset()
        env.close()
        return obs

    assert np.array_equal(reset_with(5), reset_with(5))
    assert not np.array_equal(reset_with(5), reset_with(6))


@pytest.mark.parametrize("first_id", ["HopperBulletEnv-v0", "ReacherBulletEnv-v0"])
def test_an_env_renders_after_another_bullet_env_was_closed(first_id):
    first = gymnasium.make(first_id, render_mode="rgb_array")
    first.reset(seed=0)
    second = gymnasium.make("HalfCheetahBulletEnv-v0", render_mode="rgb_array")
    second.reset(seed=0)
    before = second.render()
    first.close()  # disconnects its physics client, the first one this process made
    after = second.render()
    assert before.shape == after.shape == (240, 320, 3)
    np.testing.assert_array_equal(before, after)  # same state, same frame: the debug camera never mattered
    second.close()

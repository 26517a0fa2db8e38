"""The env a model hands back (SB3's VecEnv contract) and SB3-style VecEnvs as the training env."""

from __future__ import annotations

import numpy as np
import pytest

from rlkit_td3 import TD3
from rlkit_td3.callbacks import BaseCallback, CheckpointCallback
from rlkit_td3.evaluation import evaluate_policy
from rlkit_td3.monitor import Monitor
from rlkit_td3.vec_env import DummyVecEnv, VecEnv, VecNormalize
from tests.conftest import make_counter
from tests.test_collection import _assert_no_cross_episode_transition

KW = dict(learning_starts=10_000, batch_size=4, policy_kwargs={"net_arch": [8]}, seed=0)


@pytest.mark.parametrize(("max_steps", "terminate_at"), [(5, None), (10, 3)], ids=["truncating", "terminating"])
def test_get_env_follows_sb3s_contract(max_steps, terminate_at):
    model = TD3("MlpPolicy", make_counter(max_steps, terminate_at), **KW).learn(7)
    vec_env = model.get_env()
    assert isinstance(vec_env, VecEnv) and model.env is vec_env and vec_env.num_envs == 1
    obs = vec_env.reset()
    assert obs.shape == (1, 2)  # observations only, no info
    length = terminate_at or max_steps
    for t in range(1, 2 * length + 1):
        last = obs
        obs, rewards, dones, infos = vec_env.step(np.zeros((1, 1), dtype=np.float32))
        ended = t % length == 0
        assert dones.tolist() == [ended] and rewards.tolist() == [float((t - 1) % length + 1)]
        if ended:  # auto-reset: the true last observation is in the info, obs is the next episode's first
            np.testing.assert_array_equal(infos[0]["terminal_observation"], [last[0, 0], length])
            assert infos[0]["TimeLimit.truncated"] is (terminate_at is None)
            assert obs[0, 1] == 0 and obs[0, 0] == last[0, 0] + 1
        else:
            assert "terminal_observation" not in infos[0]


def test_sb3_quickstart_loop_and_evaluate_policy_on_the_models_env():
    model = TD3("MlpPolicy", "Pendulum-v1", **{**KW, "learning_starts": 50}).learn(100)
    vec_env = model.get_env()
    obs = vec_env.reset()
    episodes = 0
    for _ in range(450):
        action, _states = model.predict(obs, deterministic=True)
        obs, rewards, dones, info = vec_env.step(action)
        episodes += int(dones.sum())
        vec_env.render(mode="rgb_array") if episodes == 1 and dones.any() else None
    assert episodes == 2  # Pendulum's 200-step time limit, twice
    mean, std = evaluate_policy(model, model.get_env(), n_eval_episodes=2)
    assert np.isfinite(mean) and mean < 0


@pytest.mark.parametrize(("max_steps", "terminate_at"), [(5, None), (10, 3)], ids=["truncating", "terminating"])
def test_learning_after_user_steps_never_joins_two_episodes(max_steps, terminate_at):
    model = TD3("MlpPolicy", make_counter(max_steps, terminate_at), **KW).learn(4)
    vec_env = model.get_env()
    for _ in range(3):  # leaves the env mid-episode, away from the model's last observation
        vec_env.step(np.zeros((1, 1), dtype=np.float32))
    model.learn(20, reset_num_timesteps=False)
    _assert_no_cross_episode_transition(model, max_steps, terminate_at)


@pytest.mark.parametrize(("max_steps", "terminate_at"), [(5, None), (10, 3)], ids=["truncating", "terminating"])
def test_an_sb3_vec_env_trains_and_is_handed_back(max_steps, terminate_at):
    venv = DummyVecEnv([lambda: Monitor(make_counter(max_steps, terminate_at)) for _ in range(2)])
    seen = []

    class Record(BaseCallback):
        def _on_step(self) -> bool:
            seen.append(self.training_env)
            return True

    model = TD3("MlpPolicy", venv, **KW).learn(40, callback=Record())
    assert model.get_env() is venv and model.env is venv and seen[0] is venv and model.n_envs == 2
    # terminal observations become the stored next observations; terminations and truncations are told apart
    _assert_no_cross_episode_transition(model, max_steps, terminate_at)
    assert model.replay_buffer.size() == 40
    assert len(model.ep_info_buffer) == 2 * (20 // (terminate_at or max_steps))


def test_vec_normalize_is_found_and_checkpointed_with_the_model(tmp_path):
    venv = VecNormalize(DummyVecEnv([lambda: Monitor(make_counter(5))]))
    model = TD3("MlpPolicy", venv, **KW)
    assert model.get_vec_normalize_env() is venv
    assert TD3("MlpPolicy", make_counter(5), **KW).get_vec_normalize_env() is None
    model.learn(20, callback=CheckpointCallback(10, tmp_path, save_vecnormalize=True))
    saved = sorted(p.name for p in tmp_path.iterdir())
    assert saved == [
        "rl_model_10_steps.zip",
        "rl_model_20_steps.zip",
        "rl_model_vecnormalize_10_steps.pkl",
        "rl_model_vecnormalize_20_steps.pkl",
    ]
    restored = VecNormalize.load(
        tmp_path / "rl_model_vecnormalize_20_steps.pkl", DummyVecEnv([lambda: make_counter(5)])
    )
    np.testing.assert_array_equal(restored.obs_rms.mean, venv.obs_rms.mean)


def test_checkpoints_with_the_buffer_are_refused_on_wrapped_sb3_vec_envs_with_a_reason(tmp_path):
    # a bare DummyVecEnv records the generator states a resume needs (tests/test_resume.py); a VecEnv wrapper
    # around it could hold state of its own, so such checkpoints are refused with the reason
    model = TD3("MlpPolicy", VecNormalize(DummyVecEnv([lambda: make_counter(5)])), **KW).learn(10)
    with pytest.raises(ValueError, match="same-step autoreset"):
        model.save(tmp_path / "m.zip", include_buffer=True)
    model.save(tmp_path / "m.zip")  # without the buffer: fine, and it loads onto an SB3 env
    loaded = TD3.load(tmp_path / "m.zip", env=DummyVecEnv([lambda: make_counter(5)]))
    assert isinstance(loaded.get_env(), DummyVecEnv)
    loaded.learn(10, reset_num_timesteps=False)
    loaded.save(tmp_path / "checkpoint.zip", include_buffer=True)  # a bare DummyVecEnv: accepted

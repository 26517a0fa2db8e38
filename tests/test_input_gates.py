"""Careless inputs get a clear error or just work: NumPy values in settings, export of what it cannot export, HER
buffers smaller than one episode."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from conftest import make_counter

from rlkit_td3 import TD3, HerReplayBuffer
from rlkit_td3.envs.bit_flipping_env import BitFlippingEnv
from rlkit_td3.export import export


def test_numpy_arrays_in_optimizer_kwargs_train_save_and_load(tmp_path):
    kwargs = {"net_arch": [8], "optimizer_kwargs": {"betas": np.array([0.8, 0.95]), "eps": np.float32(1e-6)}}
    model = TD3("MlpPolicy", make_counter(5), policy_kwargs=kwargs, learning_starts=5, seed=0).learn(20)
    assert tuple(model.policy.actor_optimizer.param_groups[0]["betas"]) == (0.8, 0.95)
    model.save(tmp_path / "m.zip")
    loaded = TD3.load(tmp_path / "m.zip")
    assert tuple(loaded.policy.actor_optimizer.param_groups[0]["betas"]) == (0.8, 0.95)
    obs = np.zeros((1, 2), np.float32)
    np.testing.assert_array_equal(model.predict(obs)[0], loaded.predict(obs)[0])
    assert isinstance(kwargs["optimizer_kwargs"]["betas"], np.ndarray)  # the caller's dict is left alone


def test_export_takes_numpy_scalars(tmp_path):
    model = TD3("MlpPolicy", make_counter(5), policy_kwargs={"net_arch": [8]}, seed=0)
    mean, var = np.zeros(2), np.ones(2)
    path = export(model, tmp_path / "a.pt", obs_mean=mean, obs_var=var, clip_obs=np.float32(5), epsilon=np.float64(0))
    assert path.exists()
    with pytest.raises(ValueError, match="clip_obs must be a positive number"):
        export(model, tmp_path / "b.pt", obs_mean=mean, obs_var=var, clip_obs=np.True_)


def test_export_of_a_dict_observation_model_says_what_is_unsupported(tmp_path):
    model = TD3("MultiInputPolicy", gym.wrappers.TimeLimit(BitFlippingEnv(4), 4), seed=0)
    with pytest.raises(ValueError, match=r"export supports policies of Box .* this one takes Dict observations"):
        export(model, tmp_path / "a.pt")
    assert not (tmp_path / "a.pt").exists()


def test_her_with_episodes_longer_than_the_buffer_names_buffer_size():
    env = gym.wrappers.TimeLimit(BitFlippingEnv(4, max_steps=40), 40)  # 40-step episodes (never solved fast)
    model = TD3(
        "MultiInputPolicy",
        env,
        replay_buffer_class=HerReplayBuffer,
        buffer_size=16,
        learning_starts=50,  # larger than the episode length already
        batch_size=8,
        seed=0,
    )
    message = r"longer than the 16 rows .*buffer_size=16.*choose buffer_size larger"
    with pytest.raises(ValueError, match=message) as info:
        model.learn(200)
    assert "learning_starts" not in str(info.value)


def test_numeric_parameters_take_numpy_scalars(tmp_path):
    from rlkit_td3.callbacks import EvalCallback, StopTrainingOnMaxEpisodes, StopTrainingOnNoModelImprovement
    from rlkit_td3.monitor import Monitor, plot_results
    from rlkit_td3.running_mean_std import RunningMeanStd
    from rlkit_td3.torch_layers import BaseFeaturesExtractor
    from rlkit_td3.vec_env import DummyVecEnv

    assert EvalCallback(DummyVecEnv([lambda: make_counter(5)]), n_eval_episodes=np.int64(2)).n_eval_episodes == 2
    assert StopTrainingOnMaxEpisodes(np.int32(3)).max_episodes == 3
    assert StopTrainingOnNoModelImprovement(np.int64(2)).max_no_improvement_evals == 2
    assert RunningMeanStd(epsilon=np.float32(1e-3)).count == pytest.approx(1e-3)
    assert BaseFeaturesExtractor(gym.spaces.Box(-1, 1, (3,)), features_dim=np.int64(3)).features_dim == 3
    env = Monitor(make_counter(5), str(tmp_path / "m"))
    env.reset(seed=0)
    for _ in range(12):
        _, _, terminated, truncated, _ = env.step(np.zeros(1, np.float32))
        if terminated or truncated:
            env.reset()
    env.close()
    assert plot_results(tmp_path, path=tmp_path / "curve.png", window=np.int64(2)).exists()

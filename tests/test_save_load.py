"""save → load round trips, env checks on load, pickle gating, and continued training."""

from __future__ import annotations

import json
import zipfile

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlkit_td3 import DDPG, TD3
from rlkit_td3.fileio.serialization import ModelFileError
from rlkit_td3.noise import OrnsteinUhlenbeckActionNoise
from rlkit_td3.schedules import LinearSchedule

SMALL = dict(learning_starts=100, batch_size=32, policy_kwargs={"net_arch": [32, 32]}, seed=0)


@pytest.fixture
def trained(tmp_path):
    model = TD3("MlpPolicy", "Pendulum-v1", **SMALL).learn(400)
    path = tmp_path / "model.zip"
    model.save(path)
    return model, path


def test_round_trip_identical_predictions(trained):
    model, path = trained
    loaded = TD3.load(path)
    obs = np.random.default_rng(0).uniform(-1, 1, size=(100, 3)).astype(np.float32)
    a, _ = model.predict(obs)
    b, _ = loaded.predict(obs)
    assert a.shape == (100, 1)
    assert np.array_equal(a, b)
    assert np.array_equal(model.predict(obs[0])[0], loaded.predict(obs[0])[0])
    for key, value in model.policy.state_dict().items():
        assert torch.equal(value, loaded.policy.state_dict()[key])
    assert loaded.num_timesteps == 400 and loaded._n_updates == model._n_updates
    assert loaded.policy_delay == 2 and loaded.gamma == model.gamma


def test_zip_holds_json_and_state_dicts_only(trained):
    _, path = trained
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        meta = json.loads(archive.read("metadata.json"))
    assert names == {
        "metadata.json",
        "policy.pth",
        "actor_optimizer.pth",
        "critic_optimizer.pth",
        "training_state.pth",
    }
    assert meta["algorithm"] == "TD3" and meta["policy"]["class"] == "MlpPolicy"
    assert meta["policy"]["kwargs"]["activation_fn"] == "torch.nn.ReLU"
    assert meta["action_noise"]["type"] == "NormalActionNoise"
    assert meta["pickled_keys"] == []


def test_load_with_mismatched_env_raises(trained):
    _, path = trained
    with pytest.raises(ValueError, match="observation_space"):
        TD3.load(path, env="MountainCarContinuous-v0")


def test_load_wrong_algorithm_class_raises(trained):
    _, path = trained
    with pytest.raises(ModelFileError, match="TD3 model"):
        DDPG.load(path)


def test_load_garbage_raises_model_file_error(tmp_path):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip at all")
    with pytest.raises(ModelFileError):
        TD3.load(bad)


def test_continue_training_with_buffer(tmp_path):
    model = TD3("MlpPolicy", "Pendulum-v1", **SMALL).learn(500)
    model.save(tmp_path / "m.zip")
    model.save_replay_buffer(tmp_path / "buffer.npz")
    loaded = TD3.load(tmp_path / "m.zip", env=gym.make("Pendulum-v1"))
    loaded.load_replay_buffer(tmp_path / "buffer.npz")
    assert loaded.replay_buffer.size() == 500
    np.testing.assert_array_equal(loaded.replay_buffer.observations[:500], model.replay_buffer.observations[:500])
    loaded.learn(300, reset_num_timesteps=False)
    assert loaded.num_timesteps == 800
    assert loaded.replay_buffer.size() == 800
    assert loaded._n_updates == model._n_updates + 300


def test_schedules_and_noise_saved_declaratively(tmp_path):
    noise = OrnsteinUhlenbeckActionNoise([0.0], [0.3], decay=0.999)
    model = TD3("MlpPolicy", "Pendulum-v1", **SMALL, learning_rate=LinearSchedule(1e-3, 1e-4), action_noise=noise)
    model.save(tmp_path / "m.zip")
    loaded = TD3.load(tmp_path / "m.zip")
    assert loaded.learning_rate == LinearSchedule(1e-3, 1e-4)
    assert isinstance(loaded.action_noise, OrnsteinUhlenbeckActionNoise)
    assert loaded.action_noise.decay == 0.999


def test_lambda_schedule_needs_allow_pickle_or_custom_objects(tmp_path):
    model = TD3("MlpPolicy", "Pendulum-v1", **SMALL, learning_rate=lambda p: 1e-3 * p)
    model.save(tmp_path / "m.zip")
    with pytest.raises(ModelFileError, match="learning_rate"):
        TD3.load(tmp_path / "m.zip")
    loaded = TD3.load(tmp_path / "m.zip", allow_pickle=True)
    assert loaded.learning_rate(0.5) == pytest.approx(5e-4)
    replaced = TD3.load(tmp_path / "m.zip", custom_objects={"learning_rate": 3e-4})
    assert replaced.learning_rate(0.5) == pytest.approx(3e-4)


def test_save_is_atomic_no_temp_files_left(tmp_path, trained):
    model, _ = trained
    model.save(tmp_path / "again.zip")
    model.save(tmp_path / "again.zip")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize("cls", [TD3, DDPG])
def test_save_exclude_leaves_hyperparameters_to_the_defaults(tmp_path, cls):
    """SB3's ``save(path, exclude=, include=)``: excluded hyperparameters load as the constructor's defaults."""
    model = cls("MlpPolicy", "Pendulum-v1", verbose=2, tau=0.01, learning_rate=3e-4, policy_kwargs={"net_arch": [8]})
    path = tmp_path / "m.zip"
    model.save(path, exclude=["verbose", "tau", "learning_rate", "env", "replay_buffer"])
    with zipfile.ZipFile(path) as archive:
        metadata = json.loads(archive.read("metadata.json"))
    assert metadata["excluded"] == ["learning_rate", "tau", "verbose"]
    assert "verbose" not in metadata["hyperparameters"] and "learning_rate" not in metadata["schedules"]
    loaded = cls.load(path)
    assert (loaded.verbose, loaded.tau, loaded.learning_rate(1.0)) == (0, 0.005, 1e-3)
    assert loaded.gamma == model.gamma
    for key, value in model.policy.state_dict().items():
        assert torch.equal(value, loaded.policy.state_dict()[key])
    model.save(path, exclude=["verbose"], include=["verbose"])  # include wins, as in SB3
    assert cls.load(path).verbose == 2


def test_save_include_replay_buffer_stores_the_buffer(tmp_path):
    model = TD3("MlpPolicy", "Pendulum-v1", **SMALL).learn(150)
    model.save(tmp_path / "m.zip", include=["replay_buffer"])
    assert TD3.load(tmp_path / "m.zip").replay_buffer.size() == 150


def test_save_exclude_include_refuse_bad_names(tmp_path):
    model = DDPG("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [8]})
    with pytest.raises(ValueError, match="exclude: 'buffer_size' cannot be left out.*'verbose'"):
        model.save(tmp_path / "m.zip", exclude=["buffer_size"])
    with pytest.raises(ValueError, match="exclude: 'policy_delay'"):  # DDPG fixes it
        model.save(tmp_path / "m.zip", exclude=["policy_delay"])
    with pytest.raises(ValueError, match="include: 'env' cannot be stored"):
        model.save(tmp_path / "m.zip", include=["env"])
    with pytest.raises(TypeError, match="exclude must be a list"):
        model.save(tmp_path / "m.zip", exclude="verbose")
    with pytest.raises(TypeError, match="include must hold attribute names"):
        model.save(tmp_path / "m.zip", include=[1])
    assert not (tmp_path / "m.zip").exists()


def test_load_refuses_a_file_excluding_what_it_cannot(tmp_path):
    model = TD3("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [8]})
    model.save(tmp_path / "m.zip", exclude=["verbose"])
    with zipfile.ZipFile(tmp_path / "m.zip") as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    metadata = json.loads(entries["metadata.json"])
    metadata["excluded"] = ["buffer_size"]
    entries["metadata.json"] = json.dumps(metadata).encode()
    with zipfile.ZipFile(tmp_path / "bad.zip", "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    with pytest.raises(ModelFileError, match="excluded names 'buffer_size'"):
        TD3.load(tmp_path / "bad.zip")


class _CountResets(gym.Wrapper):
    def __init__(self, env):
        super().__init__(env)
        self.resets = 0

    def reset(self, **kwargs):
        self.resets += 1
        return super().reset(**kwargs)


def test_load_force_reset_false_goes_on_from_the_envs_as_they_stand(tmp_path):
    """SB3's ``load(path, env=the same env, force_reset=False)``: no reset, the saved last observation goes on."""
    counted = _CountResets(gym.make("Pendulum-v1"))
    model = TD3("MlpPolicy", counted, learning_starts=50, train_freq=4, policy_kwargs={"net_arch": [8]}, seed=1)
    model.learn(64)
    last_obs, resets = model._last_obs.copy(), counted.resets
    env = model.get_env()
    model.save(tmp_path / "m.zip")
    loaded = TD3.load(tmp_path / "m.zip", env=env, force_reset=False)
    assert np.array_equal(loaded._last_obs, last_obs)
    loaded.learn(8, reset_num_timesteps=False)
    assert counted.resets == resets  # the episode in flight went on (Pendulum's run 200 steps)
    assert loaded.num_timesteps == 72
    assert np.array_equal(loaded.replay_buffer.observations[0], last_obs[0])  # the first new row starts there
    # force_reset=True (the default): no last observation is kept, the next learn starts from a reset
    again = TD3.load(tmp_path / "m.zip", env=env)
    assert again._last_obs is None
    again.learn(8, reset_num_timesteps=False)
    assert counted.resets == resets + 2  # the reset at load (envs brought to the saved state), then the episode's
    assert again.num_timesteps == 72


def test_load_onto_more_envs_continues_the_saved_noise_in_env_0(tmp_path):
    """A file saved on one env loads onto two: the saved noise continues in env 0, env 1 gets a fresh copy."""
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=20, policy_kwargs={"net_arch": [8]}, seed=0).learn(30)
    assert model.action_noise is not None
    model.save(tmp_path / "m.zip")
    two = gym.vector.SyncVectorEnv([lambda: gym.make("Pendulum-v1")] * 2)
    loaded = TD3.load(tmp_path / "m.zip", env=two)
    assert loaded.n_envs == 2 and loaded._last_obs is None
    assert loaded.action_noise.noises[0].state_dict() == model.action_noise.state_dict()
    loaded.learn(10, reset_num_timesteps=False)
    assert loaded.num_timesteps == 40

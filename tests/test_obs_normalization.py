"""policy_kwargs=dict(normalize_obs=True): running observation statistics inside the policy."""

from __future__ import annotations

import io
import zipfile

import gymnasium as gym
import numpy as np
import onnxruntime as ort
import pytest
import torch
from gymnasium import spaces
from learning_cases import NORMALIZE_OBS, run_case

from rlkit_td3 import DDPG, TD3
from rlkit_td3.evaluation import evaluate_policy
from rlkit_td3.export import export
from rlkit_td3.fileio.serialization import ModelFileError
from rlkit_td3.running_mean_std import RunningMeanStd

SMALL = {"net_arch": [16], "normalize_obs": True}


class Recorder(gym.Wrapper):
    """Keeps every observation the env returns (from reset and from step)."""

    def __init__(self, env, log):
        super().__init__(env)
        self.log = log

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.log.append(np.array(obs))
        return obs, info

    def step(self, action):
        obs, *rest = self.env.step(action)
        self.log.append(np.array(obs))
        return obs, *rest


def _reference(observations):
    """SB3 VecNormalize's statistics of these observations: a pseudo-sample (0, 1, weight 1e-4) plus the data."""
    rms = RunningMeanStd(shape=observations[0].shape)
    rms.update(np.array(observations, dtype=np.float64))
    return rms


@pytest.mark.parametrize("n_envs", [1, 3])
def test_statistics_are_those_of_every_observation_the_env_returned(n_envs):
    log: list[np.ndarray] = []
    if n_envs == 1:
        env = Recorder(gym.make("Pendulum-v1", max_episode_steps=50), log)
    else:  # gymnasium's next-step autoreset: the reset observations come back from step()
        env = gym.vector.SyncVectorEnv(
            [lambda: Recorder(gym.make("Pendulum-v1", max_episode_steps=50), log) for _ in range(n_envs)]
        )
    model = TD3("MlpPolicy", env, learning_starts=60, policy_kwargs=SMALL, seed=0)
    model.learn(150)
    stats, ref = model.policy.obs_normalizer, _reference(log)
    assert float(stats.count) == pytest.approx(len(log) + 1e-4, abs=1e-9)
    np.testing.assert_allclose(stats.mean.numpy(), ref.mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(stats.var.numpy(), ref.var, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(stats.mean.numpy(), np.mean(log, axis=0), rtol=0, atol=1e-5)  # plain numpy
    assert stats.mean.dtype == stats.var.dtype == torch.float64


def test_the_buffer_keeps_raw_observations_and_the_networks_see_normalised_ones():
    log: list[np.ndarray] = []
    model = TD3("MlpPolicy", Recorder(gym.make("Pendulum-v1"), log), learning_starts=50, policy_kwargs=SMALL, seed=0)
    model.learn(100)
    np.testing.assert_array_equal(model.replay_buffer.observations[:100], np.array(log[:100], dtype=np.float32))
    batch = model.replay_buffer.sample(8)
    normalised = model.policy.normalize_batch(batch)
    stats = model.policy.obs_normalizer
    expected = (batch.observations - stats.mean.float()) / torch.sqrt(stats.var + 1e-8).float()
    torch.testing.assert_close(normalised.observations, expected.clamp(-10, 10))
    assert not torch.equal(normalised.next_observations, batch.next_observations)
    plain = TD3("MlpPolicy", "Pendulum-v1", learning_starts=50, policy_kwargs={"net_arch": [16]}, seed=0)
    assert plain.policy.obs_normalizer is None and plain.policy.normalize_batch(batch) is batch


def test_predict_and_evaluation_do_not_update_the_statistics():
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=50, policy_kwargs=SMALL, seed=0).learn(100)
    before = {k: v.clone() for k, v in model.policy.obs_normalizer.state_dict().items()}
    model.predict(np.zeros((5, 3), np.float32))
    evaluate_policy(model, gym.make("Pendulum-v1"), n_eval_episodes=1)
    after = model.policy.obs_normalizer.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_save_load_restores_the_statistics_bit_for_bit_and_predicts_the_same(tmp_path):
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=50, policy_kwargs=SMALL, seed=0).learn(120)
    model.save(tmp_path / "m.zip")
    loaded = TD3.load(tmp_path / "m.zip")
    for name in ("mean", "var", "count"):
        assert torch.equal(getattr(loaded.policy.obs_normalizer, name), getattr(model.policy.obs_normalizer, name))
    obs = np.random.default_rng(0).uniform(-5, 5, (1000, 3)).astype(np.float32)
    np.testing.assert_array_equal(loaded.predict(obs)[0], model.predict(obs)[0])


@pytest.mark.parametrize("algo", [TD3, DDPG])
def test_exact_resume_with_normalize_obs(tmp_path, algo):
    kwargs = dict(learning_starts=100, batch_size=16, policy_kwargs=SMALL, seed=3)
    first = algo("MlpPolicy", "Pendulum-v1", **kwargs).learn(400)  # 400: an episode boundary
    first.save(tmp_path / "c.zip", include_buffer=True)
    resumed = algo.load(tmp_path / "c.zip", env=gym.make("Pendulum-v1"))
    resumed.learn(200, reset_num_timesteps=False)
    reference = algo("MlpPolicy", "Pendulum-v1", **kwargs)
    reference.learn(400)
    reference.learn(200, reset_num_timesteps=False)
    for a, b in zip(reference.policy.state_dict().values(), resumed.policy.state_dict().values()):
        assert torch.equal(a, b)
    assert float(resumed.policy.obs_normalizer.count) == pytest.approx(603 + 1e-4)


def _rewrite_policy_tensor(path, name, value):
    with zipfile.ZipFile(path) as z:
        entries = {n: z.read(n) for n in z.namelist()}
    state = torch.load(io.BytesIO(entries["policy.pth"]), weights_only=True)
    state[name] = value
    buf = io.BytesIO()
    torch.save(state, buf)
    entries["policy.pth"] = buf.getvalue()
    with zipfile.ZipFile(path, "w") as z:
        for n, data in entries.items():
            z.writestr(n, data)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("obs_normalizer.var", torch.tensor([1.0, -1.0, 1.0], dtype=torch.float64)),
        ("obs_normalizer.mean", torch.tensor([0.0, float("nan"), 0.0], dtype=torch.float64)),
        ("obs_normalizer.count", torch.tensor(0.0, dtype=torch.float64)),
        ("obs_normalizer.mean", torch.zeros(4, dtype=torch.float64)),
    ],
)
def test_bad_statistics_in_a_file_are_a_model_file_error(tmp_path, name, value):
    path = tmp_path / "m.zip"
    TD3("MlpPolicy", "Pendulum-v1", learning_starts=50, policy_kwargs=SMALL, seed=0).learn(60).save(path)
    _rewrite_policy_tensor(path, name, value)
    with pytest.raises(ModelFileError):
        TD3.load(path)


def test_exported_actors_include_the_normalisation(tmp_path):
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=50, policy_kwargs=SMALL, seed=0).learn(300)
    assert float(model.policy.obs_normalizer.var.max()) > 2  # statistics far from the identity
    obs = np.random.default_rng(1).uniform(-8, 8, (1000, 3)).astype(np.float32)
    expected = model.predict(obs)[0]
    scripted = torch.jit.load(str(export(model, tmp_path / "a.pt")))
    assert np.abs(scripted(torch.as_tensor(obs)).numpy() - expected).max() <= 1e-5
    session = ort.InferenceSession(str(export(model, tmp_path / "a.onnx", format="onnx")))
    assert np.abs(session.run(["action"], {"observation": obs})[0] - expected).max() <= 1e-5


def test_only_plain_box_observations_are_normalised():
    dict_env_space = spaces.Dict({"a": spaces.Box(-1, 1, (2,), np.float32)})
    from rlkit_td3.policies import MultiInputPolicy, TD3Policy

    with pytest.raises(ValueError, match="normalize_obs=True needs a Box observation space"):
        MultiInputPolicy(dict_env_space, spaces.Box(-1, 1, (1,), np.float32), normalize_obs=True)
    with pytest.raises(ValueError, match="not an image"):
        TD3Policy(
            spaces.Box(0, 255, (1, 36, 36), np.uint8),
            spaces.Box(-1, 1, (1,), np.float32),
            normalize_obs=True,
            features_extractor_class=__import__("rlkit_td3.torch_layers").torch_layers.NatureCNN,
        )
    with pytest.raises(TypeError, match="normalize_obs must be a bool"):
        TD3("MlpPolicy", "Pendulum-v1", policy_kwargs={"normalize_obs": "yes"})


def test_td3_learns_from_badly_scaled_observations_with_normalize_obs():
    """Pendulum with observations at (obs + 3) * 100 (`learning_cases.ScaledPendulum`): with ``normalize_obs`` TD3
    still learns; the median return over three seeds of `learning_cases.NORMALIZE_OBS` (shared with
    benchmarks/learning_paths.py, which runs it under every float path) reaches the threshold."""
    result = run_case(NORMALIZE_OBS)
    print(result.describe())
    assert result.passed, result.describe()


def test_a_policy_saved_on_its_own_keeps_its_statistics(tmp_path):
    from rlkit_td3.policies import TD3Policy

    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=50, policy_kwargs=SMALL, seed=0).learn(120)
    model.policy.save(tmp_path / "policy.zip")
    policy = TD3Policy.load(tmp_path / "policy.zip")
    assert torch.equal(policy.obs_normalizer.var, model.policy.obs_normalizer.var)
    obs = np.random.default_rng(2).uniform(-5, 5, (100, 3)).astype(np.float32)
    np.testing.assert_array_equal(policy.predict(obs)[0], model.predict(obs)[0])

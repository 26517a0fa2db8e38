"""VecNormalize and RunningMeanStd: statistics, clipping, reward scaling, freezing, safe save/load."""

from __future__ import annotations

import importlib.util
import io
import json
import pickle
import zipfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from conftest import make_counter
from gymnasium import spaces

from rlkit_td3.running_mean_std import RunningMeanStd
from rlkit_td3.vec_env import DummyVecEnv, VecNormalize

DATA = Path(__file__).resolve().parent / "data"
_spec = importlib.util.spec_from_file_location("sb3_vec_normalize_fixture", DATA / "sb3_vec_normalize_fixture.py")
_fixture = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixture)
N_STEPS, rollout = _fixture.N_STEPS, _fixture.rollout  # the rollout that made sb3_vec_normalize.pkl

PRIOR = 1e-4  # RunningMeanStd's initial pseudo-count (mean 0, variance 1), as SB3


def pooled(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of ``samples`` pooled with the prior pseudo-sample, computed directly in float64."""
    samples = np.asarray(samples, dtype=np.float64)
    total = PRIOR + len(samples)
    mean = samples.sum(axis=0) / total
    var = (PRIOR * (1.0 + mean**2) + np.square(samples - mean).sum(axis=0)) / total
    return mean, var


class NoisyEnv(gym.Env):
    """Observations ~ N(loc, scale) per dimension from the env's generator; rewards = 3 * obs[0]; 4-step episodes."""

    def __init__(self, loc=(5.0, -2.0), scale=(3.0, 0.5), length=4):
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self.loc, self.scale, self.length = np.array(loc), np.array(scale), length

    def _obs(self):
        return (self.loc + self.scale * self.np_random.standard_normal(2)).astype(np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        obs = self._obs()
        return obs, float(3.0 * obs[0]), self.t >= self.length, False, {}


def noisy_venv(n_envs=3, seed=0, **kwargs) -> VecNormalize:
    venv = DummyVecEnv([NoisyEnv for _ in range(n_envs)])
    venv.seed(seed)
    return VecNormalize(venv, **kwargs)


def run(venv: VecNormalize, n_steps: int):
    """Step with zero actions; return the original and normalised observations, rewards and dones."""
    actions = np.zeros((venv.num_envs, 1), dtype=np.float32)
    originals, normalised, rewards, raw_rewards, dones = [], [], [], [], []
    for _ in range(n_steps):
        obs, reward, done, _ = venv.step(actions)
        originals.append(venv.get_original_obs())
        normalised.append(obs)
        rewards.append(reward)
        raw_rewards.append(venv.get_original_reward())
        dones.append(done)
    return tuple(np.array(x) for x in (originals, normalised, rewards, raw_rewards, dones))


def test_running_mean_std_equals_pooled_numpy_statistics():
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, size=(n, 4)) for n in (1, 7, 50, 3)]
    rms = RunningMeanStd(shape=(4,))
    for batch in batches:
        rms.update(batch)
    mean, var = pooled(np.concatenate(batches))
    np.testing.assert_allclose(rms.mean, mean, rtol=1e-12)
    np.testing.assert_allclose(rms.var, var, rtol=1e-12)
    assert rms.count == pytest.approx(PRIOR + 61) and rms.mean.dtype == rms.var.dtype == np.float64
    # combine() merges like one long stream
    left, right = RunningMeanStd(shape=(4,)), RunningMeanStd(epsilon=1e-300, shape=(4,))
    left.update(batches[0])
    for batch in batches[1:]:
        right.update(batch)
    left.combine(right)
    np.testing.assert_allclose(left.mean, mean, rtol=1e-10)
    np.testing.assert_allclose(left.var, var, rtol=1e-10)
    with pytest.raises(ValueError, match=r"shape \(batch, \*\(4,\)\)"):
        rms.update(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="epsilon"):
        RunningMeanStd(epsilon=-1e-8)


def test_running_mean_std_without_prior_and_broadcast_samples():
    """SB3's contract: epsilon=0 gives the plain sample statistics; a sample shape that broadcasts is accepted."""
    rng = np.random.default_rng(1)
    batches = [rng.normal(size=n) for n in (3, 4, 5)]
    rms = RunningMeanStd(epsilon=0.0)
    assert rms.count == 0.0
    rms.update(np.zeros((0,)))  # nothing seen: still no statistics to divide
    for batch in batches:
        rms.update(batch)
    pooled_values = np.concatenate(batches)
    assert rms.mean == pytest.approx(pooled_values.mean()) and rms.var == pytest.approx(pooled_values.var())
    # an array of shape (3,) on statistics of shape (3,) is three scalar samples, each entry updated alike
    wide = RunningMeanStd(epsilon=0.0, shape=(3,))
    wide.update(np.array([1.0, 2.0, 6.0]))
    np.testing.assert_allclose(wide.mean, [3.0] * 3)
    np.testing.assert_allclose(wide.var, [np.var([1.0, 2.0, 6.0])] * 3)
    assert wide.count == 3.0
    with pytest.raises(ValueError, match="broadcasts to"):
        wide.update(np.zeros((2, 2)))


def test_observation_statistics_equal_numpy_over_observations_seen():
    venv = noisy_venv()
    reset_obs = venv.reset()
    seen = [venv.get_original_obs()]
    originals, normalised, *_ = run(venv, 40)
    seen = np.concatenate([seen[0], originals.reshape(-1, 2)]).astype(np.float64)
    mean, var = pooled(seen)
    np.testing.assert_allclose(venv.obs_rms.mean, mean, rtol=1e-12)
    np.testing.assert_allclose(venv.obs_rms.var, var, rtol=1e-12)
    assert venv.obs_rms.count == pytest.approx(PRIOR + len(seen))
    # and, up to the prior's weight of 1e-4 samples, numpy's own mean and variance
    np.testing.assert_allclose(venv.obs_rms.mean, seen.mean(axis=0), rtol=1e-5)
    np.testing.assert_allclose(venv.obs_rms.var, seen.var(axis=0), rtol=1e-4)
    np.testing.assert_allclose(venv.obs_rms.mean, [5.0, -2.0], atol=0.6)
    # the last observations were normalised with the statistics that include them
    expected = (originals[-1] - venv.obs_rms.mean) / np.sqrt(venv.obs_rms.var + 1e-8)
    np.testing.assert_array_equal(normalised[-1], np.clip(expected, -10, 10).astype(np.float32))
    assert normalised.dtype == np.float32 and reset_obs.dtype == np.float32


def test_clipping_of_observations_and_rewards():
    venv = noisy_venv(clip_obs=0.5, clip_reward=0.2)
    venv.reset()
    _, normalised, rewards, *_ = run(venv, 30)
    assert np.abs(normalised).max() == pytest.approx(0.5) and (np.abs(normalised) == np.float32(0.5)).any()
    assert np.abs(rewards).max() == pytest.approx(0.2) and (np.abs(rewards) == 0.2).any()
    unclipped = noisy_venv(clip_obs=100.0, clip_reward=100.0)
    unclipped.reset()
    _, normalised, rewards, *_ = run(unclipped, 30)
    assert np.abs(normalised).max() > 0.5 and np.abs(rewards).max() > 0.2


def test_reward_normalisation_by_the_std_of_discounted_returns():
    gamma = 0.9
    venv = noisy_venv(gamma=gamma)
    venv.reset()
    _, _, rewards, raw, dones = run(venv, 12)  # 4-step episodes: the returns restart 3 times
    returns, history = np.zeros(venv.num_envs), []
    for t in range(len(raw)):
        returns = returns * gamma + raw[t]
        history.append(returns.copy())
        _, var = pooled(np.concatenate(history))
        expected = np.clip(raw[t] / np.sqrt(var + 1e-8), -10, 10).astype(np.float32)  # float32, as SB3 returns
        assert rewards[t].dtype == np.float32
        np.testing.assert_array_equal(rewards[t], expected)
        returns[dones[t]] = 0.0
    assert dones[3].all() and dones[7].all()
    np.testing.assert_allclose(venv.ret_rms.var, pooled(np.concatenate(history))[1], rtol=1e-12)
    # rewards are scaled, not centred
    assert (np.sign(rewards) == np.sign(raw)).all()
    no_reward_norm = noisy_venv(norm_reward=False)
    no_reward_norm.reset()
    _, _, rewards, raw, _ = run(no_reward_norm, 5)
    np.testing.assert_array_equal(rewards, raw)


def test_training_false_freezes_the_statistics():
    venv = noisy_venv()
    venv.reset()
    run(venv, 10)
    frozen = venv.get_state()
    venv.training = False
    venv.reset()
    run(venv, 10)
    after = venv.get_state()
    assert frozen["arrays"].keys() - {"returns"} == {
        f"{s}.{m}" for s in ("obs_rms", "ret_rms") for m in ("mean", "var", "count")
    }
    for name in frozen["arrays"].keys() - {"returns"}:  # the running returns move on, the statistics do not
        np.testing.assert_array_equal(after["arrays"][name], frozen["arrays"][name], err_msg=name)
    venv.training = True
    run(venv, 1)
    assert venv.obs_rms.count == frozen["arrays"]["obs_rms.count"] + venv.num_envs


def test_terminal_observation_is_normalised_without_updating():
    venv = VecNormalize(DummyVecEnv([lambda: make_counter(2)]))
    venv.reset()
    venv.step(np.zeros((1, 1), np.float32))
    _, _, dones, infos = venv.step(np.zeros((1, 1), np.float32))
    assert dones[0]
    expected = (np.array([0.0, 2.0]) - venv.obs_rms.mean) / np.sqrt(venv.obs_rms.var + 1e-8)
    np.testing.assert_array_equal(infos[0]["terminal_observation"], expected.astype(np.float32))
    assert venv.obs_rms.count == pytest.approx(PRIOR + 3)  # reset + 2 steps; the terminal obs is not counted


def test_save_load_restores_statistics_bit_for_bit(tmp_path):
    venv = noisy_venv(gamma=0.95, clip_obs=4.0)
    venv.reset()
    run(venv, 25)
    path = tmp_path / "vec_normalize.pkl"
    venv.save(path)
    assert zipfile.is_zipfile(path)
    with zipfile.ZipFile(path) as archive:
        assert sorted(archive.namelist()) == ["statistics.npz", "vec_normalize.json"]
        config = json.loads(archive.read("vec_normalize.json"))
    assert config["gamma"] == 0.95 and config["clip_obs"] == 4.0

    # the wrapped env continues from the same point as a fresh copy of it, so the outputs can be compared
    twin = noisy_venv(gamma=0.95, clip_obs=4.0)
    twin.reset()
    run(twin, 25)
    loaded = VecNormalize.load(path, twin.venv)
    state, loaded_state = venv.get_state(), loaded.get_state()
    assert loaded_state["config"] == state["config"]
    for name, array in state["arrays"].items():
        assert loaded_state["arrays"][name].dtype == np.float64
        np.testing.assert_array_equal(loaded_state["arrays"][name], array, err_msg=name)
        assert loaded_state["arrays"][name].tobytes() == array.tobytes()
    assert loaded.obs_rms.count == venv.obs_rms.count and loaded.ret_rms.count == venv.ret_rms.count
    np.testing.assert_array_equal(loaded.returns, venv.returns)  # mid-episode: the running returns come back too
    assert venv.returns.any()
    # identical normalised outputs afterwards (statistics keep updating identically too)
    a, b = run(venv, 10), run(loaded, 10)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_get_state_set_state_round_trip_is_json_and_arrays():
    venv = noisy_venv()
    venv.reset()
    run(venv, 5)
    state = venv.get_state()
    json.dumps(state["config"], allow_nan=False)
    assert all(isinstance(a, np.ndarray) for a in state["arrays"].values())
    other = noisy_venv(clip_obs=3.0, training=False)
    other.set_state(state)
    assert other.clip_obs == 10.0 and other.training is True
    for name, array in state["arrays"].items():
        np.testing.assert_array_equal(other.get_state()["arrays"][name], array)
    state["arrays"]["obs_rms.mean"] = np.zeros(5)
    state["arrays"]["obs_rms.var"] = np.ones(5)
    with pytest.raises(ValueError, match="shape"):
        other.set_state(state)
    assert other.obs_rms.mean.shape == (2,)  # a refused state changes nothing
    with pytest.raises(ValueError, match="format"):
        other.set_state({"config": {"format": "other"}, "arrays": {}})


def test_load_refuses_pickles_unless_allowed_and_reads_sb3_files(tmp_path):
    sb3_file = DATA / "sb3_vec_normalize.pkl"
    venv = DummyVecEnv([lambda: gym.make("Pendulum-v1") for _ in range(2)])
    with pytest.raises(ValueError, match="allow_pickle=True"):
        VecNormalize.load(sb3_file, venv)
    loaded = VecNormalize.load(sb3_file, venv, allow_pickle=True)
    # the same rollout with rlkit_td3 gives the same statistics (SB3 averages float32 batches in float32)
    ours = rollout(DummyVecEnv, VecNormalize)
    assert loaded.gamma == 0.9 and loaded.obs_rms.count == ours.obs_rms.count == 2 * (N_STEPS + 1) + PRIOR
    np.testing.assert_allclose(loaded.obs_rms.mean, ours.obs_rms.mean, rtol=1e-6)
    np.testing.assert_allclose(loaded.obs_rms.var, ours.obs_rms.var, rtol=1e-6)
    np.testing.assert_allclose(loaded.ret_rms.var, ours.ret_rms.var, rtol=1e-6)
    # a pickle that is not SB3's VecNormalize
    other = tmp_path / "other.pkl"
    other.write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(ValueError, match="not a Stable-Baselines3 VecNormalize"):
        VecNormalize.load(other, venv, allow_pickle=True)
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"hello")
    with pytest.raises(ValueError, match="not a VecNormalize file"):
        VecNormalize.load(garbage, venv)


def test_load_refuses_a_mismatched_env(tmp_path):
    venv = noisy_venv()
    venv.reset()
    venv.save(tmp_path / "stats.zip")
    with pytest.raises(ValueError, match="shape"):
        VecNormalize.load(tmp_path / "stats.zip", DummyVecEnv([lambda: gym.make("Pendulum-v1")]))
    with pytest.raises(ValueError, match="already wraps"):
        venv.set_venv(DummyVecEnv([NoisyEnv]))


def test_dict_observations_and_norm_obs_keys():
    def make():
        env = NoisyEnv()
        space = spaces.Dict({"a": env.observation_space, "b": env.observation_space})
        return gym.wrappers.TransformObservation(env, lambda o: {"a": o, "b": o}, space)

    venv = VecNormalize(DummyVecEnv([make, make]), norm_obs_keys=["a"])
    venv.seed(0)
    obs = venv.reset()
    assert set(venv.obs_rms) == {"a"}
    np.testing.assert_array_equal(obs["b"], venv.get_original_obs()["b"])  # not normalised
    assert not np.array_equal(obs["a"], obs["b"])
    obs, *_ = venv.step(np.zeros((2, 1), np.float32))
    np.testing.assert_allclose(venv.unnormalize_obs(obs)["a"], venv.get_original_obs()["a"], rtol=1e-5)
    with pytest.raises(ValueError, match="norm_obs_keys entry 'c'"):
        VecNormalize(DummyVecEnv([make]), norm_obs_keys=["c"])


def test_bad_settings_are_refused():
    def discrete():
        return gym.make("CartPole-v1")

    with pytest.raises(ValueError, match="norm_obs=False"):
        VecNormalize(DummyVecEnv([lambda: gym.wrappers.TimeLimit(_DiscreteObsEnv(), 3)]))
    VecNormalize(DummyVecEnv([lambda: gym.wrappers.TimeLimit(_DiscreteObsEnv(), 3)]), norm_obs=False)
    for kwargs, name in (({"clip_obs": -1}, "clip_obs"), ({"gamma": 1.5}, "gamma"), ({"epsilon": 0}, "epsilon")):
        with pytest.raises(ValueError, match=name):
            VecNormalize(DummyVecEnv([discrete]), **kwargs)


class _DiscreteObsEnv(gym.Env):
    observation_space = spaces.Discrete(3)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        return 0, {}

    def step(self, action):
        return 1, 0.0, False, False, {}


class ImageEnv(gym.Env):
    observation_space = spaces.Box(0, 255, shape=(4, 4, 3), dtype=np.uint8)
    action_space = spaces.Box(-1, 1, shape=(1,), dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.np_random.integers(0, 256, (4, 4, 3), dtype=np.uint8), {}

    def step(self, action):
        return self.reset()[0], 0.0, False, False, {}


def test_image_observations_get_a_float_space():
    venv = VecNormalize(DummyVecEnv([ImageEnv]), clip_obs=5.0)
    assert venv.observation_space == spaces.Box(-5.0, 5.0, (4, 4, 3), np.float32)
    obs = venv.reset()
    assert obs.dtype == np.float32 and venv.observation_space.contains(obs[0])


def test_loaded_image_normalization_keeps_the_float_space(tmp_path):
    # issue 32, bug 3: the loaded wrapper kept Box(0, 255, uint8) while returning normalised float32
    venv = VecNormalize(DummyVecEnv([ImageEnv]), clip_obs=5.0)
    venv.reset()
    venv.save(tmp_path / "vec_normalize.pkl")
    loaded = VecNormalize.load(tmp_path / "vec_normalize.pkl", DummyVecEnv([ImageEnv]))
    assert loaded.observation_space == spaces.Box(-5.0, 5.0, (4, 4, 3), np.float32)
    obs = loaded.reset()
    assert obs.dtype == np.float32 and loaded.observation_space.contains(obs[0])
    plain = VecNormalize.load(tmp_path / "vec_normalize.pkl", DummyVecEnv([ImageEnv]))
    plain.norm_obs = False  # the space follows the wrapper's own settings, not only the file's
    assert plain._normalized_space(plain.venv.observation_space) == ImageEnv.observation_space


class _Evil:
    """Unpickling this creates the file named in ``path``."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


def test_load_never_runs_code_from_the_file_without_allow_pickle(tmp_path):
    venv = DummyVecEnv([NoisyEnv])
    marker = tmp_path / "pwned"
    for protocol in (0, 2, 5):
        evil = tmp_path / f"evil{protocol}.pkl"
        evil.write_bytes(pickle.dumps(_Evil(str(marker)), protocol=protocol))
        with pytest.raises(ValueError):
            VecNormalize.load(evil, venv)
        assert not marker.exists()
    # a zip in the safe format whose arrays hide a pickled object
    good = noisy_venv()
    good.save(tmp_path / "good.zip")
    with zipfile.ZipFile(tmp_path / "good.zip") as archive:
        config = archive.read("vec_normalize.json")
    buf = io.BytesIO()
    np.savez(buf, **{"ret_rms.mean": np.array([_Evil(str(marker))], dtype=object)})
    with zipfile.ZipFile(tmp_path / "evil.zip", "w") as archive:
        archive.writestr("vec_normalize.json", config)
        archive.writestr("statistics.npz", buf.getvalue())
    with pytest.raises(ValueError, match="VecNormalize file.*holds object"):
        VecNormalize.load(tmp_path / "evil.zip", venv)
    assert not marker.exists()
    with zipfile.ZipFile(tmp_path / "extra.zip", "w") as archive:
        archive.writestr("vec_normalize.json", config)
        archive.writestr("statistics.npz", b"")
        archive.writestr("../escape", b"")
    with pytest.raises(ValueError, match="entries|unsafe path|unexpected entry"):
        VecNormalize.load(tmp_path / "extra.zip", venv)


def _write_state(path, config, arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("vec_normalize.json", config if isinstance(config, str) else json.dumps(config))
        archive.writestr("statistics.npz", buf.getvalue())


@pytest.mark.parametrize(
    "change, message",
    [
        ({"arrays": {"obs_rms.var": np.array([-1.0, 1.0])}}, r"obs_rms.var must be >= 0"),
        ({"arrays": {"obs_rms.var": np.array([np.nan, 1.0])}}, r"obs_rms.var(.npy)? holds non-finite values"),
        ({"arrays": {"obs_rms.mean": np.array([np.nan, 0.0])}}, r"obs_rms.mean(.npy)? holds non-finite values"),
        ({"arrays": {"obs_rms.mean": np.array([np.inf, 0.0])}}, r"obs_rms.mean(.npy)? holds non-finite values"),
        ({"arrays": {"obs_rms.count": np.array(-3.0)}}, r"obs_rms.count must be a finite number > 0"),
        ({"arrays": {"ret_rms.count": np.array(0.0)}}, r"ret_rms.count must be a finite number > 0"),
        ({"arrays": {"ret_rms.count": np.array([1.0, 2.0])}}, r"ret_rms.count must be one number"),
        ({"arrays": {"ret_rms.mean": np.zeros(3), "ret_rms.var": np.ones(3)}}, r"ret_rms: mean has shape \(3,\)"),
        ({"arrays": {"obs_rms.mean": np.array(["a", "b"])}}, r"obs_rms.mean(.npy holds <U1| must hold real numbers)"),
        ({"config": {"gamma": "0.9"}}, r"gamma must be a number in \[0, 1\], got '0.9'"),
        ({"config": {"gamma": 1.5}}, r"gamma must be a number in \[0, 1\], got 1.5"),
        ({"config": {"epsilon": 1e309}}, r"epsilon must be a finite positive number"),
        # a JSON integer past float64 (fuzz_doors VecNormalize cases 292, 726: a TypeError from np.isfinite)
        ({"config": {"epsilon": 10**400}}, r"epsilon must be a finite positive number, got 1000"),
        ({"config": {"clip_obs": -(2**70)}}, r"clip_obs must be a positive number"),
        ({"config": {"clip_obs": -1.0}}, r"clip_obs must be a positive number"),
    ],
)
def test_load_refuses_crafted_statistics_and_settings(tmp_path, change, message):
    venv = noisy_venv()
    venv.reset()
    run(venv, 5)
    state = venv.get_state()
    state["config"].update(change.get("config", {}))
    state["arrays"].update(change.get("arrays", {}))
    path = tmp_path / "crafted.zip"
    _write_state(path, state["config"], state["arrays"])
    with pytest.raises(ValueError, match=message):
        VecNormalize.load(path, noisy_venv().venv)
    other = noisy_venv()  # the same checks for a state given as Python objects, and nothing changes
    before = other.get_state()
    with pytest.raises(ValueError, match=message):
        other.set_state(state)
    np.testing.assert_array_equal(other.obs_rms.var, before["arrays"]["obs_rms.var"])


def test_load_refuses_deeply_nested_json(tmp_path):
    venv = noisy_venv()
    state = venv.get_state()
    path = tmp_path / "deep.zip"
    _write_state(path, "[" * 100_000 + "]" * 100_000, state["arrays"])
    with pytest.raises(ValueError, match="JSON nested 100000 levels deep, more than 64"):
        VecNormalize.load(path, noisy_venv().venv)


@pytest.mark.parametrize("epsilon", [np.inf, np.nan, 0.0, -1e-8])
def test_epsilon_must_be_finite_and_positive(epsilon):
    with pytest.raises(ValueError, match="epsilon must be a finite positive number"):
        VecNormalize(DummyVecEnv([lambda: make_counter(5)]), epsilon=epsilon)
    VecNormalize(DummyVecEnv([lambda: make_counter(5)]), clip_obs=np.inf, clip_reward=np.float32(3))  # no clipping


def test_policy_observation_statistics_get_the_same_check():
    import torch

    from rlkit_td3 import TD3

    model = TD3("MlpPolicy", make_counter(5), policy_kwargs={"net_arch": [8], "normalize_obs": True}, seed=0)
    state = model.policy.state_dict()
    state["obs_normalizer.var"] = torch.tensor([-1.0, 1.0], dtype=torch.float64)
    with pytest.raises(ValueError, match=r"obs_normalizer.var must be >= 0"):
        model.policy.load_state_dict(state)
    state["obs_normalizer.var"] = torch.ones(2, dtype=torch.float64)
    state["obs_normalizer.count"] = torch.tensor(-1.0, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"obs_normalizer.count must be a finite number > 0"):
        model.policy.load_state_dict(state)

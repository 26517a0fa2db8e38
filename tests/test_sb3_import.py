"""Loading model files written by Stable-Baselines3 2.x TD3 / DDPG (rlkit_td3.persistence.sb3_import)."""

from __future__ import annotations

import base64
import json
import pickle
import warnings
import zipfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import stable_baselines3 as sb3
import torch
from stable_baselines3.common.noise import NormalActionNoise as SB3NormalNoise
from stable_baselines3.common.noise import OrnsteinUhlenbeckActionNoise as SB3OUNoise

from rlkit_td3 import DDPG, TD3
from rlkit_td3.fileio.serialization import ModelFileError
from rlkit_td3.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise
from rlkit_td3.persistence.sb3_import import UnsupportedModelError, is_sb3_zip

N_OBS = 1000


def _observations(space, n: int = N_OBS) -> np.ndarray:
    space.seed(0)
    return np.stack([space.sample() for _ in range(n)])


def _sb3_lr(progress_remaining: float) -> float:
    return 1e-3 * (0.5 + 0.5 * progress_remaining)  # ends at 5e-4


@pytest.fixture(scope="module")
def sb3_td3(tmp_path_factory) -> tuple[Path, sb3.TD3]:
    model = sb3.TD3(
        "MlpPolicy",
        "Pendulum-v1",
        learning_rate=7e-4,
        buffer_size=5_000,
        learning_starts=100,
        batch_size=64,
        tau=0.01,
        gamma=0.97,
        train_freq=(2, "step"),
        gradient_steps=2,
        policy_delay=3,
        target_policy_noise=0.25,
        target_noise_clip=0.4,
        action_noise=SB3NormalNoise(np.array([0.05]), np.array([0.3])),
        policy_kwargs={"net_arch": [32, 32]},
        seed=3,
        device="cpu",
    )
    model.learn(300)
    path = tmp_path_factory.mktemp("sb3") / "td3.zip"
    model.save(path)
    return path, model


@pytest.fixture(scope="module")
def sb3_ddpg(tmp_path_factory) -> tuple[Path, sb3.DDPG]:
    model = sb3.DDPG(
        "MlpPolicy",
        "Pendulum-v1",
        learning_rate=_sb3_lr,
        buffer_size=5_000,
        learning_starts=100,
        batch_size=32,
        action_noise=SB3OUNoise(np.zeros(1), 0.2 * np.ones(1), theta=0.2, dt=0.05),
        policy_kwargs={"net_arch": {"pi": [24], "qf": [32, 16]}, "activation_fn": torch.nn.Tanh},
        seed=4,
        device="cpu",
    )
    model.learn(250)
    path = tmp_path_factory.mktemp("sb3") / "ddpg.zip"
    model.save(path)
    return path, model


def _load(cls, path, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = cls.load(path, device="cpu", **kwargs)
    return model, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def _rewrite(src: Path, dst: Path, data: dict | None = None, replace: dict[str, bytes] | None = None) -> Path:
    """A copy of an SB3 zip with its ``data`` JSON and/or other entries replaced."""
    with zipfile.ZipFile(src) as archive, zipfile.ZipFile(dst, "w") as out:
        for name in archive.namelist():
            payload = archive.read(name)
            if name == "data" and data is not None:
                payload = json.dumps(data).encode()
            payload = (replace or {}).get(name, payload)
            out.writestr(name, payload)
    return dst


def _data(path: Path) -> dict:
    with zipfile.ZipFile(path) as archive:
        return json.loads(archive.read("data"))


# ---------------------------------------------------------------------------- predictions
def test_td3_predictions_equal_sb3(sb3_td3):
    path, sb3_model = sb3_td3
    assert is_sb3_zip(path)
    assert sb3_model._n_updates > 0  # trained: the weights are not the initial ones
    model, messages = _load(TD3, path)
    assert messages == []  # everything a TD3 file needs is readable without pickle
    assert model.sb3_import_report == {}
    obs = _observations(model.observation_space)
    ours, _ = model.predict(obs, deterministic=True)
    theirs, _ = sb3_model.predict(obs, deterministic=True)
    assert ours.shape == theirs.shape == (N_OBS, 1)
    assert np.abs(ours - theirs).max() <= 1e-6
    single, _ = model.predict(obs[0], deterministic=True)
    np.testing.assert_allclose(single, theirs[0], atol=1e-6, rtol=0)


def test_ddpg_dict_net_arch_and_activation(sb3_ddpg):
    path, sb3_model = sb3_ddpg
    model, _ = _load(DDPG, path)
    assert model.policy.net_arch == {"pi": [24], "qf": [32, 16]}
    assert model.policy.activation_fn is torch.nn.Tanh
    assert model.policy.n_critics == 1
    obs = _observations(model.observation_space)
    ours, _ = model.predict(obs, deterministic=True)
    theirs, _ = sb3_model.predict(obs, deterministic=True)
    assert np.abs(ours - theirs).max() <= 1e-6
    # the critics too: our batched ensemble gives SB3's Q-values
    obs_t = torch.as_tensor(obs[:64])
    act_t = torch.as_tensor(model.policy.scale_action(ours[:64]))
    q_ours = model.policy.critic(obs_t, act_t)[0]
    q_theirs = sb3_model.critic(obs_t, act_t)[0].squeeze(-1)
    torch.testing.assert_close(q_ours, q_theirs, atol=1e-5, rtol=1e-5)


def test_hyperparameters_carried(sb3_td3):
    path, sb3_model = sb3_td3
    model, _ = _load(TD3, path)
    assert (model.gamma, model.tau, model.batch_size, model.buffer_size) == (0.97, 0.01, 64, 5_000)
    assert (model.learning_starts, model.train_freq, model.gradient_steps) == (100, (2, "step"), 2)
    assert (model.policy_delay, model.target_policy_noise, model.target_noise_clip) == (3, 0.25, 0.4)
    assert (model.seed, model.num_timesteps, model._n_updates) == (3, 300, sb3_model._n_updates)
    assert model.policy.n_critics == 2 and model.policy.net_arch == [32, 32]
    assert model.policy.activation_fn is torch.nn.ReLU
    assert model.learning_rate(1.0) == 7e-4
    assert model.policy.actor_optimizer.param_groups[0]["lr"] == 7e-4
    noise = model.action_noise
    assert isinstance(noise, NormalActionNoise)
    np.testing.assert_array_equal(noise.mean, [0.05])
    np.testing.assert_array_equal(noise.sigma, [0.3])


def test_n_steps_carried(sb3_td3, tmp_path):
    path, _ = sb3_td3
    assert _data(path)["n_steps"] == 1
    data = {**_data(path), "n_steps": 3}
    model, _ = _load(TD3, _rewrite(path, tmp_path / "n3.zip", data=data))
    assert model.n_steps == 3 and type(model.replay_buffer).__name__ == "NStepReplayBuffer"
    assert model.replay_buffer.n_steps == 3 and model.replay_buffer.gamma == 0.97
    with pytest.raises(ModelFileError, match="n_steps"):
        _load(TD3, _rewrite(path, tmp_path / "n0.zip", data={**data, "n_steps": 0}))


def test_optimizer_states_mapped(sb3_td3):
    path, sb3_model = sb3_td3
    model, _ = _load(TD3, path)
    sb3_actor = sb3_model.actor.optimizer.state_dict()["state"]
    ours_actor = model.policy.actor_optimizer.state_dict()["state"]
    for pid in sb3_actor:
        for key in ("exp_avg", "exp_avg_sq", "step"):
            torch.testing.assert_close(ours_actor[pid][key], sb3_actor[pid][key], atol=0, rtol=0)
    critic = model.policy.critic_optimizer
    sb3_critic_params = dict(sb3_model.critic.named_parameters())
    sb3_critic_state = sb3_model.critic.optimizer.state
    # our weights.1 holds layer 1 (SB3's qf{k}.2) of both critics, transposed
    ours = critic.state[model.policy.critic.weights[1]]
    for k in range(2):
        sb3_state = sb3_critic_state[sb3_critic_params[f"qf{k}.2.weight"]]
        torch.testing.assert_close(ours["exp_avg"][k], sb3_state["exp_avg"].T, atol=0, rtol=0)
        torch.testing.assert_close(ours["exp_avg_sq"][k], sb3_state["exp_avg_sq"].T, atol=0, rtol=0)
    ours_bias = critic.state[model.policy.critic.biases[2]]
    for k in range(2):
        sb3_state = sb3_critic_state[sb3_critic_params[f"qf{k}.4.bias"]]
        torch.testing.assert_close(ours_bias["exp_avg"][k, 0], sb3_state["exp_avg"], atol=0, rtol=0)


def test_schedule_reported_and_read_with_allow_pickle(sb3_ddpg):
    path, sb3_model = sb3_ddpg
    model, messages = _load(DDPG, path)
    assert set(model.sb3_import_report) == {"learning_rate"}
    assert len(messages) == 1 and "learning_rate" in messages[0]
    saved_lr = sb3_model.actor.optimizer.param_groups[0]["lr"]
    assert saved_lr == pytest.approx(5e-4, rel=0.01)
    assert model.learning_rate(1.0) == model.learning_rate(0.0) == saved_lr  # the constant it had when saved
    noise = model.action_noise
    assert isinstance(noise, OrnsteinUhlenbeckActionNoise) and (noise.theta, noise.dt) == (0.2, 0.05)
    np.testing.assert_array_equal(noise.sigma, [0.2])

    trusted, messages = _load(DDPG, path, allow_pickle=True)
    assert messages == [] and trusted.sb3_import_report == {}
    assert trusted.learning_rate(0.5) == pytest.approx(7.5e-4)
    assert trusted.observation_space == sb3_model.observation_space
    obs = _observations(trusted.observation_space, 100)
    np.testing.assert_allclose(trusted.predict(obs)[0], model.predict(obs)[0], atol=0, rtol=0)


# ---------------------------------------------------------------------------- safety
class _WritesMarker:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_malicious_payload_not_unpickled(sb3_td3, tmp_path):
    path, _ = sb3_td3
    marker = tmp_path / "pwned"
    payload = base64.b64encode(pickle.dumps(_WritesMarker(marker))).decode()
    data = _data(path)
    data["action_noise"] = {":type:": "<class 'evil.Noise'>", ":serialized:": payload}
    data["observation_space"][":serialized:"] = payload  # the readable fields stay: they are what is used
    data["train_freq"][":serialized:"] = payload
    forged = _rewrite(path, tmp_path / "forged.zip", data)
    model, messages = _load(TD3, forged)
    assert not marker.exists()
    assert len(messages) == 1
    assert "action_noise" in messages[0] and "train_freq" in messages[0]
    assert set(model.sb3_import_report) == {"action_noise", "train_freq"}
    assert model.action_noise is None and model.train_freq == (1, "step")
    # the payload is live: unpickling it (what allow_pickle=True would do) writes the marker
    pickle.loads(base64.b64decode(payload))  # noqa: S301  (the point of the test)
    assert marker.exists()


@pytest.mark.parametrize(
    ("entry", "content", "match"),
    [
        ("policy.pth", b"not a torch file", "'policy.pth'"),
        ("data", b"{not json", "'data'"),
        ("critic.optimizer.pth", b"\0" * (4 * 2**20), "'critic.optimizer.pth'"),
    ],
)
def test_corrupt_entry_names_it(sb3_td3, tmp_path, entry, content, match):
    path, _ = sb3_td3
    bad = _rewrite(path, tmp_path / "bad.zip", replace={entry: content})
    with pytest.raises(ModelFileError, match=match):
        TD3.load(bad)


def test_damaged_entry_named(sb3_td3, tmp_path):
    path, _ = sb3_td3
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("policy.pth")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)  # the entry's stored bytes
    raw[start + info.compress_size // 2] ^= 0xFF
    damaged = tmp_path / "damaged.zip"
    damaged.write_bytes(bytes(raw))
    with pytest.raises(ModelFileError, match="'policy.pth'"):
        TD3.load(damaged)


def test_truncated_zip(sb3_td3, tmp_path):
    path, _ = sb3_td3
    raw = path.read_bytes()
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ModelFileError):
        TD3.load(truncated)


@pytest.mark.parametrize("net_arch", [[32, 33], [2**20, 2**20]])
def test_tensor_shapes_checked_before_building(sb3_td3, tmp_path, net_arch):
    path, _ = sb3_td3
    data = _data(path)
    data["policy_kwargs"]["net_arch"] = net_arch  # 2**20: networks of terabytes, refused before they are built
    with pytest.raises(ModelFileError, match=r"policy\.pth"):
        TD3.load(_rewrite(path, tmp_path / "arch.zip", data))


def test_unexpected_entry_refused(sb3_td3, tmp_path):
    path, _ = sb3_td3
    bad = _rewrite(path, tmp_path / "extra.zip")
    with zipfile.ZipFile(bad, "a") as archive:
        archive.writestr("payload.pkl", b"x")
    with pytest.raises(ModelFileError, match="payload.pkl"):
        TD3.load(bad)


def test_other_sb3_algorithm_refused(tmp_path):
    ppo = sb3.PPO("MlpPolicy", "Pendulum-v1", n_steps=64, batch_size=64, device="cpu", seed=0)
    ppo.save(tmp_path / "ppo.zip")
    with pytest.raises(
        UnsupportedModelError, match=r"stable_baselines3\.common\.policies.*supported: Stable-Baselines3 2\.x TD3"
    ):
        TD3.load(tmp_path / "ppo.zip")


def test_ddpg_load_refuses_td3_file(sb3_td3):
    path, _ = sb3_td3
    with pytest.raises(ValueError, match="holds an SB3 TD3 model.*policy_delay': 3"):
        DDPG.load(path)


def test_load_argument_rules(sb3_td3):
    path, _ = sb3_td3
    with pytest.raises(TypeError, match="allow_pickle"):
        TD3.load(path, allow_pickle="no")
    with pytest.raises(TypeError, match="not_a_setting"):
        TD3.load(path, not_a_setting=1)
    model, _ = _load(TD3, path, gamma=0.5, custom_objects={"action_noise": None})
    assert model.gamma == 0.5 and model.action_noise is None
    with pytest.raises(ValueError, match="observation_space"):
        TD3.load(path, env="MountainCarContinuous-v0")


def test_print_system_info(sb3_td3, capsys):
    path, _ = sb3_td3
    TD3.load(path, print_system_info=True)
    out = capsys.readouterr().out
    assert f"torch: {torch.__version__} | {torch.__version__}" in out  # the file's (from system_info.txt) | ours


# ---------------------------------------------------------------------------- training on
def test_learn_after_import(sb3_td3):
    path, _ = sb3_td3
    model, _ = _load(TD3, path, env="Pendulum-v1", learning_starts=0)
    before = model.policy.parameters_to_vector()
    model.learn(200)
    assert model.num_timesteps == 200  # learn() restarts the count by default, as in SB3
    assert model._n_updates > 0
    assert not np.array_equal(before, model.policy.parameters_to_vector())
    assert np.isfinite(model.policy.parameters_to_vector()).all()


def test_other_td3_policy_refused(sb3_td3, tmp_path):
    path, _ = sb3_td3
    data = _data(path)
    data["policy_class"]["__init__"] = "<function CnnPolicy.__init__ at 0x7f0000000000>"
    with pytest.raises(UnsupportedModelError, match="CnnPolicy"):
        TD3.load(_rewrite(path, tmp_path / "cnn.zip", data))


class _FineBoundsEnv(gym.Env):
    """Bounds that NumPy prints rounded (0.00012345679 shows as 0.00012346)."""

    observation_space = gym.spaces.Box(
        np.array([-1.0, 0.00012345679], dtype=np.float32), np.array([1.0, 0.0002], dtype=np.float32)
    )
    action_space = gym.spaces.Box(np.array([-0.33333334], dtype=np.float32), np.array([0.00012345679], np.float32))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


def test_bounds_exact_where_printed_rounded(tmp_path):
    sb3_model = sb3.TD3("MlpPolicy", _FineBoundsEnv(), policy_kwargs={"net_arch": [8]}, device="cpu", seed=0)
    sb3_model.save(tmp_path / "fine.zip")
    assert "0.00012346" in json.dumps(_data(tmp_path / "fine.zip")["action_space"]["high"])  # the printed copy
    model, _ = _load(TD3, tmp_path / "fine.zip")
    for ours, theirs in (
        (model.observation_space, sb3_model.observation_space),
        (model.action_space, sb3_model.action_space),
    ):
        np.testing.assert_array_equal(ours.low, theirs.low)
        np.testing.assert_array_equal(ours.high, theirs.high)
    obs = _observations(model.observation_space, 200)
    np.testing.assert_allclose(model.predict(obs)[0], sb3_model.predict(obs, deterministic=True)[0], atol=1e-6, rtol=0)

"""CnnPolicy / MultiInputPolicy and the features extractor options of TD3Policy; image observations end to end."""

from __future__ import annotations

import io
import json
import zipfile

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from learning_cases import PIXEL_REACH, PixelReach, run_case
from learning_cases import PIXEL_THRESHOLD as RETURN_THRESHOLD
from learning_cases import pixel_returns as _returns
from torch import nn

from rlkit_td3 import DDPG, TD3
from rlkit_td3.fileio.serialization import ModelFileError
from rlkit_td3.policies import CnnPolicy, MultiInputPolicy, TD3Policy
from rlkit_td3.torch_layers import NatureCNN

ACT = spaces.Box(-1.0, 1.0, (2,), np.float32)
SMALL = dict(net_arch=[16], features_extractor_kwargs=dict(features_dim=8))


def _cnn_model(cls=TD3, channels_last=False, **policy_kwargs):
    return cls(
        "CnnPolicy",
        PixelReach(channels_last),
        seed=3,
        learning_starts=16,
        batch_size=8,
        buffer_size=200,
        policy_kwargs={**SMALL, **policy_kwargs},
    )


# ---------------------------------------------------------------------------- policy construction
def test_aliases_pick_their_extractor():
    image = spaces.Box(0, 255, (36, 36, 3), np.uint8)
    cnn = CnnPolicy(image, ACT, **SMALL)
    assert isinstance(cnn.actor.features_extractor, NatureCNN) and isinstance(cnn.critic.features_extractor, NatureCNN)
    assert cnn.actor.features_extractor is not cnn.critic.features_extractor  # one each by default, as SB3's TD3
    assert cnn.actor.mu[0].in_features == 8 and cnn.critic.weights[0].shape == (2, 8 + 2, 16)
    multi = MultiInputPolicy(spaces.Dict(im=image, v=spaces.Box(-1, 1, (3,), np.float32)), ACT, net_arch=[16])
    assert multi.actor.mu[0].in_features == 256 + 3


@pytest.mark.parametrize(
    "policy_cls, space, message",
    [
        (TD3Policy, spaces.Dict(v=spaces.Box(-1, 1, (3,), np.float32)), "use policy='MultiInputPolicy'"),
        (CnnPolicy, spaces.Dict(v=spaces.Box(-1, 1, (3,), np.float32)), "use policy='MultiInputPolicy'"),
        (TD3Policy, spaces.Box(0, 255, (3, 36, 36), np.uint8), "use policy='CnnPolicy'"),
        (MultiInputPolicy, spaces.Box(-1, 1, (3,), np.float32), "takes a Dict observation space"),
        (CnnPolicy, spaces.Box(-1, 1, (3,), np.float32), "NatureCNN needs an image observation space"),
    ],
)
def test_the_wrong_alias_is_refused_with_the_right_one_named(policy_cls, space, message):
    with pytest.raises((TypeError, ValueError), match=message):
        policy_cls(space, ACT)


def test_models_accept_the_alias_strings_and_refuse_mlp_on_images():
    assert type(_cnn_model().policy) is CnnPolicy
    assert type(_cnn_model(DDPG).policy) is CnnPolicy
    with pytest.raises(TypeError, match="use policy='CnnPolicy'"):
        TD3("MlpPolicy", PixelReach(), seed=0)


@pytest.mark.parametrize("normalize", [True, False])
def test_images_reach_the_extractor_scaled_only_with_normalize_images(normalize):
    policy = CnnPolicy(PixelReach().observation_space, ACT, normalize_images=normalize, **SMALL)
    seen = []
    policy.actor.features_extractor.register_forward_pre_hook(lambda module, args: seen.append(args[0]))
    obs = PixelReach().reset(seed=0)[0]
    policy.predict(obs)
    expected = torch.as_tensor(obs[None], dtype=torch.float32)
    assert torch.equal(seen[0], expected / 255.0 if normalize else expected)


def test_predict_takes_one_image_or_a_batch_channels_last_too():
    env = PixelReach(channels_last=True)
    policy = CnnPolicy(env.observation_space, ACT, **SMALL)
    obs = np.stack([env.reset(seed=s)[0] for s in range(3)])
    batch, _ = policy.predict(obs)
    assert batch.shape == (3, 2)
    np.testing.assert_array_equal(policy.predict(obs[1])[0], batch[1])


# ---------------------------------------------------------------------------- share_features_extractor
def _snapshot(module):
    return [p.detach().clone() for p in module.parameters()]


def _changed(before, module):
    return [not torch.equal(a, b) for a, b in zip(before, module.parameters())]


def test_a_shared_extractor_is_trained_by_the_actor_loss_only():
    model = _cnn_model(share_features_extractor=True)
    policy = model.policy
    shared = policy.actor.features_extractor
    assert policy.critic.shared_features_extractor is shared and policy.critic.features_extractor is shared  # SB3
    assert policy.critic_target.features_extractor is policy.actor_target.features_extractor
    assert not any(name.startswith("features_extractor") for name, _ in policy.critic.named_modules())
    assert policy.critic_target.shared_features_extractor is policy.actor_target.features_extractor
    critic_ids = {id(p) for group in policy.critic_optimizer.param_groups for p in group["params"]}
    assert not critic_ids & {id(p) for p in shared.parameters()}  # the critic optimizer never holds it
    assert not any(k.startswith("critic.features_extractor") for k in policy.state_dict())

    model.learn(24)
    batch = model.replay_buffer.sample(8)
    ext, mlp = _snapshot(shared), _snapshot(policy.critic)
    shared.zero_grad(set_to_none=True)  # the last actor step of learn() left its gradients
    critic_loss = (policy.critic(batch.observations, batch.actions) ** 2).sum()
    critic_loss.backward()
    assert all(p.grad is None for p in shared.parameters())  # no gradient reaches it from the critic loss
    model._train_step(batch, update_actor=False)
    assert not any(_changed(ext, shared)) and all(_changed(mlp, policy.critic))
    model._train_step(batch, update_actor=True)
    assert all(_changed(ext, shared))  # the actor loss trains it


def test_separate_extractors_are_trained_by_their_own_losses():
    model = _cnn_model()
    policy = model.policy
    model.learn(24)  # fills the buffer past learning_starts
    actor_ext, critic_ext = _snapshot(policy.actor.features_extractor), _snapshot(policy.critic.features_extractor)
    model._train_step(model.replay_buffer.sample(8), update_actor=False)
    assert all(_changed(critic_ext, policy.critic.features_extractor))
    assert not any(_changed(actor_ext, policy.actor.features_extractor))
    model._train_step(model.replay_buffer.sample(8), update_actor=True)
    assert all(_changed(actor_ext, policy.actor.features_extractor))


# ---------------------------------------------------------------------------- storage
def test_image_observations_are_stored_as_uint8():
    model = _cnn_model()
    model.learn(30)
    buf = model.replay_buffer
    assert buf.observations.dtype == np.uint8 and buf.next_observations.dtype == np.uint8
    # per transition: two 1x36x36 uint8 images, 2 float32 action values, a float32 reward, two flags
    assert buf.nbytes // buf.buffer_size == 2 * 36 * 36 + 4 * 2 + 4 + 2
    float_obs = TD3("MlpPolicy", gym.make("Pendulum-v1"), buffer_size=200, batch_size=8, seed=0).replay_buffer
    assert float_obs.observations.dtype == np.float32  # every other observation space is unchanged
    batch = buf.sample(4)
    assert batch.observations.dtype == torch.float32 and float(batch.observations.max()) == 255.0


# ---------------------------------------------------------------------------- files
@pytest.mark.parametrize("share", [False, True])
def test_cnn_model_save_load_predicts_the_same(tmp_path, share):
    model = _cnn_model(share_features_extractor=share, channels_last=True)
    model.learn(30)
    model.save(tmp_path / "m.zip")
    loaded = TD3.load(tmp_path / "m.zip")
    assert type(loaded.policy) is CnnPolicy and loaded.policy.share_features_extractor is share
    obs = np.stack([PixelReach(True).reset(seed=s)[0] for s in range(4)])
    np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0])


def test_cnn_policy_file_round_trip(tmp_path):
    policy = CnnPolicy(PixelReach().observation_space, ACT, **SMALL)
    policy.save(tmp_path / "p.zip")
    loaded = CnnPolicy.load(tmp_path / "p.zip")
    obs = PixelReach().reset(seed=1)[0]
    np.testing.assert_array_equal(loaded.predict(obs)[0], policy.predict(obs)[0])


def _rewrite_member(path, out, member, edit):
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            dst.writestr(info.filename, edit(data) if info.filename.endswith(member) else data)
    return out


def test_a_wrong_nature_cnn_shape_is_a_model_file_error(tmp_path):
    CnnPolicy(PixelReach().observation_space, ACT, **SMALL).save(tmp_path / "p.zip")

    def bigger(data):
        meta = json.loads(data)
        meta["policy"]["kwargs"]["features_extractor_kwargs"]["features_dim"] = 10**9  # nothing may be allocated
        return json.dumps(meta).encode()

    forged = _rewrite_member(tmp_path / "p.zip", tmp_path / "f.zip", "metadata.json", bigger)
    with pytest.raises(ModelFileError, match=r"actor.features_extractor.linear.0.weight"):
        CnnPolicy.load(forged)

    def conv_shape(data):
        state = torch.load(io.BytesIO(data), weights_only=True)
        state["critic.features_extractor.cnn.0.weight"] = torch.zeros(32, 3, 8, 8)
        buf = io.BytesIO()
        torch.save(state, buf)
        return buf.getvalue()

    forged = _rewrite_member(tmp_path / "p.zip", tmp_path / "g.zip", "policy.pth", conv_shape)
    with pytest.raises(ModelFileError, match=r"critic.features_extractor.cnn.0.weight.*\(32, 3, 8, 8\)"):
        CnnPolicy.load(forged)


def test_a_model_file_naming_an_unknown_extractor_needs_custom_objects(tmp_path):
    model = _cnn_model()
    model.save(tmp_path / "m.zip")

    def foreign(data):
        meta = json.loads(data)
        meta["policy"]["kwargs"]["features_extractor_class"] = "os:system"
        return json.dumps(meta).encode()

    forged = _rewrite_member(tmp_path / "m.zip", tmp_path / "f.zip", "metadata.json", foreign)
    with pytest.raises(ModelFileError, match="features_extractor_class 'os:system'"):
        TD3.load(forged)


def test_cnn_model_resumes_exactly(tmp_path):
    straight = _cnn_model()
    straight.learn(40)
    straight.save(tmp_path / "half.zip", include_buffer=True)
    straight.learn(30, reset_num_timesteps=False)
    resumed = TD3.load(tmp_path / "half.zip", env=PixelReach())
    resumed.learn(30, reset_num_timesteps=False)
    for a, b in zip(straight.policy.state_dict().values(), resumed.policy.state_dict().values()):
        assert torch.equal(a, b)


# ---------------------------------------------------------------------------- learning from pixels
def _best_linear_policy_on_pixels(n_samples=3000, ridge=1.0):
    """Least squares from the pixels (and a bias) to the ideal action, towards the target at full speed: the
    task needs the two squares told apart by brightness and subtracted, which no linear map of the pixels does."""
    env = PixelReach(channels_last=True)
    pixels, ideal = [], []
    for i in range(n_samples):
        obs, _ = env.reset(seed=i)
        pixels.append(np.append(obs.reshape(-1) / 255.0, 1.0))
        ideal.append(np.clip((env.target - env.pos) / env.step_size, -1.0, 1.0))
    x, y = np.array(pixels), np.array(ideal)
    weights = np.linalg.solve(x.T @ x + ridge * np.eye(x.shape[1]), x.T @ y)
    return lambda obs: np.clip(np.append(obs.reshape(-1) / 255.0, 1.0) @ weights, -1, 1).astype(np.float32)


def test_td3_cnn_policy_learns_to_reach_a_random_target_from_pixels():
    """The median return of `learning_cases.PIXEL_REACH`'s three seeds (shared with benchmarks/learning_paths.py,
    which runs it under every float path) beats every shortcut by a margin of 4."""
    rng = np.random.default_rng(0)
    assert _returns(lambda obs: np.zeros(2, np.float32)) < RETURN_THRESHOLD - 4  # standing still (about -17.6)
    assert _returns(lambda obs: rng.uniform(-1, 1, 2).astype(np.float32)) < RETURN_THRESHOLD - 4  # random (-20.0)
    assert _returns(_best_linear_policy_on_pixels()) < RETURN_THRESHOLD - 4  # no linear shortcut (about -17.5)
    untrained = PIXEL_REACH.build(0)
    assert _returns(lambda obs: untrained.predict(obs, deterministic=True)[0]) < RETURN_THRESHOLD - 4
    result = run_case(PIXEL_REACH)
    print(result.describe())
    assert result.passed, result.describe()


# ---------------------------------------------------------------------------- critic_layer_norm
def _mlp_policy(**kwargs):
    torch.manual_seed(0)
    return TD3Policy(spaces.Box(-1, 1, (3,), np.float32), ACT, net_arch=[8, 6], n_critics=3, **kwargs)


def test_critic_layer_norm_is_off_by_default_and_leaves_the_weights_unchanged():
    plain, normed = _mlp_policy(), _mlp_policy(critic_layer_norm=True)
    assert not any("norm" in name for name in plain.state_dict())
    for name, tensor in plain.state_dict().items():  # same draws from the generator, same order
        assert torch.equal(tensor, normed.state_dict()[name])
    assert normed.critic.norm_weights[1].shape == (3, 1, 6) and normed.critic.norm_biases[0].shape == (3, 1, 8)


def test_critic_layer_norm_normalises_each_hidden_layer_per_critic():
    policy = _mlp_policy(critic_layer_norm=True)
    critic = policy.critic
    with torch.no_grad():
        for p in (*critic.norm_weights, *critic.norm_biases):
            p.uniform_(-2, 2)
    obs, act = torch.randn(5, 3), torch.rand(5, 2) * 2 - 1
    q = critic(obs, act)
    for k in range(3):  # critic k rebuilt with nn.Linear and nn.LayerNorm
        x = torch.cat([obs, act], dim=1)
        for i in range(2):
            x = x @ critic.weights[i][k] + critic.biases[i][k]
            norm = nn.LayerNorm(x.shape[-1])
            norm.weight.data, norm.bias.data = critic.norm_weights[i][k, 0], critic.norm_biases[i][k, 0]
            x = torch.relu(norm(x))
        expected = (x @ critic.weights[2][k] + critic.biases[2][k]).squeeze(-1)
        torch.testing.assert_close(q[k], expected)
    torch.testing.assert_close(critic.q1_forward(obs, act), q[0])


def test_critic_layer_norm_trains_saves_and_loads(tmp_path):
    model = TD3(
        "MlpPolicy",
        gym.make("Pendulum-v1"),
        learning_starts=20,
        batch_size=8,
        buffer_size=100,
        seed=0,
        policy_kwargs=dict(net_arch=[8], critic_layer_norm=True),
    )
    before = model.policy.critic.norm_weights[0].detach().clone()
    model.learn(40)
    assert not torch.equal(before, model.policy.critic.norm_weights[0])
    model.save(tmp_path / "m.zip")
    loaded = TD3.load(tmp_path / "m.zip")
    assert loaded.policy.critic_layer_norm
    for name, tensor in model.policy.state_dict().items():
        assert torch.equal(tensor, loaded.policy.state_dict()[name])


# ---------------------------------------------------------------------------- corrupted files
def test_fuzzed_cnn_files_load_or_raise_model_file_error(tmp_path):
    """Corrupted variants (tests/model_fuzz.py) of a CnnPolicy policy file and of a CnnPolicy model file with
    its uint8 replay buffer: each loads or raises ModelFileError, nothing else."""
    from tests.model_fuzz import cases

    model = _cnn_model(share_features_extractor=True)
    model.learn(30)
    model.save(tmp_path / "m.zip", include_buffer=True)
    model.policy.save(tmp_path / "p.zip")
    path = tmp_path / "fuzz.zip"
    obs = PixelReach().reset(seed=0)[0]
    for source, load in ((tmp_path / "p.zip", CnnPolicy.load), (tmp_path / "m.zip", TD3.load)):
        refused = 0
        for kind, data in cases(source.read_bytes(), 60, seed=4):
            path.write_bytes(data)
            try:
                loaded = load(path, device="cpu")
            except ModelFileError as exc:
                assert str(exc), kind
                refused += 1
            else:  # a tolerated corruption (a learning rate, a timestamp): it still acts
                assert loaded.predict(obs)[0].shape == (2,), kind
        assert refused >= 30, (source.name, refused)


def test_cnn_policy_exports_to_torchscript_with_the_image_scaling_inside(tmp_path):
    env = PixelReach(channels_last=True)
    policy = CnnPolicy(env.observation_space, ACT, **SMALL)
    scripted = torch.jit.load(str(policy.export(tmp_path / "cnn.pt")))
    obs = np.stack([env.reset(seed=s)[0] for s in range(3)])
    out = scripted(torch.as_tensor(obs, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(out, policy.predict(obs)[0], rtol=1e-6, atol=1e-6)

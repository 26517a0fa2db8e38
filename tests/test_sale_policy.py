"""SALE as a component of any algorithm of the base: ``TD3`` / ``DDPG`` with
``policy_kwargs=dict(representation="sale")`` build SALE networks, train the encoders at every update through the
policy's ``train_representation`` hook, refresh the fixed encoders every ``target_update_interval`` updates, save,
load, resume exactly and export; and TD7's own policy file and export act with the checkpoint policy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlkit_td3 import DDPG, TD3, TD7
from rlkit_td3.fileio.serialization import ModelFileError
from rlkit_td3.policies import TD3Policy, TD7Policy
from rlkit_td3.policies.sale import SALEActor, SALECritic
from tests.test_resume import _assert_equal, _entries

ROOT = Path(__file__).resolve().parents[1]
SALE = dict(
    net_arch=[32, 32],
    representation="sale",
    representation_kwargs=dict(embedding_dim=16, net_arch=[32], target_update_interval=20),
)
SMALL = dict(learning_starts=100, buffer_size=2_000, batch_size=32, seed=0, policy_kwargs=SALE)
OBS = np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32)


def _params(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def _same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("algo", [TD3, DDPG])
def test_sale_networks_and_encoder_training(algo):
    model = algo("MlpPolicy", "Pendulum-v1", **SMALL)
    policy = model.policy
    assert isinstance(policy.actor, SALEActor) and isinstance(policy.critic, SALECritic)
    assert policy.optimizer_names == ("actor_optimizer", "critic_optimizer", "encoder_optimizer")
    # the actor and the critics read the fixed encoder; the encoder itself is trained by its own optimizer only
    assert policy.actor.encoder is policy.fixed_encoder and policy.critic_target.encoder is policy.fixed_encoder_target
    assert {id(p) for p in policy.encoder_optimizer.param_groups[0]["params"]} == {
        id(p) for p in policy.encoder.parameters()
    }
    assert not any(p.requires_grad for p in policy.fixed_encoder.parameters())
    assert model._fused_update_for(model.batch_size) is None  # the fused update covers plain MLPs: autograd here
    model.learn(130)  # 30 updates: the fixed encoders were refreshed at update 20
    assert model._n_updates == 30
    fixed, fixed_target, encoder = (
        _params(policy.fixed_encoder),
        _params(policy.fixed_encoder_target),
        _params(policy.encoder),
    )
    assert not _same(encoder, fixed)  # 10 encoder steps since the refresh
    assert not _same(fixed, fixed_target)
    model.train(9)  # update 39: no refresh yet
    assert _same(_params(policy.fixed_encoder), fixed)
    model.train(1)  # update 40: fixed target <- fixed <- encoder
    assert _same(_params(policy.fixed_encoder_target), fixed)
    assert _same(_params(policy.fixed_encoder), _params(policy.encoder))
    assert not _same(_params(policy.encoder), encoder)  # the encoder learned at every update


def test_sale_encoder_loss_falls():
    model = TD3("MlpPolicy", "Pendulum-v1", **SMALL)
    model.learn(600)
    batch = model.replay_buffer.sample(256)
    policy = model.policy
    fresh = TD3Policy(model.observation_space, model.action_space, **SALE)
    trained = policy.encoder.loss(batch.observations, batch.actions, batch.next_observations).item()
    untrained = fresh.encoder.loss(batch.observations, batch.actions, batch.next_observations).item()
    assert trained < 0.5 * untrained


def test_td3_without_the_switch_has_no_encoder():
    policy = TD3("MlpPolicy", "Pendulum-v1", seed=0).policy
    assert policy.representation is None and not hasattr(policy, "encoder")
    assert policy.optimizer_names == ("actor_optimizer", "critic_optimizer")
    assert "representation" not in policy.constructor_kwargs()


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        (dict(representation="vae"), ValueError, "representation must be None or 'sale', got 'vae'"),
        (dict(representation_kwargs=dict(embedding_dim=8)), ValueError, "needs representation='sale'"),
        (dict(representation="sale", representation_kwargs=dict(zs_dim=8)), ValueError, "unknown keys ['zs_dim']"),
        (dict(representation="sale", representation_kwargs=dict(embedding_dim=0)), ValueError, "embedding_dim"),
        (dict(representation="sale", representation_kwargs=dict(net_arch=[])), ValueError, "net_arch"),
        (dict(representation="sale", critic_layer_norm=True), ValueError, "critic_layer_norm must be False"),
        (dict(representation="sale", net_arch=dict(pi=[], qf=[8])), ValueError, "at least one hidden layer"),
    ],
)
def test_sale_settings_are_checked(kwargs, error, words):
    with pytest.raises(error) as info:
        TD3("MlpPolicy", "Pendulum-v1", policy_kwargs=kwargs)
    assert words in str(info.value)


def test_sale_needs_flat_box_observations():
    space = gym.spaces.Box(0, 255, (3, 36, 36), np.uint8)
    with pytest.raises(TypeError, match="representation='sale' needs a Box observation space that is not an image"):
        TD3Policy(space, gym.spaces.Box(-1, 1, (2,)), representation="sale")


CHILD = """
import sys
import gymnasium as gym
from rlkit_td3 import TD3
model = TD3.load(sys.argv[1], env=gym.make("Pendulum-v1"))
model.learn(int(sys.argv[2]), reset_num_timesteps=False)
model.save(sys.argv[3], include_buffer=True)
"""


def test_sale_resume_in_a_new_process_is_bitwise_exact(tmp_path):
    # saved at an episode boundary (Pendulum: 200 steps) after 300 updates, between two refreshes of the fixed
    # encoders (every 35 updates)
    k, n = 400, 600
    sale = dict(SALE, representation_kwargs=dict(SALE["representation_kwargs"], target_update_interval=35))
    checkpoint, straight, resumed = tmp_path / "k.zip", tmp_path / "straight.zip", tmp_path / "resumed.zip"

    def save_at_k(locals_, globals_):
        model = locals_["self"]
        if model.num_timesteps == k:
            model.save(checkpoint, include_buffer=True)
        return True

    model = TD3("MlpPolicy", gym.make("Pendulum-v1"), **dict(SMALL, policy_kwargs=sale))
    model.learn(n, callback=save_at_k)
    model.save(straight, include_buffer=True)
    subprocess.run(
        [sys.executable, "-c", CHILD, str(checkpoint), str(n - k), str(resumed)],
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
    )
    at_k, a, b = _entries(checkpoint), _entries(straight), _entries(resumed)
    assert at_k["metadata"]["policy"]["kwargs"]["representation"] == "sale"
    assert at_k["encoder_optimizer"]["state"]  # the encoder's Adam moments are in the file
    for key in ("policy", "actor_optimizer", "critic_optimizer", "encoder_optimizer", "training_state", "buffer"):
        _assert_equal(a[key], b[key], key)
    _assert_equal(a["metadata"]["counters"], b["metadata"]["counters"], "counters")
    # the compared state holds a trained encoder that differs from its fixed copy
    assert not torch.equal(
        a["policy"]["encoder.state_encoder.0.weight"], a["policy"]["fixed_encoder.state_encoder.0.weight"]
    )


def test_sale_model_policy_file_and_export_act_alike(tmp_path):
    model = TD3("MlpPolicy", "Pendulum-v1", **SMALL)
    model.learn(300)
    actions, _ = model.predict(OBS, deterministic=True)
    model.save(tmp_path / "m.zip")
    assert np.array_equal(TD3.load(tmp_path / "m.zip").predict(OBS, deterministic=True)[0], actions)
    model.policy.save(tmp_path / "p.zip")
    loaded = TD3Policy.load(tmp_path / "p.zip", device="cpu")
    assert loaded.representation == "sale" and loaded.sale_kwargs == model.policy.sale_kwargs
    assert np.array_equal(loaded.predict(OBS)[0], actions)
    exported = torch.jit.load(str(model.policy.export(tmp_path / "a.pt")))
    np.testing.assert_allclose(exported(torch.as_tensor(OBS)).numpy(), actions, rtol=0, atol=1e-6)


def _rewrite(path: Path, out: Path, edit_meta=None, edit_state=None) -> None:
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "metadata.json" and edit_meta:
                meta = json.loads(data)
                edit_meta(meta)
                data = json.dumps(meta).encode()
            if item.filename == "policy.pth" and edit_state:
                import io

                state = torch.load(io.BytesIO(data), weights_only=True)
                edit_state(state)
                buffer = io.BytesIO()
                torch.save(state, buffer)
                data = buffer.getvalue()
            dst.writestr(item, data)


def test_a_forged_sale_policy_file_is_refused(tmp_path):
    policy = TD3Policy(gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-2, 2, (1,)), **SALE)
    policy.save(tmp_path / "p.zip")

    def bigger(meta):
        meta["policy"]["kwargs"]["representation_kwargs"]["embedding_dim"] = 4096

    _rewrite(tmp_path / "p.zip", tmp_path / "big.zip", edit_meta=bigger)
    with pytest.raises(ModelFileError, match="SALE networks need"):
        TD3Policy.load(tmp_path / "big.zip")
    _rewrite(
        tmp_path / "p.zip",
        tmp_path / "gone.zip",
        edit_state=lambda s: s.pop("fixed_encoder_target.state_encoder.0.bias"),
    )
    with pytest.raises(ModelFileError, match="missing"):
        TD3Policy.load(tmp_path / "gone.zip")


# ---------------------------------------------------------------------- TD7's policy file and export
TD7_SMALL = dict(
    learning_starts=200,
    buffer_size=2_000,
    batch_size=32,
    target_update_interval=50,
    seed=1,
    policy_kwargs=dict(net_arch=[32, 32], embedding_dim=16, encoder_net_arch=[32]),
)


@pytest.fixture(scope="module")
def td7_model():
    model = TD7("MlpPolicy", "Pendulum-v1", **TD7_SMALL)
    model.learn(1_000)
    policy = model.policy  # the checkpoint policy acts, and it is not the actor being trained
    assert not torch.equal(policy.checkpoint_actor.mu[0].weight, policy.actor.mu[0].weight)
    return model


def test_td7_policy_file_carries_the_checkpoint(td7_model, tmp_path):
    actions, _ = td7_model.predict(OBS, deterministic=True)
    assert np.array_equal(td7_model.policy.predict(OBS, deterministic=True)[0], actions)
    assert not np.array_equal(td7_model.policy.predict(OBS)[0], actions)  # the trained actor
    td7_model.policy.save(tmp_path / "p.zip")
    loaded = TD7Policy.load(tmp_path / "p.zip", device="cpu")
    _assert_equal(loaded.state_dict(), td7_model.policy.state_dict(), "state")
    assert np.array_equal(loaded.predict(OBS, deterministic=True)[0], actions)
    for name in ("checkpoint_actor", "checkpoint_encoder", "fixed_encoder", "fixed_encoder_target"):
        assert any(key.startswith(name + ".") for key in loaded.state_dict())


def test_td7_policy_file_keeps_use_checkpoint(tmp_path):
    model = TD7("MlpPolicy", "Pendulum-v1", use_checkpoints=False, train_freq=1, gradient_steps=1, **TD7_SMALL)
    model.learn(300)
    model.policy.save(tmp_path / "p.zip")
    loaded = TD7Policy.load(tmp_path / "p.zip", device="cpu")
    assert loaded.use_checkpoint is False
    assert np.array_equal(loaded.predict(OBS, deterministic=True)[0], model.predict(OBS, deterministic=True)[0])


def test_td7_export_acts_with_the_checkpoint(td7_model, tmp_path):
    actions, _ = td7_model.predict(OBS, deterministic=True)
    exported = torch.jit.load(str(td7_model.policy.export(tmp_path / "a.pt")))
    np.testing.assert_allclose(exported(torch.as_tensor(OBS)).numpy(), actions, rtol=0, atol=1e-6)
    trained, _ = td7_model.policy.predict(OBS)
    assert np.abs(exported(torch.as_tensor(OBS)).numpy() - trained).max() > 1e-4


def test_td7_forged_policy_file_is_refused(td7_model, tmp_path):
    td7_model.policy.save(tmp_path / "p.zip")

    def wider(meta):
        meta["policy"]["kwargs"]["encoder_net_arch"] = [64]

    _rewrite(tmp_path / "p.zip", tmp_path / "w.zip", edit_meta=wider)
    with pytest.raises(ModelFileError, match="checkpoint_encoder|fixed_encoder|encoder"):
        TD7Policy.load(tmp_path / "w.zip")
    _rewrite(tmp_path / "p.zip", tmp_path / "c.zip", edit_state=lambda s: s.pop("checkpoint_actor.mu.0.weight"))
    with pytest.raises(ModelFileError, match="missing"):
        TD7Policy.load(tmp_path / "c.zip")


def test_td7_onnx_export_acts_with_the_checkpoint(td7_model, tmp_path):
    ort = pytest.importorskip("onnxruntime", reason="the export extra")
    pytest.importorskip("onnxscript", reason="the export extra")
    actions, _ = td7_model.predict(OBS, deterministic=True)
    session = ort.InferenceSession(str(td7_model.policy.export(tmp_path / "a.onnx", format="onnx")))
    np.testing.assert_allclose(session.run(None, {"observation": OBS})[0], actions, rtol=0, atol=1e-6)


def test_a_sale_actor_has_no_file_of_its_own(td7_model, tmp_path):
    with pytest.raises(TypeError, match=r"save its policy \(policy.save\(path\)\) or export"):
        td7_model.policy.actor.save(tmp_path / "actor.zip")
    assert not (tmp_path / "actor.zip").exists()

"""The policy on its own, as in SB3: save/load (safe format), predict, parameters_to_vector/load_from_vector."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
import torch
from torch import nn

from rlkit_td3 import TD3
from rlkit_td3.fileio.serialization import ModelFileError
from rlkit_td3.policies import TD3Policy
from rlkit_td3.policies.td3_policy import expected_state_shapes
from tests.conftest import make_counter
from tests.model_fuzz import cases

ACT_LOW, ACT_HIGH = (-2.0, 0.0), (1.0, 5.0)
OBS = np.random.default_rng(3).normal(scale=3.0, size=(64, 2)).astype(np.float32)


@pytest.fixture(scope="module")
def model():
    env = make_counter(act_low=ACT_LOW, act_high=ACT_HIGH)
    kwargs = {"net_arch": {"pi": [16, 8], "qf": [12]}, "activation_fn": nn.Tanh, "n_critics": 3}
    return TD3("MlpPolicy", env, learning_starts=10, batch_size=8, policy_kwargs=kwargs, seed=0).learn(40)


@pytest.fixture
def saved(model, tmp_path):
    path = tmp_path / "policy.zip"
    model.policy.save(path)
    return path


def _rewrite(path, edit_metadata=None, edit_state=None):
    """Copy of the policy file at ``path`` with its metadata and/or state dict edited (a forged file)."""
    with zipfile.ZipFile(path) as archive:
        metadata = json.loads(archive.read("metadata.json"))
        state = torch.load(io.BytesIO(archive.read("policy.pth")), weights_only=True)
    if edit_metadata:
        edit_metadata(metadata)
    if edit_state:
        edit_state(state)
    forged = path.with_name("forged.zip")
    with zipfile.ZipFile(forged, "w") as archive:
        archive.writestr("metadata.json", json.dumps(metadata))
        buf = io.BytesIO()
        torch.save(state, buf)
        archive.writestr("policy.pth", buf.getvalue())
    return forged


def test_round_trip_predictions_are_bitwise_equal(model, saved):
    loaded = TD3Policy.load(saved, device="cpu")
    assert type(loaded) is TD3Policy and loaded is not model.policy
    a, state_a = model.policy.predict(OBS)
    b, state_b = loaded.predict(OBS)
    assert a.shape == (64, 2) and state_a is None and state_b is None
    assert np.array_equal(a, b)
    assert np.array_equal(model.policy.predict(OBS[0])[0], loaded.predict(OBS[0])[0])
    assert np.array_equal(model.policy.parameters_to_vector(), loaded.parameters_to_vector())
    assert loaded.net_arch == {"pi": [16, 8], "qf": [12]} and loaded.n_critics == 3
    assert loaded.activation_fn is nn.Tanh
    assert np.array_equal(loaded.action_space.low, ACT_LOW) and np.array_equal(loaded.action_space.high, ACT_HIGH)
    assert loaded.actor_optimizer.param_groups[0]["lr"] == model.policy.actor_optimizer.param_groups[0]["lr"]


def test_policy_file_is_json_and_tensors_only(saved):
    with zipfile.ZipFile(saved) as archive:
        assert set(archive.namelist()) == {"metadata.json", "policy.pth"}
        metadata = json.loads(archive.read("metadata.json"))
    assert metadata["content"] == "policy" and metadata["policy"]["class"] == "MlpPolicy"
    assert metadata["policy"]["kwargs"]["activation_fn"] == "torch.nn.Tanh"


def test_predict_matches_the_model_and_ignores_deterministic(model):
    expected, _ = model.predict(OBS, deterministic=True)
    for deterministic in (True, False):
        actions, _ = model.policy.predict(OBS, deterministic=deterministic)
        assert np.array_equal(actions, expected)
    assert np.all(actions >= ACT_LOW) and np.all(actions <= ACT_HIGH)
    single, state = model.policy.predict(OBS[5], state=("h",), episode_start=np.array([True]))
    assert single.shape == (2,) and state == ("h",)
    assert np.array_equal(single, model.predict(OBS[5], deterministic=True)[0])  # batch size changes rounding


def test_predict_refuses_bad_observations(model):
    with pytest.raises(ValueError, match=r"shape \(3,\); expected \(2,\)"):
        model.policy.predict(np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="obs, info"):
        model.policy.predict((OBS[0], {}))


def test_small_sb3_helpers(model):
    policy = model.policy
    assert policy.device == torch.device("cpu")
    assert policy.is_vectorized_observation(OBS) and not policy.is_vectorized_observation(OBS[0])
    tensor, vectorized = policy.obs_to_tensor(OBS[0])
    assert tensor.shape == (1, 2) and tensor.dtype == torch.float32 and not vectorized
    policy.set_training_mode(True)
    assert policy.training and policy.actor.training
    policy.predict(OBS[0])  # as in SB3, predicting switches to evaluation mode
    assert not policy.training and not policy.critic.training
    assert torch.equal(policy(tensor, deterministic=True), policy.actor(tensor))  # SB3's forward signature


def test_parameters_to_vector_and_back(model):
    policy = model.policy
    vector = policy.parameters_to_vector()
    assert vector.dtype == np.float32 and vector.shape == (sum(p.numel() for p in policy.parameters()),)
    other = TD3Policy(policy.observation_space, policy.action_space, **policy.constructor_kwargs())
    assert not np.array_equal(other.predict(OBS)[0], policy.predict(OBS)[0])
    first_param = other.actor_optimizer.param_groups[0]["params"][0]
    other.load_from_vector(vector)
    assert np.array_equal(other.predict(OBS)[0], policy.predict(OBS)[0])
    assert np.array_equal(other.parameters_to_vector(), vector)
    assert other.actor_optimizer.param_groups[0]["params"][0] is first_param  # copied in place
    assert torch.equal(first_param, policy.actor.mu[0].weight)


def test_load_from_vector_refuses_wrong_vectors(model):
    policy = model.policy
    n = policy.parameters_to_vector().size
    before = policy.parameters_to_vector()
    with pytest.raises(ValueError, match=f"1-D array of {n} parameters.*got shape \\({n - 1},\\)"):
        policy.load_from_vector(np.zeros(n - 1, np.float32))
    with pytest.raises(ValueError, match=f"got shape \\(1, {n}\\)"):
        policy.load_from_vector(np.zeros((1, n), np.float32))
    bad = before.copy()
    bad[-1] = np.nan
    with pytest.raises(ValueError, match="finite"):
        policy.load_from_vector(bad)
    assert np.array_equal(policy.parameters_to_vector(), before)


@pytest.mark.parametrize("net_arch", [[8], [5, 7, 3], {"pi": [4], "qf": [6, 2]}])
@pytest.mark.parametrize("n_critics", [1, 2])
def test_expected_state_shapes_match_a_built_policy(net_arch, n_critics):
    policy = TD3Policy(make_counter().observation_space, make_counter().action_space, net_arch, n_critics=n_critics)
    actual = {name: tuple(t.shape) for name, t in policy.state_dict().items()}
    assert expected_state_shapes(2, 1, net_arch, n_critics) == actual


def _set_arch(arch):
    def edit(metadata):
        metadata["policy"]["kwargs"]["net_arch"] = arch

    return edit


@pytest.mark.parametrize(
    "edit_metadata, edit_state, message",
    [
        (_set_arch({"pi": [16, 9], "qf": [12]}), None, r"tensor 'actor.mu.2.weight' has shape \(8, 16\)"),
        (_set_arch({"pi": [2**40], "qf": [2**40]}), None, "declared networks"),  # nothing allocated
        (_set_arch([16] * 20_000), None, r"missing \['actor.mu.10.bias'.* and \d+ more"),
        (None, lambda s: s.pop("critic.biases.0"), r"missing \['critic.biases.0'\]"),
        (None, lambda s: s.update(extra=torch.zeros(1)), r"extra \['extra'\]"),
        (None, lambda s: s.update({"critic.weights.0": torch.zeros(3, 4, 13)}), "critic.weights.0"),
        (lambda m: m["policy"].update({"class": "os:system"}), None, "policy 'os:system'.*neither built in"),
        (lambda m: m["policy"]["kwargs"].update(activation_fn="builtins:eval"), None, "activation_fn"),
        (lambda m: m["policy"]["kwargs"].update(n_critics=1e9), None, "n_critics must be a positive int"),
        (lambda m: m["action_space"].update(high=["inf", "inf"]), None, "finite bounds"),
        (lambda m: m.pop("content"), None, "whole TD3Policy model, not a policy"),
        (lambda m: m.update(format_version=99), None, "format version 99"),
        # TD3.load's allow-lists: a torch class that is no activation (Transformer would be built per layer)
        (lambda m: m["policy"]["kwargs"].update(activation_fn="torch.nn.Transformer"), None, "activation_fn"),
        (lambda m: m["policy"]["kwargs"].update(optimizer_class="torch.optim.LBFGS"), None, "optimizer_class"),
        # a NaN weight would predict NaN
        (None, lambda s: s["actor.mu.0.weight"].view(-1)[0].fill_(float("nan")), r"actor.mu.0.weight.*non-finite"),
        (None, lambda s: s["critic.biases.0"].fill_(float("inf")), r"critic.biases.0.*non-finite"),
    ],
)
def test_hostile_policy_files_raise_model_file_error(saved, edit_metadata, edit_state, message):
    forged = _rewrite(saved, edit_metadata, edit_state)
    with pytest.raises(ModelFileError, match=message):
        TD3Policy.load(forged)


def test_unforged_rewrite_loads(saved):
    """The forging helper itself produces loadable files, so the hostile cases fail for their edit alone."""
    assert isinstance(TD3Policy.load(_rewrite(saved)), TD3Policy)


def test_model_and_policy_files_are_not_confused(model, saved, tmp_path):
    model_path = tmp_path / "model.zip"
    model.save(model_path)
    with pytest.raises(ModelFileError, match="whole TD3 model, not a policy: load it with TD3.load"):
        TD3Policy.load(model_path)
    with pytest.raises(ModelFileError, match="holds a TD3Policy model"):
        TD3.load(saved)


class _Swish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


def test_save_refuses_user_classes_before_writing(saved):
    before = saved.read_bytes()
    space = make_counter().observation_space
    policy = TD3Policy(space, make_counter().action_space, [4], activation_fn=_Swish)
    with pytest.raises(TypeError, match="activation_fn=.*_Swish.*torch.nn"):
        policy.save(saved)
    assert saved.read_bytes() == before
    assert [p.name for p in saved.parent.iterdir()] == [saved.name]  # no temporary file left behind


def test_fuzzed_policy_files_load_or_raise_model_file_error(saved):
    """Corrupted variants of a policy file (tests/model_fuzz.py): each loads a working policy or raises
    ModelFileError, nothing else."""
    n_cases, outcomes = 400, {"refused": 0, "loaded": 0}
    path = saved.with_name("fuzz.zip")
    for kind, data in cases(saved.read_bytes(), n_cases, seed=1):
        path.write_bytes(data)
        try:
            policy = TD3Policy.load(path, device="cpu")
        except ModelFileError as exc:
            assert str(exc), kind
            outcomes["refused"] += 1
        else:  # a corruption the format tolerates (a learning rate, a timestamp): the policy still acts
            assert policy.predict(OBS[0])[0].shape == (2,), kind
            outcomes["loaded"] += 1
    print(f"policy fuzz: {n_cases} cases, {outcomes}")
    assert outcomes["refused"] >= 0.8 * n_cases, outcomes


def test_actor_predicts_saves_and_loads_on_its_own(model, tmp_path):
    """SB3's ``policy.actor.predict`` / ``actor.save`` / ``Actor.load``: the policy's actions, from an actor file."""
    from rlkit_td3.policies import Actor

    policy = model.policy
    actions, state = policy.actor.predict(OBS, state="s", deterministic=True)
    assert state == "s" and np.array_equal(actions, policy.predict(OBS)[0])
    assert np.array_equal(policy.actor.predict(OBS[0])[0], policy.predict(OBS[0])[0])  # one observation
    path = tmp_path / "actor.zip"
    policy.actor.save(path)
    with zipfile.ZipFile(path) as archive:
        stored = torch.load(io.BytesIO(archive.read("policy.pth")), weights_only=True)
        assert json.loads(archive.read("metadata.json"))["content"] == "actor"
    assert stored and all(name.startswith("actor.") for name in stored)  # no critic in an actor file
    loaded = Actor.load(path)
    assert isinstance(loaded, Actor)
    assert np.array_equal(loaded.predict(OBS)[0], actions)  # the saved actor's actions, env units
    for name, tensor in policy.actor.state_dict().items():
        assert torch.equal(tensor, loaded.state_dict()[name])
    with pytest.raises(ModelFileError, match="holds an actor, not a policy: load it with Actor.load"):
        TD3Policy.load(path)
    policy.save(tmp_path / "policy.zip")
    with pytest.raises(ModelFileError, match="holds a policy, not an actor: load it with TD3Policy.load"):
        Actor.load(tmp_path / "policy.zip")
    with pytest.raises(ValueError, match="actor_target.save"):
        policy.actor_target.save(tmp_path / "target.zip")


def test_actor_file_declaring_huge_critics_builds_none(saved, tmp_path):
    """An actor file holds no critic: whatever critics it declares, the loaded actor's policy has the smallest."""
    from rlkit_td3.policies import Actor

    policy = TD3Policy.load(saved)
    path = tmp_path / "actor.zip"
    policy.actor.save(path)

    def huge_critics(metadata):
        metadata["policy"]["kwargs"]["net_arch"] = {"pi": [16, 8], "qf": [2**20, 2**20]}
        metadata["policy"]["kwargs"]["n_critics"] = 1000

    loaded = Actor.load(_rewrite(path, edit_metadata=huge_critics))
    assert loaded._policy.n_critics == 1 and sum(p.numel() for p in loaded._policy.critic.parameters()) < 100
    with pytest.raises(ModelFileError, match="actor.mu.0.weight"):  # the actor's tensors are checked
        Actor.load(_rewrite(path, edit_state=lambda state: state.update({"actor.mu.0.weight": torch.zeros(3, 3)})))

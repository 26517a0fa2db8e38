"""``get_parameters`` / ``set_parameters``: Stable-Baselines3's names, exact_match, files, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import make_counter

from rlkit_td3 import DDPG, TD3

OBS = np.array([[0.0, 1.0], [3.0, 2.0], [1.0, 4.0]], dtype=np.float32)


def make(seed: int, net_arch=(8,), cls=TD3):
    model = cls("MlpPolicy", make_counter(5), policy_kwargs={"net_arch": list(net_arch)}, seed=seed, learning_starts=5)
    model.learn(20)  # so that the optimizers hold moments
    return model


def test_get_parameters_has_sb3_names():
    params = make(0).get_parameters()
    assert sorted(params) == ["actor.optimizer", "critic.optimizer", "policy"]
    assert "actor.mu.0.weight" in params["policy"]
    assert params["actor.optimizer"]["state"], "the optimizer has moments after learn"


@pytest.mark.parametrize("cls", [TD3, DDPG])
def test_round_trip_through_a_dict(cls):
    source, target = make(0, cls=cls), make(1, cls=cls)
    assert not np.allclose(source.predict(OBS)[0], target.predict(OBS)[0])
    target.set_parameters(source.get_parameters())
    np.testing.assert_array_equal(source.predict(OBS)[0], target.predict(OBS)[0])
    for name, state in source.get_parameters().items():
        got = target.get_parameters()[name]
        if name == "policy":
            for key in state:
                torch.testing.assert_close(got[key], state[key], rtol=0, atol=0)
        else:
            for index, entry in state["state"].items():
                torch.testing.assert_close(got["state"][index]["exp_avg"], entry["exp_avg"], rtol=0, atol=0)


def test_round_trip_through_a_file(tmp_path):
    source, target = make(0), make(1)
    source.save(tmp_path / "model.zip")
    target.set_parameters(tmp_path / "model.zip", device="cpu")
    np.testing.assert_array_equal(source.predict(OBS)[0], target.predict(OBS)[0])
    target.set_parameters(str(tmp_path / "model.zip"))  # a str path too


def test_set_parameters_keeps_the_model_training():
    source, target = make(0), make(1)
    target.set_parameters(source.get_parameters())
    target.learn(10, reset_num_timesteps=False)  # the optimizers still own the policy's parameters
    assert not np.array_equal(source.predict(OBS)[0], target.predict(OBS)[0])


def test_partial_update_with_exact_match_false():
    source, target = make(0), make(1)
    critic_before = target.policy.critic.state_dict()
    critic_before = {k: v.clone() for k, v in critic_before.items()}
    actor_only = {k: v for k, v in source.get_parameters()["policy"].items() if k.startswith("actor.")}
    target.set_parameters({"policy": actor_only}, exact_match=False)
    np.testing.assert_array_equal(source.predict(OBS)[0], target.predict(OBS)[0])
    for key, value in target.policy.critic.state_dict().items():
        torch.testing.assert_close(value, critic_before[key], rtol=0, atol=0)


def test_exact_match_requires_every_name_and_key():
    source, target = make(0), make(1)
    before = target.predict(OBS)[0]
    with pytest.raises(ValueError, match=r"missing names \['actor.optimizer', 'critic.optimizer'\]"):
        target.set_parameters({"policy": source.get_parameters()["policy"]})
    params = source.get_parameters()
    del params["policy"]["actor.mu.0.bias"]
    with pytest.raises(ValueError, match=r"missing keys \['actor.mu.0.bias'\] in the policy state dict"):
        target.set_parameters(params)
    np.testing.assert_array_equal(before, target.predict(OBS)[0])  # nothing was loaded


def test_unknown_names_and_keys_are_errors_even_without_exact_match():
    target = make(1)
    with pytest.raises(ValueError, match=r"unknown names \['actor_optimizer'\] in the parameters"):
        target.set_parameters({"actor_optimizer": {}}, exact_match=False)
    with pytest.raises(ValueError, match=r"unknown keys \['actor.extra'\] in the policy state dict"):
        target.set_parameters({"policy": {"actor.extra": torch.zeros(1)}}, exact_match=False)


def test_shape_mismatch_is_an_error_and_changes_nothing():
    small, large = make(0, net_arch=(8,)), make(1, net_arch=(16,))
    before = {k: v.clone() for k, v in large.policy.state_dict().items()}
    with pytest.raises(
        ValueError, match=r"policy key 'actor.mu.0.weight' has shape \(8, 2\); the model's has \(16, 2\)"
    ):
        large.set_parameters(small.get_parameters(), exact_match=False)
    optimizer_only = {"actor.optimizer": small.get_parameters()["actor.optimizer"]}
    with pytest.raises(ValueError, match=r"'actor.optimizer' state of parameter 0 \(exp_avg\) has shape \(8, 2\)"):
        large.set_parameters(optimizer_only, exact_match=False)
    for key, value in large.policy.state_dict().items():
        torch.testing.assert_close(value, before[key], rtol=0, atol=0)


def test_a_failed_load_rolls_back_what_was_loaded(monkeypatch):
    source, target = make(0), make(1)
    before = target.predict(OBS)[0]

    optimizer = target.policy.critic_optimizer
    original, calls = optimizer.load_state_dict, []

    def broken(state):  # fails once, after the policy and the actor optimizer were loaded
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("disk on fire")
        original(state)

    monkeypatch.setattr(optimizer, "load_state_dict", broken)
    with pytest.raises(ValueError, match="nothing was changed .*disk on fire"):
        target.set_parameters(source.get_parameters())
    assert len(calls) == 2  # the failed load, then the restore
    np.testing.assert_array_equal(before, target.predict(OBS)[0])


def test_bad_argument_types():
    model = make(0)
    with pytest.raises(TypeError, match="load_path_or_dict must be a dict or a model file path"):
        model.set_parameters(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"'policy' must be a state dict"):
        model.set_parameters({"policy": [1, 2]}, exact_match=False)  # type: ignore[dict-item]


def test_get_parameters_returns_copies():
    model = make(0)
    before = model.predict(OBS)[0]
    params = model.get_parameters()
    for value in params["policy"].values():
        value.zero_()
    for entry in params["actor.optimizer"]["state"].values():
        entry["exp_avg"].zero_()
    np.testing.assert_array_equal(before, model.predict(OBS)[0])
    assert any(bool(e["exp_avg"].abs().sum() > 0) for e in model.get_parameters()["actor.optimizer"]["state"].values())


def test_malformed_optimizer_state_is_named():
    model = make(0)
    with pytest.raises(
        ValueError, match=r"'critic.optimizer' has param groups of sizes None; the model's optimizer has"
    ):
        model.set_parameters({"critic.optimizer": {"param_groups": "x", "state": {}}}, exact_match=False)
    groups = model.get_parameters()["critic.optimizer"]["param_groups"]
    with pytest.raises(ValueError, match=r"has param groups of sizes \[4, 4\]"):
        model.set_parameters({"critic.optimizer": {"param_groups": groups * 2, "state": {}}}, exact_match=False)

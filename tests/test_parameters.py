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
    with pytest.raises(ValueError, match=r"policy\['actor.mu.0.weight'\] is \(\(8, 2\), .*the model has \(\(16, 2\)"):
        large.set_parameters(small.get_parameters(), exact_match=False)
    optimizer_only = {"actor.optimizer": small.get_parameters()["actor.optimizer"]}
    with pytest.raises(ValueError, match=r"actor.optimizer.state\[0\]\['exp_avg'\] has shape \(8, 2\)"):
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
    with pytest.raises(ValueError, match=r"critic.optimizer has str param groups, the model's optimizer has 1"):
        model.set_parameters({"critic.optimizer": {"param_groups": "x", "state": {}}}, exact_match=False)
    groups = model.get_parameters()["critic.optimizer"]["param_groups"]
    with pytest.raises(ValueError, match=r"critic.optimizer has 2 param groups, the model's optimizer has 1"):
        model.set_parameters({"critic.optimizer": {"param_groups": groups * 2, "state": {}}}, exact_match=False)


# A forged optimizer state that passes a shallow check: 0-d moments crash the fused Adam kernel (heap corruption,
# SIGABRT/SIGBUS), so the learn() that would use them runs in a child process: a regression kills the child, not
# pytest.
_ZERO_D_MOMENTS = """
import sys, torch
sys.path.insert(0, "tests")
from test_parameters import make
model = make(0)
params = model.get_parameters()
state = params["actor.optimizer"]
for entry in state["state"].values():
    entry["exp_avg"], entry["exp_avg_sq"] = torch.tensor(0.0), torch.tensor(0.0)
try:
    model.set_parameters({"actor.optimizer": state}, exact_match=False)
except ValueError as exc:
    print("REFUSED", exc)
    sys.exit(0)
model.learn(50, reset_num_timesteps=False)
print("ACCEPTED")
"""


def test_zero_d_moments_are_refused_before_they_reach_the_kernel():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _ZERO_D_MOMENTS], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"the child died with {done.returncode}: {done.stderr[-2000:]}"
    assert "REFUSED" in done.stdout and "['exp_avg'] has shape ()" in done.stdout, done.stdout


def _forged_actor_state(model, how: str):
    state = model.get_parameters()["actor.optimizer"]
    first = next(iter(state["state"].values()))
    if how == "missing exp_avg_sq":
        del first["exp_avg_sq"]
    elif how == "amsgrad":
        state["param_groups"][0]["amsgrad"] = True
    elif how == "nan moment":
        first["exp_avg"][0] = float("nan")
    elif how == "negative second moment":
        first["exp_avg_sq"].fill_(-1.0)
    elif how == "float64 moment":
        first["exp_avg"] = first["exp_avg"].double()
    elif how == "step is a list":
        first["step"] = [3]
    return state


@pytest.mark.parametrize(
    "how, message",
    [
        ("missing exp_avg_sq", r"state\[0\] has \['exp_avg', 'step'\], Adam keeps"),
        ("amsgrad", r"param_groups\[0\]\['amsgrad'\] is True, the model's optimizer has False"),
        ("nan moment", r"\['exp_avg'\] holds non-finite values"),
        ("negative second moment", r"\['exp_avg_sq'\] holds negative values"),
        ("float64 moment", r"\['exp_avg'\] has shape .* and dtype torch.float64"),
        ("step is a list", r"\['step'\] must be a 0-d float tensor"),
    ],
)
def test_set_parameters_checks_optimizer_state_as_a_file_load_does(how, message):
    model = make(0)
    before = model.get_parameters()
    with pytest.raises(ValueError, match=message):
        model.set_parameters({"actor.optimizer": _forged_actor_state(model, how)}, exact_match=False)
    after = model.get_parameters()  # atomic: nothing changed
    for index, entry in before["actor.optimizer"]["state"].items():
        for key, value in entry.items():
            torch.testing.assert_close(after["actor.optimizer"]["state"][index][key], value, rtol=0, atol=0)
    model.learn(10, reset_num_timesteps=False)  # and the model still trains


def test_set_parameters_refuses_a_non_finite_or_mistyped_policy_weight():
    model = make(0)
    before = model.predict(OBS)[0]
    weight = model.get_parameters()["policy"]["actor.mu.0.weight"]
    with pytest.raises(ValueError, match=r"policy\['actor.mu.0.weight'\] holds non-finite values"):
        model.set_parameters({"policy": {"actor.mu.0.weight": weight * float("nan")}}, exact_match=False)
    with pytest.raises(ValueError, match=r"policy\['actor.mu.0.weight'\] is \(\(8, 2\), torch.float64\)"):
        model.set_parameters({"policy": {"actor.mu.0.weight": weight.double()}}, exact_match=False)
    np.testing.assert_array_equal(before, model.predict(OBS)[0])


def test_set_parameters_does_not_alias_the_callers_tensors():
    model = make(0)
    snap = model.get_parameters()
    kept = {name: {k: v.clone() for k, v in e.items()} for name, e in snap["actor.optimizer"]["state"].items()}
    weights = {k: v.clone() for k, v in snap["policy"].items()}
    model.set_parameters(snap)
    model.learn(30, reset_num_timesteps=False)
    for index, entry in kept.items():
        for key, value in entry.items():
            torch.testing.assert_close(snap["actor.optimizer"]["state"][index][key], value, rtol=0, atol=0)
    for key, value in weights.items():
        torch.testing.assert_close(snap["policy"][key], value, rtol=0, atol=0)

"""Export of the actor to TorchScript and ONNX: parity with model.predict, normalisation in the graph, SB3's
recipe on ``model.policy.actor`` (the tests/sb3_style scripts of this feature run in tests/test_sb3_style.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnxruntime as ort
import pytest
import torch

from rlkit_td3 import TD3
from rlkit_td3.export import ExportableActor, export, exportable_actor
from rlkit_td3.policies import TD3Policy
from tests.conftest import make_counter

ROOT = Path(__file__).resolve().parents[1]
ACT_LOW, ACT_HIGH = (-2.0, 0.0), (1.0, 5.0)
OBS = np.random.default_rng(7).normal(scale=4.0, size=(1000, 2)).astype(np.float32)
MEAN, VAR = np.array([1.5, -3.0]), np.array([4.0, 0.25])


@pytest.fixture(scope="module")
def model():
    env = make_counter(act_low=ACT_LOW, act_high=ACT_HIGH)
    kwargs = {"net_arch": [32, 16]}
    return TD3("MlpPolicy", env, learning_starts=10, batch_size=8, policy_kwargs=kwargs, seed=0).learn(40)


def _onnx_actions(path: Path, obs: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(["action"], {"observation": obs})[0]


def test_onnx_matches_predict_on_1000_observations(model, tmp_path):
    path = export(model, tmp_path / "actor.onnx", format="onnx")
    expected, _ = model.predict(OBS, deterministic=True)
    actions = _onnx_actions(path, OBS)
    assert actions.shape == (1000, 2) and actions.dtype == np.float32
    assert np.abs(actions - expected).max() <= 1e-5
    assert np.all(actions >= np.array(ACT_LOW) - 1e-6) and np.all(actions <= np.array(ACT_HIGH) + 1e-6)
    one = _onnx_actions(path, OBS[:1])  # the batch dimension is dynamic
    assert np.abs(one - model.predict(OBS[:1], deterministic=True)[0]).max() <= 1e-5


def test_torchscript_loads_in_a_fresh_process_without_the_library(model, tmp_path):
    path = model.policy.export(tmp_path / "actor.pt")  # format="torchscript" is the default
    np.save(tmp_path / "obs.npy", OBS)
    script = textwrap.dedent(
        f"""
        import sys
        import numpy as np, torch
        actor = torch.jit.load({str(path)!r})
        with torch.no_grad():
            actions = actor(torch.as_tensor(np.load({str(tmp_path / "obs.npy")!r})))
        np.save({str(tmp_path / "actions.npy")!r}, actions.numpy())
        assert "rlkit_td3" not in sys.modules
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=tmp_path, timeout=120)
    actions = np.load(tmp_path / "actions.npy")
    expected, _ = model.predict(OBS, deterministic=True)
    assert actions.shape == (1000, 2)
    assert np.abs(actions - expected).max() <= 1e-5


def _normalized(obs: np.ndarray, clip: float, epsilon: float) -> np.ndarray:
    """VecNormalize's observation formula, in float64 NumPy."""
    return np.clip((obs - MEAN) / np.sqrt(VAR + epsilon), -clip, clip).astype(np.float32)


def test_normalisation_is_folded_into_both_formats(model, tmp_path):
    clip, epsilon = 2.0, 1e-3
    stats = dict(obs_mean=MEAN, obs_var=VAR, clip_obs=clip, epsilon=epsilon)
    expected, _ = model.predict(_normalized(OBS, clip, epsilon), deterministic=True)
    assert np.mean(np.abs((OBS - MEAN) / np.sqrt(VAR + epsilon)) > clip) > 0.2  # the clip matters here
    onnx_path = export(model, tmp_path / "actor.onnx", format="onnx", **stats)
    assert np.abs(_onnx_actions(onnx_path, OBS) - expected).max() <= 1e-5
    script_path = export(model.policy, tmp_path / "actor.pt", **stats)
    with torch.no_grad():
        scripted = torch.jit.load(str(script_path))(torch.as_tensor(OBS)).numpy()
    assert np.abs(scripted - expected).max() <= 1e-5
    unnormalised, _ = model.predict(OBS, deterministic=True)
    assert np.abs(scripted - unnormalised).max() > 1e-2


def test_a_vecnormalize_like_object_gives_the_same_graph_as_explicit_statistics(model):
    normalizer = SimpleNamespace(obs_rms=SimpleNamespace(mean=MEAN, var=VAR), clip_obs=3.0, epsilon=1e-4)
    from_object = exportable_actor(model, normalizer=normalizer)
    explicit = exportable_actor(model, obs_mean=MEAN, obs_var=VAR, clip_obs=3.0, epsilon=1e-4)
    obs = torch.as_tensor(OBS)
    with torch.no_grad():
        assert torch.equal(from_object(obs), explicit(obs))
        assert not torch.equal(from_object(obs), exportable_actor(model)(obs))
        normalizer.norm_obs = False  # VecNormalize(norm_obs=False) leaves observations alone
        assert torch.equal(exportable_actor(model, normalizer=normalizer)(obs), exportable_actor(model)(obs))


def test_the_exported_module_is_a_snapshot(model):
    policy = TD3Policy(model.observation_space, model.action_space, net_arch=[8])
    module = exportable_actor(policy)
    obs = torch.as_tensor(OBS[:10])
    with torch.no_grad():
        before = module(obs).clone()
        policy.load_from_vector(policy.parameters_to_vector() + 1.0)
        assert torch.equal(module(obs), before)
    assert not any(p.requires_grad for p in module.parameters())


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"format": "tflite"}, ValueError, r"format must be one of \('torchscript', 'onnx'\), got 'tflite'"),
        ({"obs_mean": MEAN}, ValueError, "obs_mean and obs_var go together"),
        ({"obs_mean": MEAN[:1], "obs_var": VAR}, ValueError, r"obs_mean must have the observation's shape \(2,\)"),
        ({"obs_mean": MEAN, "obs_var": -VAR}, ValueError, "obs_var must be >= 0"),
        ({"obs_mean": MEAN * np.nan, "obs_var": VAR}, ValueError, "obs_mean must be finite"),
        ({"obs_mean": MEAN, "obs_var": VAR, "clip_obs": 0}, ValueError, "clip_obs must be a positive number, got 0"),
        ({"obs_mean": MEAN, "obs_var": 0 * VAR, "epsilon": 0.0}, ValueError, "epsilon > 0"),
        ({"normalizer": object()}, TypeError, "normalizer must have an obs_rms"),
        (
            {"normalizer": SimpleNamespace(obs_rms=SimpleNamespace(mean=MEAN, var=VAR)), "obs_mean": MEAN},
            ValueError,
            "not both",
        ),
    ],
)
def test_bad_arguments_are_named(model, tmp_path, kwargs, error, message):
    with pytest.raises(error, match=message):
        export(model, tmp_path / "actor.pt", **kwargs)
    assert not (tmp_path / "actor.pt").exists()


def test_only_models_and_policies_are_exported(tmp_path):
    with pytest.raises(TypeError, match="model_or_policy must be a TD3/DDPG model or a TD3Policy"):
        export(torch.nn.Linear(2, 2), tmp_path / "x.pt")


def test_sb3_recipe_on_model_policy_actor(model, tmp_path):
    """SB3's documented recipe: wrap ``model.policy.actor``, export / trace / script it; it outputs [-1, 1]."""

    class Wrapped(torch.nn.Module):
        def __init__(self, actor: torch.nn.Module):
            super().__init__()
            self.actor = actor

        def forward(self, observation: torch.Tensor) -> torch.Tensor:
            return self.actor(observation)

    actor = model.policy.actor
    wrapped = Wrapped(actor).eval()
    dummy = torch.randn(1, 2)
    path = tmp_path / "sb3_recipe.onnx"
    torch.onnx.export(wrapped, dummy, str(path), opset_version=18, input_names=["input"])
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    expected, _ = model.predict(OBS[:1], deterministic=True)
    scaled = session.run(None, {"input": OBS[:1]})[0]
    assert np.abs(scaled).max() <= 1.0
    assert np.abs(model.policy.unscale_action(scaled) - expected).max() <= 1e-5
    obs = torch.as_tensor(OBS)
    with torch.no_grad():
        reference = actor(obs)
        assert torch.equal(torch.jit.trace(wrapped, dummy)(obs), reference)
        assert torch.equal(torch.jit.script(wrapped)(obs), reference)
        assert torch.equal(torch.jit.script(actor)(obs), reference)


def test_exportable_actor_is_scriptable_and_traceable(model):
    module = exportable_actor(model)
    assert isinstance(module, ExportableActor)
    obs = torch.as_tensor(OBS)
    with torch.no_grad():
        eager = module(obs)
        assert torch.equal(torch.jit.script(module)(obs), eager)
        assert torch.equal(torch.jit.trace(module, obs[:3])(obs), eager)

"""TD7 resumes exactly and loads safely: a run checkpointed at an episode boundary and continued in a new process ends
bit for bit where the uninterrupted run does (networks with the checkpoint policy and fixed encoders, three
optimizers, LAP buffer, value clipping bounds, checkpoint schedule), and every TD7 piece of a file is checked."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import gymnasium as gym
import pytest

from rlkit_td3 import TD7
from rlkit_td3.fileio.serialization import ModelFileError
from tests.test_resume import _assert_equal, _entries

ROOT = Path(__file__).resolve().parents[1]
SMALL = dict(
    learning_starts=200,
    buffer_size=5_000,
    batch_size=32,
    target_update_interval=50,
    steps_before_checkpointing=300,  # policies are held for several episodes from then on
    max_eps_when_checkpointing=3,
    policy_kwargs=dict(net_arch=[32, 32], embedding_dim=16, encoder_net_arch=[32, 32]),
    seed=3,
)

CHILD = """
import sys
import gymnasium as gym
from rlkit_td3 import TD7
model = TD7.load(sys.argv[1], env=gym.make("Pendulum-v1"))
model.learn(int(sys.argv[2]), reset_num_timesteps=False)
model.save(sys.argv[3], include_buffer=True)
"""


def test_td7_resume_at_episode_boundary_is_bitwise_exact(tmp_path):
    k, n = 1000, 1800
    checkpoint, straight, resumed = tmp_path / "k.zip", tmp_path / "straight.zip", tmp_path / "resumed.zip"

    def save_at_k(locals_, globals_):
        model = locals_["self"]
        if model.num_timesteps == k:
            model.save(checkpoint, include_buffer=True)
        return True

    model = TD7("MlpPolicy", gym.make("Pendulum-v1"), **SMALL)
    model.learn(n, callback=save_at_k)
    model.save(straight, include_buffer=True)
    subprocess.run(
        [sys.executable, "-c", CHILD, str(checkpoint), str(n - k), str(resumed)],
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
    )
    at_k, a, b = _entries(checkpoint), _entries(straight), _entries(resumed)
    # the checkpoint holds TD7's state mid-way: a policy held over several episodes, bounds in use
    state_k = at_k["metadata"]["training_state"]
    assert state_k["policy_checkpoints"]["episodes_before_update"] == 3
    assert state_k["value_bounds"]["low_target"] < state_k["value_bounds"]["high_target"]
    assert model._n_updates > 1000
    for key in ("policy", "actor_optimizer", "critic_optimizer", "encoder_optimizer", "training_state", "buffer"):
        _assert_equal(a[key], b[key], key)
    for key in ("counters", "training_state", "algorithm_settings"):
        _assert_equal(a["metadata"][key], b["metadata"][key], key)
    # the checkpoint policy is part of the compared state, and it is not the trained actor
    assert any(not (a["policy"][f"checkpoint_actor.{n}"] == a["policy"][f"actor.{n}"]).all() for n in ("mu.0.weight",))


def _rewrite(path: Path, out: Path, edit) -> None:
    """Copy the model file ``path`` to ``out`` with its metadata changed by ``edit``."""
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "metadata.json":
                meta = json.loads(data)
                edit(meta)
                data = json.dumps(meta).encode()
            dst.writestr(item, data)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("td7") / "model.zip"
    model = TD7("MlpPolicy", "Pendulum-v1", **{**SMALL, "learning_starts": 200})
    model.learn(600)
    model.save(path)
    return path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m["training_state"].pop("value_bounds"), "lacks 'value_bounds'"),
        (lambda m: m["training_state"].pop("policy_checkpoints"), "lacks 'policy_checkpoints'"),
        (lambda m: m["training_state"]["value_bounds"].update(low_target=5.0, high_target=1.0), "above high_target"),
        (lambda m: m["training_state"]["value_bounds"].update(low="x"), "value_bounds.low must be a number"),
        (lambda m: m["training_state"]["value_bounds"].pop("high"), "must hold exactly"),
        (lambda m: m["training_state"]["policy_checkpoints"].update(timesteps=-1), "timesteps must be an int"),
        (lambda m: m["training_state"]["policy_checkpoints"].update(episodes_before_update=0), "episodes_before_upd"),
        (lambda m: m["training_state"]["policy_checkpoints"].update(episodes=9), "above episodes_before_update"),
        (lambda m: m["training_state"]["policy_checkpoints"].update(min_return=float("nan")), "min_return"),
        (lambda m: m.pop("algorithm_settings"), "algorithm_settings must be a dict"),
        (lambda m: m["algorithm_settings"].update(target_update_interval=0), "target_update_interval"),
        (lambda m: m["algorithm_settings"].update(use_checkpoints="yes"), "use_checkpoints must be a bool"),
        (lambda m: m["algorithm_settings"].update(extra=1), "settings must be exactly"),
        (lambda m: m["policy"]["kwargs"].update(embedding_dim=10**9), "embedding_dim must be in"),
    ],
)
def test_bad_td7_state_is_refused_with_a_clear_error(saved, tmp_path, edit, message):
    bad = tmp_path / "bad.zip"
    _rewrite(saved, bad, edit)
    with pytest.raises(ModelFileError, match=message):
        TD7.load(bad)


def test_a_td7_file_loads_bit_for_bit(saved):
    model = TD7.load(saved, env="Pendulum-v1")
    again = TD7.load(saved)
    for key, value in model.policy.state_dict().items():
        assert value.equal(again.policy.state_dict()[key]), key
    assert model._value_bounds.state_dict() == again._value_bounds.state_dict()
    with zipfile.ZipFile(saved) as archive:
        assert "encoder_optimizer.pth" in archive.namelist()
        meta = json.loads(io.BytesIO(archive.read("metadata.json")).read())
    assert meta["policy"]["class"] == "TD7Policy" and meta["policy"]["kwargs"]["embedding_dim"] == 16

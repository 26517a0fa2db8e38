"""Safe loading: crafted files cannot run code, corrupted files end in ModelFileError, writes are crash-safe."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import pickle
import signal
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlkit_td3 import TD3
from rlkit_td3.fileio.serialization import ModelFileError
from rlkit_td3.utils import NonFiniteError
from tests.model_fuzz import STRUCTURAL_MUTATIONS, _entries, _zip, cases, run_isolated, structural_cases

TINY = dict(learning_starts=50, batch_size=16, buffer_size=500, policy_kwargs={"net_arch": [8]}, seed=0)


@pytest.fixture(scope="module")
def model_bytes(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("model") / "m.zip"
    TD3("MlpPolicy", "Pendulum-v1", **TINY).learn(120).save(path, include_buffer=True)
    return path.read_bytes()


class _CreatesFile:
    """Unpickling this object creates a file: the classic payload of a malicious model file."""

    def __init__(self, target: str) -> None:
        self.target = target

    def __reduce__(self):
        return (open, (self.target, "w"))


def test_crafted_pickle_payloads_are_refused_and_run_nothing(tmp_path, model_bytes):
    marker = tmp_path / "pwned"
    entries = _entries(model_bytes)
    evil = pickle.dumps({"learning_rate": _CreatesFile(str(marker))})
    buf = io.BytesIO()
    torch.save({"weight": _CreatesFile(str(marker))}, buf)
    meta = json.loads(entries["metadata.json"])
    meta["schedules"]["learning_rate"] = {"pickled": True}
    meta["pickled_keys"] = ["learning_rate"]
    crafted = {
        # a pickle entry the metadata asks for
        "pickle_entry": {**entries, "metadata.json": json.dumps(meta).encode(), "pickled.pkl": evil},
        # a tensor entry that is really a code-running pickle
        "tensor_entry": {**entries, "policy.pth": buf.getvalue()},
        # metadata naming a class by import path
        "class_name": {
            **entries,
            "metadata.json": json.dumps({**meta, "policy": {**meta["policy"], "class": "os:system"}}).encode(),
        },
    }
    for name, content in crafted.items():
        path = tmp_path / f"{name}.zip"
        path.write_bytes(_zip(content))
        with pytest.raises(ModelFileError) as info:
            TD3.load(path)
        assert str(path) in str(info.value)
        assert not marker.exists(), name
    # the model as rlkit_td3 saved it loads without allow_pickle
    path = tmp_path / "ok.zip"
    path.write_bytes(model_bytes)
    loaded = TD3.load(path)
    assert loaded.num_timesteps == 120 and loaded.replay_buffer.size() == 120


def _alarm(signum, frame):
    raise TimeoutError("loading a corrupted model file took more than 10 s")


def test_fuzzed_model_files_load_or_raise_model_file_error(tmp_path, model_bytes):
    n_cases = 1_000
    outcomes: dict[str, int] = {}
    path = tmp_path / "fuzz.zip"
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for kind, data in cases(model_bytes, n_cases, seed=0):
            path.write_bytes(data)
            signal.alarm(10)
            try:
                model = TD3.load(path)
            except ModelFileError as exc:
                assert str(exc), kind
                outcomes["refused"] = outcomes.get("refused", 0) + 1
            else:  # a corruption the format tolerates (e.g. a flipped timestamp): the model still works
                action, _ = model.predict(np.zeros(3, dtype=np.float32))
                assert action.shape == (1,)
                outcomes["loaded"] = outcomes.get("loaded", 0) + 1
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    print(f"fuzz: {n_cases} cases, {outcomes}")
    assert sum(outcomes.values()) == n_cases
    assert outcomes["refused"] >= 0.9 * n_cases


def _vector_pendulum():
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    return SyncVectorEnv([lambda: gym.make("Pendulum-v1") for _ in range(2)], autoreset_mode=AutoresetMode.DISABLED)


STRUCTURAL_ENVS = [lambda: gym.make("Pendulum-v1"), _vector_pendulum]
"""The envs of the two base models of the structural fuzz test: one env, and two envs with the memory-optimized
buffer, Ornstein-Uhlenbeck noise and a linear learning-rate schedule."""


@pytest.fixture(scope="module")
def structural_bases(tmp_path_factory, model_bytes) -> list[bytes]:
    from rlkit_td3.noise import OrnsteinUhlenbeckActionNoise
    from rlkit_td3.schedules import LinearSchedule

    path = tmp_path_factory.mktemp("bases") / "b.zip"
    TD3(
        "MlpPolicy",
        _vector_pendulum(),
        **{**TINY, "optimize_memory_usage": True},
        action_noise=OrnsteinUhlenbeckActionNoise([0.0], [0.2]),
        learning_rate=LinearSchedule(1e-3, 1e-4),
    ).learn(120).save(path, include_buffer=True)
    return [model_bytes, path.read_bytes()]


def _load_then_train(path: Path, make_env) -> str:
    """What the structural fuzz test runs in each child: the file alone, then with an env and 50 steps of training."""
    try:
        TD3.load(path)
    except ModelFileError:
        return "refused"
    model = TD3.load(path, env=make_env())
    model.learn(50, reset_num_timesteps=False)
    assert model.num_timesteps >= 170 and model._n_updates > 0
    return "trained"


def test_structural_fuzz_every_case_is_refused_or_loads_and_trains(tmp_path, structural_bases):
    """1,000 files whose entries are each well-formed but disagree with each other (optimizer moments of another
    shape, buffer positions past the stored rows, huge declared sizes, ...), each loaded in a forked child under a
    1 GiB memory cap: every one is refused with ModelFileError, or loads and then trains 50 steps."""
    n_cases = 1_000
    path = tmp_path / "case.zip"
    outcomes: dict[str, int] = {}
    failures = []
    kinds = set()
    for base, kind, data in structural_cases(structural_bases, n_cases, seed=0):
        kinds.add(kind.split(" + ")[0])
        path.write_bytes(data)
        make_env = STRUCTURAL_ENVS[base]
        outcome, _ = run_isolated(lambda: _load_then_train(path, make_env), memory_cap=2**30, timeout=60)  # noqa: B023
        if outcome not in ("refused", "trained"):
            failures.append(f"{kind}: {outcome[:500]}")
            outcome = "failed"
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    print(f"structural fuzz: {n_cases} cases, {outcomes}")
    assert not failures, "\n".join(failures[:20])
    assert len(kinds) >= len(STRUCTURAL_MUTATIONS)  # every kind of disagreement was tried (one has two labels)
    assert outcomes["refused"] >= 0.8 * n_cases and outcomes.get("trained", 0) >= 20  # both paths exercised


# ---------------------------------------------------------------------------------------------------------
# crash safety


def _write_forever(model_path: str, seed: int) -> None:
    model = TD3.load(model_path)
    i = 0
    while True:
        model.num_timesteps = seed * 1_000_000 + i  # each save differs
        model.save(model_path, include_buffer=True)
        i += 1


def test_sigkill_during_checkpoint_writes_never_corrupts_the_file(tmp_path):
    path = tmp_path / "checkpoint.zip"
    model = TD3("MlpPolicy", "Pendulum-v1", **{**TINY, "buffer_size": 20_000, "policy_kwargs": {"net_arch": [64]}})
    model.learn(100)
    buffer = model.replay_buffer
    buffer.observations[:] = np.random.default_rng(0).standard_normal(buffer.observations.shape)
    buffer.pos, buffer.full = 0, True  # a full buffer makes each checkpoint a few MB
    model.save(path, include_buffer=True)
    start = time.perf_counter()
    TD3.load(path).save(tmp_path / "probe.zip", include_buffer=True)
    write_time = time.perf_counter() - start
    rng = np.random.default_rng(1)
    ctx = multiprocessing.get_context("fork")
    trials, stamps = 50, set()
    for trial in range(trials):
        proc = ctx.Process(target=_write_forever, args=(str(path), trial + 1))
        proc.start()
        time.sleep(rng.uniform(0.0, 2.5 * write_time))  # kill at a random moment of some write
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        loaded = TD3.load(path)  # always a complete checkpoint: the previous one or a new one
        assert loaded.replay_buffer.size() == 20_000
        stamps.add(loaded.num_timesteps)
    leftovers = [p for p in Path(tmp_path).iterdir() if p.name.endswith(".tmp")]
    print(f"crash safety: {trials} SIGKILLs, {len(stamps)} distinct checkpoints seen, {len(leftovers)} temp files")
    assert len(stamps) > 1  # the kills did land during writing, not only before the first one


# ---------------------------------------------------------------------------------------------------------
# numeric safety


class _NaNAt(gym.Wrapper):
    """Returns a NaN observation (or reward) at its ``at``-th step."""

    def __init__(self, env: gym.Env, at: int, where: str = "obs") -> None:
        super().__init__(env)
        self.at, self.where, self.steps = at, where, 0

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        if self.steps == self.at:
            if self.where == "obs":
                obs = np.full_like(obs, np.nan)
            else:
                reward = float("inf")
        return obs, reward, terminated, truncated, info


@pytest.mark.parametrize("where", ["obs", "reward"])
def test_non_finite_env_output_raises_naming_the_step_and_keeps_checkpoints(tmp_path, where):
    checkpoint = tmp_path / "last.zip"

    def save_every_100(locals_, globals_):
        model = locals_["self"]
        if model.num_timesteps % 100 == 0:
            model.save(checkpoint, include_buffer=True)
        return True

    model = TD3("MlpPolicy", _NaNAt(gym.make("Pendulum-v1"), at=300, where=where), **TINY)
    with pytest.raises(NonFiniteError, match=r"step 300\b.*Pendulum-v1|Pendulum-v1.*step 300\b"):
        model.learn(1_000, callback=save_every_100)
    restored = TD3.load(checkpoint)
    assert restored.num_timesteps == 200 and restored.replay_buffer.size() == 200
    assert np.isfinite(restored.replay_buffer.observations[:200]).all()


def test_non_finite_loss_stops_training():
    model = TD3("MlpPolicy", "Pendulum-v1", **TINY).learn(100)
    model.replay_buffer.rewards[:10] = 3e38  # squares overflow to inf in the critic loss
    model.replay_buffer.rewards[10:] = 3e38
    with pytest.raises(NonFiniteError, match="non-finite"):
        model.train(gradient_steps=5)

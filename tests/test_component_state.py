"""The component state protocol: a component of the user's own saves and resumes through ``state_dict()`` /
``load_state_dict()`` alone, with no edit of the checkpoint module (issue 34)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlkit_td3 import TD3
from rlkit_td3.fileio.serialization import ModelFileError
from rlkit_td3.noise import ActionNoise, VectorizedActionNoise
from tests.test_resume import _assert_same_run, _entries

SMALL = dict(batch_size=32, buffer_size=2000, learning_starts=100, policy_kwargs={"net_arch": [16, 16]}, seed=0)


class CountingNoise(ActionNoise):
    """A user's noise with state of its own: a draw counter and a generator of its own (not the base class's),
    both saved through the state protocol only."""

    def __init__(self, action_dim: int, seed: int = 1234) -> None:
        super().__init__()
        self.action_dim = action_dim
        self.own_rng = np.random.default_rng(seed)
        self.count = 0

    def __call__(self) -> np.ndarray:
        self.count += 1
        scale = 0.1 * (1 + self.count % 7)  # depends on the counter: a lost count changes the actions
        return (scale * self.own_rng.standard_normal(self.action_dim)).astype(np.float32)

    def state_dict(self) -> dict[str, Any]:
        return {"count": self.count, "own_rng": self.own_rng.bit_generator.state}

    def load_state_dict(self, state: Any) -> None:
        if not isinstance(state, dict) or set(state) != {"count", "own_rng"}:
            raise ModelFileError(f"CountingNoise state must hold count and own_rng, got {str(state)[:100]}")
        self.count = int(state["count"])
        self.own_rng.bit_generator.state = state["own_rng"]


def test_a_custom_noise_with_state_resumes_bit_for_bit(tmp_path):
    model = TD3("MlpPolicy", gym.make("Pendulum-v1"), action_noise=CountingNoise(1), **SMALL)
    model.learn(400)  # two whole Pendulum episodes: the checkpoint falls on an episode boundary
    model.save(tmp_path / "mid.zip", include_buffer=True)
    saved_count = model.action_noise.count
    model.learn(200, reset_num_timesteps=False)
    model.save(tmp_path / "straight.zip", include_buffer=True)
    assert model.action_noise.count == 600 > saved_count  # drawn once per step, warm-up included (SB3's warm-up)

    resumed = TD3.load(
        tmp_path / "mid.zip", env=gym.make("Pendulum-v1"), custom_objects={"action_noise": CountingNoise(1)}
    )
    assert resumed.action_noise.count == saved_count
    resumed.learn(200, reset_num_timesteps=False)
    resumed.save(tmp_path / "resumed.zip", include_buffer=True)
    _assert_same_run(_entries(tmp_path / "straight.zip"), _entries(tmp_path / "resumed.zip"))


def test_a_custom_noise_checks_the_state_it_is_given(tmp_path):
    model = TD3("MlpPolicy", gym.make("Pendulum-v1"), action_noise=CountingNoise(1), **SMALL)
    model.learn(120)
    model.save(tmp_path / "model.zip")
    with pytest.raises(ModelFileError, match="CountingNoise state must hold count and own_rng"):
        TD3.load(tmp_path / "model.zip", custom_objects={"action_noise": _Renamed(1)})


class _Renamed(CountingNoise):
    """Expects another layout than the file holds."""

    def load_state_dict(self, state: Any) -> None:
        super().load_state_dict({"renamed": state})


def test_vectorized_noise_delegates_the_protocol_to_each_copy():
    noise = VectorizedActionNoise(CountingNoise(2), n_envs=3, seed=0)
    for _ in range(5):
        noise()
    state = noise.state_dict()
    assert [copy["count"] for copy in state["noises"]] == [5, 5, 5]
    other = VectorizedActionNoise(CountingNoise(2), n_envs=3, seed=0)
    other.load_state_dict(state)
    np.testing.assert_array_equal(other(), noise())
    with pytest.raises(ModelFileError, match="3 noise states"):
        other.load_state_dict({"noises": state["noises"][:2]})


# ---------------------------------------------------------------------------- every component: round trip, refusals
def _same_batches(a, b, batch_size: int = 8, draws: int = 3) -> None:
    """Both buffers draw bit-identical batches (their samplers and contents agree)."""
    for _ in range(draws):
        for x, y in zip(a.sample(batch_size), b.sample(batch_size)):
            for u, v in zip(*(list(t.values()) if isinstance(t, dict) else [t] for t in (x, y))):
                if u is None or v is None:  # a field some kinds leave empty
                    assert u is v
                else:
                    np.testing.assert_array_equal(np.asarray(u), np.asarray(v), strict=True)


def _buffer(kind: str, seed: int):
    """An empty buffer of ``kind``, with its sampler seeded by ``seed``."""
    from gymnasium import spaces

    from rlkit_td3.buffers import (
        DictReplayBuffer,
        LAPReplayBuffer,
        NStepReplayBuffer,
        PrioritizedReplayBuffer,
        ReplayBuffer,
    )
    from rlkit_td3.her import HerReplayBuffer
    from tests.test_her import ACTION_SPACE, IdGoalEnv, _dict_space
    from tests.test_prioritized import ACT, OBS

    if kind == "DictReplayBuffer":
        return DictReplayBuffer(40, _dict_space(), spaces.Box(-1, 1, (2,), np.float32), n_envs=2, seed=seed)
    if kind == "HerReplayBuffer":
        return HerReplayBuffer(40, IdGoalEnv.observation_space, ACTION_SPACE, IdGoalEnv(), n_envs=2, seed=seed)
    classes = {
        "ReplayBuffer": (ReplayBuffer, {}),
        "ReplayBuffer-optimize_memory_usage": (ReplayBuffer, {"n_envs": 2, "optimize_memory_usage": True}),
        "NStepReplayBuffer": (NStepReplayBuffer, {"n_steps": 3}),
        "PrioritizedReplayBuffer": (PrioritizedReplayBuffer, {}),
        "LAPReplayBuffer": (LAPReplayBuffer, {}),
    }
    cls, kwargs = classes[kind]
    return cls(60, OBS, ACT, seed=seed, **kwargs)


def _filled_buffer(kind: str):
    """``(a filled buffer, an empty one of the same kind with another sampler seed)``."""
    from tests.test_her import _fill, _fill_dict
    from tests.test_prioritized import _filled

    buffer = _buffer(kind, 3)
    if kind == "DictReplayBuffer":
        _fill_dict(buffer, 15, 0)
    elif kind == "HerReplayBuffer":
        _fill(buffer, 2, 30, 0)
    else:
        _filled(buffer, 25)
    return buffer, _buffer(kind, 99)


BUFFER_KINDS = [
    "ReplayBuffer",
    "ReplayBuffer-optimize_memory_usage",
    "NStepReplayBuffer",
    "PrioritizedReplayBuffer",
    "LAPReplayBuffer",
    "DictReplayBuffer",
    "HerReplayBuffer",
]


@pytest.mark.parametrize("kind", BUFFER_KINDS)
def test_each_buffer_kind_round_trips_its_state(kind):
    buffer, fresh = _filled_buffer(kind)
    state = buffer.state_dict()
    assert set(state) == {"meta", "arrays"} and state["meta"]["size"] > 0
    fresh.load_state_dict(state)
    assert fresh.size() == buffer.size() and fresh.pos == buffer.pos
    _same_batches(buffer, fresh)
    # the state is a copy: changing the buffer afterwards does not change it
    again = _filled_buffer(kind)[1]
    again.load_state_dict(state)
    assert again.size() == fresh.size()


@pytest.mark.parametrize("kind", BUFFER_KINDS)
@pytest.mark.parametrize("corruption", ["missing", "shape", "nan"])
def test_each_buffer_kind_refuses_a_corrupt_state(kind, corruption):
    buffer, fresh = _filled_buffer(kind)
    state = buffer.state_dict()
    arrays = state["arrays"]
    if corruption == "missing":
        del arrays["rewards"]
        message = "lacks rewards"
    elif corruption == "shape":
        arrays["actions"] = arrays["actions"][:-1]
        message = "actions.npy holds"
    else:
        arrays["rewards"] = arrays["rewards"].copy()
        arrays["rewards"][0] = np.nan
        message = "rewards.npy holds non-finite"
    with pytest.raises(ValueError, match=message):
        fresh.load_state_dict(state)
    assert fresh.size() == 0  # nothing changed
    with pytest.raises(ValueError, match="meta and arrays"):
        fresh.load_state_dict({"arrays": arrays})


def _policy(seed: int = 0, **kwargs: Any):
    from gymnasium import spaces

    from rlkit_td3.policies import TD3Policy

    torch.manual_seed(seed)
    return TD3Policy(
        spaces.Box(-1, 1, (3,), np.float32), spaces.Box(-1, 1, (2,), np.float32), net_arch=[8, 8], **kwargs
    )


def test_the_policy_and_its_optimizers_round_trip_and_refuse_corrupt_states():
    policy, other = _policy(0, normalize_obs=True), _policy(1, normalize_obs=True)
    policy.update_obs_statistics(np.random.default_rng(0).normal(size=(16, 3)))
    for optimizer, net in ((policy.actor_optimizer, policy.actor), (policy.critic_optimizer, policy.critic)):
        optimizer.zero_grad()
        sum(p.sum() for p in net.parameters()).backward()
        optimizer.step()
    other.load_state_dict(policy.state_dict())
    other.load_optimizer_state_dict(policy.optimizer_state_dict())
    obs = np.random.default_rng(1).normal(size=(5, 3)).astype(np.float32)
    np.testing.assert_array_equal(other.predict(obs)[0], policy.predict(obs)[0])
    for name, state in other.optimizer_state_dict().items():
        for key, moments in state["state"].items():
            for k, value in moments.items():
                assert torch.equal(value, policy.optimizer_state_dict()[name]["state"][key][k])

    good = policy.state_dict()
    name = next(k for k in good if k.endswith("weight"))
    with pytest.raises(ValueError, match=rf"policy state\['{name}'\] is"):
        other.load_state_dict({**good, name: good[name][:-1]})
    with pytest.raises(ValueError, match=rf"policy state\['{name}'\] holds non-finite"):
        other.load_state_dict({**good, name: torch.full_like(good[name], float("nan"))})
    with pytest.raises(ValueError, match=rf"lacks \['{name}'\]"):
        other.load_state_dict({k: v for k, v in good.items() if k != name})
    with pytest.raises(ValueError, match="obs_normalizer.var"):  # the normaliser checks its statistics
        other.load_state_dict({**good, "obs_normalizer.var": -torch.ones_like(good["obs_normalizer.var"])}, entry="p")
    optimizers = policy.optimizer_state_dict()
    with pytest.raises(ValueError, match="critic_optimizer"):
        other.load_optimizer_state_dict({"actor_optimizer": optimizers["actor_optimizer"]})
    moments = optimizers["actor_optimizer"]["state"][0]
    moments["exp_avg"] = moments["exp_avg"].clone().fill_(float("nan"))
    with pytest.raises(ValueError, match="actor_optimizer"):
        other.load_optimizer_state_dict(optimizers)


def test_the_observation_normaliser_round_trips_and_refuses_corrupt_statistics():
    from rlkit_td3.policies.obs_normalizer import ObsNormalizer

    norm, other = ObsNormalizer((3,)), ObsNormalizer((3,))
    norm.update(np.random.default_rng(0).normal(size=(10, 3)))
    other.load_state_dict(norm.state_dict())
    x = torch.randn(4, 3)
    assert torch.equal(other(x), norm(x))
    state = norm.state_dict()
    with pytest.raises(ValueError, match="mean holds non-finite"):
        other.load_state_dict({**state, "mean": torch.full((3,), float("nan"), dtype=torch.float64)})
    with pytest.raises(ValueError, match="mean has shape"):
        other.load_state_dict({**state, "mean": torch.zeros(2, dtype=torch.float64)})
    with pytest.raises((ValueError, RuntimeError), match="count"):
        other.load_state_dict({k: v for k, v in state.items() if k != "count"})


class CountingSchedule:
    """A user's schedule with state: the protocol's names."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, progress_remaining: float) -> float:
        self.calls += 1
        return 1e-3 * progress_remaining

    def state_dict(self) -> dict[str, Any]:
        return {"calls": self.calls}

    def load_state_dict(self, state: Any) -> None:
        if not isinstance(state, dict) or not isinstance(state.get("calls"), int):
            raise ModelFileError(f"CountingSchedule state needs calls: {state!r}")
        self.calls = state["calls"]


def test_schedules_round_trip_and_refuse_corrupt_states():
    from types import SimpleNamespace

    from rlkit_td3.schedules import ConstantSchedule, LinearSchedule, ScheduleStates

    for schedule in (ConstantSchedule(1e-3), LinearSchedule(1e-3)):
        assert schedule.state_dict() == {}
        schedule.load_state_dict({})
        with pytest.raises(ValueError, match="has no state"):
            schedule.load_state_dict({"calls": 1})
    counting = CountingSchedule()
    model = SimpleNamespace(learning_rate=counting, actor_learning_rate=ConstantSchedule(1e-3))
    for p in (1.0, 0.5, 0.25):
        counting(p)
    state = ScheduleStates(model).state_dict()
    assert state == {"learning_rate": {"calls": 3}}  # stateless built-ins store nothing
    fresh = SimpleNamespace(learning_rate=CountingSchedule(), actor_learning_rate=ConstantSchedule(1e-3))
    ScheduleStates(fresh).load_state_dict(state)
    assert fresh.learning_rate.calls == 3
    with pytest.raises(ValueError, match="CountingSchedule state needs calls"):
        ScheduleStates(fresh).load_state_dict({"learning_rate": {"calls": "x"}})
    with pytest.raises(ValueError, match="keys are among"):
        ScheduleStates(fresh).load_state_dict({"momentum": {}})


def test_a_custom_schedule_with_state_resumes_by_protocol_only(tmp_path):
    model = TD3("MlpPolicy", gym.make("Pendulum-v1"), learning_rate=CountingSchedule(), **SMALL)
    model.learn(150)
    model.save(tmp_path / "m.zip")
    calls = model.learning_rate.calls
    assert calls > 0
    loaded = TD3.load(tmp_path / "m.zip", custom_objects={"learning_rate": CountingSchedule()})
    assert loaded.learning_rate.calls == calls


def test_vec_normalize_round_trips_and_refuses_corrupt_states():
    from rlkit_td3.vec_env import DummyVecEnv, VecNormalize

    def make():
        return VecNormalize(DummyVecEnv([lambda: gym.make("Pendulum-v1")]))

    env = make()
    env.seed(0)
    env.reset()
    for _ in range(20):
        env.step(np.zeros((1, 1), np.float32))
    other = make()
    other.load_state_dict(env.state_dict())
    obs = np.random.default_rng(0).normal(size=(4, 3))
    np.testing.assert_array_equal(other.normalize_obs(obs), env.normalize_obs(obs))
    np.testing.assert_array_equal(other.normalize_reward(np.ones(1)), env.normalize_reward(np.ones(1)))
    state = env.state_dict()
    bad = {**state, "arrays": {**state["arrays"], "obs_rms.mean": np.full(3, np.nan)}}
    with pytest.raises(ValueError, match=r"obs_rms\.mean holds non-finite"):
        other.load_state_dict(bad)
    bad = {**state, "arrays": {**state["arrays"], "obs_rms.var": np.ones(2)}}
    with pytest.raises(ValueError, match="obs_rms: mean has shape"):
        other.load_state_dict(bad)
    with pytest.raises(ValueError, match="'config'"):
        other.load_state_dict({"arrays": state["arrays"]})
    bad = {**state, "arrays": {**state["arrays"], "returns": np.array([np.inf])}}
    with pytest.raises(ValueError, match="returns must be finite"):
        other.load_state_dict(bad)


def _trained(seed: int = 0, steps: int = 130):
    model = TD3("MlpPolicy", gym.make("Pendulum-v1"), **{**SMALL, "seed": seed})
    model.learn(steps)
    return model


def _equal_states(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert set(a) == set(b)
    for key in a:
        if isinstance(a[key], torch.Tensor):
            assert torch.equal(a[key], b[key]), key
        else:
            assert a[key] == b[key], key


def test_env_records_fused_update_and_run_state_round_trip():
    from rlkit_td3.persistence.env_state import EnvRecords, env_rng_states
    from rlkit_td3.persistence.training_state import RunState, TrainingState
    from rlkit_td3.update.fused_update import FusedUpdateState

    model, other = _trained(0), _trained(1, 110)
    model.fused_update_matmul = "reference"
    for component in (EnvRecords, FusedUpdateState, RunState, TrainingState):
        state = component(model).state_dict()
        component(other).load_state_dict(state)
        restored = component(other).state_dict()
        if component in (EnvRecords, TrainingState):
            # the envs' generators stand where the model's stood; the envs themselves are marked for the reset
            # the saved run makes next (exact resume from an episode boundary, see test_resume)
            assert env_rng_states(other) == state["env_rngs"] == restored["env_rngs"]
            for key in EnvRecords.keys:
                restored.pop(key, None), state.pop(key, None)
        _equal_states(restored, state)
    assert other.fused_update_matmul == "reference"


@pytest.mark.parametrize(
    "component, change, message",
    [
        ("EnvRecords", lambda s: s.update(env_rngs=s["env_rngs"] * 2), "env_rngs must be a list of 1"),
        ("EnvRecords", lambda s: s.update(last_obs=torch.full_like(s["last_obs"], float("nan"))), "last_obs holds"),
        ("EnvRecords", lambda s: s.update(last_obs=s["last_obs"][:, :2]), "last_obs has shape"),
        ("EnvRecords", lambda s: s.update(needs_reset=[1]), "needs_reset must be"),
        ("FusedUpdateState", lambda s: s.update(fused_update_matmul="fast"), "fused_update_matmul must be"),
        ("RunState", lambda s: s.pop("rollout"), "lacks 'rollout'"),
        ("RunState", lambda s: s.update(progress_remaining=float("nan")), "progress_remaining must be"),
        ("RunState", lambda s: s.update(smoothing_rng=s["smoothing_rng"][:10]), "smoothing_rng"),
        ("RunState", lambda s: s.update(warmup_rng={"bit_generator": "PCG64"}), "warmup_rng"),
        ("TrainingState", lambda s: s.pop("action_noise"), "lacks 'action_noise'"),
        ("TrainingState", lambda s: s.update(extra=torch.zeros(2)), r"unknown entries \['extra'\]"),
        ("TrainingState", lambda s: s.update(schedules={"momentum": 1}), "schedules must be"),
    ],
)
def test_the_run_components_refuse_corrupt_states(component, change, message):
    from rlkit_td3.persistence import env_state, training_state
    from rlkit_td3.update import fused_update

    cls = {
        "EnvRecords": env_state.EnvRecords,
        "FusedUpdateState": fused_update.FusedUpdateState,
        "RunState": training_state.RunState,
        "TrainingState": training_state.TrainingState,
    }[component]
    model = _trained(0)
    state = cls(model).state_dict()
    change(state)
    before = training_state.TrainingState(model).state_dict()
    with pytest.raises(ValueError, match=message):
        cls(model).load_state_dict(state)
    _equal_states(training_state.TrainingState(model).state_dict(), before)  # nothing changed

"""NStepReplayBuffer against a brute-force reference from the raw episode log; the model's n_steps parameter."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from gymnasium import spaces
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlkit_td3 import TD3
from rlkit_td3.buffers import NStepReplayBuffer, ReplayBuffer
from rlkit_td3.fileio.serialization import ModelFileError

OBS = spaces.Box(-np.inf, np.inf, (2,), np.float32)
ACT = spaces.Box(-1, 1, (1,), np.float32)


def _play(buffer: ReplayBuffer, steps: list[list[tuple[bool, bool, bool]]], seed: int) -> list[dict]:
    """Feed ``steps`` (per step, per env: (valid, terminated, truncated)) into ``buffer``; return the log.

    Each transition's action holds its id in the log. An env whose episode ended, or that skipped a step, goes on
    from a fresh observation; a running episode continues from its last next observation.
    """
    rng = np.random.default_rng(seed)
    n_envs = buffer.n_envs
    current = [rng.normal(size=2).astype(np.float32) for _ in range(n_envs)]
    log: list[dict] = []
    for step in steps:
        rows = []
        for env, (valid, term, trunc) in enumerate(step):
            if not valid:  # a skipped step: the env's data jumps (a new observation, no episode end recorded)
                current[env] = rng.normal(size=2).astype(np.float32)
                continue
            nxt = rng.normal(size=2).astype(np.float32)
            rows.append(
                dict(id=len(log) + len(rows), env=env, obs=current[env], next_obs=nxt, reward=np.float32(rng.normal()))
            )
            rows[-1].update(terminated=term, truncated=trunc)
            current[env] = rng.normal(size=2).astype(np.float32) if (term or trunc) else nxt
        if not rows:
            continue
        buffer.add(
            np.stack([r["obs"] for r in rows]),
            np.stack([r["next_obs"] for r in rows]),
            np.array([[r["id"]] for r in rows], dtype=np.float32),
            np.array([r["reward"] for r in rows], dtype=np.float32),
            np.array([r["terminated"] for r in rows]),
            np.array([r["truncated"] for r in rows]),
            env_indices=np.array([r["env"] for r in rows]),
        )
        log.extend(rows)
    return log


def _reference(log: list[dict], tid: int, n_steps: int, gamma: float) -> tuple[float, np.ndarray, bool, bool, int]:
    """Brute force: walk the env's later transitions in the log (never past the newest one written)."""
    env = log[tid]["env"]
    later = [t for t in log[tid + 1 :] if t["env"] == env]
    window = [log[tid]]
    for t in later:
        last = window[-1]
        if len(window) == n_steps or last["terminated"] or last["truncated"]:
            break
        if not np.array_equal(last["next_obs"], t["obs"]):
            break
        window.append(t)
    ret = sum(gamma**j * float(t["reward"]) for j, t in enumerate(window))
    last = window[-1]
    return ret, last["next_obs"], last["terminated"], last["truncated"], len(window)


def _stored_rows(buffer: ReplayBuffer) -> np.ndarray:
    draws = np.arange(buffer.size())
    return buffer._rows_of(draws) if buffer.optimize_memory_usage else draws


def _check_against_log(buffer: NStepReplayBuffer, log: list[dict]) -> int:
    rows = _stored_rows(buffer)
    if len(rows) == 0:
        return 0
    batch = buffer._get_samples(rows)
    ids = batch.actions[:, 0].numpy().astype(np.int64)
    for i, tid in enumerate(ids.tolist()):
        ret, next_obs, term, trunc, k = _reference(log, tid, buffer.n_steps, buffer.gamma)
        assert batch.rewards[i].item() == pytest.approx(ret, rel=1e-5, abs=1e-5), (tid, k)
        np.testing.assert_array_equal(batch.next_observations[i].numpy(), next_obs)
        assert batch.terminated[i].item() == float(term) and batch.truncated[i].item() == float(trunc)
        assert batch.discounts[i].item() == np.float32(buffer.gamma**k), (tid, k)
        np.testing.assert_array_equal(batch.observations[i].numpy(), log[tid]["obs"])
    return len(ids)


step_flags = st.tuples(st.booleans(), st.booleans(), st.booleans()).map(
    # valid most of the time; episode ends ~ 1 in 4 steps, split between termination and truncation
    lambda f: (f[0] or f[1], f[1] and f[2], f[1] and not f[2] and f[0])
)


@settings(max_examples=320, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_envs=st.integers(1, 4),
    capacity=st.integers(2, 24),
    n_steps=st.sampled_from([1, 2, 3, 5]),
    gamma=st.sampled_from([0.0, 0.5, 0.9, 0.99, 1.0]),
    optimize=st.booleans(),
    data=st.data(),
)
def test_samples_equal_brute_force_reference(n_envs, capacity, n_steps, gamma, optimize, data):
    buffer_size = max(capacity, 2 * n_envs) if optimize else capacity
    buffer = NStepReplayBuffer(
        buffer_size, OBS, ACT, n_envs=n_envs, optimize_memory_usage=optimize, n_steps=n_steps, gamma=gamma, seed=0
    )
    n = data.draw(st.integers(1, 3 * buffer_size // n_envs + 4), label="steps")
    steps = data.draw(st.lists(st.lists(step_flags, min_size=n_envs, max_size=n_envs), min_size=n, max_size=n))
    log = _play(buffer, steps, seed=n)
    _check_against_log(buffer, log)
    # a save/load round trip keeps every window
    copy = NStepReplayBuffer(
        buffer_size, OBS, ACT, n_envs=n_envs, optimize_memory_usage=optimize, n_steps=n_steps, gamma=gamma
    )
    copy.load(io.BytesIO(buffer.to_bytes()))
    more = data.draw(st.lists(st.lists(step_flags, min_size=n_envs, max_size=n_envs), max_size=6), label="more")
    rng_seed = 1000 + n
    log_a = _play(buffer, more, seed=rng_seed)
    log_b = _play(copy, more, seed=rng_seed)
    assert len(log_a) == len(log_b)
    rows = _stored_rows(buffer)
    if len(rows):
        a, b = buffer._get_samples(rows), copy._get_samples(rows)
        for x, y in zip(a, b):
            assert torch.equal(x, y)


def test_long_run_with_wraparound_and_four_envs_matches_reference():
    """One long fixed run (many wraps) in both layouts: every stored row, n = 3 and 5."""
    rng = np.random.default_rng(3)
    steps = [[(rng.random() > 0.1, rng.random() < 0.05, rng.random() < 0.05) for _ in range(4)] for _ in range(400)]
    steps = [[(v, t, tr and not t) for v, t, tr in s] for s in steps]
    for optimize in (False, True):
        for n_steps in (3, 5):
            buffer = NStepReplayBuffer(61, OBS, ACT, n_envs=4, optimize_memory_usage=optimize, n_steps=n_steps)
            log = _play(buffer, steps, seed=0)
            assert _check_against_log(buffer, log) == buffer.size() > 40


def test_window_stops_at_termination_bootstraps_from_truncation_and_stops_at_newest():
    buffer = NStepReplayBuffer(20, OBS, ACT, n_steps=3, gamma=0.5)
    # episode A: 4 steps ending in termination; episode B: 2 steps ending in truncation; episode C: 2 steps, running
    steps = [[(True, False, False)]] * 3 + [[(True, True, False)]] + [[(True, False, False)], [(True, False, True)]]
    steps += [[(True, False, False)]] * 2
    log = _play(buffer, steps, seed=1)
    batch = buffer._get_samples(np.arange(8))
    r = [float(t["reward"]) for t in log]
    assert batch.discounts.tolist() == [0.125, 0.125, 0.25, 0.5, 0.25, 0.5, 0.25, 0.5]
    assert batch.terminated.tolist() == [0, 1, 1, 1, 0, 0, 0, 0]
    assert batch.truncated.tolist() == [0, 0, 0, 0, 1, 1, 0, 0]
    assert batch.rewards[1].item() == pytest.approx(r[1] + 0.5 * r[2] + 0.25 * r[3], rel=1e-6)
    assert batch.rewards[4].item() == pytest.approx(r[4] + 0.5 * r[5], rel=1e-6)
    np.testing.assert_array_equal(batch.next_observations[4].numpy(), log[5]["next_obs"])  # true final obs
    np.testing.assert_array_equal(batch.next_observations[6].numpy(), log[7]["next_obs"])  # newest next obs


def test_n_steps_one_samples_equal_the_plain_buffer():
    plain = ReplayBuffer(30, OBS, ACT, n_envs=2, seed=5)
    n1 = NStepReplayBuffer(30, OBS, ACT, n_envs=2, seed=5, n_steps=1, gamma=0.97)
    steps = [[(True, i % 7 == 0, i % 11 == 0) for _ in range(2)] for i in range(40)]
    _play(plain, steps, seed=2), _play(n1, steps, seed=2)
    a, b = plain.sample(64), n1.sample(64)
    for name in a._fields:
        assert torch.equal(getattr(a, name), getattr(b, name)), name
    assert torch.equal(b.discounts, torch.full((64,), np.float32(0.97)))


def test_bad_arguments_and_mismatched_files_are_refused():
    with pytest.raises(ValueError, match="n_steps must be an int >= 1, got 0"):
        NStepReplayBuffer(10, OBS, ACT, n_steps=0)
    with pytest.raises(ValueError, match="gamma must be in"):
        NStepReplayBuffer(10, OBS, ACT, gamma=1.5)
    buffer = NStepReplayBuffer(10, OBS, ACT, n_steps=3)
    _play(buffer, [[(True, False, False)]] * 4, seed=0)
    data = buffer.to_bytes()
    with pytest.raises(ModelFileError, match="n_steps=3, this buffer has n_steps=2"):
        NStepReplayBuffer(10, OBS, ACT, n_steps=2).load(io.BytesIO(data))
    with pytest.raises(ModelFileError, match="same buffer_size"):
        NStepReplayBuffer(12, OBS, ACT, n_steps=3).load(io.BytesIO(data))


def _model(**kwargs):
    from tests.conftest import make_counter

    return TD3("MlpPolicy", make_counter(6, terminate_at=4), buffer_size=200, batch_size=16, learning_starts=20,
               policy_kwargs=dict(net_arch=[16]), seed=4, **kwargs)  # fmt: skip


def test_model_n_steps_picks_the_n_step_buffer_and_validates():
    model = _model(n_steps=3, gamma=0.9)
    assert type(model.replay_buffer) is NStepReplayBuffer
    assert model.replay_buffer.n_steps == 3 and model.replay_buffer.gamma == 0.9
    assert type(_model().replay_buffer) is ReplayBuffer
    with pytest.raises(ValueError, match="n_steps must be >= 1, got 0"):
        _model(n_steps=0)
    with pytest.raises(ValueError, match="n_steps=3 needs an NStepReplayBuffer"):
        _model(n_steps=3, replay_buffer_class=ReplayBuffer)


def test_n_step_target_uses_the_sampled_discounts():
    """The update's target is r_n + discounts (1 - terminated) min Q': train one step by hand and compare."""
    model = _model(n_steps=3, gamma=0.9)
    model.learn(40)
    torch.manual_seed(0)
    batch = model.replay_buffer.sample(16)
    policy = model.policy
    with torch.no_grad():
        next_actions = policy.actor_target(batch.next_observations)
        q_next = policy.critic_target(batch.next_observations, next_actions).min(dim=0).values
    model.target_policy_noise = 0.0
    expected = batch.rewards + batch.discounts * (1.0 - batch.terminated) * q_next
    wrong = batch.rewards + 0.9 * (1.0 - batch.terminated) * q_next
    assert not torch.allclose(expected, wrong)
    critic = policy.critic
    captured = {}
    original = type(critic).forward

    def spy(self, obs, actions):
        out = original(self, obs, actions)
        captured["q"] = out
        return out

    loss_before = model._critic_loss_sum.clone()
    type(critic).forward = spy
    try:
        model._train_step(batch, update_actor=False)
    finally:
        type(critic).forward = original
    loss = model._critic_loss_sum - loss_before
    assert torch.allclose(loss, (captured["q"].detach() - expected).pow(2).mean(dim=1).sum(), rtol=1e-5)


@pytest.mark.parametrize("optimize", [False, True])
def test_n_steps_one_training_is_bitwise_the_plain_buffer(optimize):
    """An NStepReplayBuffer with n_steps=1 (the discount then comes from the batch) trains bit for bit as today."""
    plain = _model(optimize_memory_usage=optimize)
    plain.fused_update_matmul = "reference"  # its fused update makes autograd's products, as the n-step run's update
    plain.learn(300)
    n1 = _model(optimize_memory_usage=optimize, replay_buffer_class=NStepReplayBuffer).learn(300)
    assert type(n1.replay_buffer) is NStepReplayBuffer and n1.replay_buffer.n_steps == 1
    assert plain._n_updates == n1._n_updates > 200
    for a, b in zip(plain.policy.state_dict().values(), n1.policy.state_dict().values()):
        assert torch.equal(a, b)


def test_model_file_keeps_n_steps_and_refuses_a_bad_one(tmp_path):
    import json
    import zipfile

    model = _model(n_steps=4, gamma=0.95).learn(60)
    model.save(tmp_path / "m.zip", include_buffer=True)
    loaded = TD3.load(tmp_path / "m.zip")
    assert loaded.n_steps == 4 and type(loaded.replay_buffer) is NStepReplayBuffer
    assert loaded.replay_buffer.n_steps == 4 and loaded.replay_buffer.gamma == 0.95
    rows = np.arange(model.replay_buffer.size())
    for a, b in zip(model.replay_buffer._get_samples(rows), loaded.replay_buffer._get_samples(rows)):
        assert torch.equal(a, b)
    with zipfile.ZipFile(tmp_path / "m.zip") as src, zipfile.ZipFile(tmp_path / "bad.zip", "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            if name == "metadata.json":
                meta = json.loads(data)
                meta["hyperparameters"]["n_steps"] = 0
                data = json.dumps(meta).encode()
            dst.writestr(name, data)
    with pytest.raises(ValueError, match="n_steps must be >= 1, got 0"):
        TD3.load(tmp_path / "bad.zip")


def test_sb3_style_buffer_kwargs_configure_the_n_step_buffer():
    model = _model(replay_buffer_class=NStepReplayBuffer, replay_buffer_kwargs={"n_steps": 5, "gamma": 0.9})
    assert model.replay_buffer.n_steps == 5 and model.replay_buffer.gamma == 0.9
    with pytest.raises(ValueError, match="n_steps=3 and replay_buffer_kwargs n_steps=5 disagree"):
        _model(n_steps=3, replay_buffer_kwargs={"n_steps": 5})


def test_presets_and_cli_overrides_accept_n_steps():
    from rlkit_td3.experiments.presets import make_model, parse_override, resolve_config

    config = resolve_config("td3", "Pendulum-v1", None, dict([parse_override("n_steps=3"), ("buffer_size", 500)]))
    assert config["hyperparameters"]["n_steps"] == 3 and config["origins"]["n_steps"] == "override"
    model = make_model(config, "Pendulum-v1", seed=0)
    assert model.n_steps == 3 and type(model.replay_buffer) is NStepReplayBuffer
    assert resolve_config("ddpg", "Pendulum-v1")["hyperparameters"]["n_steps"] == 1


@pytest.mark.parametrize("optimize", [False, True])
def test_env_indices_out_of_range_are_refused(optimize):
    buffer = NStepReplayBuffer(10, OBS, ACT, n_envs=2, optimize_memory_usage=optimize)
    one = np.zeros((1, 2), np.float32)
    with pytest.raises(ValueError, match=r"env_indices must be in \[0, 2\), got \[2\]"):
        buffer.add(one, one, np.zeros((1, 1)), np.zeros(1), np.zeros(1, bool), np.zeros(1, bool), env_indices=[2])
    assert buffer.size() == 0


def test_ddpg_takes_n_steps_too():
    from rlkit_td3 import DDPG
    from tests.conftest import make_counter

    model = DDPG("MlpPolicy", make_counter(6), n_steps=2, buffer_size=100, batch_size=8, learning_starts=10,
                 policy_kwargs=dict(net_arch=[8]), seed=0).learn(30)  # fmt: skip
    assert model.n_steps == 2 and model.replay_buffer.n_steps == 2 and model._n_updates > 0


@pytest.mark.parametrize("optimize", [False, True])
def test_image_observations_are_stored_uint8_and_sampled_as_float32(optimize):
    image = spaces.Box(0, 255, shape=(3, 8, 8), dtype=np.uint8)
    action = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
    buffer = NStepReplayBuffer(16, image, action, n_steps=3, gamma=0.9, seed=0, optimize_memory_usage=optimize)
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, size=(7, 3, 8, 8), dtype=np.uint8)
    for t in range(6):
        buffer.add(frames[t : t + 1], frames[t + 1 : t + 2], np.zeros((1, 1)), np.ones(1), [False], [False])
    assert buffer.observations.dtype == np.uint8
    batch = buffer.sample(32)
    assert batch.observations.dtype == batch.next_observations.dtype == torch.float32
    stored = {frames[t].tobytes(): t for t in range(7)}
    for obs, next_obs, discount in zip(batch.observations, batch.next_observations, batch.discounts):
        t = stored[obs.numpy().astype(np.uint8).tobytes()]
        k = stored[next_obs.numpy().astype(np.uint8).tobytes()] - t
        assert 1 <= k <= 3 and discount.item() == pytest.approx(0.9**k)

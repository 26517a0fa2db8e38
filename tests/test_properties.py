"""Property-based tests (hypothesis): the replay buffer against a reference model, action scaling, noise."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st

from rlkit_td3.buffers import ReplayBuffer
from rlkit_td3.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise, VectorizedActionNoise
from rlkit_td3.policies import TD3Policy

OBS = spaces.Box(-np.inf, np.inf, (2,), np.float32)
ACT = spaces.Box(-1, 1, (1,), np.float32)

# One operation: ("add", env ids of the rows, which of them end an episode) or ("sample", batch size).
ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.sets(st.integers(0, 3), min_size=1), st.sets(st.integers(0, 3))),
        st.tuples(st.just("sample"), st.integers(1, 64), st.just(frozenset())),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(ops=ops, n_envs=st.integers(1, 4), capacity=st.integers(8, 40), optimized=st.booleans())
def test_ring_buffer_matches_a_reference_model(ops, n_envs, capacity, optimized):
    buffer = ReplayBuffer(capacity, OBS, ACT, n_envs=n_envs, seed=0, optimize_memory_usage=optimized)
    counter = 0
    last_next = {}  # env -> the next observation its last transition stored (continuity of its stream)
    history: dict[int, list[tuple]] = {e: [] for e in range(n_envs)}  # per env, in order
    order: list[tuple] = []  # all envs, in order of adding
    for kind, envs, ends in ops:
        if kind == "add":
            envs = sorted(e for e in envs if e < n_envs)
            if not envs:
                continue
            rows = []
            for e in envs:
                counter += 1
                obs = last_next.get(e, np.array([e, counter], np.float32))
                ended = e in ends
                nxt = np.array([e, counter + 0.5], np.float32)
                rows.append((obs, nxt, float(counter), ended))
                last_next[e] = np.array([e, -counter], np.float32) if ended else nxt
            obs, nxt, rew, ended = (np.array(col) for col in zip(*rows))
            buffer.add(obs, nxt, np.zeros((len(rows), 1)), rew, ended, np.zeros(len(rows), bool), np.array(envs))
            for e, (o, n, r, d) in zip(envs, rows):
                history[e].append((tuple(o), tuple(n), r, d))
                order.append((tuple(o), tuple(n), r, d))
        else:
            if buffer.size() == 0:
                continue
            batch = buffer.sample(envs)
            o, n, r, t = (
                x.numpy() for x in (batch.observations, batch.next_observations, batch.rewards, batch.terminated)
            )
            got = {(tuple(a), tuple(b), float(c), bool(d)) for a, b, c, d in zip(o, n, r, t)}
            if optimized:
                slots = capacity // n_envs
                kept = [tr for e in range(n_envs) for tr in history[e][-(slots - 1) :]]
            else:
                kept = order[-capacity:]
            assert got <= set(kept)
    if optimized:
        slots = capacity // n_envs
        assert buffer.size() == sum(min(len(h), slots - 1) for h in history.values())
    else:
        assert buffer.size() == min(len(order), capacity)


finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False, width=32)


@settings(max_examples=300, deadline=None)
@given(
    bounds=st.lists(st.tuples(finite, finite).filter(lambda b: b[1] - b[0] > 1e-2), min_size=1, max_size=4),
    fractions=st.lists(st.floats(0, 1), min_size=4, max_size=4),
)
def test_action_scale_round_trip_with_asymmetric_bounds(bounds, fractions):
    low = np.array([b[0] for b in bounds], np.float32)
    high = np.array([b[1] for b in bounds], np.float32)
    policy = TD3Policy(OBS, spaces.Box(low, high, dtype=np.float32), net_arch=[4])
    action = (low + np.array(fractions[: len(low)], np.float32) * (high - low)).astype(np.float32)
    scaled = policy.scale_action(action)
    assert np.all(scaled >= -1 - 1e-5) and np.all(scaled <= 1 + 1e-5)
    back = policy.unscale_action(scaled)
    np.testing.assert_allclose(back, action, rtol=1e-5, atol=1e-5 * float(np.max(high - low)))
    np.testing.assert_allclose(policy.unscale_action(np.full_like(low, -1)), low, rtol=1e-6, atol=1e-4)
    np.testing.assert_allclose(policy.unscale_action(np.full_like(low, 1)), high, rtol=1e-6, atol=1e-4)


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    dim=st.integers(1, 4),
    draws=st.integers(1, 20),
    kind=st.sampled_from(["normal", "ou", "vector"]),
    decay=st.floats(0.5, 1.0),
)
def test_noise_seeding_reset_and_state_round_trip(seed, dim, draws, kind, decay):
    def make():
        if kind == "normal":
            return NormalActionNoise(np.zeros(dim), 0.3 * np.ones(dim), decay=decay, seed=seed)
        if kind == "ou":
            return OrnsteinUhlenbeckActionNoise(np.zeros(dim), 0.3 * np.ones(dim), decay=decay, seed=seed)
        return VectorizedActionNoise(NormalActionNoise(np.zeros(dim), 0.3 * np.ones(dim)), 3, seed=seed)

    a, b = make(), make()
    first = [a() for _ in range(draws)]
    assert all(np.array_equal(x, b()) for x in first)  # same seed, same stream
    state = a.get_state()
    ahead = [a() for _ in range(5)]
    c = make()
    c.set_state(state)
    assert all(np.array_equal(x, c()) for x in ahead)  # a restored state continues the same stream
    if kind == "ou":
        a.reset()
        assert np.array_equal(a._state, np.zeros(dim))  # reset returns the process to its start

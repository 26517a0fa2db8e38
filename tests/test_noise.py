"""Exploration noises: seeding, reset, decay, per-env copies."""

from __future__ import annotations

import numpy as np
import pytest

from rlkit_td3.noise import (
    NormalActionNoise,
    OrnsteinUhlenbeckActionNoise,
    VectorizedActionNoise,
    noise_from_dict,
)


def test_normal_noise_seeded_and_scaled():
    a, b = NormalActionNoise([0, 0], [0.1, 0.5], seed=3), NormalActionNoise([0, 0], [0.1, 0.5], seed=3)
    xs = np.stack([a() for _ in range(20_000)])
    ys = np.stack([b() for _ in range(20_000)])
    assert np.array_equal(xs, ys) and xs.dtype == np.float32
    np.testing.assert_allclose(xs.std(axis=0), [0.1, 0.5], rtol=0.03)


def test_exponential_decay_of_sigma():
    noise = NormalActionNoise([0.0], [0.4], decay=0.5, min_sigma=0.05, seed=0)
    sigmas = []
    for _ in range(5):
        sigmas.append(float(noise.sigma[0]))
        noise()
    assert sigmas == pytest.approx([0.4, 0.2, 0.1, 0.05, 0.05])
    noise.reset()  # an episode end does not undo the decay
    assert noise.sigma[0] == pytest.approx(0.05)


def test_ou_noise_is_correlated_and_resets():
    noise = OrnsteinUhlenbeckActionNoise([0.0], [0.3], seed=1)
    xs = np.array([noise()[0] for _ in range(5000)])
    assert np.corrcoef(xs[:-1], xs[1:])[0, 1] > 0.9
    noise.reset()
    assert noise._state.tolist() == [0.0]


def test_vectorized_copies_are_independent_and_reset_per_env():
    base = OrnsteinUhlenbeckActionNoise([0.0, 0.0], [0.3, 0.3], seed=0)
    vec = VectorizedActionNoise(base, n_envs=3, seed=5)
    out = np.stack([vec() for _ in range(10)])
    assert out.shape == (10, 3, 2)
    assert not np.array_equal(out[:, 0], out[:, 1])
    vec.reset([1])
    assert vec.noises[1]._state.tolist() == [0.0, 0.0] and vec.noises[0]._state.tolist() != [0.0, 0.0]
    assert base.n_draws == 0  # the caller's object is untouched


def test_round_trip_through_dict():
    noise = OrnsteinUhlenbeckActionNoise([0.1], [0.2], theta=0.3, dt=0.05, decay=0.99)
    again = noise_from_dict(noise.to_dict())
    assert again.to_dict() == noise.to_dict()
    with pytest.raises(ValueError, match="unknown action noise"):
        noise_from_dict({"type": "Pink"})


@pytest.mark.parametrize(
    ("kwargs", "name"), [({"sigma": [-0.1]}, "sigma"), ({"decay": 0.0}, "decay"), ({"mean": [[0.0]]}, "mean")]
)
def test_bad_noise_arguments(kwargs, name):
    args = {"mean": [0.0], "sigma": [0.1], **kwargs}
    with pytest.raises(ValueError, match=name):
        NormalActionNoise(**args)

"""rlkit_td3.utils: SB3's helper names with SB3's semantics (stable_baselines3/common/utils.py)."""

from __future__ import annotations

import math
import random
from collections import deque
from pathlib import Path

import numpy as np
import pytest
import torch

from rlkit_td3.schedules import ConstantSchedule, LinearSchedule
from rlkit_td3.utils import (
    _latest_run_id,
    constant_fn,
    get_device,
    get_linear_fn,
    get_schedule_fn,
    polyak_update,
    safe_mean,
    set_random_seed,
)


def _draws() -> tuple[float, float, float]:
    return random.random(), float(np.random.rand()), float(torch.rand(()))  # noqa: NPY002  (the global generator set_random_seed seeds)


def test_set_random_seed_seeds_random_numpy_and_torch() -> None:
    set_random_seed(7)
    first = _draws()
    set_random_seed(7)
    assert _draws() == first
    set_random_seed(8)
    assert all(a != b for a, b in zip(_draws(), first))


def test_set_random_seed_using_cuda_sets_cudnn_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.backends.cudnn, "deterministic", False)
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", True)
    set_random_seed(1, using_cuda=True)
    assert torch.backends.cudnn.deterministic is True
    assert torch.backends.cudnn.benchmark is False


@pytest.mark.parametrize("seed", [-1, 1.5, "3", True])
def test_set_random_seed_rejects_bad_seed(seed: object) -> None:
    with pytest.raises((TypeError, ValueError), match="seed"):
        set_random_seed(seed)  # type: ignore[arg-type]


def test_get_device() -> None:
    assert get_device("cpu") == torch.device("cpu")
    assert get_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")


def test_polyak_update_matches_formula_and_foreach_lerp() -> None:
    gen = torch.Generator().manual_seed(0)
    params = [torch.randn(3, 4, generator=gen), torch.randn(5, generator=gen)]
    targets = [torch.randn(3, 4, generator=gen), torch.randn(5, generator=gen)]
    expected = [t + 0.005 * (p - t) for p, t in zip(params, targets)]
    lerped = [t.clone() for t in targets]
    torch._foreach_lerp_(lerped, params, 0.005)
    before = [p.clone() for p in params]
    polyak_update(params, targets, 0.005)
    for target, want, lerp in zip(targets, expected, lerped):
        torch.testing.assert_close(target, want)
        assert torch.equal(target, lerp)  # the update's own call, bit for bit
    assert all(torch.equal(p, b) for p, b in zip(params, before))


def test_polyak_update_tau_one_copies_and_zero_keeps() -> None:
    params, targets = [torch.ones(2)], [torch.zeros(2)]
    polyak_update(params, targets, 0.0)
    assert torch.equal(targets[0], torch.zeros(2))
    polyak_update(params, targets, 1.0)
    assert torch.equal(targets[0], torch.ones(2))


def test_polyak_update_on_parameters_with_grad() -> None:
    source, target = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    polyak_update(source.parameters(), target.parameters(), 1.0)
    assert all(torch.equal(a, b) for a, b in zip(source.parameters(), target.parameters()))


def test_polyak_update_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="same length, got 2 and 1"):
        polyak_update([torch.ones(1), torch.ones(1)], [torch.ones(1)], 0.5)
    with pytest.raises(ValueError, match=r"tau must be in \[0.0, 1.0\], got 1.5"):
        polyak_update([torch.ones(1)], [torch.ones(1)], 1.5)


def test_get_linear_fn() -> None:
    schedule = get_linear_fn(1.0, 0.0, 0.5)
    assert isinstance(schedule, LinearSchedule)
    assert schedule(1.0) == 1.0
    assert schedule(0.75) == pytest.approx(0.5)
    assert schedule(0.5) == 0.0
    assert schedule(0.1) == 0.0


def test_constant_fn() -> None:
    schedule = constant_fn(3e-4)
    assert isinstance(schedule, ConstantSchedule)
    assert schedule(1.0) == schedule(0.0) == 3e-4


def test_get_schedule_fn() -> None:
    assert get_schedule_fn(0.5)(0.1) == 0.5
    assert isinstance(get_schedule_fn(2), ConstantSchedule)
    linear = LinearSchedule(1.0)
    assert get_schedule_fn(linear) is linear
    wrapped = get_schedule_fn(lambda p: np.float32(p * 2))
    value = wrapped(0.25)
    assert type(value) is float and value == 0.5
    with pytest.raises(TypeError, match="value_schedule must be a number or a callable, got 'x'"):
        get_schedule_fn("x")  # type: ignore[arg-type]


def test_safe_mean() -> None:
    assert math.isnan(safe_mean([]))
    assert math.isnan(safe_mean(deque()))
    assert math.isnan(safe_mean(np.array([])))
    assert safe_mean([1.0, 2.0, 6.0]) == 3.0
    assert safe_mean(deque([1, 2], maxlen=2)) == 1.5


def test_latest_run_id(tmp_path: Path) -> None:
    assert _latest_run_id(tmp_path / "missing", "TD3") == 0
    for name in ("TD3_1", "TD3_12", "TD3_x", "DDPG_40"):
        (tmp_path / name).mkdir()
    (tmp_path / "TD3_99").write_text("a file, not a run")
    assert _latest_run_id(tmp_path, "TD3") == 12

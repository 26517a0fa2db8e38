"""The thread-oversubscription check: learn() warns once when torch's threads compete with other work."""

from __future__ import annotations

import os
import warnings

import pytest
import torch

from rlkit_td3 import TD3, utils
from rlkit_td3.utils import ThreadOversubscriptionWarning, thread_oversubscription


@pytest.fixture
def machine(monkeypatch):
    """A fake machine: ``set(cpus, load)``; the once-per-process flag reset."""
    monkeypatch.setattr(utils, "_thread_warning_given", False)

    def set_machine(cpus: int, load: float) -> None:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)), raising=False)
        monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))

    return set_machine


@pytest.mark.parametrize(
    ("threads", "cpus", "load", "risk"),
    [
        (1, 2, 5.0, False),  # one thread never oversubscribes
        (2, 2, 0.1, False),  # an idle machine: torch's default is the fastest
        (2, 2, 1.0, True),  # another process busy: the measured 10-35x cliff
        (4, 2, 0.0, True),  # more threads than CPUs
        (8, 16, 7.0, False),  # room to spare
        (8, 16, 9.0, True),
    ],
)
def test_the_risk_needs_several_threads_and_busy_cpus(machine, threads, cpus, load, risk):
    machine(cpus, load)
    assert (thread_oversubscription(threads) is not None) == risk


def _learn(threads: int) -> list[warnings.WarningMessage]:
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=10, policy_kwargs={"net_arch": [8]}, seed=0)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.learn(20)
    finally:
        torch.set_num_threads(before)
    return [w for w in caught if issubclass(w.category, ThreadOversubscriptionWarning)]


def test_learn_warns_once_per_process_when_busy(machine):
    machine(2, 1.5)
    first = _learn(2)
    assert len(first) == 1
    message = str(first[0].message)
    assert "load average 1.5 on 2 usable CPU(s)" in message and "torch.set_num_threads(1)" in message
    assert first[0].filename == __file__  # points at the caller's learn() line
    assert _learn(2) == []  # once per process


def test_learn_is_silent_at_one_thread_or_on_an_idle_machine(machine):
    machine(2, 1.5)
    assert _learn(1) == []
    machine(2, 0.1)
    assert _learn(2) == []


def test_a_loaded_models_saved_thread_count_is_the_one_checked(machine, tmp_path):
    machine(2, 1.5)
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=10, policy_kwargs={"net_arch": [8]}, seed=0)
    model.learn(20)  # at the suite's 1 thread: recorded in the file
    model.save(tmp_path / "m.zip")
    loaded = TD3.load(tmp_path / "m.zip", env="Pendulum-v1")
    assert loaded.torch_num_threads == 1
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # the caller's 2 threads are replaced by the saved 1 inside learn: no risk
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loaded.learn(20, reset_num_timesteps=False)
        assert torch.get_num_threads() == 2  # and restored afterwards
    finally:
        torch.set_num_threads(before)
    assert not [w for w in caught if issubclass(w.category, ThreadOversubscriptionWarning)]

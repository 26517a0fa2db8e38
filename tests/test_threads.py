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
    model.torch_num_threads = None  # the caller's count, as set below (the "auto" default is tested apart)
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


# ---------------------------------------------------------------------------------------------------------
# the "auto" default


@pytest.mark.parametrize(
    ("caller", "cpus", "runnable", "chosen"),
    [
        (2, 2, 1, 2),  # idle (only this process runs): the caller's count
        (2, 2, 3, 1),  # two CPU-bound processes beside it: one thread
        (2, 2, 2, 1),  # one beside it: one CPU left
        (8, 16, 5, 8),  # room to spare
        (8, 16, 12, 5),  # 11 others on 16 CPUs: the 5 left
        (1, 4, 1, 1),  # never more than the caller's count
        (4, 2, 1, 2),  # never more than the usable CPUs
        (2, 2, 40, 1),  # never fewer than one
    ],
)
def test_auto_keeps_the_callers_count_unless_other_work_leaves_fewer_cpus(monkeypatch, caller, cpus, runnable, chosen):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)), raising=False)
    monkeypatch.setattr(utils, "_runnable_tasks", lambda: float(runnable))
    assert utils.auto_num_threads(caller) == chosen


def test_auto_is_resolved_once_per_model_and_the_callers_count_comes_back(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(utils, "_runnable_tasks", lambda: 3.0)  # busy: two others
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=10, policy_kwargs={"net_arch": [8]}, seed=0)
    assert model.torch_num_threads == "auto"
    seen = []
    model.train = lambda gradient_steps, batch_size=None: seen.append(torch.get_num_threads())
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        model.learn(20)
        assert torch.get_num_threads() == 2  # the caller's setting is back
        assert model.torch_num_threads == 1 and set(seen) == {1}
        monkeypatch.setattr(utils, "_runnable_tasks", lambda: 1.0)  # idle now: the run keeps its count
        seen.clear()
        model.learn(20, reset_num_timesteps=False)
        assert model.torch_num_threads == 1 and set(seen) == {1}
    finally:
        torch.set_num_threads(before)


def test_runnable_tasks_reads_the_machine():
    runnable = utils._runnable_tasks()
    if os.path.exists("/proc/loadavg"):
        assert runnable is not None and runnable >= 1  # this process's reading thread at least
    else:
        assert runnable is None

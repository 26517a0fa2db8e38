"""Learning tests: TD3 and DDPG solve Pendulum-v1 (median deterministic return over three seeds >= the threshold).

The cases (`learning_cases.PENDULUM_TD3`, `learning_cases.PENDULUM_DDPG`: settings, budget, threshold, seeds) are
shared with ``benchmarks/learning_paths.py``, which runs them under every float path (``"mixed"`` at two threads
included: a two-thread run beside ``make test``'s other workers is the oversubscription cliff, so it is measured
there, not here); the measured margins are in ``benchmarks/results/learning_paths/``. TD3 runs here under the fused
update's reference products and oneDNN's (the default on AMD CPUs at one thread), on any CPU, so that both product
modes learn in the suite wherever it runs.
"""

from __future__ import annotations

import pytest
from learning_cases import CASES, PATHS, PENDULUM_DDPG, PENDULUM_TD3, run_case


@pytest.mark.parametrize(
    ("case", "path"),
    [(PENDULUM_TD3, "reference"), (PENDULUM_DDPG, "reference"), (PENDULUM_TD3, "onednn")],
    ids=["td3", "ddpg", "td3-onednn"],
)
def test_pendulum_learns(case, path):
    result = run_case(case, PATHS[path])
    print(result.describe())
    assert result.passed, result.describe()
    want = PATHS[path]
    assert result.paths == [f"{want.matmul}/{want.threads}t"] * len(case.seeds)  # every update went that way


def test_every_learning_case_decides_on_several_seeds():
    """No learning test hangs on one trajectory: each case of the suite trains at least three distinct seeds and
    passes on their median."""
    for name, case in CASES.items():
        assert len(set(case.seeds)) >= 3, f"{name} trains seeds {case.seeds}"

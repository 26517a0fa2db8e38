"""TD7 learns: Pendulum-v1 solved (mean deterministic return >= -400 over 10 episodes, random play about -1,200)
within 7k steps, with small networks and without policy checkpoints (`learning_cases` says why), judged by the
median of five seeds.

The case (`learning_cases.TD7_PENDULUM_CASE`: settings, budget, threshold, seeds) is shared with
``benchmarks/learning_paths.py``, which runs it under every float path (benchmarks/results/learning_paths/)."""

from __future__ import annotations

from learning_cases import TD7_PENDULUM_CASE, run_case


def test_td7_learns_pendulum():
    result = run_case(TD7_PENDULUM_CASE)
    print(result.describe())
    assert result.passed, result.describe()
    assert all(path.startswith("td7-fused/") for path in result.paths)  # TD7's own steps, written out

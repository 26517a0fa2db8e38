"""TD3 + HER on panda-gym's PandaReach-v3 (the ``robotics`` extra): the issue's acceptance, within its budget.

Acceptance: the median success rate of seeds 0, 1 and 2 (``PANDA_EVAL_EPISODES`` deterministic evaluation episodes
each, goal selection "future", n_sampled_goal 4) is at least 0.9 after ``PANDA_BUDGET`` steps, with smaller networks
and a faster learning rate than docs/her.md's settings, so that every seed solves the task within the budget (see
`learning_cases.PANDA_REACH`, shared with ``benchmarks/learning_paths.py``, which runs it under every float path).
benchmarks/her_panda.py runs docs/her.md's settings for 20,000 steps with Stable-Baselines3 beside it."""

from __future__ import annotations

import pytest

panda_gym = pytest.importorskip("panda_gym", reason="needs the robotics extra (pip install -e '.[robotics]')")

from learning_cases import PANDA_REACH, panda_success_rate, run_case  # noqa: E402


@pytest.mark.slow
def test_td3_her_reaches_panda_goals():
    untrained = PANDA_REACH.build(0)
    assert panda_success_rate(untrained, episodes=20) < 0.5  # the untrained policy does not reach the goals
    result = run_case(PANDA_REACH)
    print(result.describe())
    assert result.passed, result.describe()

"""TD3 learns to balance InvertedPendulumBulletEnv-v0: median over three seeds, within a budget.

Each seed is evaluated (10 deterministic episodes, after a 3-episode first look) every ``BULLET_EVAL_EVERY`` steps
and stops at the first evaluation that reaches ``BULLET_THRESHOLD`` (150), as SB3's StopTrainingOnRewardThreshold
callback does; its score is its best evaluation within ``BULLET_MAX_STEPS`` (20,000). The test passes when the
median score of the seeds reaches the threshold, so no one seed's trajectory decides it. The bar is learning, not
the env's reward threshold of 950: an untrained policy scores 21-28, and measured on an AMD EPYC with the reference
products the seeds' best evaluations within 20,000 steps are 339, 232 and 1000, so whether a seed reaches 950 within
the budget depends on its trajectory (as published TD3 results on this env do: anchors §5, 901 ± 297 over 10 seeds
at 1M steps). The case (`learning_cases.BULLET`) is shared with ``benchmarks/learning_paths.py``, which runs it
under every float path; the measured scores are in ``benchmarks/results/learning_paths/``.
"""

from __future__ import annotations

import pytest
from learning_cases import BULLET, run_case


@pytest.mark.slow
def test_td3_learns_to_balance_inverted_pendulum_bullet():
    result = run_case(BULLET)
    print(result.describe())
    assert result.passed, result.describe()

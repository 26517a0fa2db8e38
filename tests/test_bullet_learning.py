"""TD3 solves InvertedPendulumBulletEnv-v0 (reward threshold 950) within 30,000 steps, fixed seed.

The model is evaluated (10 deterministic episodes) every ``EVAL_EVERY`` steps and training stops at the first
evaluation that reaches the threshold, as SB3's StopTrainingOnRewardThreshold callback does. Measured with this
configuration: seeds 0 and 2 reach a perfect 1000 after 3,000 steps; seed 1 stays between 90 and 454 up to
28,000 steps (evaluated every 500), seeds 3 and 4 below 550 up to 10,000: their policies push the cart into the
end of its rail (x = -1) and the pole falls. So the result is seed-dependent and the test pins seed 0.
"""

from __future__ import annotations

import gymnasium
import pytest

from rlkit_td3 import TD3
from rlkit_td3.evaluation import evaluate_policy

ENV_ID = "InvertedPendulumBulletEnv-v0"
CONFIG = dict(learning_starts=1000, gamma=0.98, policy_kwargs={"net_arch": [64, 64]}, seed=0)
MAX_STEPS, EVAL_EVERY, THRESHOLD = 30_000, 1000, 950.0


@pytest.mark.slow
def test_td3_solves_inverted_pendulum_bullet():
    model = TD3("MlpPolicy", ENV_ID, **CONFIG)
    eval_env = gymnasium.make(ENV_ID)
    history = []
    while model.num_timesteps < MAX_STEPS:
        model.learn(EVAL_EVERY, reset_num_timesteps=False)
        mean, _ = evaluate_policy(model, eval_env, n_eval_episodes=10, seed=1000)
        history.append((model.num_timesteps, round(mean, 1)))
        if mean >= THRESHOLD:
            break
    print(f"{ENV_ID}: (steps, mean deterministic return) {history}")
    assert mean >= THRESHOLD, history
    assert model.num_timesteps <= MAX_STEPS

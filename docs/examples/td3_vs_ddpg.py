"""TD3 against DDPG on a few seeds, with the same settings and the same
evaluation.

TD3 is DDPG plus three switches (twin critics, target policy smoothing, delayed
actor updates); everything else here is equal. Run: ``python
docs/examples/td3_vs_ddpg.py`` (4.5 minutes on one core here; more seeds and
steps give a clearer answer, see the "Comparing DDPG and TD3" page for the
`rlkit-td3 compare` command). ``RLKIT_EXAMPLES_FAST=1`` runs a short smoke
version.
"""

import os

import numpy as np
import torch

from rlkit_td3 import DDPG, TD3
from rlkit_td3.evaluation import evaluate_policy
from rlkit_td3.experiments.stats import iqm

FAST = os.environ.get("RLKIT_EXAMPLES_FAST") == "1"
torch.set_num_threads(1)
SEEDS = [0, 1] if FAST else [0, 1, 2]
STEPS = 1_200 if FAST else 15_000
SETTINGS = dict(
    learning_starts=1_000, gamma=0.98, policy_kwargs={"net_arch": [64, 64]}
)

returns: dict[str, list[float]] = {}
for algo in (TD3, DDPG):
    for seed in SEEDS:
        model = algo("MlpPolicy", "Pendulum-v1", seed=seed, **SETTINGS)
        model.learn(STEPS)
        mean, _ = evaluate_policy(
            model, "Pendulum-v1", n_eval_episodes=5, seed=100 + seed
        )
        returns.setdefault(algo.__name__, []).append(mean)

print(f"Pendulum-v1, {STEPS} steps, seeds {SEEDS}")
print("mean return of 5 deterministic episodes per seed:")
for name, values in returns.items():
    per_seed = np.round(values, 1).tolist()
    print(f"{name:5s} per seed {per_seed}  IQM {iqm(np.array(values)):.1f}")

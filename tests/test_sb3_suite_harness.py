"""The import rule of benchmarks/sb3_suite.py (SB3's own tests run against rlkit_td3): only import statements
change, by ``stable_baselines3.common.X -> rlkit_td3.X`` and ``stable_baselines3.X -> rlkit_td3.X``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SPEC = importlib.util.spec_from_file_location("sb3_suite", Path(__file__).parents[1] / "benchmarks" / "sb3_suite.py")
sb3_suite = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(sb3_suite)


def test_rewrite_imports_changes_only_import_statements():
    source = (
        "import stable_baselines3 as sb3\n"
        "from stable_baselines3 import TD3, DDPG\n"
        "from stable_baselines3.common.vec_env import (\n    DummyVecEnv,\n)\n"
        "from stable_baselines3.her.goal_selection_strategy import GoalSelectionStrategy\n"
        "    import stable_baselines3.common.results_plotter  # noqa: F401\n"
        'name = "stable_baselines3.common.monitor"\n'
    )
    assert sb3_suite.rewrite_imports(source) == (
        "import rlkit_td3 as sb3\n"
        "from rlkit_td3 import TD3, DDPG\n"
        "from rlkit_td3.vec_env import (\n    DummyVecEnv,\n)\n"
        "from rlkit_td3.her.goal_selection_strategy import GoalSelectionStrategy\n"
        "    import rlkit_td3.results_plotter  # noqa: F401\n"
        'name = "stable_baselines3.common.monitor"\n'
    )


def test_out_of_scope_names_are_the_algorithms_and_parts_not_provided():
    assert {"A2C", "PPO", "SAC", "DQN", "RolloutBuffer", "make_atari_env"} <= set(sb3_suite.OUT_OF_SCOPE)
    assert not {"TD3", "DDPG", "HerReplayBuffer", "ReplayBuffer", "VecNormalize"} & set(sb3_suite.OUT_OF_SCOPE)

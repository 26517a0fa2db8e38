"""Experiments: presets, single runs, and comparisons of algorithms over envs × seeds (the CLI builds on these)."""

from rlkit_td3.experiments.backends import BACKENDS, BackendError
from rlkit_td3.experiments.comparison import ComparisonError, compare, load_results, write_outputs
from rlkit_td3.experiments.presets import (
    ALGORITHMS,
    HYPERPARAMETERS,
    ConfigError,
    algorithm_class,
    load_presets,
    make_model,
    parse_override,
    preset_names,
    resolve_config,
)
from rlkit_td3.experiments.runner import RunSpec, check_env_id, latest_checkpoint, read_evaluations, train_run

__all__ = [
    "ALGORITHMS",
    "BACKENDS",
    "HYPERPARAMETERS",
    "BackendError",
    "ComparisonError",
    "ConfigError",
    "RunSpec",
    "algorithm_class",
    "check_env_id",
    "compare",
    "latest_checkpoint",
    "load_results",
    "load_presets",
    "make_model",
    "parse_override",
    "preset_names",
    "resolve_config",
    "read_evaluations",
    "train_run",
    "write_outputs",
]

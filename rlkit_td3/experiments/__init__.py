"""Experiments: presets, single runs, comparisons of algorithms over envs × seeds, and hyperparameter tuning (the CLI
builds on these)."""

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
from rlkit_td3.experiments.search_space import SEARCH_SPACES, build_space, register_search_space
from rlkit_td3.experiments.tuning import TrialEvalCallback, TuningError, tune
from rlkit_td3.experiments.tuning_report import TuningResult

__all__ = [
    "ALGORITHMS",
    "BACKENDS",
    "HYPERPARAMETERS",
    "BackendError",
    "ComparisonError",
    "ConfigError",
    "RunSpec",
    "SEARCH_SPACES",
    "TrialEvalCallback",
    "TuningError",
    "TuningResult",
    "algorithm_class",
    "build_space",
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
    "register_search_space",
    "train_run",
    "tune",
    "write_outputs",
]

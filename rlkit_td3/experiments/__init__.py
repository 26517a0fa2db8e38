"""Experiments: hyperparameter presets and run configuration (the CLI and comparisons build on these)."""

from rlkit_td3.experiments.presets import (
    ALGORITHMS,
    HYPERPARAMETERS,
    ConfigError,
    load_presets,
    make_model,
    parse_override,
    preset_names,
    resolve_config,
)

__all__ = [
    "ALGORITHMS",
    "HYPERPARAMETERS",
    "ConfigError",
    "load_presets",
    "make_model",
    "parse_override",
    "preset_names",
    "resolve_config",
]

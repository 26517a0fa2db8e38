"""Hyperparameter presets shipped as data (``presets.toml``), and the resolution of a run's configuration.

`resolve_config()` merges, in order: the algorithm's own defaults, the preset's values for the algorithm
(its ``default`` table, then the env's table), then the caller's overrides. It returns the constructor keyword
arguments, the number of timesteps, and where each value came from (``"default"``, ``"preset:NAME"`` or
``"override"``), which the CLI writes to ``config.json``.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import os
import sys
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from rlkit_td3.buffers import LAPReplayBuffer, PrioritizedReplayBuffer, ReplayBuffer
from rlkit_td3.ddpg import DDPG
from rlkit_td3.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise
from rlkit_td3.schedules import LinearSchedule
from rlkit_td3.td3 import TD3
from rlkit_td3.td7 import TD7

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ALGORITHMS: dict[str, type] = {"td3": TD3, "ddpg": DDPG, "td7": TD7}
"""The algorithms by the names the CLI and presets use."""

_CONSTRUCTOR_KEYS = (
    "learning_rate",
    "buffer_size",
    "learning_starts",
    "batch_size",
    "tau",
    "gamma",
    "train_freq",
    "gradient_steps",
    "policy_delay",
    "target_policy_noise",
    "target_noise_clip",
    "optimize_memory_usage",
    "n_steps",
    "warmup_action_noise",
)
_TD7_KEYS = (
    "target_update_interval",
    "use_checkpoints",
    "max_eps_when_checkpointing",
    "steps_before_checkpointing",
    "reset_weight",
)
"""Constructor keys only TD7 takes."""
_EXTRA_KEYS = ("n_timesteps", "net_arch", "noise_type", "noise_std", "replay_buffer", "critic_layer_norm")
HYPERPARAMETERS: tuple[str, ...] = _CONSTRUCTOR_KEYS + _TD7_KEYS + _EXTRA_KEYS
"""Every key a preset or an override may set."""
NOISE_TYPES = ("normal", "ornstein-uhlenbeck", "none")
REPLAY_BUFFERS: dict[str, type[ReplayBuffer]] = {
    "uniform": ReplayBuffer,
    "prioritized": PrioritizedReplayBuffer,
    "lap": LAPReplayBuffer,
}
"""The values of the ``replay_buffer`` key and the buffer class each selects (``uniform`` becomes
``NStepReplayBuffer`` when ``n_steps`` > 1; the prioritized buffers handle n-step returns themselves)."""

_DEFAULTS_NOT_IN_SIGNATURE = {
    "n_timesteps": 1_000_000,
    "net_arch": [400, 300],
    "noise_type": "normal",
    "noise_std": 0.1,
    "replay_buffer": "uniform",
    "critic_layer_norm": False,
}
_ALGORITHM_DEFAULTS_NOT_IN_SIGNATURE = {
    "td7": {"n_timesteps": 5_000_000, "net_arch": [256, 256], "replay_buffer": "lap"}
}
"""Where an algorithm's own defaults differ from `_DEFAULTS_NOT_IN_SIGNATURE` (TD7's networks and LAP, the
authors' 5M steps)."""
_SWITCHES = ("policy_delay", "target_policy_noise", "target_noise_clip")
_DDPG_SWITCHES = {"policy_delay": 1, "target_policy_noise": 0.0, "target_noise_clip": 0.0}
"""DDPG's three switches are fixed by the class (it takes no such arguments)."""


class ConfigError(ValueError):
    """An unknown algorithm, preset or hyperparameter, or a value of the wrong kind; the message names it."""


def _did_you_mean(name: str, choices: Any) -> str:
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=3, cutoff=0.5)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else f"; choose from {sorted(choices)}"


@cache
def load_presets() -> dict[str, Any]:
    """The shipped presets (``rlkit_td3/experiments/presets.toml``), parsed."""
    text = resources.files("rlkit_td3.experiments").joinpath("presets.toml").read_text()
    return tomllib.loads(text)


def preset_names() -> list[str]:
    """Names of the shipped presets."""
    return sorted(load_presets())


def algorithm_class(algo: str) -> type:
    """``TD3``, ``DDPG`` or ``TD7`` by name (case-insensitive).

    Raises:
        ConfigError: an unknown name, with close matches.
    """
    cls = ALGORITHMS.get(str(algo).lower())
    if cls is None:
        raise ConfigError(f"unknown algo {algo!r}{_did_you_mean(algo, ALGORITHMS)}")
    return cls


def algorithm_defaults(algo: str) -> dict[str, Any]:
    """The values a run uses for every key no preset or override sets."""
    parameters = inspect.signature(algorithm_class(algo).__init__).parameters
    values = {key: parameters[key].default for key in _CONSTRUCTOR_KEYS + _TD7_KEYS if key in parameters}
    if algorithm_class(algo) is DDPG:
        values.update(_DDPG_SWITCHES)
    return {**values, **_DEFAULTS_NOT_IN_SIGNATURE, **_ALGORITHM_DEFAULTS_NOT_IN_SIGNATURE.get(str(algo).lower(), {})}


MAX_PRESET_FILE_BYTES = 1 << 20


def is_preset_file(preset: str) -> bool:
    """Whether ``preset`` names a preset file (it ends in ``.toml``) rather than a shipped preset."""
    return str(preset).lower().endswith(".toml")


def load_preset_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A preset file: one preset in the format of ``presets.toml``, without the preset's name (``source``,
    ``extends``, and ``[ALGO.default]`` / ``[ALGO."ENV-ID"]`` tables), as ``rlkit-td3 tune`` writes it.

    Raises:
        ConfigError: a missing, oversized or unparsable file, or one whose tables are not those of a preset.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"preset file {str(path)!r} does not exist")
    if path.stat().st_size > MAX_PRESET_FILE_BYTES:
        raise ConfigError(f"preset file {str(path)!r} is larger than {MAX_PRESET_FILE_BYTES} bytes")
    try:
        tables = tomllib.loads(path.read_bytes().decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"preset file {str(path)!r} is not valid TOML: {exc}") from None
    for key, value in tables.items():
        if key == "source":
            if not isinstance(value, str):
                raise ConfigError(f"preset file {str(path)!r}: source must be a string, got {value!r}")
        elif key == "extends":
            if value not in load_presets():
                raise ConfigError(
                    f"preset file {str(path)!r}: extends must name a shipped preset"
                    f"{_did_you_mean(value, load_presets())}"
                )
        elif key not in ALGORITHMS:
            raise ConfigError(f"preset file {str(path)!r}: unknown algo table {key!r}{_did_you_mean(key, ALGORITHMS)}")
        elif not isinstance(value, dict) or not all(isinstance(t, dict) for t in value.values()):
            raise ConfigError(f'preset file {str(path)!r}: [{key}] must hold tables ([{key}.default], [{key}."ENV"])')
    return tables


def preset_tables(preset: str) -> dict[str, Any]:
    """The tables of a shipped preset, or of a preset file (a name ending in ``.toml``).

    Raises:
        ConfigError: an unknown preset (with close matches) or a bad preset file.
    """
    presets = load_presets()
    if preset in presets:
        return presets[preset]
    if is_preset_file(preset):
        return load_preset_file(preset)
    raise ConfigError(f"unknown preset {preset!r}{_did_you_mean(preset, presets)} (or a preset file FILE.toml)")


def _preset_layers(preset: str, algo: str, env_id: str) -> list[tuple[dict[str, Any], bool]]:
    """The preset's tables that apply, lowest priority first, each with whether it is inherited (``same_as``)."""
    tables = preset_tables(preset)
    parent = tables.get("extends")
    inherited_layers = _preset_layers(parent, algo, env_id) if parent is not None else []
    own = tables.get(algo, {})
    base = tables.get(own.get("same_as", algo), {}) if "same_as" in own else {}
    layers = [
        (base.get("default", {}), True),
        (own.get("default", {}), False),
        (base.get(env_id, {}), True),
        (own.get(env_id, {}), False),
    ]
    return inherited_layers + [(layer, inherited) for layer, inherited in layers if layer]


def parse_override(text: str) -> tuple[str, Any]:
    """``"key=value"`` → ``(key, value)``; the value is a Python literal where it parses as one
    (``gamma=0.98``, ``net_arch=[64,64]``, ``train_freq=(1,'episode')``), else the string itself.

    Raises:
        ConfigError: no ``=``.
    """
    key, sep, raw = str(text).partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"a hyperparameter override must look like key=value, got {text!r}")
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError):
        value = raw.strip()
    return key.strip(), value


def resolve_config(
    algo: str, env_id: str, preset: str | None = None, overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The hyperparameters of one run and where each comes from.

    Args:
        algo: ``"td3"``, ``"ddpg"`` or ``"td7"``.
        env_id: the gymnasium id (selects the preset's env table, if it has one).
        preset: a shipped preset name (``"zoo"``, ``"paper"``), a preset file (``"best.toml"``, see
            `load_preset_file`) or None.
        overrides: values that win over everything, by key (see `HYPERPARAMETERS`).

    Returns:
        ``{"algo", "env_id", "preset", "hyperparameters": {key: value}, "origins": {key: origin},
        "source": the preset's source text or None}``; JSON-ready.

    Raises:
        ConfigError: unknown algo, preset or key (with close matches), or a malformed value.
    """
    algo = str(algo).lower()
    values = algorithm_defaults(algo)
    origins = dict.fromkeys(values, "default")
    source = None
    if preset is not None:
        for layer, inherited in _preset_layers(preset, algo, env_id):
            for key, value in layer.items():
                if key == "same_as" or (inherited and algo == "ddpg" and key in _SWITCHES):
                    continue  # DDPG's switches are its own, not the TD3 table's
                _check_key(key, f"preset {preset!r}")
                values[key] = value
                origins[key] = f"preset:{preset}"
        source = preset_tables(preset).get("source")
    for key, value in (overrides or {}).items():
        _check_key(key, "--hp")
        values[key] = value
        origins[key] = "override"
    for key in set(values) - set(algorithm_defaults(algo)):  # e.g. TD7's target_update_interval for td3
        raise ConfigError(f"{key!r} ({origins[key]}) is not a hyperparameter of {algo}")
    if algo == "ddpg":
        for key, fixed in _DDPG_SWITCHES.items():
            if values[key] != fixed:
                raise ConfigError(
                    f"DDPG fixes {key}={fixed}, got {values[key]!r} ({origins[key]}); "
                    "use --algo td3 to vary TD3's switches"
                )
    _check_values(values)
    return {
        "algo": algo,
        "env_id": env_id,
        "preset": preset,
        "hyperparameters": values,
        "origins": origins,
        "source": source,
    }


def _check_key(key: str, where: str) -> None:
    if key not in HYPERPARAMETERS:
        raise ConfigError(f"unknown hyperparameter {key!r} in {where}{_did_you_mean(key, HYPERPARAMETERS)}")


def _check_values(values: dict[str, Any]) -> None:
    if values["noise_type"] not in NOISE_TYPES:
        raise ConfigError(f"noise_type must be one of {NOISE_TYPES}, got {values['noise_type']!r}")
    if values["replay_buffer"] not in REPLAY_BUFFERS:
        raise ConfigError(f"replay_buffer must be one of {tuple(REPLAY_BUFFERS)}, got {values['replay_buffer']!r}")
    if not isinstance(values["critic_layer_norm"], bool):
        raise ConfigError(f"critic_layer_norm must be true or false, got {values['critic_layer_norm']!r}")
    n = values["n_timesteps"]
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ConfigError(f"n_timesteps must be a positive int, got {n!r}")
    lr = values["learning_rate"]
    if isinstance(lr, str) and not (lr.startswith("lin_") and _is_float(lr[4:])):
        raise ConfigError(f"learning_rate must be a number or 'lin_<start>', got {lr!r}")
    if isinstance(values["train_freq"], list):
        values["train_freq"] = tuple(values["train_freq"])


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def make_model(config: dict[str, Any], env: Any, seed: int | None = None, **kwargs: Any) -> Any:
    """Build the algorithm of a `resolve_config()` result on ``env`` (an id, an Env or a VectorEnv).

    The constructor validates every value and raises a ValueError/TypeError naming the parameter.
    """
    import gymnasium as gym
    from gymnasium.vector import VectorEnv

    hp = dict(config["hyperparameters"])
    cls = algorithm_class(config["algo"])
    if isinstance(env, str):
        env = gym.make(env)
    action_space = env.single_action_space if isinstance(env, VectorEnv) else env.action_space
    dim = int(np.prod(action_space.shape))
    noise = None
    if hp["noise_type"] != "none":
        noise_cls = NormalActionNoise if hp["noise_type"] == "normal" else OrnsteinUhlenbeckActionNoise
        noise = noise_cls(np.zeros(dim), float(hp["noise_std"]) * np.ones(dim))
    ctor = {
        key: hp[key] for key in _CONSTRUCTOR_KEYS + _TD7_KEYS if key in hp and not (cls is DDPG and key in _SWITCHES)
    }
    if isinstance(ctor["learning_rate"], str):
        ctor["learning_rate"] = LinearSchedule(float(ctor["learning_rate"][4:]), 0.0)
    if hp["replay_buffer"] != "uniform":
        ctor["replay_buffer_class"] = REPLAY_BUFFERS[hp["replay_buffer"]]
    policy_kwargs = {"net_arch": hp["net_arch"]}
    if hp["critic_layer_norm"]:
        policy_kwargs["critic_layer_norm"] = True
    return cls("MlpPolicy", env, seed=seed, policy_kwargs=policy_kwargs, action_noise=noise, **ctor, **kwargs)

"""What `tune` searches: a search space per algorithm, a user's file that narrows or replaces it, and the
conversion of a trial's sampled values into preset hyperparameters.

A search space is plain data: ``{name: spec}``, where a spec is ``{"type": "float", "low": 1e-5, "high": 2e-3,
"log": True}``, ``{"type": "int", "low": 1, "high": 10}`` or ``{"type": "categorical", "choices": [...]}``.
A name is either a preset key (`HYPERPARAMETERS`, e.g. ``learning_starts``) or one of the derived names the RL Zoo's
sampler uses, which `to_hyperparameters()` turns into preset keys:

- ``one_minus_gamma`` → ``gamma = 1 - one_minus_gamma`` (so that γ is searched on a log scale near 1);
- ``batch_size_pow`` → ``batch_size = 2 ** batch_size_pow``;
- ``net_arch`` → a named size (``small`` [64, 64], ``medium`` [256, 256], ``big`` [400, 300]) or sizes joined by
  ``x`` (``"32x32"``);
- ``train_freq`` also sets ``gradient_steps`` to the same value (one update per env step), unless the space
  searches ``gradient_steps`` itself.

The built-in spaces live in `SEARCH_SPACES`, by algorithm name; `register_search_space()` adds one (a new
algorithm registers its space there).
"""

from __future__ import annotations

import copy
import math
import os
from pathlib import Path
from typing import Any

from rlkit_td3.experiments.presets import HYPERPARAMETERS, ConfigError, _did_you_mean, resolve_config

ZOO_SOURCE = (
    "RL Baselines3 Zoo 2.9, rl_zoo3/hyperparams_opt.py, sample_td3_params (the Zoo samples DDPG with the same function)"
)
"""Where the built-in TD3 and DDPG space comes from."""

ZOO_OFF_POLICY_SPACE: dict[str, dict[str, Any]] = {
    "one_minus_gamma": {"type": "float", "low": 1e-4, "high": 0.03, "log": True},
    "learning_rate": {"type": "float", "low": 1e-5, "high": 2e-3, "log": True},
    "batch_size_pow": {"type": "int", "low": 2, "high": 11},
    "train_freq": {"type": "int", "low": 1, "high": 10},
    "tau": {"type": "float", "low": 1e-3, "high": 0.08, "log": True},
    "noise_type": {"type": "categorical", "choices": ["ornstein-uhlenbeck", "normal", "none"]},
    "noise_std": {"type": "float", "low": 0.0, "high": 0.5},
    "net_arch": {"type": "categorical", "choices": ["small", "medium", "big"]},
}
"""The RL Zoo 2.9's ``sample_td3_params`` ranges, as data (the values are facts from `ZOO_SOURCE`)."""

TD7_SOURCE = (
    "centred on the authors' hyperparameters (Fujimoto et al. 2023, 'For SALE'; sfujim/TD7, TD7.py "
    "Hyperparameters): lr 3e-4, batch 256, gamma 0.99, target_update_rate 250, exploration noise 0.1, 256-256 networks"
)
"""Where the built-in TD7 space comes from."""

TD7_SPACE: dict[str, dict[str, Any]] = {
    "learning_rate": {"type": "float", "low": 1e-4, "high": 1e-3, "log": True},
    "batch_size_pow": {"type": "int", "low": 7, "high": 9},
    "one_minus_gamma": {"type": "float", "low": 3e-3, "high": 0.03, "log": True},
    "target_update_interval": {"type": "int", "low": 100, "high": 1000, "log": True},
    "noise_std": {"type": "float", "low": 0.05, "high": 0.3},
    "net_arch": {"type": "categorical", "choices": ["small", "medium"]},
}
"""TD7's search space: each range holds the authors' value (`TD7_SOURCE`) about in its middle, on a log scale for
the scale-free ones. Searched: the step size and batch size (shared by the actor, the critics and the encoders), the
horizon, how long the fixed embeddings and targets stay fixed (TD7's hard-copy period replaces TD3's tau), the
exploration noise and the width of the actor and critics. Not searched: ``tau``, ``train_freq`` and
``gradient_steps`` (TD7 copies its targets and trains after each episode: policy checkpoints need
``train_freq=(1, "episode")`` and ``gradient_steps=-1``), the checkpoint schedule (``steps_before_checkpointing``
acts after 750k updates, beyond a tuning budget), and ``learning_starts`` (set it to the budget with ``--hp``)."""

SEARCH_SPACES: dict[str, dict[str, dict[str, Any]]] = {
    "td3": ZOO_OFF_POLICY_SPACE,
    "ddpg": ZOO_OFF_POLICY_SPACE,
    "td7": TD7_SPACE,
}
"""The built-in search space of each algorithm, by the name the CLI uses."""

SEARCH_SPACE_SOURCES: dict[str, str] = {"td3": ZOO_SOURCE, "ddpg": ZOO_SOURCE, "td7": TD7_SOURCE}
"""Where each built-in space comes from (quoted in ``summary.md``)."""

NET_ARCHS: dict[str, list[int]] = {"small": [64, 64], "medium": [256, 256], "big": [400, 300]}
"""The named network sizes of the ``net_arch`` choice (the RL Zoo's names)."""

DERIVED = ("one_minus_gamma", "batch_size_pow")
"""Searched names that are not preset keys themselves."""

_SPEC_KEYS = {"type", "low", "high", "log", "step", "choices"}
_TYPES = ("float", "int", "categorical")
MAX_SPACE_FILE_BYTES = 1 << 20


def register_search_space(algo: str, space: dict[str, dict[str, Any]], source: str) -> None:
    """Make ``space`` the built-in search space of ``algo`` (checked as a user's file is).

    Raises:
        ConfigError: a malformed spec, naming its key.
    """
    checked = {name: check_spec(spec, f"{algo} search space: {name!r}") for name, spec in space.items()}
    for name in checked:
        _check_name(name, f"{algo} search space")
    SEARCH_SPACES[str(algo).lower()] = checked
    SEARCH_SPACE_SOURCES[str(algo).lower()] = source


def _check_name(name: str, where: str) -> None:
    if name not in DERIVED and name not in HYPERPARAMETERS:
        raise ConfigError(
            f"unknown hyperparameter {name!r} in {where}{_did_you_mean(name, (*DERIVED, *HYPERPARAMETERS))}"
        )


def _number(value: Any, what: str, integer: bool = False) -> float:
    if isinstance(value, str) and not integer:  # PyYAML reads 1e-4 (no dot) as a string
        try:
            value = float(value)
        except ValueError:
            pass
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value):
        raise ConfigError(f"{what} must be {'an integer' if integer else 'a finite number'}, got {value!r}")
    return value


def check_spec(spec: Any, where: str) -> dict[str, Any]:
    """A distribution spec, checked and completed with its ``type``.

    Raises:
        ConfigError: not a mapping, an unknown key or type, ``low > high``, ``log`` with ``low <= 0``, a
            non-positive ``step``, or empty or non-scalar ``choices``; the message starts with ``where``.
    """
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: a distribution must be a mapping (type, low, high, log, step or choices), "
                          f"got {spec!r}")  # fmt: skip
    unknown = sorted(set(spec) - _SPEC_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}{_did_you_mean(unknown[0], _SPEC_KEYS)}")
    kind = spec.get("type")
    if kind is None:
        kind = "categorical" if "choices" in spec else "int" if _all_ints(spec) else "float"
    if kind not in _TYPES:
        raise ConfigError(f"{where}: type must be one of {_TYPES}, got {kind!r}")
    if kind == "categorical":
        extra = sorted(set(spec) - {"type", "choices"})
        if extra:
            raise ConfigError(f"{where}: a categorical distribution takes only choices, got {extra[0]!r}")
        choices = spec.get("choices")
        if not isinstance(choices, list) or not choices:
            raise ConfigError(f"{where}: choices must be a non-empty list, got {choices!r}")
        for choice in choices:
            if choice is not None and not isinstance(choice, (str, int, float, bool)):
                raise ConfigError(f"{where}: each choice must be a string, number, boolean or null, got {choice!r}")
        return {"type": kind, "choices": list(choices)}
    if "choices" in spec:
        raise ConfigError(f"{where}: choices is for a categorical distribution, not a {kind} one")
    for bound in ("low", "high"):
        if bound not in spec:
            raise ConfigError(f"{where}: a {kind} distribution needs {bound}")
    integer = kind == "int"
    low = _number(spec["low"], f"{where}: low", integer)
    high = _number(spec["high"], f"{where}: high", integer)
    if low > high:
        raise ConfigError(f"{where}: low ({low!r}) must not exceed high ({high!r})")
    log = spec.get("log", False)
    if not isinstance(log, bool):
        raise ConfigError(f"{where}: log must be true or false, got {log!r}")
    if log and low <= 0:
        raise ConfigError(f"{where}: low must be > 0 when log is true, got {low!r}")
    checked: dict[str, Any] = {"type": kind, "low": low, "high": high, "log": log}
    if "step" in spec:
        step = _number(spec["step"], f"{where}: step", integer)
        if step <= 0:
            raise ConfigError(f"{where}: step must be positive, got {step!r}")
        if log:
            raise ConfigError(f"{where}: step and log cannot be combined")
        checked["step"] = step
    return checked


def _all_ints(spec: dict[str, Any]) -> bool:
    return all(isinstance(spec.get(k), int) and not isinstance(spec.get(k), bool) for k in ("low", "high"))


def read_space_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A search-space file (``.yaml``, ``.yml`` or ``.json``), parsed but not yet checked.

    Raises:
        ConfigError: a missing, oversized or unparsable file, or one whose top level is not a mapping.
    """
    from rlkit_td3.fileio.file_reader import parse_json

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"search space file {str(path)!r} does not exist")
    if path.suffix.lower() not in (".yaml", ".yml", ".json"):
        raise ConfigError(f"search space file {str(path)!r} must end in .yaml, .yml or .json")
    if path.stat().st_size > MAX_SPACE_FILE_BYTES:
        raise ConfigError(f"search space file {str(path)!r} is larger than {MAX_SPACE_FILE_BYTES} bytes")
    raw = path.read_bytes()
    try:
        if path.suffix.lower() == ".json":
            data = parse_json(raw, f"search space file {path}")
        else:
            import yaml

            data = yaml.safe_load(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"search space file {str(path)!r} does not parse: {' '.join(str(exc).split())}") from None
    except Exception as exc:  # yaml.YAMLError and its subclasses
        raise ConfigError(f"search space file {str(path)!r} does not parse: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"search space file {str(path)!r} must hold a mapping with a 'space' key, got {data!r}")
    return data


def build_space(algo: str, user: dict[str, Any] | str | os.PathLike[str] | None = None) -> dict[str, dict[str, Any]]:
    """The search space of a study: the algorithm's built-in one, narrowed or replaced by ``user``.

    Args:
        algo: the algorithm's name.
        user: ``None``; a path to a YAML/JSON file; or the file's content as a dict: ``{"space": {name: spec or
            null}, "replace": false}``. Each name in ``space`` replaces the built-in spec of that name (or adds
            a name); ``null`` removes a name (the preset's value is then used); ``replace: true`` starts from an
            empty space instead of the built-in one.

    Raises:
        ConfigError: no built-in space for ``algo`` and no ``replace``; a malformed file, naming the key.
    """
    algo = str(algo).lower()
    where = "search space"
    if user is not None and not isinstance(user, dict):
        where = f"search space file {str(user)!r}"
        user = read_space_file(user)
    user = user or {}
    unknown = sorted(set(user) - {"space", "replace"})
    if unknown:
        raise ConfigError(f"{where}: unknown top-level key {unknown[0]!r}; use 'space' and 'replace'")
    replace = user.get("replace", False)
    if not isinstance(replace, bool):
        raise ConfigError(f"{where}: replace must be true or false, got {replace!r}")
    entries = user.get("space", {})
    if not isinstance(entries, dict):
        raise ConfigError(f"{where}: space must be a mapping of hyperparameter to distribution, got {entries!r}")
    if replace:
        space: dict[str, dict[str, Any]] = {}
    elif algo in SEARCH_SPACES:
        space = {name: check_spec(copy.deepcopy(spec), f"{algo} search space: {name!r}")
                 for name, spec in SEARCH_SPACES[algo].items()}  # fmt: skip
    else:
        raise ConfigError(
            f"no built-in search space for algo {algo!r} (built in: {sorted(SEARCH_SPACES)}); "
            "pass a search space file with replace: true"
        )
    for name, spec in entries.items():
        _check_name(str(name), where)
        if spec is None:
            space.pop(name, None)
        else:
            space[name] = check_spec(spec, f"{where}: {name!r}")
    if not space:
        raise ConfigError(f"{where}: the search space is empty")
    for name, spec in space.items():
        if name == "net_arch" and spec["type"] == "categorical":
            for choice in spec["choices"]:
                net_arch_of(choice, f"{where}: 'net_arch'")
    return space


def net_arch_of(choice: Any, where: str = "net_arch") -> list[int]:
    """The layer sizes of a ``net_arch`` choice: a name of `NET_ARCHS` or sizes joined by ``x`` (``"32x32"``).

    Raises:
        ConfigError: any other value.
    """
    if isinstance(choice, str):
        if choice in NET_ARCHS:
            return list(NET_ARCHS[choice])
        parts = choice.split("x")
        if all(p.isdigit() and int(p) > 0 for p in parts):
            return [int(p) for p in parts]
    raise ConfigError(f"{where}: a choice must be one of {sorted(NET_ARCHS)} or sizes like '64x64', got {choice!r}")


def to_hyperparameters(params: dict[str, Any]) -> dict[str, Any]:
    """A trial's sampled values as preset hyperparameters (overrides for `resolve_config`)."""
    values = dict(params)
    if "one_minus_gamma" in values:
        values["gamma"] = 1.0 - values.pop("one_minus_gamma")
    if "batch_size_pow" in values:
        values["batch_size"] = 2 ** int(values.pop("batch_size_pow"))
    if "net_arch" in values:
        values["net_arch"] = net_arch_of(values["net_arch"])
    if "train_freq" in values and "gradient_steps" not in values:
        values["gradient_steps"] = values["train_freq"]
    if values.get("noise_type") is None and "noise_type" in values:
        values["noise_type"] = "none"
    return values


def searched_keys(name: str) -> set[str]:
    """The preset keys a searched name sets (``batch_size_pow`` sets ``batch_size``)."""
    return {"one_minus_gamma": {"gamma"}, "batch_size_pow": {"batch_size"}}.get(name, {name})


def without_fixed(space: dict[str, dict[str, Any]], fixed: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``space`` without the names whose keys ``fixed`` (the user's overrides) sets: a fixed key is not searched."""
    return {name: spec for name, spec in space.items() if not searched_keys(name) <= set(fixed)}


def corner_samples(space: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Samples that put each searched value, in turn, at each of its bounds or choices (the others at their
    first), so that a value the run would refuse is found before the study starts."""
    first = {name: _values(spec)[0] for name, spec in space.items()}
    samples = [first]
    for name, spec in space.items():
        for value in _values(spec)[1:]:
            samples.append({**first, name: value})
    return samples


def _values(spec: dict[str, Any]) -> list[Any]:
    return list(spec["choices"]) if spec["type"] == "categorical" else [spec["low"], spec["high"]]


def check_space_values(
    space: dict[str, dict[str, Any]], algo: str, env_id: str, preset: str | None, overrides: dict[str, Any]
) -> None:
    """Resolve the configuration of every `corner_samples()` sample.

    Raises:
        ConfigError: a value the run's configuration refuses, naming the searched key.
    """
    for sample in corner_samples(space):
        try:
            resolve_config(algo, env_id, preset, {**to_hyperparameters(sample), **overrides})
        except ConfigError as exc:
            raise ConfigError(f"search space: {exc} (with {sample})") from None


def distributions(space: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The space as Optuna distributions (needs the ``tune`` extra)."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    result: dict[str, Any] = {}
    for name, spec in space.items():
        if spec["type"] == "categorical":
            result[name] = CategoricalDistribution(spec["choices"])
        elif spec["type"] == "int":
            result[name] = IntDistribution(spec["low"], spec["high"], log=spec["log"], step=spec.get("step", 1))
        else:
            result[name] = FloatDistribution(
                float(spec["low"]), float(spec["high"]), log=spec["log"], step=spec.get("step")
            )
    return result

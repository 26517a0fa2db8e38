"""Saving, loading and resuming a model: the model file's content, built and checked, and the training state.

`rlkit_td3.fileio.serialization` holds the zip format and `rlkit_td3.persistence.file_checks` the checks of the file
as a whole (entry
sizes, counters, ``n_envs``); this module fills one from a model and a model from one (``save``, ``load``). It
knows no component's layout: it walks the model's components and stores what their ``state_dict()`` returns, then
hands it back to their ``load_state_dict()``, which checks it (the component state protocol, see the Architecture
page): the policy (``policy.pth``) and its optimizers (``<name>.pth``), the training state
(`rlkit_td3.persistence.training_state.TrainingState`: the loop's counters and generators, the envs' records, the
noise, the
schedules, the fused update; JSON in the metadata, tensors in ``training_state.pth``) and the replay buffer (its
own file, ``replay_buffer.npz``). That is what makes ``learn`` after ``load`` continue a run exactly.
``BaseAlgorithm``'s public methods of the same names call these functions with the model.
"""

from __future__ import annotations

import importlib.metadata
import io
import os
import platform
import sys
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import VectorEnv

from rlkit_td3.buffers import BUFFER_REGISTRY, ReplayBuffer
from rlkit_td3.checks.state import check_run_id
from rlkit_td3.fileio.model_files import FileFormat, algorithm_class, register_format
from rlkit_td3.fileio.serialization import (
    BUFFER_ENTRY,
    FORMAT_NAME,
    FORMAT_VERSION,
    ModelFileError,
    class_to_name,
    read_model_zip,
    require_bool,
    space_from_dict,
    space_to_dict,
    write_model_zip,
)
from rlkit_td3.noise import noise_from_dict
from rlkit_td3.persistence.env_state import exact_resume_problem
from rlkit_td3.persistence.file_checks import (
    ACTIVATIONS,
    CUSTOM_TO_CTOR,
    OPTIMIZERS,
    CallerArgumentError,
    allowed_class,
    check_counters,
    check_custom_objects,
    check_load_overrides,
    check_n_envs,
    check_noise_spec,
    check_schedule_spec,
    entry_byte_limits,
    existing_zip_path,
    print_system_info_of,
    zip_path_for_save,
)
from rlkit_td3.persistence.load_arguments import check_same_policy_kwargs, excludable, saved_exclusions
from rlkit_td3.persistence.parameters import get_parameters, set_parameters
from rlkit_td3.persistence.training_state import MAX_TORCH_THREADS, TrainingState, restore_smoothing_rng, split_tensors
from rlkit_td3.policies import POLICY_ALIASES
from rlkit_td3.schedules import Schedule, schedule_from_dict, schedule_to_dict
from rlkit_td3.torch_layers import FEATURES_EXTRACTORS
from rlkit_td3.utils import _check_device
from rlkit_td3.vec_env.training_env import (
    as_training_env,
    check_action_space,
)
from rlkit_td3.version import __version__

MAX_N_ENVS = 65_536
"""Largest ``n_envs`` a model file may declare."""


def _imported_version(module: str) -> str | None:
    """The installed version of ``module``'s package if the process imported it, else ``None``."""
    if module not in sys.modules:
        return None
    try:
        return importlib.metadata.version(module)
    except importlib.metadata.PackageNotFoundError:
        return None


def _schedule_entry(model: Any, name: str, schedule: Schedule | None, pickled: dict[str, Any]) -> Any:
    if schedule is None:
        return None
    spec = schedule_to_dict(schedule)
    if spec is None:
        pickled[name] = schedule
        return {"pickled": True}
    return spec


def save(
    model: Any,
    path: str | os.PathLike[str],
    include_buffer: bool = False,
    exclude: Any = None,
    include: Any = None,
) -> None:
    """The body of `BaseAlgorithm.save()`: write ``model`` to one zip file, atomically.

    ``exclude`` names hyperparameters to leave out (``load`` then uses the constructor's defaults; the file lists
    them under ``excluded``), ``include`` names to keep regardless (see
    `rlkit_td3.persistence.load_arguments.saved_exclusions`).
    """
    excluded, buffer_included = saved_exclusions(type(model), exclude, include)
    include_buffer = include_buffer or buffer_included
    if include_buffer:
        problem = exact_resume_problem(model)
        if problem is not None:
            raise ValueError(f"save(include_buffer=True) refused: {problem}")
    path = zip_path_for_save(path)
    pickled: dict[str, Any] = {}
    policy_kwargs = model.policy.constructor_kwargs()
    policy_json = {
        "net_arch": policy_kwargs["net_arch"],
        "activation_fn": class_to_name(policy_kwargs["activation_fn"]),
        "n_critics": policy_kwargs["n_critics"],
        "optimizer_class": class_to_name(policy_kwargs["optimizer_class"]),
        "optimizer_kwargs": policy_kwargs["optimizer_kwargs"],
    }
    # features extractor settings: stored only where they differ from the policy class's defaults
    if "features_extractor_class" in policy_kwargs:
        policy_json["features_extractor_class"] = class_to_name(
            policy_kwargs["features_extractor_class"], FEATURES_EXTRACTORS
        )
    for key in (
        "features_extractor_kwargs",
        "share_features_extractor",
        "normalize_images",
        "critic_layer_norm",
        "normalize_obs",
        *model.policy.json_kwargs,
    ):
        if key in policy_kwargs:
            policy_json[key] = policy_kwargs[key]
    if model.action_noise is None:
        noise_entry: Any = None
    else:
        try:
            noise_entry = model.action_noise.to_dict()
        except NotImplementedError:
            pickled["action_noise"] = model.action_noise
            noise_entry = {"pickled": True}
    metadata = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "algorithm": type(model).__name__,
        "run_id": model.run_id,
        "hyperparameters": {
            "buffer_size": model.buffer_size,
            "learning_starts": model.learning_starts,
            "batch_size": model.batch_size,
            "tau": model.tau,
            "gamma": model.gamma,
            "train_freq": list(model.train_freq),
            "gradient_steps": model.gradient_steps,
            "optimize_memory_usage": model.optimize_memory_usage,
            "policy_delay": model.policy_delay,
            "target_policy_noise": model.target_policy_noise,
            "target_noise_clip": model.target_noise_clip,
            "n_steps": model.n_steps,
            "warmup_action_noise": model.warmup_action_noise,
            "verbose": model.verbose,
            "seed": model.seed,
            "tensorboard_log": model.tensorboard_log,
        },
        "schedules": {
            "learning_rate": _schedule_entry(model, "learning_rate", model.learning_rate, pickled),
            "actor_learning_rate": _schedule_entry(model, "actor_learning_rate", model.actor_learning_rate, pickled),
            "critic_learning_rate": _schedule_entry(model, "critic_learning_rate", model.critic_learning_rate, pickled),
        },
        "policy": {"class": class_to_name(model.policy_class, POLICY_ALIASES), "kwargs": policy_json},
        "action_noise": noise_entry,
        "replay_buffer": {
            "class": class_to_name(model.replay_buffer_class, BUFFER_REGISTRY),
            "kwargs": model.replay_buffer_kwargs,
        },
        "observation_space": space_to_dict(model.observation_space),
        "action_space": space_to_dict(model.action_space),
        "n_envs": model.n_envs,
        "counters": {
            "num_timesteps": model.num_timesteps,
            "n_updates": model._n_updates,
            "episode_num": model._episode_num,
        },
        "pickled_keys": sorted(pickled),
        "excluded": excluded,
        "system": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "torch": torch.__version__,
            "numpy": np.__version__,
            "gymnasium": gym.__version__,
            # what else exact resume needs to match: the simulators' versions and torch's CPU kernels
            **{name: _imported_version(name) for name in ("pybullet", "mujoco")},
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        },
    }
    for name in excluded:  # save(exclude=...): load gives these the constructor's defaults
        metadata["hyperparameters"].pop(name, None)
        if metadata["schedules"].pop(name, None) is not None:
            pickled.pop(name, None)
    metadata["pickled_keys"] = sorted(pickled)
    if hasattr(model, "algorithm_settings"):  # an algorithm's own settings beyond the base's (TD7's)
        metadata["algorithm_settings"] = model.algorithm_settings()
    # the components, each by its state protocol: the file stores what they return, in the entries named here
    metadata["training_state"], training_tensors = split_tensors(TrainingState(model).state_dict())
    tensors = {
        "policy": model.policy.state_dict(),
        **model.policy.optimizer_state_dict(),
        "training_state": training_tensors,
    }
    if include_buffer:
        model.replay_buffer.run_id = model.run_id
    blobs = {BUFFER_ENTRY: model.replay_buffer.to_bytes()} if include_buffer else {}
    write_model_zip(path, metadata, tensors, pickled, blobs)


def load(
    cls: type,
    path: str | os.PathLike[str],
    env: gym.Env | VectorEnv | str | None = None,
    device: torch.device | str = "auto",
    custom_objects: dict[str, Any] | None = None,
    print_system_info: bool = False,
    force_reset: bool = True,
    allow_pickle: bool = False,
    **kwargs: Any,
) -> Any:
    """The body of `BaseAlgorithm.load()`: a ``cls`` model built from the file at ``path``.

    ``OffPolicyAlgorithm``'s constructor checks the file's hyperparameters (an algorithm subclass fixes some of
    them in its own constructor).
    """
    base = algorithm_class("OffPolicyAlgorithm")
    require_bool("allow_pickle", allow_pickle)
    require_bool("print_system_info", print_system_info)
    require_bool("force_reset", force_reset)
    path = existing_zip_path(path)
    custom = check_custom_objects(cls, custom_objects)
    given_policy_kwargs = kwargs.pop("policy_kwargs", None)  # SB3's rule: accepted if equal to the stored ones
    check_load_overrides(cls, kwargs)
    device = _check_device(device)
    metadata, tensors, pickled, blobs = read_model_zip(path, allow_pickle=allow_pickle, entry_limits=entry_byte_limits)
    if print_system_info:
        print_system_info_of(metadata.get("system"))
    if metadata.get("algorithm") != cls.__name__:
        raise ModelFileError(f"{path} holds a {metadata.get('algorithm')} model; load it with that class")
    vec = None if env is None else as_training_env(env)
    try:
        observation_space = space_from_dict(metadata["observation_space"])
        action_space = check_action_space(space_from_dict(metadata["action_space"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{path}: malformed spaces ({type(exc).__name__}: {exc})") from exc
    model = cls.__new__(cls)
    model.observation_space, model.action_space = observation_space, action_space
    if vec is not None:
        model._check_env_matches(vec)  # the caller's env: a plain ValueError naming the space
    try:
        _fill_from_file(model, base, metadata, tensors, pickled, blobs, custom, kwargs, device, vec, force_reset)
    except CallerArgumentError as exc:
        raise exc.__cause__ from None  # a bad custom_objects entry or keyword override: the caller's
    except ModelFileError as exc:
        raise ModelFileError(f"{path}: {exc}") from exc
    except Exception as exc:  # noqa: BLE001  (whatever the file's content breaks is the file's fault)
        raise ModelFileError(f"{path}: malformed model file ({type(exc).__name__}: {exc})") from exc
    if given_policy_kwargs is not None:
        check_same_policy_kwargs(given_policy_kwargs, model.policy)
    return model


def _fill_from_file(
    model: Any,
    base: type,
    metadata: dict[str, Any],
    tensors: dict[str, Any],
    pickled: dict[str, Any],
    blobs: dict[str, bytes],
    custom: dict[str, Any],
    overrides: dict[str, Any],
    device: torch.device | str,
    vec: VectorEnv | None,
    force_reset: bool = True,
) -> None:
    """Build this (bare) model from a file's parts, checking each against the others (see
    `rlkit_td3.persistence.file_checks`) before it is used; any inconsistency raises ``ModelFileError``.

    The constructor's checks run twice: on the file's values alone (a failure is the file's), then with
    the caller's ``custom_objects`` and keyword overrides (a failure is the caller's:
    ``CallerArgumentError``, which `load()` turns back into the original exception).
    """
    n_envs = check_n_envs(metadata, tensors, MAX_N_ENVS)
    given = set(custom)
    defaults = _excluded_defaults(type(model), metadata.get("excluded", []))
    ctor = _constructor_kwargs_from_metadata(metadata, pickled, custom, n_envs=n_envs, defaults=defaults)
    # entries the caller replaced instead of the file (a pickled schedule, a user class) have no file value:
    # the file-only pass uses the constructor's defaults for them
    replaced = {CUSTOM_TO_CTOR.get(key, key) for key in given - set(custom)} - {"policy"}
    observation_space, action_space = model.observation_space, model.action_space
    file_only = {key: value for key, value in ctor.items() if key not in replaced}
    base.__init__(model, env=None, device=device, _init_setup_model=False, **file_only)
    policy_kwargs = ctor["policy_kwargs"]
    for key in list(custom):
        if key in policy_kwargs:
            policy_kwargs[key] = custom.pop(key)
    for key in list(custom):
        ctor[key] = custom.pop(key)
    own_settings = None
    if hasattr(model, "set_algorithm_settings"):  # an algorithm's own settings (TD7's): the file's, then the caller's
        own_settings = metadata.get("algorithm_settings")
        if not isinstance(own_settings, dict):
            raise ModelFileError(f"algorithm_settings must be a dict of {type(model).__name__}'s settings")
        model.set_algorithm_settings(own_settings)
        given_settings = {key: overrides.pop(key) for key in list(overrides) if key in own_settings}
    try:
        base.__init__(model, env=None, device=device, _init_setup_model=False, **{**ctor, **overrides})
        if own_settings is not None and given_settings:
            model.set_algorithm_settings({**own_settings, **given_settings})
    except (TypeError, ValueError) as exc:
        raise CallerArgumentError() from exc
    num_timesteps, n_updates, episode_num = check_counters(metadata["counters"])
    if "run_id" in metadata:  # the run goes on under its id (older files have none: the model keeps a fresh one)
        model.run_id = check_run_id("run_id", metadata["run_id"])
    # before anything is built: the stored networks are those declared, the declared buffer fits in memory
    model.policy_class.check_saved_state(observation_space, action_space, model.policy_kwargs, tensors["policy"])
    check_memory = getattr(model.replay_buffer_class, "check_memory", ReplayBuffer.check_memory)
    try:
        check_memory(model.buffer_size, observation_space, action_space, model.optimize_memory_usage)
    except ModelFileError as exc:
        if "buffer_size" not in overrides:
            raise
        # the caller's argument, not the file's content: ModelFileError is for files only
        error = ValueError(f"buffer_size={overrides['buffer_size']!r} passed to load() does not fit: {exc}")
        raise CallerArgumentError() from error
    model.observation_space, model.action_space = observation_space, action_space
    model.n_envs = n_envs
    if vec is not None:
        model._set_env_and_spaces(vec)
    model._setup_model()
    # the components, each checking its own state (the component state protocol)
    model.policy.load_state_dict(tensors["policy"], entry="policy.pth")
    model.policy.load_optimizer_state_dict(tensors, entry="{name}.pth")
    model.num_timesteps, model._n_updates, model._episode_num = num_timesteps, n_updates, episode_num
    if BUFFER_ENTRY in blobs:
        model.replay_buffer.load(io.BytesIO(blobs[BUFFER_ENTRY]))
        buffer_run = model.replay_buffer.file_run_id
        if buffer_run is not None and buffer_run != metadata.get("run_id"):
            raise ModelFileError(
                f"{BUFFER_ENTRY} was written by run {buffer_run}, the model file by run {metadata.get('run_id')}: "
                "a checkpoint holds the buffer of its own run"
            )
    if "training_state" in metadata:
        training_tensors = tensors.get("training_state", {})
        if not isinstance(training_tensors, dict):
            raise ModelFileError("training_state.pth must hold a dict")
        # force_reset=True (the default): the envs are reset before the next step (at an episode boundary by the
        # reset the saved run would do next, keeping exact resume; mid-episode the episode in flight restarts).
        # force_reset=False: the env given stands where the saved run left it; the saved last observations go on.
        state = metadata["training_state"]
        if not isinstance(state, dict):
            raise ModelFileError("training_state must be a dict")
        TrainingState(model, saved_n_envs=n_envs, force_reset=force_reset).load_state_dict(
            {**state, **training_tensors}
        )
    model._fit_to_env(strict=False)  # the noise of a model saved with another n_envs than env's


def _excluded_defaults(cls: type, excluded: Any) -> dict[str, Any]:
    """The constructor defaults of the hyperparameters a file was saved without (``save(exclude=...)``)."""
    allowed = excludable(cls)
    if not isinstance(excluded, list) or not all(isinstance(name, str) for name in excluded):
        raise ModelFileError(f"excluded must be a list of names, got {excluded!r}")
    for name in excluded:
        if name not in allowed:
            raise ModelFileError(f"excluded names {name!r}, which a {cls.__name__} file cannot leave out")
    return {name: allowed[name] for name in excluded}


def _constructor_kwargs_from_metadata(
    metadata: dict[str, Any],
    pickled: dict[str, Any],
    custom: dict[str, Any],
    n_envs: int = 1,
    defaults: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Rebuild ``OffPolicyAlgorithm.__init__`` keyword arguments from a file's metadata.

    Schedules and noises are checked (types, ranges, the noise's dimension and copies against the action
    space and ``n_envs``) before they are built; classes are looked up in allow-lists only. ``defaults`` gives
    the values of the hyperparameters the file was saved without.
    """
    defaults = defaults or {}

    def restore(name: str, entry: Any, from_dict: Any) -> Any:
        if name in custom:
            return custom.pop(name)
        if name in defaults:
            return defaults[name]
        if entry is None:
            return None
        if isinstance(entry, dict) and entry.get("pickled"):
            if name not in pickled:
                raise ModelFileError(
                    f"{name} was saved through pickle: pass custom_objects={{'{name}': ...}} "
                    "or allow_pickle=True for a file you trust"
                )
            return pickled[name]
        check(name, entry)
        return from_dict(entry)

    act_dim = int(np.prod(metadata["action_space"]["shape"]))

    def check(name: str, entry: Any) -> None:
        if name == "action_noise":
            check_noise_spec(name, entry, act_dim, n_envs)
        else:
            check_schedule_spec(f"schedules.{name}", entry)

    schedule_names = ("learning_rate", "actor_learning_rate", "critic_learning_rate")
    hyper = {**{k: v for k, v in defaults.items() if k not in schedule_names}, **metadata["hyperparameters"]}
    if isinstance(hyper["train_freq"], list):  # JSON keeps the (frequency, unit) pair as a list
        hyper["train_freq"] = tuple(hyper["train_freq"])
    # files written before the switch existed ran the paper's pure-uniform warm-up: resume with it
    hyper.setdefault("warmup_action_noise", False)
    schedules = metadata["schedules"]
    policy = metadata["policy"]
    pkw = dict(policy["kwargs"])
    if "activation_fn" not in custom:
        pkw["activation_fn"] = allowed_class(pkw["activation_fn"], ACTIVATIONS, "activation_fn")
    if "optimizer_class" not in custom:
        pkw["optimizer_class"] = allowed_class(pkw["optimizer_class"], OPTIMIZERS, "optimizer_class")
    if "features_extractor_class" in pkw and "features_extractor_class" not in custom:
        pkw["features_extractor_class"] = allowed_class(
            pkw["features_extractor_class"], FEATURES_EXTRACTORS, "features_extractor_class"
        )
    buffer = metadata["replay_buffer"]
    return {
        **hyper,
        "policy": custom.pop("policy_class", None) or allowed_class(policy["class"], POLICY_ALIASES, "policy"),
        "learning_rate": restore("learning_rate", schedules.get("learning_rate"), schedule_from_dict),
        "actor_learning_rate": restore("actor_learning_rate", schedules.get("actor_learning_rate"), schedule_from_dict),
        "critic_learning_rate": restore(
            "critic_learning_rate", schedules.get("critic_learning_rate"), schedule_from_dict
        ),
        "action_noise": restore("action_noise", metadata["action_noise"], noise_from_dict),
        "replay_buffer_class": custom.pop("replay_buffer_class", None)
        or allowed_class(buffer["class"], BUFFER_REGISTRY, "replay_buffer_class"),
        "replay_buffer_kwargs": dict(buffer.get("kwargs") or {}),
        "policy_kwargs": pkw,
    }


# get_parameters and set_parameters live in rlkit_td3.persistence.parameters, restore_smoothing_rng in
# rlkit_td3.persistence.training_state;
# re-exported here, where they were first
__all__ = ["MAX_TORCH_THREADS", "get_parameters", "load", "restore_smoothing_rng", "save", "set_parameters"]

register_format(FileFormat("rlkit_td3", load=load, save=save))

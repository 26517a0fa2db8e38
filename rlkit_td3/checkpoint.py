"""Saving, loading and resuming a model: the model file's content, built and checked, and the training state.

`rlkit_td3.serialization` holds the zip format and `rlkit_td3.file_checks` the checks of each entry; this module
fills one from a model and a model from one (``save``, ``load``), moves weights in and out (``get_parameters``,
``set_parameters``) and saves and restores everything a run's future depends on (counters, random generators, the
envs' generators, the rollout in flight), which is what makes ``learn`` after ``load`` continue a run exactly.
``BaseAlgorithm``'s public methods of the same names call these functions with the model.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import os
import platform
import sys
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import VectorEnv

from rlkit_td3 import env_state
from rlkit_td3.buffers import BUFFER_REGISTRY
from rlkit_td3.dict_obs import flat_obs_dim, obs_shapes, obs_to_tensors
from rlkit_td3.env_state import exact_resume_problem
from rlkit_td3.file_checks import (
    ACTIVATIONS,
    CUSTOM_TO_CTOR,
    OPTIMIZERS,
    CallerArgumentError,
    allowed_class,
    check_allocation,
    check_counters,
    check_custom_objects,
    check_load_overrides,
    check_n_envs,
    check_noise_spec,
    check_optimizer_state,
    check_policy_state,
    check_schedule_spec,
    check_training_state,
    entry_byte_limits,
    existing_zip_path,
    print_system_info_of,
    zip_path_for_save,
)
from rlkit_td3.load_arguments import check_same_policy_kwargs
from rlkit_td3.matmul_choice import MATMUL_CHOICES, check_matmul_choice
from rlkit_td3.model_files import FileFormat, algorithm_class, register_format
from rlkit_td3.noise import noise_from_dict
from rlkit_td3.parameters import get_parameters, set_parameters
from rlkit_td3.policies import POLICY_ALIASES, CnnPolicy, MultiInputPolicy, TD3Policy
from rlkit_td3.policies.networks import parse_net_arch
from rlkit_td3.policies.td3_policy import _check_state_shapes
from rlkit_td3.preprocessing import get_flattened_obs_dim
from rlkit_td3.schedules import (
    Schedule,
    load_schedule_states,
    schedule_from_dict,
    schedule_states,
    schedule_to_dict,
)
from rlkit_td3.serialization import (
    BUFFER_ENTRY,
    FORMAT_NAME,
    FORMAT_VERSION,
    ModelFileError,
    class_to_name,
    read_model_zip,
    require_bool,
    rng_state_to_json,
    set_rng_state,
    space_from_dict,
    space_to_dict,
    write_model_zip,
)
from rlkit_td3.torch_layers import FEATURES_EXTRACTORS
from rlkit_td3.utils import (
    _check_device,
    _check_int,
)
from rlkit_td3.vec_env.training_env import (
    as_training_env,
    check_action_space,
)
from rlkit_td3.version import __version__

MAX_N_ENVS = 65_536
"""Largest ``n_envs`` a model file may declare."""

MAX_TORCH_THREADS = 4096
"""Largest torch intra-op thread count a model file may record."""


def _file_int(state: dict[str, Any], key: str, minimum: int, maximum: int | None) -> int | None:
    """An optional int field of a file's training state: ``None`` when absent, else checked."""
    value = state.get(key)
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        allowed = f"an int >= {minimum}" + ("" if maximum is None else f" and <= {maximum}")
        raise ModelFileError(f"training_state: {key} must be {allowed}, got {value!r}")
    return value


def _imported_version(module: str) -> str | None:
    """The installed version of ``module``'s package if the process imported it, else ``None``."""
    if module not in sys.modules:
        return None
    try:
        return importlib.metadata.version(module)
    except importlib.metadata.PackageNotFoundError:
        return None


def _check_policy_size(
    observation_space: spaces.Box, action_space: spaces.Box, policy_kwargs: dict[str, Any], state: Any
) -> None:
    """Refuse a file whose declared network sizes do not match its stored tensors, before building anything.

    Without this a forged ``net_arch`` could make loading allocate and initialise huge networks.
    """
    pi, qf = parse_net_arch(policy_kwargs.get("net_arch", [400, 300]))
    n_critics = _check_int("n_critics", policy_kwargs.get("n_critics", 2), 1)
    obs_dim, act_dim = get_flattened_obs_dim(observation_space), int(np.prod(action_space.shape))

    def count(sizes: list[int]) -> int:
        return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))

    expected = 2 * count([obs_dim, *pi, act_dim]) + 2 * n_critics * count([obs_dim + act_dim, *qf, 1])
    if not isinstance(state, dict) or not all(isinstance(t, torch.Tensor) for t in state.values()):
        raise ModelFileError("the policy entry is not a state dict of tensors")
    stored = sum(t.numel() for t in state.values())
    if stored != expected:
        raise ModelFileError(f"the networks the metadata declares have {expected} parameters, the file stores {stored}")


def _schedule_entry(model: Any, name: str, schedule: Schedule | None, pickled: dict[str, Any]) -> Any:
    if schedule is None:
        return None
    spec = schedule_to_dict(schedule)
    if spec is None:
        pickled[name] = schedule
        return {"pickled": True}
    return spec


def save(model: Any, path: str | os.PathLike[str], include_buffer: bool = False) -> None:
    """The body of `BaseAlgorithm.save()`: write ``model`` to one zip file, atomically."""
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
    metadata["training_state"] = _training_state(model)
    tensors = {
        "policy": model.policy.state_dict(),
        "actor_optimizer": model.policy.actor_optimizer.state_dict(),
        "critic_optimizer": model.policy.critic_optimizer.state_dict(),
        "training_state": {"smoothing_rng": model._smoothing_rng.get_state()},
    }
    if model._last_obs is not None:
        tensors["training_state"]["last_obs"] = obs_to_tensors(model._last_obs)
    blobs = {BUFFER_ENTRY: model.replay_buffer.to_bytes()} if include_buffer else {}
    write_model_zip(path, metadata, tensors, pickled, blobs)


def _training_state(model: Any) -> dict[str, Any]:
    """What determines the future of the run, besides the networks, optimizers and buffer (JSON)."""
    return {
        "rollout": None if model._rollout is None else dict(model._rollout),
        "progress_remaining": model._current_progress_remaining,
        "start_timesteps": model._start_timesteps,
        "total_timesteps": model._total_timesteps,
        "env_seeded": model._env_seeded,
        "episode_infos": [[info["r"], info["l"]] for info in model.ep_info_buffer],
        "warmup_rng": rng_state_to_json(model._warmup_rng),
        "action_noise": None if model.action_noise is None else model.action_noise.state_dict(),
        "schedules": schedule_states(_schedules(model)),
        **env_state.state_dict(model),  # env_rngs, sb3_pre_reset, needs_reset
        "torch_num_threads": model._learn_num_threads
        or (model.torch_num_threads if isinstance(model.torch_num_threads, int) else None)
        or torch.get_num_threads(),
        "fused_update_matmul": check_matmul_choice(getattr(model, "fused_update_matmul", "auto")),
    }


SCHEDULE_NAMES = ("learning_rate", "actor_learning_rate", "critic_learning_rate")
"""The model's schedules, by constructor argument name."""


def _schedules(model: Any) -> dict[str, Schedule]:
    """The learning-rate schedules the model holds, by constructor argument name."""
    return {name: getattr(model, name) for name in SCHEDULE_NAMES if getattr(model, name) is not None}


def _restore_training_state(
    model: Any, state: dict[str, Any], tensors: dict[str, Any], saved_n_envs: int | None = None
) -> None:
    """Inverse of `_training_state()` (plus the tensors), applied by `load()`.

    Fields added after the first file format are optional: files without them load as before.
    """
    model._rollout = None if state["rollout"] is None else {k: int(v) for k, v in state["rollout"].items()}
    model._current_progress_remaining = float(state["progress_remaining"])
    start = _file_int(state, "start_timesteps", 0, model.num_timesteps)
    total = _file_int(state, "total_timesteps", 0, None)
    if start is not None and total is not None:
        if start > total:
            raise ModelFileError(f"training_state: start_timesteps={start} is after total_timesteps={total}")
        model._start_timesteps, model._total_timesteps = start, total
    model.torch_num_threads = _file_int(state, "torch_num_threads", 1, MAX_TORCH_THREADS)
    matmul = state.get("fused_update_matmul", "auto")  # absent from files written before it was saved
    if not isinstance(matmul, str) or matmul not in MATMUL_CHOICES:
        raise ModelFileError(
            f"training_state: fused_update_matmul must be one of {', '.join(MATMUL_CHOICES)}, got {matmul!r}"
        )
    model.fused_update_matmul = matmul
    model._env_seeded = bool(state["env_seeded"])
    model._saved_episode_infos = [(float(r), int(n)) for r, n in state["episode_infos"]]
    set_rng_state(model._warmup_rng, state["warmup_rng"])
    if model.action_noise is not None and state["action_noise"] is not None:
        model.action_noise.load_state_dict(state["action_noise"])
    load_schedule_states(_schedules(model), state.get("schedules"), SCHEDULE_NAMES, "training_state: schedules")
    restore_smoothing_rng(model._smoothing_rng, tensors["smoothing_rng"])
    env_state.load_state_dict(
        model, state, tensors.get("last_obs"), model.n_envs if saved_n_envs is None else saved_n_envs
    )


def restore_smoothing_rng(generator: torch.Generator, state: torch.Tensor) -> None:
    """Restore the target policy smoothing generator from a checked saved state (`check_torch_generator_state`).

    A state saved on another kind of device (CUDA's Philox seed and offset for a CPU generator, or the CPU's MT19937
    state for a CUDA one: a model trained on a GPU and loaded on a laptop) cannot be set on this generator. It is
    then seeded from a hash of the saved state, with a warning: the run goes on with other smoothing noise than on
    the saved device (its updates would differ anyway, as another device's kernels round differently), and loading
    the same file on the same device gives the same noise again.
    """
    if state.numel() == generator.get_state().numel():
        generator.set_state(state)
        return
    seed = int.from_bytes(hashlib.sha256(state.cpu().numpy().tobytes()).digest()[:8], "little")
    generator.manual_seed(seed)
    warnings.warn(
        f"the target policy smoothing noise generator was saved on another kind of device ({state.numel()}-byte "
        f"state) and cannot be restored on {generator.device}: it continues from a seed derived from the saved "
        "state, so the run does not go on bit for bit as it would on the device it was saved on",
        UserWarning,
        stacklevel=4,
    )


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
    `rlkit_td3.file_checks`) before it is used; any inconsistency raises ``ModelFileError``.

    The constructor's checks run twice: on the file's values alone (a failure is the file's), then with
    the caller's ``custom_objects`` and keyword overrides (a failure is the caller's:
    ``CallerArgumentError``, which `load()` turns back into the original exception).
    """
    n_envs = check_n_envs(metadata, tensors, MAX_N_ENVS)
    given = set(custom)
    ctor = _constructor_kwargs_from_metadata(metadata, pickled, custom, n_envs=n_envs)
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
    try:
        base.__init__(model, env=None, device=device, _init_setup_model=False, **{**ctor, **overrides})
    except (TypeError, ValueError) as exc:
        raise CallerArgumentError() from exc
    num_timesteps, n_updates, episode_num = check_counters(metadata["counters"])
    beyond_mlp = {
        "features_extractor_class",
        "features_extractor_kwargs",
        "share_features_extractor",
        "critic_layer_norm",
        "normalize_obs",
    }
    if model.policy_class is TD3Policy and not beyond_mlp & set(model.policy_kwargs):
        _check_policy_size(observation_space, action_space, model.policy_kwargs, tensors["policy"])
    elif model.policy_class in (TD3Policy, CnnPolicy, MultiInputPolicy):
        # exact tensor shapes, features extractor included (checked on the meta device: nothing allocated)
        _check_state_shapes(model.policy_class, observation_space, action_space, model.policy_kwargs, tensors["policy"])
    obs_dim, act_dim = flat_obs_dim(observation_space), int(np.prod(action_space.shape))
    per_row = 4 * (obs_dim * (1 if model.optimize_memory_usage else 2) + act_dim + 1) + 2
    check_allocation(
        f"a replay buffer of {model.buffer_size} transitions (pass a smaller buffer_size= to load() to build "
        "a smaller one)",
        model.buffer_size * per_row,
    )
    model.observation_space, model.action_space = observation_space, action_space
    model.n_envs = n_envs
    if vec is not None:
        model._set_env_and_spaces(vec)
    model._setup_model()
    check_policy_state("policy.pth", tensors["policy"], model.policy)
    model.policy.load_state_dict(tensors["policy"])
    for name in ("actor_optimizer", "critic_optimizer"):
        optimizer = getattr(model.policy, name)
        optimizer.load_state_dict(check_optimizer_state(f"{name}.pth", tensors[name], optimizer))
    model.num_timesteps, model._n_updates, model._episode_num = num_timesteps, n_updates, episode_num
    if BUFFER_ENTRY in blobs:
        model.replay_buffer.load(io.BytesIO(blobs[BUFFER_ENTRY]))
    if "training_state" in metadata:
        check_training_state(
            metadata["training_state"],
            tensors.get("training_state"),
            n_envs=n_envs,
            observation_shape=obs_shapes(observation_space),
            action_noise=model.action_noise,
            device=model.device,
        )
        # force_reset needs no action: a loaded model's envs are always reset before its next step (at an
        # episode boundary by the reset the saved run would do next, keeping exact resume; mid-episode the
        # episode in flight restarts).
        _restore_training_state(model, metadata["training_state"], tensors.get("training_state", {}), n_envs)
    model._fit_to_env(strict=False)  # the noise of a model saved with another n_envs than env's


def _constructor_kwargs_from_metadata(
    metadata: dict[str, Any], pickled: dict[str, Any], custom: dict[str, Any], n_envs: int = 1
) -> dict[str, Any]:
    """Rebuild ``OffPolicyAlgorithm.__init__`` keyword arguments from a file's metadata.

    Schedules and noises are checked (types, ranges, the noise's dimension and copies against the action
    space and ``n_envs``) before they are built; classes are looked up in allow-lists only.
    """

    def restore(name: str, entry: Any, from_dict: Any) -> Any:
        if name in custom:
            return custom.pop(name)
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

    hyper = dict(metadata["hyperparameters"])
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
        "learning_rate": restore("learning_rate", schedules["learning_rate"], schedule_from_dict),
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


# get_parameters and set_parameters live in rlkit_td3.parameters; re-exported here, where they were first
__all__ = ["get_parameters", "load", "restore_smoothing_rng", "save", "set_parameters"]

register_format(FileFormat("rlkit_td3", load=load, save=save))

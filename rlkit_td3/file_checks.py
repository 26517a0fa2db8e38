"""Checks of a model file as a whole, before anything uses it: the entry sizes its metadata justifies (read
before the entries are), its counters and its ``n_envs`` against the records that depend on it.

Each component checks its own saved state as it loads it (the component state protocol): the policy and its
optimizers (`rlkit_td3.state_checks`, through ``TD3Policy.load_state_dict``), a buffer file with its buffer, a
noise in `rlkit_td3.noise`, a schedule in `rlkit_td3.schedules`, the training state in
`rlkit_td3.training_state`, ``load()``'s arguments in `rlkit_td3.load_arguments`; the generic checks are in
`rlkit_td3.validators`. Each raises `ModelFileError` naming the entry.

The limits are listed on the Security page of the docs.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from rlkit_td3.file_reader import read_npy_member
from rlkit_td3.load_arguments import (
    CUSTOM_TO_CTOR,
    CallerArgumentError,
    check_custom_objects,
    check_load_overrides,
    existing_zip_path,
    print_system_info_of,
    zip_path_for_save,
)
from rlkit_td3.noise import check_noise_spec, check_noise_state
from rlkit_td3.policies.networks import parse_net_arch
from rlkit_td3.schedules import check_schedule_spec
from rlkit_td3.serialization import (
    BUFFER_ENTRY,
    MAX_ENTRY_BYTES,
    METADATA_ENTRY,
    PICKLE_ENTRY,
    ModelFileError,
    require_bool,
)
from rlkit_td3.state_checks import (
    ACTIVATIONS,
    OPTIMIZERS,
    check_optimizer_state,
    check_policy_state,
)
from rlkit_td3.validators import (
    ENTRY_OVERHEAD_BYTES,
    GENERATOR_STATE_BYTES,
    MAX_BUFFER_META_BYTES,
    MAX_COUNTER,
    TENSOR_OVERHEAD_BYTES,
    _int,
    _number,
    allowed_class,
    check_allocation,
    check_numpy_rng_state,
    check_rng_json,
    check_torch_generator_state,
)

# re-exported: the bool check of every trust switch, and the checks that moved to their components' modules
__all__ = [
    "ACTIVATIONS",
    "OPTIMIZERS",
    "check_optimizer_state",
    "check_policy_state",
    "CUSTOM_TO_CTOR",
    "ENTRY_OVERHEAD_BYTES",
    "GENERATOR_STATE_BYTES",
    "MAX_BUFFER_META_BYTES",
    "MAX_COUNTER",
    "TENSOR_OVERHEAD_BYTES",
    "CallerArgumentError",
    "_int",
    "_number",
    "allowed_class",
    "check_allocation",
    "check_custom_objects",
    "check_load_overrides",
    "check_noise_spec",
    "check_noise_state",
    "check_numpy_rng_state",
    "check_rng_json",
    "check_schedule_spec",
    "check_torch_generator_state",
    "existing_zip_path",
    "print_system_info_of",
    "read_npy_member",
    "require_bool",
    "zip_path_for_save",
]


# ---------------------------------------------------------------------------- sizes
def _box_size(metadata: dict[str, Any], key: str) -> int:
    spec = metadata.get(key)
    if isinstance(spec, dict) and spec.get("type") == "Dict":  # a Dict observation space: its entries' sizes
        entries = spec.get("spaces")
        if not isinstance(entries, list) or not entries or len(entries) > 64:
            raise ModelFileError(f"{METADATA_ENTRY}: {key} is a Dict without valid entries")
        return sum(
            _box_size({key: entry[1] if isinstance(entry, list) and len(entry) == 2 else None}, key)
            for entry in entries
        )
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind in ("Discrete", "MultiDiscrete", "MultiBinary"):  # the one-hot / flattened width: at least the stored size
        sizes = spec.get("nvec") if kind == "MultiDiscrete" else spec.get("n")
        sizes = sizes if isinstance(sizes, list) else [sizes]
        if not 0 < len(sizes) <= 4096:
            raise ModelFileError(f"{METADATA_ENTRY}: {key} has no valid sizes")
        dims = [_int(f"{key}.n", d, 1, 2**31) for d in sizes]
        return math.prod(dims) if kind == "MultiBinary" else sum(dims)
    shape = spec.get("shape") if isinstance(spec, dict) else None
    if not isinstance(shape, list) or len(shape) > 8:
        raise ModelFileError(f"{METADATA_ENTRY}: {key} has no valid shape")
    dims = [_int(f"{key}.shape", d, 1, 2**31) for d in shape]
    size = math.prod(dims)
    low = spec.get("low")
    if not isinstance(low, list) or len(low) != size:
        raise ModelFileError(f"{METADATA_ENTRY}: {key} has shape {dims} but {len(low or [])} bounds")
    return size


def _mlp_params(sizes: list[int]) -> int:
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


def network_sizes(metadata: dict[str, Any]) -> tuple[int, int, int]:
    """``(actor parameters, critic parameters, tensors per network pair)`` of an ``MlpPolicy`` the metadata
    declares (one actor, all critics; the targets are copies)."""
    obs_dim, act_dim = _box_size(metadata, "observation_space"), _box_size(metadata, "action_space")
    kwargs = metadata["policy"]["kwargs"]
    try:
        pi, qf = parse_net_arch(kwargs.get("net_arch", [400, 300]))
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"{METADATA_ENTRY}: policy.kwargs.net_arch: {exc}") from exc
    n_critics = _int("policy.kwargs.n_critics", kwargs.get("n_critics", 2), 1, 1024)
    actor = _mlp_params([obs_dim, *pi, act_dim])
    critic = n_critics * _mlp_params([obs_dim + act_dim, *qf, 1])
    return actor, critic, 2 * (len(pi) + len(qf) + 2)


def entry_byte_limits(metadata: dict[str, Any]) -> dict[str, int]:
    """Largest uncompressed size of each entry that the metadata justifies.

    The tensors of ``policy.pth`` and the two optimizers cannot need more than 8 bytes per declared parameter
    (float64; three moments for the optimizers), ``training_state.pth`` holds a generator and one
    observation per env, and the replay buffer one row per transition of its declared capacity; each gets
    `ENTRY_OVERHEAD_BYTES` and `TENSOR_OVERHEAD_BYTES` per tensor of slack. A policy class other
    than ``MlpPolicy`` (a registered one) falls back to
    `MAX_ENTRY_BYTES` for its networks.
    """
    if metadata.get("content") == "policy":  # written by TD3Policy.save: a policy on its own, not a model
        raise ModelFileError(
            f"{METADATA_ENTRY}: the file holds a {metadata.get('algorithm')} model (a policy on its own): load it "
            "with that policy class's load()"
        )
    try:
        obs_dim, act_dim = _box_size(metadata, "observation_space"), _box_size(metadata, "action_space")
        n_envs = _int("n_envs", metadata.get("n_envs", 1), 1, 2**16)
        hyper = metadata["hyperparameters"]
        buffer_size = _int("hyperparameters.buffer_size", hyper["buffer_size"], 1, 2**40)
        policy_class = metadata["policy"]["class"]
    except (KeyError, TypeError, AttributeError) as exc:
        raise ModelFileError(f"{METADATA_ENTRY}: malformed ({type(exc).__name__}: {exc})") from exc
    limits = {METADATA_ENTRY: MAX_ENTRY_BYTES, PICKLE_ENTRY: MAX_ENTRY_BYTES}
    extractor_keys = {"features_extractor_class", "features_extractor_kwargs", "critic_layer_norm", "normalize_obs"}
    if policy_class == "MlpPolicy" and not extractor_keys & set(metadata["policy"].get("kwargs") or {}):
        actor, critic, n_tensors = network_sizes(metadata)
        slack = ENTRY_OVERHEAD_BYTES + TENSOR_OVERHEAD_BYTES * 3 * n_tensors
        limits["policy.pth"] = 2 * 8 * (actor + critic) + slack
        limits["actor_optimizer.pth"] = 3 * 8 * actor + slack
        limits["critic_optimizer.pth"] = 3 * 8 * critic + slack
    else:
        limits.update(dict.fromkeys(("policy.pth", "actor_optimizer.pth", "critic_optimizer.pth"), MAX_ENTRY_BYTES))
    limits["training_state.pth"] = ENTRY_OVERHEAD_BYTES + 8 * n_envs * obs_dim
    row = 4 * (3 * obs_dim + act_dim + 1) + 2 + 8 + 32  # + 32: n-step link and priority, or HER's episode start/length
    limits[BUFFER_ENTRY] = ENTRY_OVERHEAD_BYTES + (buffer_size + n_envs) * row + 64 * n_envs
    return {name: min(limit, MAX_ENTRY_BYTES) for name, limit in limits.items()}


# ---------------------------------------------------------------------------- random generators


# ---------------------------------------------------------------------------- schedules and noise


# ---------------------------------------------------------------------------- networks and optimizers
# ---------------------------------------------------------------------------- training state
def check_counters(counters: Any) -> tuple[int, int, int]:
    """``(num_timesteps, n_updates, episode_num)``: non-negative ints; never more episodes than steps."""
    if not isinstance(counters, dict):
        raise ModelFileError("counters must be a dict")
    try:
        num_timesteps = _int("counters.num_timesteps", counters["num_timesteps"])
        n_updates = _int("counters.n_updates", counters["n_updates"])
        episode_num = _int("counters.episode_num", counters["episode_num"])
    except KeyError as exc:
        raise ModelFileError(f"counters lack {exc}") from exc
    if episode_num > num_timesteps:
        raise ModelFileError(f"counters: {episode_num} episodes in {num_timesteps} steps")
    return num_timesteps, n_updates, episode_num


def check_n_envs(metadata: dict[str, Any], tensors: dict[str, Any], max_n_envs: int) -> int:
    """``n_envs`` in range and equal to the number of rows of the stored last observations and env generators."""
    n_envs = _int("n_envs", metadata.get("n_envs", 1), 1, max_n_envs)
    last_obs = (
        tensors.get("training_state", {}).get("last_obs") if isinstance(tensors.get("training_state"), dict) else None
    )
    if isinstance(last_obs, torch.Tensor) and (last_obs.dim() == 0 or last_obs.shape[0] != n_envs):
        raise ModelFileError(f"training_state.last_obs has shape {tuple(last_obs.shape)}, n_envs is {n_envs}")
    state = metadata.get("training_state")
    env_rngs = state.get("env_rngs") if isinstance(state, dict) else None
    if isinstance(env_rngs, list) and len(env_rngs) != n_envs:
        raise ModelFileError(f"training_state.env_rngs holds {len(env_rngs)} generators, n_envs is {n_envs}")
    return n_envs


# ---------------------------------------------------------------------------- replay buffer files

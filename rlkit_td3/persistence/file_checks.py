"""Checks of a model file as a whole, before anything uses it: the entry sizes its metadata justifies (read
before the entries are), its counters and its ``n_envs`` against the records that depend on it.

Each component checks its own saved state as it loads it (the component state protocol): the policy and its
optimizers (`rlkit_td3.checks.state`, through ``TD3Policy.load_state_dict``), a buffer file with its buffer, a
noise in `rlkit_td3.noise`, a schedule in `rlkit_td3.schedules`, the training state in
`rlkit_td3.persistence.training_state`, ``load()``'s arguments in `rlkit_td3.persistence.load_arguments`; the generic
checks are in
`rlkit_td3.checks.state`. Each raises `ModelFileError` naming the entry.

The limits are listed on the Security page of the docs.
"""

from __future__ import annotations

from typing import Any

import torch

from rlkit_td3.checks.state import (
    ACTIVATIONS,
    ENTRY_OVERHEAD_BYTES,
    GENERATOR_STATE_BYTES,
    MAX_BUFFER_META_BYTES,
    MAX_COUNTER,
    OPTIMIZERS,
    TENSOR_OVERHEAD_BYTES,
    _int,
    _number,
    allowed_class,
    check_allocation,
    check_numpy_rng_state,
    check_optimizer_state,
    check_policy_state,
    check_rng_json,
    check_torch_generator_state,
)
from rlkit_td3.fileio.file_reader import read_npy_member
from rlkit_td3.fileio.serialization import (
    BUFFER_ENTRY,
    MAX_ENTRY_BYTES,
    METADATA_ENTRY,
    PICKLE_ENTRY,
    ModelFileError,
    require_bool,
)
from rlkit_td3.noise import check_noise_spec, check_noise_state
from rlkit_td3.persistence.load_arguments import (
    CUSTOM_TO_CTOR,
    CallerArgumentError,
    check_custom_objects,
    check_load_overrides,
    existing_zip_path,
    print_system_info_of,
    zip_path_for_save,
)
from rlkit_td3.policies.declared_size import box_size, network_byte_limits
from rlkit_td3.schedules import check_schedule_spec

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
        obs_dim, act_dim = box_size(metadata, "observation_space"), box_size(metadata, "action_space")
        n_envs = _int("n_envs", metadata.get("n_envs", 1), 1, 2**16)
        hyper = metadata["hyperparameters"]
        buffer_size = _int("hyperparameters.buffer_size", hyper["buffer_size"], 1, 2**40)
        metadata["policy"]["class"]  # a KeyError here is a malformed file
    except (KeyError, TypeError, AttributeError) as exc:
        raise ModelFileError(f"{METADATA_ENTRY}: malformed ({type(exc).__name__}: {exc})") from exc
    limits = {METADATA_ENTRY: MAX_ENTRY_BYTES, PICKLE_ENTRY: MAX_ENTRY_BYTES}
    limits.update(network_byte_limits(metadata))
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

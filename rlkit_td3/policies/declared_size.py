"""What a file's metadata declares its networks to need: the sizes of an ``MlpPolicy`` from its spaces and
``net_arch``, and from them the largest byte size each network entry of a model or policy file may have.

The model loader (`rlkit_td3.persistence.file_checks.entry_byte_limits`), ``TD3Policy.load`` and
``set_parameters(path)``
all bound the entries they read with `network_byte_limits()`, so no door reads more for a net than the net
the file declares could hold.
"""

from __future__ import annotations

import math
from typing import Any

from rlkit_td3.checks.state import ENTRY_OVERHEAD_BYTES, TENSOR_OVERHEAD_BYTES, _int
from rlkit_td3.fileio.file_reader import MAX_ENTRY_BYTES
from rlkit_td3.fileio.serialization import METADATA_ENTRY, ModelFileError
from rlkit_td3.policies.networks import parse_net_arch


def box_size(metadata: dict[str, Any], key: str) -> int:
    """The flat size of a space the metadata describes under ``key`` (a Dict: the sum of its entries)."""
    spec = metadata.get(key)
    if isinstance(spec, dict) and spec.get("type") == "Dict":  # a Dict observation space: its entries' sizes
        entries = spec.get("spaces")
        if not isinstance(entries, list) or not entries or len(entries) > 64:
            raise ModelFileError(f"{METADATA_ENTRY}: {key} is a Dict without valid entries")
        return sum(
            box_size({key: entry[1] if isinstance(entry, list) and len(entry) == 2 else None}, key) for entry in entries
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


MAX_DECLARED_CRITICS = 1024
"""The most critics a file may declare (``n_critics``)."""


def declared_n_critics(kwargs: dict[str, Any]) -> int:
    """The ``n_critics`` a file's policy kwargs declare (default 2): the one check of that number in a file.

    Raises:
        ModelFileError: it is not an int in [1, `MAX_DECLARED_CRITICS`].
    """
    n_critics = kwargs.get("n_critics", 2)
    if isinstance(n_critics, bool) or not isinstance(n_critics, int) or not 1 <= n_critics <= MAX_DECLARED_CRITICS:
        raise ModelFileError(f"n_critics must be a positive int (at most {MAX_DECLARED_CRITICS}), got {n_critics!r}")
    return n_critics


def network_sizes(metadata: dict[str, Any]) -> tuple[int, int, int]:
    """``(actor parameters, critic parameters, tensors per network pair)`` of an ``MlpPolicy`` the metadata
    declares (one actor, all critics; the targets are copies)."""
    obs_dim, act_dim = box_size(metadata, "observation_space"), box_size(metadata, "action_space")
    kwargs = metadata["policy"]["kwargs"]
    try:
        pi, qf = parse_net_arch(kwargs.get("net_arch", [400, 300]))
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"{METADATA_ENTRY}: policy.kwargs.net_arch: {exc}") from exc
    n_critics = declared_n_critics(kwargs)
    actor = _mlp_params([obs_dim, *pi, act_dim])
    critic = n_critics * _mlp_params([obs_dim + act_dim, *qf, 1])
    return actor, critic, 2 * (len(pi) + len(qf) + 2)


NETWORK_ENTRIES = ("policy.pth", "actor_optimizer.pth", "critic_optimizer.pth", "encoder_optimizer.pth")
"""The entries that hold networks and their optimizers' states: all that ``set_parameters(path)`` reads."""


def _network_limits(metadata: dict[str, Any], policy_class: Any) -> dict[str, int]:
    """`NETWORK_ENTRIES`' limits: 8 bytes per declared parameter (float64) for the networks and their targets,
    three moments' worth for each optimizer, plus slack; `MAX_ENTRY_BYTES` for a policy whose size the metadata
    cannot tell (a registered class other than ``MlpPolicy``, or a features extractor)."""
    extractor_keys = {"features_extractor_class", "features_extractor_kwargs", "critic_layer_norm", "normalize_obs"}
    extractor_keys.add("representation")  # SALE networks: checked tensor by tensor once read
    if policy_class != "MlpPolicy" or extractor_keys & set(metadata["policy"].get("kwargs") or {}):
        return dict.fromkeys(NETWORK_ENTRIES, MAX_ENTRY_BYTES)
    actor, critic, n_tensors = network_sizes(metadata)
    slack = ENTRY_OVERHEAD_BYTES + TENSOR_OVERHEAD_BYTES * 3 * n_tensors
    limits = {
        "policy.pth": 2 * 8 * (actor + critic) + slack,
        "actor_optimizer.pth": 3 * 8 * actor + slack,
        "critic_optimizer.pth": 3 * 8 * critic + slack,
        "encoder_optimizer.pth": slack,  # an MlpPolicy has no encoder (TD7's policy does)
    }
    return {name: min(limit, MAX_ENTRY_BYTES) for name, limit in limits.items()}


def network_byte_limits(metadata: dict[str, Any]) -> dict[str, int]:
    """`NETWORK_ENTRIES`' limits for a model file or a policy file (``TD3Policy.load``, ``set_parameters(path)``):
    the same bound `entry_byte_limits()` gives a model file's networks, from the net the metadata declares.

    Raises:
        ModelFileError: the metadata's spaces or policy description are malformed.
    """
    try:
        return _network_limits(metadata, metadata["policy"]["class"])
    except (KeyError, TypeError, AttributeError) as exc:
        raise ModelFileError(f"{METADATA_ENTRY}: malformed ({type(exc).__name__}: {exc})") from exc

"""Reading models saved by Stable-Baselines3 2.x TD3 and DDPG (their zip format), without unpickling.

An SB3 model file is a zip archive (format facts from SB3's ``common/save_util.py``):

``data``
    JSON of the model's attributes. Values JSON cannot hold are stored as
    ``{":type:": ..., ":serialized:": <base64 cloudpickle>, ...}``, plus, for objects with a ``__dict__``
    (and dicts), their attributes as JSON or as ``str()`` text: a Box space's ``dtype``, ``_shape``, ``low``,
    ``high``; ``policy_kwargs``'s ``net_arch`` and ``activation_fn``; a noise's ``_mu`` and ``_sigma``.
``policy.pth``, ``actor.optimizer.pth``, ``critic.optimizer.pth``, ``pytorch_variables.pth``
    ``torch.save`` state dicts, read here with ``torch.load(weights_only=True)``.
``_stable_baselines3_version``, ``system_info.txt``
    text.

`load_sb3_model()` (what ``TD3.load`` / ``DDPG.load`` call when `is_sb3_zip()` says the file is one) rebuilds
the model from the readable fields only. A ``:serialized:`` payload is never unpickled unless
``allow_pickle=True``. Two values are read from inside payloads with ``pickletools.genops``, which lists
opcodes and builds no object: ``train_freq`` (no readable copy) and the spaces' exact bounds (their printed
copies round). Whatever cannot be restored is skipped, listed in one ``UserWarning`` and in
``model.sb3_import_report``; other algorithms and policies raise `UnsupportedModelError`.
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Any

import numpy as np
import torch
from gymnasium import spaces

from rlkit_td3.fileio.model_files import FileFormat, algorithm_class, register_format
from rlkit_td3.fileio.serialization import (
    ModelFileError,
    require_bool,
)
from rlkit_td3.noise import ActionNoise, NormalActionNoise, OrnsteinUhlenbeckActionNoise
from rlkit_td3.persistence.file_checks import (
    ACTIVATIONS,
    MAX_COUNTER,
    OPTIMIZERS,
    allowed_class,
    check_allocation,
    check_custom_objects,
    check_load_overrides,
    check_optimizer_state,
    check_policy_state,
    existing_zip_path,
    print_system_info_of,
)
from rlkit_td3.persistence.sb3_zip import (
    _MAX_N_ENVS,
    _RUNTIME_STATE,
    DATA_ENTRY,
    SB3_ENTRIES,
    SUPPORTED,
    UnsupportedModelError,
    _int,
    _number,
    _pickle_scan,
    _pickled,
    _policy_kwargs_fields,
    _unpickle,
    is_sb3_zip,
    read_sb3_zip,
)
from rlkit_td3.policies.td3_policy import DEFAULT_NET_ARCH, TD3Policy, parse_net_arch
from rlkit_td3.utils import _check_device
from rlkit_td3.vec_env.training_env import as_training_env, check_action_space


# ---------------------------------------------------------------------------- readable fields
def _array_from_text(field: str, text: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An array from NumPy's ``str()`` of it (``"[-1. -1. -8.]"``), parsed in float64 and cast to ``dtype``;
    summarised output (``...``) is refused."""
    if not isinstance(text, str) or "..." in text or len(text) > 2**20:
        raise ModelFileError(
            f"{DATA_ENTRY}[{field!r}] is {str(text)[:80]!r}, not a complete printed array: load with "
            "allow_pickle=True for a file you trust"
        )
    try:
        values = [float(tok) for tok in text.replace("[", " ").replace("]", " ").split()]
        return np.asarray(values, dtype=np.float64).reshape(shape).astype(dtype)
    except ValueError as exc:
        raise ModelFileError(f"{DATA_ENTRY}[{field!r}] = {text[:80]!r} is not a printed array of {shape}") from exc


def _space(data: dict[str, Any], key: str, allow_pickle: bool) -> spaces.Box:
    """A Box space from its readable fields (``dtype``, ``_shape``, ``low``, ``high``), or unpickled."""
    entry = data.get(key)
    if not _pickled(entry):
        raise ModelFileError(f"{DATA_ENTRY} has no {key!r}; it is not an SB3 model file")
    kind = str(entry.get(":type:", ""))
    if "spaces.box.Box" not in kind:
        raise UnsupportedModelError(f"the SB3 model has {key} of type {kind[:100]!r}; supported: {SUPPORTED}")
    if allow_pickle:
        space = _unpickle(key, entry)
        if not isinstance(space, spaces.Box):
            raise ModelFileError(f"{DATA_ENTRY}[{key!r}] unpickles to {type(space).__name__}, not a Box")
        return space
    shape_field = entry.get("_shape")
    if not isinstance(shape_field, list) or len(shape_field) > 8:
        raise ModelFileError(f"{DATA_ENTRY}[{key!r}]['_shape'] is {str(shape_field)[:80]}, not a list of dims")
    shape = tuple(_int(f"{key}._shape", d, 1, 2**31) for d in shape_field)
    try:
        dtype = np.dtype(str(entry.get("dtype")))
    except TypeError as exc:
        raise ModelFileError(f"{DATA_ENTRY}[{key!r}]['dtype'] = {str(entry.get('dtype'))[:40]!r}") from exc
    if dtype.kind not in "fiu":
        raise ModelFileError(f"{DATA_ENTRY}[{key!r}] has dtype {dtype}, not a numeric one")
    low, high = _box_bounds(key, entry, shape, dtype)
    try:
        return spaces.Box(low=low, high=high, shape=shape, dtype=dtype)
    except (ValueError, TypeError) as exc:
        raise ModelFileError(f"{DATA_ENTRY}[{key!r}] describes no valid Box ({exc})") from exc


def _box_bounds(key: str, entry: dict[str, Any], shape: tuple[int, ...], dtype: np.dtype) -> tuple[np.ndarray, ...]:
    """A Box's ``low`` and ``high``, exact.

    The printed fields round (NumPy prints at most 8 decimals: ``0.00012345679`` shows as ``0.00012346``), so
    the bounds are taken from the raw array bytes in the space's pickle (the first two byte strings of the
    array's size, listed by `_pickle_scan()`: nothing is unpickled) when they agree with the printed values
    to print precision; otherwise, or when the pickle holds no such bytes, from the printed values.
    """
    printed = []
    for name in ("low", "high"):
        try:
            printed.append(_array_from_text(f"{key}.{name}", entry.get(name), shape, np.dtype(np.float64)))
        except ModelFileError:
            printed.append(None)
    size = math.prod(shape) * dtype.itemsize
    raw = [blob for blob in _pickle_scan(entry)[2] if len(blob) == size][:2]
    if len(raw) == 2:
        exact = [np.frombuffer(blob, dtype=dtype).reshape(shape).copy() for blob in raw]
        with np.errstate(invalid="ignore", over="ignore"):
            agree = all(
                text is None or bool(np.all(np.isclose(text, bound.astype(np.float64), rtol=1e-7, atol=1e-8)))
                for text, bound in zip(printed, exact)
            )
        if agree and bool(np.all(exact[0] <= exact[1])):
            return exact[0], exact[1]
    for name, text in zip(("low", "high"), printed):
        if text is None:  # raise the printed field's own error
            _array_from_text(f"{key}.{name}", entry.get(name), shape, dtype)
    return printed[0].astype(dtype), printed[1].astype(dtype)


_CLASS_TEXT = re.compile(r"<class '(torch\.(?:nn|optim))\.[\w.]+\.(\w+)'>")


def _torch_class_from_text(text: Any, allowed: frozenset[str], what: str) -> type | None:
    """``torch.nn.Tanh`` from ``"<class 'torch.nn.modules.activation.Tanh'>"``, if in ``allowed``; else None."""
    match = _CLASS_TEXT.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        return None
    name = f"{match.group(1)}.{match.group(2)}"
    return allowed_class(name, allowed, what) if name in allowed else None


def _train_freq(value: Any, skipped: dict[str, str]) -> tuple[int, str] | None:
    """SB3's ``TrainFreq(frequency, unit)`` from its pickle's opcodes, or None (reported)."""
    if isinstance(value, list) and len(value) == 2 and value[1] in ("step", "episode"):  # a plain pair
        return _int("train_freq", value[0], 1, MAX_COUNTER), value[1]
    if _pickled(value):
        strings, ints, _ = _pickle_scan(value)
        units = [s for s in strings if s in ("step", "episode")]
        if "TrainFreq" in strings and len(units) == 1 and len(ints) == 1 and ints[0] >= 1:
            return ints[0], units[0]
    skipped["train_freq"] = "not readable without unpickling; the default (1, 'step') is used"
    return None


def _noise_from_fields(entry: dict[str, Any], act_dim: int) -> ActionNoise | None:
    """SB3's ``NormalActionNoise`` / ``OrnsteinUhlenbeckActionNoise`` rebuilt from their readable attributes."""
    kind = str(entry.get(":type:", ""))
    shape = (act_dim,)
    if kind == "<class 'stable_baselines3.common.noise.NormalActionNoise'>":
        mean = _array_from_text("action_noise._mu", entry.get("_mu"), shape, np.dtype(np.float64))
        sigma = _array_from_text("action_noise._sigma", entry.get("_sigma"), shape, np.dtype(np.float64))
        return NormalActionNoise(mean, sigma)
    if kind == "<class 'stable_baselines3.common.noise.OrnsteinUhlenbeckActionNoise'>":
        mean = _array_from_text("action_noise._mu", entry.get("_mu"), shape, np.dtype(np.float64))
        sigma = _array_from_text("action_noise._sigma", entry.get("_sigma"), shape, np.dtype(np.float64))
        initial = entry.get("initial_noise")
        if initial is not None:
            initial = _array_from_text("action_noise.initial_noise", initial, shape, np.dtype(np.float64))
        theta = _number("action_noise._theta", entry.get("_theta"))
        dt = _number("action_noise._dt", entry.get("_dt"))
        return OrnsteinUhlenbeckActionNoise(mean, sigma, theta=theta, dt=dt, initial_noise=initial)
    return None


def _noise_from_object(noise: Any, act_dim: int) -> ActionNoise | None:
    """An SB3 noise object (unpickled) as ours, by its attributes."""
    name = type(noise).__name__
    if name == "NormalActionNoise":
        return NormalActionNoise(np.asarray(noise._mu, dtype=np.float64), np.asarray(noise._sigma, dtype=np.float64))
    if name == "OrnsteinUhlenbeckActionNoise":
        return OrnsteinUhlenbeckActionNoise(
            np.asarray(noise._mu, dtype=np.float64),
            np.asarray(noise._sigma, dtype=np.float64),
            theta=float(noise._theta),
            dt=float(noise._dt),
            initial_noise=noise.initial_noise,
        )
    return None


# ---------------------------------------------------------------------------- tensors
def _sb3_policy_shapes(obs_dim: int, act_dim: int, pi: list[int], qf: list[int], n: int) -> dict[str, tuple]:
    """Name and shape of every tensor in SB3's TD3 policy ``state_dict`` (``nn.Linear`` every other module)."""
    shapes: dict[str, tuple] = {}
    for prefix in ("actor", "actor_target"):
        sizes = [obs_dim, *pi, act_dim]
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            shapes[f"{prefix}.mu.{2 * i}.weight"] = (fan_out, fan_in)
            shapes[f"{prefix}.mu.{2 * i}.bias"] = (fan_out,)
    for prefix in ("critic", "critic_target"):
        sizes = [obs_dim + act_dim, *qf, 1]
        for k in range(n):
            for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
                shapes[f"{prefix}.qf{k}.{2 * i}.weight"] = (fan_out, fan_in)
                shapes[f"{prefix}.qf{k}.{2 * i}.bias"] = (fan_out,)
    return shapes


def _policy_state(state: Any, expected: dict[str, tuple], n_critics: int, n_layers: int) -> dict[str, torch.Tensor]:
    """SB3's policy state dict mapped onto `TD3Policy`'s: actor tensors as they are, each critic layer's
    ``nn.Linear`` weights transposed and stacked along a leading critic dimension."""
    if not isinstance(state, dict) or not all(isinstance(t, torch.Tensor) for t in state.values()):
        raise ModelFileError("entry 'policy.pth' is not a state dict of tensors")
    if set(state) != set(expected):
        missing, extra = sorted(set(expected) - set(state))[:6], sorted(set(state) - set(expected))[:6]
        raise ModelFileError(
            f"entry 'policy.pth' does not hold the networks 'data' declares: missing {missing}, extra {extra}"
        )
    for name, shape in expected.items():
        if tuple(state[name].shape) != shape:
            raise ModelFileError(
                f"entry 'policy.pth'[{name!r}] has shape {tuple(state[name].shape)}, the declared networks need {shape}"
            )
    ours = {name: tensor for name, tensor in state.items() if name.startswith("actor")}
    for prefix in ("critic", "critic_target"):
        for i in range(n_layers):
            layer = [f"{prefix}.qf{k}.{2 * i}" for k in range(n_critics)]
            ours[f"{prefix}.weights.{i}"] = torch.stack([state[f"{name}.weight"].T for name in layer])
            ours[f"{prefix}.biases.{i}"] = torch.stack([state[f"{name}.bias"].unsqueeze(0) for name in layer])
    return ours


def _optimizer_state(
    entry: str, state: Any, optimizer: torch.optim.Optimizer, critic_layout: tuple[int, int] | None
) -> dict[str, Any] | str:
    """SB3's optimizer state mapped onto ``optimizer`` (ours, freshly built), or why it cannot be.

    ``critic_layout`` is ``(n_critics, n_layers)`` for the critic optimizer: SB3 orders its parameters critic by
    critic (weight, bias per layer), ours layer by layer (all weights, then all biases), stacked. The result has
    passed `rlkit_td3.persistence.file_checks.check_optimizer_state` (shapes, dtypes, finite values, hyperparameters).
    """
    if not isinstance(state, dict) or not isinstance(state.get("param_groups"), list):
        return "not an optimizer state dict"
    groups, per_param = state["param_groups"], state.get("state")
    if len(groups) != 1 or not isinstance(groups[0], dict):
        return f"{len(groups)} parameter groups, expected 1"
    if not isinstance(per_param, dict) or not all(isinstance(v, dict) for v in per_param.values()):
        return "no per-parameter state"
    built = optimizer.state_dict()["param_groups"][0]
    group = dict(built, lr=groups[0].get("lr"))
    n_ours = len(built["params"])
    n_critics, n_layers = critic_layout or (1, n_ours // 2)
    if per_param and set(per_param) != set(range(n_critics * n_ours)):
        return f"state for parameter ids {sorted(map(str, per_param))[:6]}, SB3's layout has {n_critics * n_ours}"
    mapped: dict[int, dict[str, Any]] = {}
    try:
        for ours_id in range(n_ours if per_param else 0):
            if critic_layout is None:
                mapped[ours_id] = per_param[ours_id]
                continue
            is_bias, layer = divmod(ours_id, n_layers)
            parts = [per_param[k * 2 * n_layers + 2 * layer + is_bias] for k in range(n_critics)]
            if any(set(p) != set(parts[0]) for p in parts):
                return f"parameter {ours_id} has not the same kinds of state for every critic"
            merged: dict[str, Any] = {}
            for key, first in parts[0].items():
                values = [p[key] for p in parts]
                if not all(isinstance(v, torch.Tensor) and v.shape == first.shape for v in values):
                    return f"state {key!r} is not a tensor of one shape for every critic"
                if first.dim() == 0:
                    if not all(bool(torch.equal(v, first)) for v in values):
                        return f"state {key!r} differs between critics"
                    merged[key] = first
                elif is_bias:
                    merged[key] = torch.stack([v.unsqueeze(0) for v in values])
                else:
                    merged[key] = torch.stack([v.transpose(0, 1) for v in values])
            mapped[ours_id] = merged
    except (RuntimeError, IndexError, TypeError, AttributeError) as exc:
        return f"its tensors do not fit the networks ({type(exc).__name__}: {str(exc)[:100]})"
    try:
        return check_optimizer_state(entry, {"state": mapped, "param_groups": [group]}, optimizer)
    except ModelFileError as exc:
        return str(exc)


# ---------------------------------------------------------------------------- the model
def load_sb3_model(
    cls: type,
    path: Any,
    env: Any = None,
    device: torch.device | str = "auto",
    custom_objects: dict[str, Any] | None = None,
    print_system_info: bool = False,
    force_reset: bool = True,
    allow_pickle: bool = False,
    **kwargs: Any,
) -> Any:
    """Build a ``cls`` (`rlkit_td3.TD3`, `rlkit_td3.DDPG` or a subclass) from a model file SB3 2.x TD3/DDPG wrote.

    Called by ``cls.load()`` for such files, with its arguments and the same rules: bools must be real bools,
    an unknown keyword is a ``TypeError``, ``custom_objects`` replace stored fields, keyword arguments override
    hyperparameters. Weights are copied exactly, so ``predict`` gives SB3's actions. Optimizer states are
    mapped when their layout is SB3's standard one, else skipped.

    Returns:
        the model, with ``sb3_import_report``: the fields skipped, each with why (also warned).

    Raises:
        ModelFileError: the file is unreadable or inconsistent (naming the entry or field).
        UnsupportedModelError: (a ``ValueError``) the file holds another SB3 algorithm or policy, naming it and
            what is supported.
        ValueError: a TD3 model loaded with ``DDPG.load``; ``env``'s spaces differ from the model's.
        TypeError: a bad argument type or an unknown keyword.
    """
    OffPolicyAlgorithm = algorithm_class("OffPolicyAlgorithm")  # noqa: N806  (a class, by its registered name)
    require_bool("allow_pickle", allow_pickle)
    require_bool("print_system_info", print_system_info)
    require_bool("force_reset", force_reset)
    path = existing_zip_path(path)
    custom = check_custom_objects(cls, custom_objects)
    check_load_overrides(cls, kwargs)
    device = _check_device(device)
    data, tensors, system = read_sb3_zip(path)
    version = system.get("stable_baselines3", "")
    if print_system_info:
        print_system_info_of(system)
    try:
        observation_space = _space(data, "observation_space", allow_pickle)
        action_space = check_action_space(_space(data, "action_space", allow_pickle))
    except ModelFileError as exc:
        raise ModelFileError(f"{path}: {exc}") from exc
    except UnsupportedModelError as exc:
        raise UnsupportedModelError(f"{path}: {exc}") from None
    except (TypeError, ValueError) as exc:  # check_action_space: e.g. unbounded actions
        raise ModelFileError(f"{path}: {exc}") from exc
    vec = None if env is None else as_training_env(env)
    skipped: dict[str, str] = {}
    try:
        ctor, n_envs, counters = _constructor_kwargs(data, tensors, action_space, allow_pickle, custom, skipped)
    except ModelFileError as exc:
        raise ModelFileError(f"{path}: {exc}") from exc
    except (TypeError, ValueError, AttributeError, KeyError) as exc:  # e.g. an unpickled noise of another shape
        raise ModelFileError(f"{path}: malformed SB3 model ({type(exc).__name__}: {exc})") from exc
    if issubclass(cls, algorithm_class("DDPG")):
        # SB3's DDPG stores target_policy_noise=0.1 with target_noise_clip=0: the clipped noise is zero
        found = {key: ctor[key] for key in ("policy_delay", "target_policy_noise", "target_noise_clip")}
        if ctor["policy_delay"] != 1 or 0.0 not in (ctor["target_policy_noise"], ctor["target_noise_clip"]):
            raise ValueError(
                f"{path} holds an SB3 TD3 model ({found}); load it with TD3.load (DDPG has policy_delay=1 and no "
                "target policy smoothing)"
            )
        ctor.update(policy_delay=1, target_policy_noise=0.0, target_noise_clip=0.0)

    model = cls.__new__(cls)
    replaced = {key for key in custom if key in ctor or key in ctor["policy_kwargs"]}
    file_only = {k: v for k, v in ctor.items() if k not in replaced}
    try:
        OffPolicyAlgorithm.__init__(model, env=None, device=device, _init_setup_model=False, **file_only)
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"{path}: the SB3 hyperparameters are not valid here ({exc})") from exc
    for key, value in custom.items():
        if key in ("activation_fn", "optimizer_class", "optimizer_kwargs"):
            ctor["policy_kwargs"][key] = value
        else:
            ctor["policy" if key == "policy_class" else key] = value
        skipped.pop(key, None)
    OffPolicyAlgorithm.__init__(model, env=None, device=device, _init_setup_model=False, **{**ctor, **kwargs})

    model.observation_space, model.action_space = observation_space, action_space
    if vec is not None:
        model._check_env_matches(vec)
    obs_dim, act_dim = int(np.prod(observation_space.shape)), int(np.prod(action_space.shape))
    per_row = 4 * (obs_dim * (1 if model.optimize_memory_usage else 2) + act_dim + 1) + 2
    check_allocation(
        f"a replay buffer of {model.buffer_size} transitions (pass a smaller buffer_size= to load())",
        model.buffer_size * per_row,
    )
    try:
        # the stored tensors must be exactly the declared networks before any network is built (a forged
        # net_arch cannot make loading allocate more than the file holds)
        pi, qf = parse_net_arch(model.policy_kwargs.get("net_arch", DEFAULT_NET_ARCH))
        n_critics = _int("policy_kwargs.n_critics", model.policy_kwargs.get("n_critics", 2), 1, 1024)
        expected = _sb3_policy_shapes(obs_dim, act_dim, pi, qf, n_critics)
        state = _policy_state(tensors.get("policy.pth"), expected, n_critics, len(qf) + 1)
        model.n_envs = n_envs
        if vec is not None:
            model._set_env_and_spaces(vec)
        model._setup_model()
        _fill_networks(model, state, tensors, skipped)
    except ModelFileError as exc:
        raise ModelFileError(f"{path}: {exc}") from exc
    except (TypeError, ValueError) as exc:  # the networks data declares are malformed
        raise ModelFileError(f"{path}: malformed SB3 model ({type(exc).__name__}: {exc})") from exc
    model.num_timesteps, model._n_updates, model._episode_num = counters
    model._fit_to_env(strict=False)
    model.sb3_import_report = dict(skipped)
    if skipped:
        listed = "; ".join(f"{field}: {why}" for field, why in sorted(skipped.items()))
        warnings.warn(
            f"{path} (written by Stable-Baselines3 {version or '?'}): fields not imported: {listed}",
            UserWarning,
            stacklevel=3,
        )
    return model


def _constructor_kwargs(
    data: dict[str, Any],
    tensors: dict[str, Any],
    action_space: spaces.Box,
    allow_pickle: bool,
    custom: dict[str, Any],
    skipped: dict[str, str],
) -> tuple[dict[str, Any], int, tuple[int, int, int]]:
    """``OffPolicyAlgorithm.__init__`` keyword arguments, ``n_envs`` and the counters, from SB3's ``data``."""
    act_dim = int(np.prod(action_space.shape))
    ctor: dict[str, Any] = {"policy": "MlpPolicy", "replay_buffer_class": None, "replay_buffer_kwargs": None}
    for key in ("buffer_size", "learning_starts", "batch_size", "gradient_steps", "policy_delay", "verbose"):
        if key in data:
            low = -1 if key == "gradient_steps" else 0
            ctor[key] = _int(key, data[key], low, MAX_COUNTER)
    for key in ("tau", "gamma", "target_policy_noise", "target_noise_clip"):
        if key in data:
            ctor[key] = _number(key, data[key])
    for key in ("policy_delay", "target_policy_noise", "target_noise_clip"):
        ctor.setdefault(key, {"policy_delay": 2, "target_policy_noise": 0.2, "target_noise_clip": 0.5}[key])
    if "n_steps" in data:  # SB3 >= 2.7: n-step returns (its NStepReplayBuffer becomes ours)
        ctor["n_steps"] = _int("n_steps", data["n_steps"], 1, 2**16)
    if isinstance(data.get("optimize_memory_usage"), bool):
        ctor["optimize_memory_usage"] = data["optimize_memory_usage"]
    seed = data.get("seed")
    ctor["seed"] = None if seed is None else _int("seed", seed, 0, 2**63)
    if data.get("tensorboard_log") is not None:
        skipped["tensorboard_log"] = "a log folder is not taken from a file; pass tensorboard_log= to load()"

    train_freq = data.get("train_freq")
    if "train_freq" not in custom:
        parsed = _train_freq(train_freq, skipped) if train_freq is not None else None
        if parsed is not None:
            ctor["train_freq"] = parsed

    # learning rate: a float when constant; a schedule is pickled
    learning_rate = data.get("learning_rate")
    if isinstance(learning_rate, (int, float)) and not isinstance(learning_rate, bool):
        ctor["learning_rate"] = _number("learning_rate", learning_rate)
    elif _pickled(learning_rate) and allow_pickle:
        ctor["learning_rate"] = _unpickle("learning_rate", learning_rate)
    elif "learning_rate" not in custom:
        current = _current_lr(tensors.get("actor.optimizer.pth"))
        why = "a schedule, stored through pickle"
        if current is not None:
            ctor["learning_rate"] = current
            why += f"; the constant {current!r} (the optimizer's rate when saved) is used"
        else:
            why += "; the default 1e-3 is used (pass learning_rate= to load())"
        skipped["learning_rate"] = why

    # exploration noise
    noise = data.get("action_noise")
    ctor["action_noise"] = None
    if _pickled(noise) and "action_noise" not in custom:
        converted = None
        if allow_pickle:
            converted = _noise_from_object(_unpickle("action_noise", noise), act_dim)
        else:
            try:
                converted = _noise_from_fields(noise, act_dim)
            except (ModelFileError, ValueError, TypeError):
                converted = None
        if converted is None:
            skipped["action_noise"] = (
                f"{str(noise.get(':type:'))[:100]} is not readable without unpickling: no exploration noise "
                "(pass action_noise= to load())"
            )
        ctor["action_noise"] = converted

    # replay buffer
    buffer_class = data.get("replay_buffer_class")
    if _pickled(buffer_class):
        fields = (buffer_class.get("__module__"), str(buffer_class.get("__init__", "")).split(" at ")[0])
        if fields != ("stable_baselines3.common.buffers", "<function ReplayBuffer.__init__"):
            skipped["replay_buffer_class"] = f"{fields[0]!s:.100} is not SB3's ReplayBuffer; ours is used"
    buffer_kwargs = data.get("replay_buffer_kwargs")
    if buffer_kwargs:
        skipped["replay_buffer_kwargs"] = f"{str(buffer_kwargs)[:100]} (SB3's buffer options) are not carried"

    ctor["policy_kwargs"] = _policy_kwargs(data.get("policy_kwargs"), allow_pickle, custom, skipped)
    for key, value in data.items():
        if _pickled(value) and key not in _RUNTIME_STATE and key not in ctor and key not in skipped:
            if key not in ("observation_space", "action_space", "train_freq", "replay_buffer_class", "policy_kwargs"):
                skipped[key] = "stored through pickle, not used"

    n_envs = _int("n_envs", data.get("n_envs", 1), 1, _MAX_N_ENVS)
    counters = tuple(
        _int(key, data.get(key, 0), 0, MAX_COUNTER) for key in ("num_timesteps", "_n_updates", "_episode_num")
    )
    return ctor, n_envs, counters  # type: ignore[return-value]


def _current_lr(state: Any) -> float | None:
    try:
        lr = state["param_groups"][0]["lr"]
    except (KeyError, IndexError, TypeError):
        return None
    return float(lr) if isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0 else None


_POLICY_KWARGS = {"net_arch", "n_critics", "activation_fn", "optimizer_class", "optimizer_kwargs"}
_IGNORED_POLICY_KWARGS = {"features_extractor_class", "normalize_images", "share_features_extractor"}


def _policy_kwargs(value: Any, allow_pickle: bool, custom: dict[str, Any], skipped: dict[str, str]) -> dict[str, Any]:
    """Our ``policy_kwargs`` from SB3's: net_arch and n_critics as stored, classes from their printed names."""
    fields = _policy_kwargs_fields(value)
    unpickled = _unpickle("policy_kwargs", value) if allow_pickle and _pickled(value) else None
    out: dict[str, Any] = {}
    for key, item in fields.items():
        where = f"policy_kwargs.{key}"
        if key in _IGNORED_POLICY_KWARGS:
            continue
        if key not in _POLICY_KWARGS:
            skipped[where] = f"{str(item)[:80]} has no equivalent here"
        elif key in ("activation_fn", "optimizer_class") and key not in custom:
            allowed = ACTIVATIONS if key == "activation_fn" else OPTIMIZERS
            found = _torch_class_from_text(item, allowed, key)
            if found is None and isinstance(unpickled, dict):
                found = unpickled.get(key)
            if found is None:
                default = "ReLU" if key == "activation_fn" else "Adam"
                skipped[where] = f"{str(item)[:80]} is not a torch class this library reads; {default} is used"
            else:
                out[key] = found
        elif key == "optimizer_kwargs":
            if isinstance(item, dict):
                out[key] = item
            elif item is not None:
                skipped[where] = f"{str(item)[:80]} is not readable without unpickling"
        elif key not in ("activation_fn", "optimizer_class"):
            out[key] = item
    return out


def _fill_networks(model: Any, state: dict[str, Any], tensors: dict[str, Any], skipped: dict[str, str]) -> None:
    """Copy the mapped weights into ``model.policy`` (checked) and SB3's optimizer states where they map."""
    policy: TD3Policy = model.policy
    check_policy_state("policy.pth", state, policy)
    policy.load_state_dict(state)
    _, qf = parse_net_arch(policy.net_arch)
    layouts = {"actor": None, "critic": (policy.n_critics, len(qf) + 1)}
    for name, layout in layouts.items():
        entry = f"{name}.optimizer.pth"
        optimizer = getattr(policy, f"{name}_optimizer")
        if entry not in tensors:
            skipped[entry] = "missing from the file; the optimizer starts afresh"
            continue
        mapped = _optimizer_state(entry, tensors[entry], optimizer, layout)
        if isinstance(mapped, str):
            skipped[entry] = f"{mapped[:200]}; the optimizer starts afresh"
        else:
            optimizer.load_state_dict(mapped)
    variables = tensors.get("pytorch_variables.pth")
    if variables is not None and not (isinstance(variables, dict) and not variables):
        skipped["pytorch_variables.pth"] = "TD3 and DDPG have no such variables here"


__all__ = ["SB3_ENTRIES", "UnsupportedModelError", "is_sb3_zip", "load_sb3_model", "read_sb3_zip"]


register_format(FileFormat("stable-baselines3", load=load_sb3_model, recognises=is_sb3_zip))

"""Export a trained actor to TorchScript or ONNX, for inference without this library (or without Python).

The exported graph maps a batch of observations to actions **in the env's units**: optional observation
normalisation, the actor MLP, then the ``[-1, 1] → [low, high]`` unscaling per action dimension. Feed it
what the env returns; what comes out goes to ``env.step``.

Observation normalisation (VecNormalize's formula, ``clip((obs - mean) / sqrt(var + epsilon), ±clip_obs)``)
is part of the graph when statistics are given: explicitly (``obs_mean``, ``obs_var``, ``clip_obs``,
``epsilon``) or as an object with an ``obs_rms`` attribute holding ``mean`` and ``var`` (a VecNormalize;
its ``clip_obs`` and ``epsilon`` attributes are used when present). The statistics are frozen into the
file: export again after more training.

* TorchScript: ``torch.jit.load(path)`` in any PyTorch process, or ``torch::jit::load`` from C++.
* ONNX: torch's default (``torch.export``-based) ONNX exporter, opset 18, with a dynamic batch dimension;
  input ``"observation"``, output ``"action"``. Needs the ``export`` extra (``onnx``, ``onnxscript``,
  and ``onnxruntime`` to run it).
"""

import copy
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from rlkit_td3.fileio.serialization import atomic_path

FORMATS = ("torchscript", "onnx")
"""Values accepted for ``format``."""

ONNX_OPSET = 18
"""ONNX opset of exported files (the lowest the torch.export-based exporter implements natively)."""


class ExportableActor(nn.Module):
    """Self-contained actor module: observations ``(batch, *obs_shape)`` → env-unit actions
    ``(batch, *action_shape)``.

    It holds a CPU copy of the actor (training the original later changes nothing here) and, as buffers, the
    action bounds and the optional normalisation statistics. It is scriptable and traceable.

    Args:
        actor: maps flattened observations to actions in [-1, 1] (``policy.actor``).
        action_low: the action space's lower bounds.
        action_high: the action space's upper bounds.
        obs_shape: shape of one observation.
        obs_mean: running mean of the observations, or None for no normalisation.
        obs_var: running variance of the observations (needed with ``obs_mean``).
        clip_obs: normalised observations are clipped to ``[-clip_obs, clip_obs]``.
        epsilon: added to the variance before its square root.
    """

    __constants__ = ["normalize"]  # a compile-time constant for TorchScript: the unused branch is dropped
    action_shape: list[int]  # declared here for TorchScript (this module has no `from __future__ import annotations`)

    def __init__(
        self,
        actor: nn.Module,
        action_low: np.ndarray,
        action_high: np.ndarray,
        obs_shape: tuple[int, ...],
        obs_mean: np.ndarray | None = None,
        obs_var: np.ndarray | None = None,
        clip_obs: float = 10.0,
        epsilon: float = 1e-8,
    ):
        super().__init__()
        self.actor = copy.deepcopy(actor).cpu().eval().requires_grad_(False)
        low = np.asarray(action_low, dtype=np.float32)
        high = np.asarray(action_high, dtype=np.float32)
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            raise ValueError(f"action bounds must be finite to unscale actions, got low={low}, high={high}")
        self.action_shape = [int(d) for d in low.shape]
        self.register_buffer("action_low", torch.as_tensor(low.ravel()))
        self.register_buffer("action_high", torch.as_tensor(high.ravel()))
        self.normalize = obs_mean is not None or obs_var is not None
        mean, std = np.zeros(obs_shape, np.float32), np.ones(obs_shape, np.float32)
        if self.normalize:
            mean, std = _normalization_arrays(obs_shape, obs_mean, obs_var, clip_obs, epsilon)
        self.register_buffer("obs_mean", torch.as_tensor(mean))
        self.register_buffer("obs_std", torch.as_tensor(std))
        self.clip_obs = float(clip_obs)
        self.eval()

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        """Env-unit actions for a batch of observations."""
        obs = observation.to(torch.float32)
        if self.normalize:
            obs = torch.clamp((obs - self.obs_mean) / self.obs_std, -self.clip_obs, self.clip_obs)
        scaled = self.actor(obs)
        action = self.action_low + 0.5 * (scaled + 1.0) * (self.action_high - self.action_low)
        return action.reshape([observation.shape[0]] + self.action_shape)


def _normalization_arrays(
    obs_shape: tuple[int, ...], obs_mean: Any, obs_var: Any, clip_obs: Any, epsilon: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Checked ``(mean, sqrt(var + epsilon))`` as float32 arrays of the observation's shape."""
    if obs_mean is None or obs_var is None:
        raise ValueError("obs_mean and obs_var go together: pass both, or neither for no normalisation")
    arrays = {}
    for name, value in (("obs_mean", obs_mean), ("obs_var", obs_var)):
        array = np.asarray(value, dtype=np.float64)
        if array.shape != tuple(obs_shape):
            raise ValueError(f"{name} must have the observation's shape {tuple(obs_shape)}, got {array.shape}")
        if not np.all(np.isfinite(array)):
            raise ValueError(f"{name} must be finite, got {array}")
        arrays[name] = array
    if np.any(arrays["obs_var"] < 0):
        raise ValueError(f"obs_var must be >= 0, got {arrays['obs_var']}")
    numbers = (int, float, np.integer, np.floating)  # NumPy scalars too, as everywhere
    if isinstance(clip_obs, (bool, np.bool_)) or not isinstance(clip_obs, numbers) or not clip_obs > 0:
        raise ValueError(f"clip_obs must be a positive number, got {clip_obs!r}")
    if isinstance(epsilon, (bool, np.bool_)) or not isinstance(epsilon, numbers) or not epsilon >= 0:
        raise ValueError(f"epsilon must be a number >= 0, got {epsilon!r}")
    std = np.sqrt(arrays["obs_var"] + float(epsilon))
    if np.any(std == 0):
        raise ValueError("obs_var + epsilon must be > 0 in every dimension (give epsilon > 0)")
    return arrays["obs_mean"].astype(np.float32), std.astype(np.float32)


def _is_policy(obj: Any) -> bool:
    """Whether ``obj`` is a policy of this library's shape (a `TD3Policy`; not imported here, which keeps the
    export below the policies)."""
    return isinstance(obj, nn.Module) and all(
        hasattr(obj, name) for name in ("actor", "observation_space", "action_space", "obs_normalizer")
    )


def exportable_actor(
    model_or_policy: Any,
    obs_mean: np.ndarray | None = None,
    obs_var: np.ndarray | None = None,
    clip_obs: float | None = None,
    epsilon: float | None = None,
    normalizer: Any = None,
) -> ExportableActor:
    """The `ExportableActor` of a model (``TD3``/``DDPG``) or a `TD3Policy`.

    Args:
        model_or_policy: a model (its ``.policy`` is used) or a policy.
        obs_mean: observation mean for normalisation (with ``obs_var``).
        obs_var: observation variance for normalisation (with ``obs_mean``).
        clip_obs: clip of the normalised observations (default: the normaliser's, else 10.0).
        epsilon: added to the variance (default: the normaliser's, else 1e-8).
        normalizer: an object with ``obs_rms.mean`` / ``obs_rms.var`` (e.g. a VecNormalize), instead of
            ``obs_mean`` / ``obs_var``. A normaliser with ``norm_obs`` false adds no normalisation.

    Raises:
        TypeError: ``model_or_policy`` is neither a model nor a policy, or ``normalizer`` has no ``obs_rms``.
        ValueError: statistics of the wrong shape, non-finite, negative variance, both ``normalizer`` and
            explicit statistics, or bad ``clip_obs`` / ``epsilon``.
    """
    policy = getattr(model_or_policy, "policy", model_or_policy)
    if not _is_policy(policy):
        raise TypeError(f"model_or_policy must be a TD3/DDPG model or a TD3Policy, got {type(model_or_policy)!r}")
    if policy.observation_space.shape is None:
        raise ValueError(
            "export supports policies of Box (array or image) observations only; this one takes "
            f"{type(policy.observation_space).__name__} observations ({policy.observation_space}): a Dict "
            "(MultiInputPolicy) actor cannot be exported as one array-in, array-out file"
        )
    if normalizer is not None:
        if obs_mean is not None or obs_var is not None:
            raise ValueError("pass either normalizer or obs_mean/obs_var, not both")
        rms = getattr(normalizer, "obs_rms", None)
        if rms is None or not hasattr(rms, "mean") or not hasattr(rms, "var"):
            raise TypeError(f"normalizer must have an obs_rms with mean and var (a VecNormalize), got {normalizer!r}")
        if getattr(normalizer, "norm_obs", True):
            obs_mean, obs_var = rms.mean, rms.var
        clip_obs = getattr(normalizer, "clip_obs", 10.0) if clip_obs is None else clip_obs
        epsilon = getattr(normalizer, "epsilon", 1e-8) if epsilon is None else epsilon
    if normalizer is None and obs_mean is None and obs_var is None and policy.obs_normalizer is not None:
        own = policy.obs_normalizer  # the policy's own statistics (normalize_obs=True)
        obs_mean, obs_var = own.mean.cpu().numpy(), own.var.cpu().numpy()
        clip_obs = own.clip_obs if clip_obs is None else clip_obs
        epsilon = own.epsilon if epsilon is None else epsilon
    space = policy.action_space
    # the network predict(deterministic=True) acts with (TD7: the checkpoint), standalone
    actor = policy.inference_actor() if hasattr(policy, "inference_actor") else policy.actor
    return ExportableActor(
        actor,
        space.low,
        space.high,
        tuple(policy.observation_space.shape),
        obs_mean=obs_mean,
        obs_var=obs_var,
        clip_obs=10.0 if clip_obs is None else clip_obs,
        epsilon=1e-8 if epsilon is None else epsilon,
    )


def export(
    model_or_policy: Any,
    path: str | os.PathLike[str],
    format: str = "torchscript",
    *,
    obs_mean: np.ndarray | None = None,
    obs_var: np.ndarray | None = None,
    clip_obs: float | None = None,
    epsilon: float | None = None,
    normalizer: Any = None,
) -> Path:
    """Write the actor of a model or policy as a standalone TorchScript or ONNX file (atomically).

    The file maps a float32 batch of observations ``(batch, *obs_shape)`` to env-unit actions
    ``(batch, *action_shape)``; on the same observations it agrees with ``model.predict(obs,
    deterministic=True)`` to float32 rounding. See `exportable_actor()` for the normalisation arguments.

    Args:
        model_or_policy: a ``TD3``/``DDPG`` model or a ``TD3Policy``.
        path: the file to write (``.pt`` is usual for TorchScript, ``.onnx`` for ONNX).
        format: ``"torchscript"`` or ``"onnx"``.
        obs_mean: see `exportable_actor()`.
        obs_var: see `exportable_actor()`.
        clip_obs: see `exportable_actor()`.
        epsilon: see `exportable_actor()`.
        normalizer: see `exportable_actor()`.

    Returns:
        ``path`` as a ``Path``.

    Raises:
        ValueError: an unknown ``format`` (and what `exportable_actor()` raises).
        ImportError: ``format="onnx"`` without the ``onnx`` / ``onnxscript`` packages (the ``export`` extra).
    """
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {format!r}")
    module = exportable_actor(model_or_policy, obs_mean, obs_var, clip_obs, epsilon, normalizer)
    path = Path(path)
    example = torch.zeros(2, *module.obs_mean.shape)  # batch 2: torch.export specialises a batch of 1
    if format == "torchscript":
        scripted = torch.jit.script(module)
        with atomic_path(path, suffix=".pt") as tmp:
            torch.jit.save(scripted, str(tmp))
    else:
        _export_onnx(module, example, path)
    return path


def _export_onnx(module: ExportableActor, example: torch.Tensor, path: Path) -> None:
    for package in ("onnx", "onnxscript"):
        try:
            __import__(package)
        except ImportError as exc:
            raise ImportError(
                f"format='onnx' needs the {package!r} package: install the 'export' extra "
                "(pip install -e '.[export]' in the rlkit_td3 clone)"
            ) from exc
    batch = torch.export.Dim("batch", min=1)
    with atomic_path(path, suffix=".onnx") as tmp:
        torch.onnx.export(
            module,
            (example,),
            str(tmp),
            input_names=["observation"],
            output_names=["action"],
            opset_version=ONNX_OPSET,
            dynamo=True,
            dynamic_shapes=({0: batch},),
            external_data=False,
            verbose=False,
        )

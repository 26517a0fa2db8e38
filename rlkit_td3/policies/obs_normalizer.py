"""Observation normalisation inside the policy: running statistics that travel with the model file.

``policy_kwargs=dict(normalize_obs=True)`` gives the policy an `ObsNormalizer`. The algorithm feeds it every
observation the env returns while ``learn`` runs (the first reset's and every step's, never replay batches);
the replay buffer keeps raw observations, and the networks see ``clip((obs - mean) / sqrt(var + epsilon))``
everywhere: in ``predict``, in the update (both observations of a sampled batch), and in exported actors.
The statistics are float64 buffers of the policy (``obs_normalizer.mean``, ``.var``, ``.count``), so they are
saved with the model and restored bit for bit. The formula and defaults (clip 10, epsilon 1e-8, a first
pseudo-sample of weight 1e-4) are Stable-Baselines3's ``VecNormalize``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from rlkit_td3.running_mean_std import RunningMeanStd, check_running_stats


class ObsNormalizer(nn.Module):
    """Running mean and variance of observations (float64, Chan et al.'s batch merge), applied as
    ``clip((obs - mean) / sqrt(var + epsilon), -clip_obs, clip_obs)``.

    Args:
        shape: the shape of one observation.
        clip_obs: normalised observations are clipped to ``[-clip_obs, clip_obs]``.
        epsilon: added to the variance before its square root.
    """

    def __init__(self, shape: tuple[int, ...], clip_obs: float = 10.0, epsilon: float = 1e-8) -> None:
        super().__init__()
        self.shape = tuple(int(d) for d in shape)
        self.clip_obs = float(clip_obs)
        self.epsilon = float(epsilon)
        start = RunningMeanStd(shape=self.shape)
        self.register_buffer("mean", torch.as_tensor(start.mean))
        self.register_buffer("var", torch.as_tensor(start.var))
        self.register_buffer("count", torch.tensor(start.count, dtype=torch.float64))
        # what forward uses, in the networks' dtype, recomputed when the statistics change (not saved)
        self.register_buffer("_shift", torch.zeros(self.shape), persistent=False)
        self.register_buffer("_scale", torch.ones(self.shape), persistent=False)
        self._refresh()

    @property
    def obs_rms(self) -> RunningMeanStd:
        """The statistics as a `RunningMeanStd` (a copy), the attribute a ``VecNormalize`` has too."""
        rms = RunningMeanStd(shape=self.shape)
        rms.mean, rms.var = self.mean.cpu().numpy().copy(), self.var.cpu().numpy().copy()
        rms.count = float(self.count)
        return rms

    @torch.no_grad()
    def update(self, obs: Any) -> None:
        """Add a batch of raw observations, shape ``(batch, *shape)``."""
        rms = self.obs_rms
        rms.update(np.asarray(obs, dtype=np.float64).reshape(-1, *self.shape))
        self.mean.copy_(torch.as_tensor(rms.mean))
        self.var.copy_(torch.as_tensor(rms.var))
        self.count.fill_(rms.count)
        self._refresh()

    @torch.no_grad()
    def _refresh(self) -> None:
        self._shift.copy_(self.mean.to(self._shift.dtype))
        self._scale.copy_(torch.rsqrt(self.var + self.epsilon).to(self._scale.dtype))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Normalised observations, in ``obs``'s dtype."""
        return ((obs - self._shift.to(obs.dtype)) * self._scale.to(obs.dtype)).clamp(-self.clip_obs, self.clip_obs)

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any) -> None:
        stats = [state_dict.get(prefix + name) for name in ("mean", "var", "count")]
        if all(isinstance(value, torch.Tensor) for value in stats):  # (a missing one: strict loading names it)
            check_running_stats(prefix.rstrip("."), *(value.detach().cpu().numpy() for value in stats), self.shape)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._refresh()

    def extra_repr(self) -> str:
        return f"shape={self.shape}, clip_obs={self.clip_obs}, epsilon={self.epsilon}"

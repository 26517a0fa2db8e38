"""Running mean and variance of a stream of arrays (``stable_baselines3.common.running_mean_std``'s counterpart).

The statistics are float64 and are merged batch by batch with the parallel algorithm of Chan, Golub and LeVeque
(1979): a batch's mean, variance and count combine with the running ones exactly as if all the samples had been
seen at once. Like SB3, the statistics start from a pseudo-sample of weight ``epsilon`` with mean 0 and
variance 1, which keeps the variance positive before any data arrives (``epsilon=0`` starts from no data at all).
As in SB3, a batch whose sample shape broadcasts to the statistics' shape is accepted: ``update()`` of an array
of shape ``(3,)`` on statistics of shape ``(3,)`` adds three scalar samples to every entry.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class RunningMeanStd:
    """Mean, variance and count of everything passed to `update()` (along axis 0), in float64.

    Args:
        epsilon: weight of the initial pseudo-sample (mean 0, variance 1); must be >= 0 (0: no pseudo-sample).
        shape: shape of one sample.
    """

    def __init__(self, epsilon: float = 1e-4, shape: tuple[int, ...] = ()) -> None:
        numbers = (int, float, np.integer, np.floating)
        if isinstance(epsilon, bool) or not isinstance(epsilon, numbers) or not 0 <= epsilon < np.inf:
            raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
        self.mean = np.zeros(shape, dtype=np.float64)
        self.var = np.ones(shape, dtype=np.float64)
        self.count: float = float(epsilon)

    def copy(self) -> RunningMeanStd:
        """An independent copy."""
        new = RunningMeanStd(shape=self.mean.shape)
        new.mean = self.mean.copy()
        new.var = self.var.copy()
        new.count = float(self.count)
        return new

    def combine(self, other: RunningMeanStd) -> None:
        """Merge another instance's statistics into this one (as if its samples had been passed here)."""
        self.update_from_moments(other.mean, other.var, other.count)

    def update(self, arr: Any) -> None:
        """Add a batch of samples: ``arr`` has shape ``(batch, *sample_shape)``.

        ``sample_shape`` is normally this instance's shape; one that broadcasts to it (numpy's rules, e.g. ``()``
        or ``(1,)`` for statistics of shape ``(3,)``) updates every entry alike, as SB3 does.

        Raises:
            ValueError: the samples' shape does not broadcast to this instance's shape.
        """
        batch = np.asarray(arr, dtype=np.float64)
        if batch.ndim == 0 or not _broadcasts_to(batch.shape[1:], self.mean.shape):
            raise ValueError(
                f"arr must have shape (batch, *{self.mean.shape}) or a sample shape that broadcasts to "
                f"{self.mean.shape}, got an array of shape {batch.shape}"
            )
        if batch.shape[0] == 0:
            return
        self.update_from_moments(batch.mean(axis=0), batch.var(axis=0), batch.shape[0])

    def update_from_moments(self, batch_mean: Any, batch_var: Any, batch_count: float) -> None:
        """Merge a batch given by its mean, (population) variance and count (Chan et al.'s pairwise update)."""
        total = self.count + batch_count
        if total == 0:  # epsilon=0 and nothing seen on either side
            return
        delta = np.asarray(batch_mean, dtype=np.float64) - self.mean
        new_mean = self.mean + delta * (batch_count / total)
        sum_sq = self.var * self.count + np.asarray(batch_var, dtype=np.float64) * batch_count
        sum_sq = sum_sq + np.square(delta) * (self.count * batch_count / total)
        self.mean = new_mean
        self.var = sum_sq / total
        self.count = float(total)


def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


def check_running_stats(
    where: str, mean: Any, var: Any, count: Any, shape: tuple[int, ...] | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """Checked running statistics from outside (a file, a state dict): ``(mean, var, count)`` as float64.

    The one check of every restored statistic (`VecNormalize` files and states, the policy's `ObsNormalizer`):
    ``mean`` and ``var`` real arrays of the same shape (``shape`` when given), finite, ``var >= 0``; ``count`` one
    finite number > 0.

    Raises:
        ValueError: naming ``where`` and what is wrong.
    """
    arrays = {}
    for name, value in (("mean", mean), ("var", var)):
        array = np.asarray(value)
        if array.dtype.kind not in "biuf" or array.dtype == bool:
            raise ValueError(f"{where}.{name} must hold real numbers, got dtype {array.dtype}")
        arrays[name] = array.astype(np.float64)
        if not np.all(np.isfinite(arrays[name])):
            raise ValueError(f"{where}.{name} holds non-finite values")
    mean, var = arrays["mean"], arrays["var"]
    if var.shape != mean.shape or (shape is not None and mean.shape != tuple(shape)):
        expected = mean.shape if shape is None else tuple(shape)
        raise ValueError(f"{where}: mean has shape {mean.shape} and var {var.shape}, expected {expected}")
    if np.any(var < 0):
        raise ValueError(f"{where}.var must be >= 0, got a minimum of {var.min()!r}")
    count_array = np.asarray(count)
    if count_array.shape != () or count_array.dtype.kind not in "iuf":
        raise ValueError(f"{where}.count must be one number, got {count_array.dtype} of shape {count_array.shape}")
    count = float(count_array)
    if not (np.isfinite(count) and count > 0):
        raise ValueError(f"{where}.count must be a finite number > 0, got {count!r}")
    return mean, var, count


__all__ = ["RunningMeanStd", "check_running_stats"]

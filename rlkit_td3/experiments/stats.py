"""Statistics of a comparison: final returns, the interquartile mean (IQM) and its stratified-bootstrap CI.

The method is rliable's (Agarwal et al. 2021, "Deep RL at the Edge of the Statistical Precipice"): the IQM is
the mean of the middle 50 % of the scores (``scipy.stats.trim_mean(x, 0.25)``), and its confidence interval is a
percentile bootstrap that resamples runs *within* each task (stratum) independently. ``scipy.stats.bootstrap``
does exactly that when it is given one sample per task with ``paired=False``, so it is used here instead of the
``rliable`` package (whose ``arch`` dependency fails to import with pandas 3).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

RESULT_COLUMNS = ("algo", "env", "seed", "timestep", "mean_return", "std_return")
"""The columns of ``results.csv``: one row per (algo, env, seed, evaluation timestep)."""
CONFIDENCE = 0.95
N_RESAMPLES = 2_000


def iqm(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """Interquartile mean along ``axis``: the mean after dropping the lowest and highest 25 % of the scores."""
    return stats.trim_mean(scores, proportiontocut=0.25, axis=axis)


def _pooled_iqm(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
    return iqm(np.concatenate(samples, axis=axis), axis=axis)


def stratified_bootstrap_ci(
    strata: Sequence[np.ndarray], seed: int = 0, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of the IQM of all scores, resampling within each stratum.

    Args:
        strata: one array of per-run scores per task (for one env and algo: a single array over seeds).
        seed: seed of the resampling, so a summary is reproducible.
        confidence: the interval's level.

    Returns:
        ``(low, high)``; both equal the IQM when no stratum has two distinct scores.
    """
    samples = [np.asarray(s, dtype=np.float64).ravel() for s in strata]
    if all(np.ptp(s) == 0 for s in samples):
        value = float(_pooled_iqm(*samples))
        return value, value
    result = stats.bootstrap(
        samples,
        _pooled_iqm,
        paired=False,
        vectorized=True,
        n_resamples=N_RESAMPLES,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def mean_ci_band(curves: np.ndarray, seed: int = 0, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Per-column percentile-bootstrap CI of the mean over rows (runs × timesteps → two arrays of timesteps)."""
    curves = np.asarray(curves, dtype=np.float64)
    if curves.shape[0] < 2:
        return curves.mean(axis=0), curves.mean(axis=0)
    flat = np.ptp(curves, axis=0) == 0
    result = stats.bootstrap(
        (curves,),
        np.mean,
        axis=0,
        vectorized=True,
        n_resamples=N_RESAMPLES,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    low, high = result.confidence_interval.low, result.confidence_interval.high
    mean = curves.mean(axis=0)
    return np.where(flat, mean, low), np.where(flat, mean, high)


def final_returns(results: pd.DataFrame) -> pd.DataFrame:
    """Each run's last evaluation: one row per (algo, env, seed) of a ``results.csv`` table."""
    last = results.sort_values("timestep").groupby(["algo", "env", "seed"], as_index=False).tail(1)
    return last.sort_values(["env", "algo", "seed"]).reset_index(drop=True)


def summarize(results: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Per env and algo: runs, final timestep, final mean ± std over seeds, IQM and its 95 % bootstrap CI."""
    rows = []
    for (env, algo), group in final_returns(results).groupby(["env", "algo"], sort=True):
        scores = group["mean_return"].to_numpy(dtype=np.float64)
        low, high = stratified_bootstrap_ci([scores], seed=seed)
        rows.append(
            {
                "env": env,
                "algo": algo,
                "runs": len(scores),
                "timestep": int(group["timestep"].min()),
                "mean": float(scores.mean()),
                "std": float(scores.std()),
                "iqm": float(iqm(scores)),
                "iqm_low": low,
                "iqm_high": high,
            }
        )
    return pd.DataFrame(rows, columns=["env", "algo", "runs", "timestep", "mean", "std", "iqm", "iqm_low", "iqm_high"])


def summary_markdown(summary: pd.DataFrame, command: str | None = None) -> str:
    """``summary.md``: a table per env of the final returns (mean ± std over seeds) and the IQM with its CI."""
    lines = ["# Comparison summary", ""]
    if command:
        lines += ["Made by:", "", "```bash", command, "```", ""]
    lines += [
        "Final return: each run's last deterministic evaluation (mean over its evaluation episodes); mean ± std "
        "over seeds. IQM: interquartile mean over seeds, with a 95 % percentile stratified-bootstrap confidence "
        f"interval ({N_RESAMPLES} resamples, the rliable method).",
        "",
    ]
    for env, group in summary.groupby("env", sort=True):
        lines += [f"## {env}", "", "| algo | runs | timesteps | final return (mean ± std) | IQM [95 % CI] |"]
        lines.append("|---|---:|---:|---:|---:|")
        for row in group.itertuples():
            lines.append(
                f"| {row.algo} | {row.runs} | {row.timestep:,} | {row.mean:.1f} ± {row.std:.1f} | "
                f"{row.iqm:.1f} [{row.iqm_low:.1f}, {row.iqm_high:.1f}] |"
            )
        lines.append("")
    return "\n".join(lines)

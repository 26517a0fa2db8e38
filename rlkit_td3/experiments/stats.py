"""Statistics of a comparison: the interquartile mean (IQM) of each run's last evaluations and its CI.

The method is rliable's (Agarwal et al. 2021, "Deep RL at the Edge of the Statistical Precipice"): the IQM is
the mean of the middle 50 % of the scores (``scipy.stats.trim_mean(x, 0.25)``), and its confidence interval is a
percentile bootstrap that resamples *runs* within each task (stratum) independently. A run may contribute
several scores (its last ``LAST_EVALUATIONS`` evaluations, which average out evaluation noise near the end of
training); they are resampled together, as one unit, because evaluations of one run are not independent draws:
resampling them one by one would count a lucky seed five times over and make the interval too narrow. The
bootstrap is written out here (numpy, seeded) since ``scipy.stats.bootstrap`` resamples single observations, and
the ``rliable`` package's ``arch`` dependency fails to import with pandas 3.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

RESULT_COLUMNS = ("algo", "env", "seed", "timestep", "mean_return", "std_return")
"""The columns of ``results.csv``: one row per (algo, env, seed, evaluation timestep)."""
CONFIDENCE = 0.95
N_RESAMPLES = 2_000
LAST_EVALUATIONS = 5
"""How many of each run's evaluations the summary scores: the last five (at the default schedule of one every
5,000 steps, the last 20,000 steps of a run), rather than a single final evaluation that one bad episode can sink."""


def iqm(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """Interquartile mean along ``axis``: the mean after dropping the lowest and highest 25 % of the scores."""
    # imported here, not at the top: scipy.stats takes ~1 s to import, and every run process imports this module
    from scipy import stats

    return stats.trim_mean(scores, proportiontocut=0.25, axis=axis)


def stratified_bootstrap_ci(
    strata: Sequence[np.ndarray], seed: int = 0, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of the IQM of all scores, resampling runs within each stratum.

    Args:
        strata: one array per task (for one env and algo: a single array). Shape ``(runs,)``, one score per run,
            or ``(runs, k)``, ``k`` scores per run (e.g. its last evaluations) that are resampled together.
        seed: seed of the resampling, so a summary is reproducible.
        confidence: the interval's level.

    Returns:
        ``(low, high)``; both equal the IQM when all scores are equal.

    Raises:
        ValueError: an empty stratum or one of more than two dimensions.
    """
    samples = []
    for i, stratum in enumerate(strata):
        array = np.asarray(stratum, dtype=np.float64)
        if array.ndim not in (1, 2) or array.shape[0] == 0 or array.size == 0:
            raise ValueError(
                f"strata[{i}] must be a non-empty array of shape (runs,) or (runs, k), got shape {array.shape}"
            )
        samples.append(array.reshape(array.shape[0], -1))
    pooled = np.concatenate([s.ravel() for s in samples])
    if np.ptp(pooled) == 0:
        value = float(iqm(pooled))
        return value, value
    rng = np.random.default_rng(seed)
    # Each resample draws, per stratum, as many runs as it has, with replacement; a run brings all its scores.
    resampled = [
        s[rng.integers(0, s.shape[0], size=(N_RESAMPLES, s.shape[0]))].reshape(N_RESAMPLES, -1) for s in samples
    ]
    values = iqm(np.concatenate(resampled, axis=1), axis=1)
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return float(low), float(high)


def _resampled_iqms(scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """IQMs of ``N_RESAMPLES`` bootstrap resamples of the runs (rows) of ``scores``."""
    index = rng.integers(0, scores.shape[0], size=(N_RESAMPLES, scores.shape[0]))
    return iqm(scores[index].reshape(N_RESAMPLES, -1), axis=1)


def iqm_difference_ci(
    first: np.ndarray, second: np.ndarray, seed: int = 0, confidence: float = CONFIDENCE
) -> tuple[float, float, float]:
    """The difference of two groups' IQMs, ``IQM(first) - IQM(second)``, with a percentile-bootstrap interval.

    The runs of each group are resampled independently (as units, as in `stratified_bootstrap_ci`), so an
    interval that excludes 0 says the groups differ beyond what the spread of their seeds explains; two
    per-group intervals that overlap do not by themselves say the opposite.

    Args:
        first: scores of the first group, ``(runs,)`` or ``(runs, k)``.
        second: scores of the second group, the same layout (``k`` may differ).
        seed: seed of the resampling.
        confidence: the interval's level.

    Returns:
        ``(difference, low, high)``.

    Raises:
        ValueError: an empty group or one of more than two dimensions.
    """
    groups = []
    for name, group in (("first", first), ("second", second)):
        array = np.asarray(group, dtype=np.float64)
        if array.ndim not in (1, 2) or array.size == 0:
            raise ValueError(f"{name} must be a non-empty array of shape (runs,) or (runs, k), got shape {array.shape}")
        groups.append(array.reshape(array.shape[0], -1))
    difference = float(iqm(groups[0].ravel()) - iqm(groups[1].ravel()))
    rng = np.random.default_rng(seed)
    values = _resampled_iqms(groups[0], rng) - _resampled_iqms(groups[1], rng)
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return difference, float(low), float(high)


def mean_ci_band(curves: np.ndarray, seed: int = 0, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Per-column percentile-bootstrap CI of the mean over rows (runs × timesteps → two arrays of timesteps)."""
    curves = np.asarray(curves, dtype=np.float64)
    if curves.shape[0] < 2:
        return curves.mean(axis=0), curves.mean(axis=0)
    flat = np.ptp(curves, axis=0) == 0
    from scipy import stats  # see iqm()

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


def last_evaluations(results: pd.DataFrame, last: int = LAST_EVALUATIONS) -> pd.DataFrame:
    """Each run's last ``last`` evaluations (fewer where a run has fewer): the rows the summary scores."""
    if isinstance(last, bool) or not isinstance(last, (int, np.integer)) or last < 1:
        raise ValueError(f"last must be a positive int, got {last!r}")
    tail = results.sort_values("timestep").groupby(["algo", "env", "seed"], as_index=False).tail(int(last))
    return tail.sort_values(["env", "algo", "seed", "timestep"]).reset_index(drop=True)


def run_scores(results: pd.DataFrame, last: int = LAST_EVALUATIONS) -> np.ndarray:
    """The scores of one group of runs (one env and algo) as ``(runs, k)``: each run's last ``k`` evaluations,
    ``k`` = ``last`` or the fewest evaluations any run of the group has, so every run weighs the same."""
    per_run = [g["mean_return"].to_numpy(dtype=np.float64) for _, g in last_evaluations(results, last).groupby("seed")]
    k = min(len(scores) for scores in per_run)
    return np.stack([scores[-k:] for scores in per_run])


def summarize(results: pd.DataFrame, seed: int = 0, last: int = LAST_EVALUATIONS) -> pd.DataFrame:
    """Per env and algo: the IQM of every run's last ``last`` evaluations pooled over seeds, its 95 % bootstrap CI
    (runs resampled as units), how many evaluations per run it used, and the final returns' mean ± std."""
    rows = []
    for (env, algo), group in results.groupby(["env", "algo"], sort=True):
        scores = run_scores(group, last)
        finals = final_returns(group)
        final = finals["mean_return"].to_numpy(dtype=np.float64)
        low, high = stratified_bootstrap_ci([scores], seed=seed)
        rows.append(
            {
                "env": env,
                "algo": algo,
                "runs": len(final),
                "timestep": int(finals["timestep"].min()),
                "last": scores.shape[1],
                "iqm": float(iqm(scores.ravel())),
                "iqm_low": low,
                "iqm_high": high,
                "mean": float(final.mean()),
                "std": float(final.std()),
            }
        )
    columns = ["env", "algo", "runs", "timestep", "last", "iqm", "iqm_low", "iqm_high", "mean", "std"]
    return pd.DataFrame(rows, columns=columns)


def summary_markdown(summary: pd.DataFrame, command: str | None = None) -> str:
    """``summary.md``: a table per env of the IQM of the runs' last evaluations with its CI, and the final returns."""
    lines = ["# Comparison summary", ""]
    if command:
        lines += ["Made by:", "", "```bash", command, "```", ""]
    lines += [
        "IQM: interquartile mean of each run's last evaluations (the number in brackets) pooled over seeds, with "
        f"a 95 % percentile stratified-bootstrap confidence interval ({N_RESAMPLES} resamples of the runs, the "
        "rliable method). Final return: each run's last deterministic evaluation alone (mean over its evaluation "
        "episodes); mean ± std over seeds.",
        "",
    ]
    for env, group in summary.groupby("env", sort=True):
        lines += [
            f"## {env}",
            "",
            "| algo | runs | timesteps | IQM [95 % CI] (last evaluations) | final return (mean ± std) |",
        ]
        lines.append("|---|---:|---:|---:|---:|")
        for row in group.itertuples():
            lines.append(
                f"| {row.algo} | {row.runs} | {row.timestep:,} | {row.iqm:.1f} [{row.iqm_low:.1f}, {row.iqm_high:.1f}] "
                f"(last {row.last}) | {row.mean:.1f} ± {row.std:.1f} |"
            )
        lines.append("")
    return "\n".join(lines)

"""Statistics of a comparison, by rliable's definitions (Agarwal et al. 2021, "Deep RL at the Edge of the
Statistical Precipice").

- **A run's score** is the mean of its last ``LAST_EVALUATIONS`` evaluations (each the mean return of the
  evaluation episodes): one number per run and env, so a single bad evaluation does not decide it, and a run
  counts once, however many evaluations it has.
- **IQM**: the interquartile mean of the scores of a runs × envs matrix, ``scipy.stats.trim_mean(scores, 0.25)``
  over the flattened matrix (rliable's ``aggregate_iqm``). It drops ``int(0.25 n)`` scores at each end: with
  fewer than 4 scores it drops none and is their mean.
- **Interval**: a 95 % percentile bootstrap that resamples runs with replacement *within each env* (rliable's
  ``StratifiedBootstrap``), 50,000 resamples. With fewer than ``MIN_RUNS_FOR_INTERVAL`` runs in an env a
  bootstrap interval is little more than the lowest and highest run (its coverage at 3 runs is far below
  95 %), so the summary then shows each run's score and their range instead, labelled as a range.
- **Probability of improvement** ``P(X > Y)``: per env, the share of run pairs (one run of X, one of Y) in
  which X scores higher, ties counting one half (the Mann-Whitney U statistic over ``n_x n_y``), averaged
  over envs; its interval resamples the runs of X and of Y independently within each env (rliable's
  ``StratifiedIndependentBootstrap``).

The resampling draws from ``numpy.random.RandomState(seed)`` in the order rliable's bootstrap draws from the
global numpy generator, so after ``np.random.seed(seed)`` rliable gives the same intervals (checked by
``benchmarks/rliable_crosscheck.py``). The code is written here with numpy and scipy; the package does not
depend on rliable.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd

RESULT_COLUMNS = ("algo", "env", "seed", "timestep", "mean_return", "std_return")
"""The columns of ``results.csv``: one row per (algo, env, seed, evaluation timestep)."""
CONFIDENCE = 0.95
N_RESAMPLES = 50_000
"""Bootstrap resamples of an interval (rliable's default ``reps``)."""
LAST_EVALUATIONS = 5
"""How many of each run's evaluations its score averages: the last five (at the default schedule of one every
5,000 steps, the last 20,000 steps of a run), rather than a single final evaluation that one bad episode can sink."""
MIN_RUNS_FOR_INTERVAL = 5
"""Fewest runs per env (in each group compared) for which a summary gives a bootstrap interval; below it, the
run scores and their range."""

Scores = np.ndarray | Sequence[Sequence[float]] | Sequence[np.ndarray]
"""A group's scores: a ``(runs, envs)`` matrix, a 1-D array (one env), or a list of 1-D arrays, one per env
(envs may then have different numbers of runs)."""


def iqm(scores: np.ndarray, axis: int | None = None) -> np.ndarray:
    """Interquartile mean: the mean after dropping ``int(0.25 n)`` of the lowest and of the highest scores.

    ``axis=None`` (the default) takes every score of the array together, as rliable's ``aggregate_iqm`` does
    with a runs × envs matrix.
    """
    # imported here, not at the top: scipy.stats takes ~1 s to import, and every run process imports this module
    from scipy import stats

    return stats.trim_mean(np.asarray(scores, dtype=np.float64), proportiontocut=0.25, axis=axis)


def _strata(scores: Scores, name: str) -> list[np.ndarray]:
    """``scores`` as one 1-D float array per env; a clear error for anything else."""
    if isinstance(scores, np.ndarray) and scores.ndim == 2:
        columns = [scores[:, j] for j in range(scores.shape[1])]
    elif isinstance(scores, np.ndarray) and scores.ndim == 1:
        columns = [scores]
    elif isinstance(scores, Sequence) and not isinstance(scores, (str, bytes)) and len(scores) > 0:
        if all(np.ndim(s) == 0 for s in scores):
            columns = [np.asarray(scores)]
        else:
            columns = list(scores)
    else:
        raise ValueError(f"{name} must be a (runs, envs) matrix, a 1-D array or a list of 1-D arrays, got {scores!r}")
    out = []
    for j, column in enumerate(columns):
        array = np.asarray(column, dtype=np.float64)
        if array.ndim != 1 or array.size == 0 or not np.all(np.isfinite(array)):
            raise ValueError(
                f"{name}: env {j} must hold a non-empty 1-D array of finite run scores, got shape {array.shape}"
                f"{'' if array.ndim != 1 or array.size == 0 else ' with a NaN or infinite score'}"
            )
        out.append(array)
    return out


def _check_resampling(reps: int, confidence: float) -> None:
    if isinstance(reps, bool) or not isinstance(reps, (int, np.integer)) or reps < 1:
        raise ValueError(f"reps must be a positive int, got {reps!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence!r}")


def _resample(strata: list[np.ndarray], rng: np.random.RandomState, reps: int) -> list[np.ndarray]:
    """One ``(reps, runs)`` array per env: the runs of that env drawn with replacement, ``reps`` times.

    With as many runs in every env, one ``(runs, envs)`` block of indices per resample, drawn in rliable's
    order (``np.random.choice(runs, (runs, envs))`` per resample); otherwise each env's runs in turn.
    """
    sizes = {len(s) for s in strata}
    if len(sizes) == 1:
        n = sizes.pop()
        index = rng.randint(0, n, size=(reps, n, len(strata)))
        return [s[index[:, :, j]] for j, s in enumerate(strata)]
    return [s[rng.randint(0, len(s), size=(reps, len(s)))] for s in strata]


def _percentile_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return float(low), float(high)


def stratified_bootstrap_ci(
    scores: Scores, seed: int = 0, confidence: float = CONFIDENCE, reps: int = N_RESAMPLES
) -> tuple[float, float]:
    """Percentile-bootstrap interval of the IQM of a group's scores, resampling runs within each env.

    Args:
        scores: one score per run and env (see `Scores`): a ``(runs, envs)`` matrix, a 1-D array of one env's
            run scores, or a list of such arrays, one per env.
        seed: seed of the resampling (``numpy.random.RandomState``), so a summary is reproducible.
        confidence: the interval's level.
        reps: bootstrap resamples.

    Returns:
        ``(low, high)``.

    Raises:
        ValueError: an empty env, a score that is not finite, a non-positive ``reps`` or a ``confidence``
            outside (0, 1).
    """
    strata = _strata(scores, "scores")
    _check_resampling(reps, confidence)
    resampled = _resample(strata, np.random.RandomState(seed), reps)
    return _percentile_interval(iqm(np.concatenate(resampled, axis=1), axis=1), confidence)


def _improvement(x: list[np.ndarray], y: list[np.ndarray]) -> np.ndarray:
    """P(X > Y) per resample: x and y hold one ``(reps, runs)`` array per env."""
    per_env = []
    for a, b in zip(x, y):
        above = (a[:, :, None] > b[:, None, :]).mean(axis=(1, 2))
        ties = (a[:, :, None] == b[:, None, :]).mean(axis=(1, 2))
        per_env.append(above + 0.5 * ties)
    return np.mean(per_env, axis=0)


def _paired_strata(x: Scores, y: Scores) -> tuple[list[np.ndarray], list[np.ndarray]]:
    first, second = _strata(x, "scores_x"), _strata(y, "scores_y")
    if len(first) != len(second):
        raise ValueError(f"scores_x has {len(first)} envs and scores_y {len(second)}: compare them on the same envs")
    return first, second


def probability_of_improvement(scores_x: Scores, scores_y: Scores) -> float:
    """P(X > Y): per env, the probability that a run of X scores higher than a run of Y (ties count one half),
    averaged over envs; rliable's ``probability_of_improvement``.

    Args:
        scores_x: X's run scores (see `Scores`).
        scores_y: Y's run scores on the same envs, in the same order (the number of runs may differ).

    Returns:
        A probability: 1.0 when every run of X beats every run of Y in every env, 0.5 when they are
        interchangeable.

    Raises:
        ValueError: empty or non-finite scores, or not the same number of envs.
    """
    first, second = _paired_strata(scores_x, scores_y)
    return float(_improvement([a[None, :] for a in first], [b[None, :] for b in second])[0])


def probability_of_improvement_ci(
    scores_x: Scores, scores_y: Scores, seed: int = 0, confidence: float = CONFIDENCE, reps: int = N_RESAMPLES
) -> tuple[float, float, float]:
    """`probability_of_improvement` with its percentile-bootstrap interval: the runs of X and of Y are resampled
    independently, within each env (rliable's ``StratifiedIndependentBootstrap``).

    Returns:
        ``(probability, low, high)``.

    Raises:
        ValueError: as `probability_of_improvement`, or a bad ``reps`` / ``confidence``.
    """
    first, second = _paired_strata(scores_x, scores_y)
    _check_resampling(reps, confidence)
    rng = np.random.RandomState(seed)
    if len({len(s) for s in first}) == 1 and len({len(s) for s in second}) == 1:
        # rliable's order: per resample, X's (runs_x, envs) block of indices, then Y's (runs_y, envs) block
        nx, ny, envs = len(first[0]), len(second[0]), len(first)
        if nx == ny:  # the same bounds: both blocks of all resamples in one call, still in that order
            index = rng.randint(0, nx, size=(reps, 2, nx, envs))
            ix, iy = index[:, 0], index[:, 1]
        else:
            ix, iy = np.empty((reps, nx, envs), dtype=np.int64), np.empty((reps, ny, envs), dtype=np.int64)
            for r in range(reps):
                ix[r], iy[r] = rng.randint(0, nx, size=(nx, envs)), rng.randint(0, ny, size=(ny, envs))
        resampled_x = [s[ix[:, :, j]] for j, s in enumerate(first)]
        resampled_y = [s[iy[:, :, j]] for j, s in enumerate(second)]
    else:
        resampled_x, resampled_y = _resample(first, rng, reps), _resample(second, rng, reps)
    low, high = _percentile_interval(_improvement(resampled_x, resampled_y), confidence)
    return probability_of_improvement(first, second), low, high


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
        n_resamples=2_000,
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
    """Each run's last ``last`` evaluations (fewer where a run has fewer): the rows its score averages."""
    if isinstance(last, bool) or not isinstance(last, (int, np.integer)) or last < 1:
        raise ValueError(f"last must be a positive int, got {last!r}")
    tail = results.sort_values("timestep").groupby(["algo", "env", "seed"], as_index=False).tail(int(last))
    return tail.sort_values(["env", "algo", "seed", "timestep"]).reset_index(drop=True)


def run_scores(results: pd.DataFrame, last: int = LAST_EVALUATIONS) -> pd.DataFrame:
    """One score per run: the mean of its last ``last`` evaluations.

    Returns:
        One row per (algo, env, seed), sorted so: ``algo, env, seed``, ``timestep`` (the run's last evaluation
        step), ``evaluations`` (how many its score averages: ``last``, or all it has if fewer) and ``score``.
    """
    rows = last_evaluations(results, last).groupby(["algo", "env", "seed"], sort=True)
    table = rows.agg(timestep=("timestep", "max"), evaluations=("mean_return", "size"), score=("mean_return", "mean"))
    return table.reset_index().sort_values(["algo", "env", "seed"]).reset_index(drop=True)


def _group_strata(scores: pd.DataFrame, algo: str, envs: Sequence[str]) -> list[np.ndarray]:
    by_algo = scores[scores["algo"] == algo]
    return [by_algo.loc[by_algo["env"] == env, "score"].to_numpy(dtype=np.float64) for env in envs]


def _interval_or_range(strata: list[np.ndarray], seed: int) -> tuple[float, float, str]:
    if min(len(s) for s in strata) >= MIN_RUNS_FOR_INTERVAL:
        return (*stratified_bootstrap_ci(strata, seed=seed), "95 % CI")
    pooled = np.concatenate(strata)
    return float(pooled.min()), float(pooled.max()), "range"


ALL_ENVS = "all envs"
"""The ``env`` of a summary row that aggregates an algo's runs × envs matrix (when it has several envs)."""


def summarize(results: pd.DataFrame, seed: int = 0, last: int = LAST_EVALUATIONS) -> pd.DataFrame:
    """Per env and algo, and per algo over all its envs (when there are several): the run scores, their IQM,
    and a 95 % stratified-bootstrap interval (``spread == "95 % CI"``) when every env has at least
    ``MIN_RUNS_FOR_INTERVAL`` runs, otherwise the range of the run scores (``spread == "range"``).

    Returns:
        Columns ``env, algo, runs, timestep, last, scores, iqm, low, high, spread``; ``scores`` is a tuple of
        ``(seed, score)`` pairs, ``timestep`` the earliest of the runs' last evaluation steps, ``last`` the
        fewest evaluations a score averages.
    """
    scores = run_scores(results, last)
    rows = []
    for (env, algo), group in scores.groupby(["env", "algo"], sort=True):
        strata = [group["score"].to_numpy(dtype=np.float64)]
        low, high, spread = _interval_or_range(strata, seed)
        rows.append(
            {
                "env": env,
                "algo": algo,
                "runs": len(group),
                "timestep": int(group["timestep"].min()),
                "last": int(group["evaluations"].min()),
                "scores": tuple(zip(group["seed"].astype(int), group["score"])),
                "iqm": float(iqm(strata[0])),
                "low": low,
                "high": high,
                "spread": spread,
            }
        )
    envs = sorted(scores["env"].unique())
    if len(envs) > 1:
        for algo, group in scores.groupby("algo", sort=True):
            if set(group["env"]) != set(envs):
                continue
            strata = _group_strata(scores, algo, envs)
            low, high, spread = _interval_or_range(strata, seed)
            rows.append(
                {
                    "env": ALL_ENVS,
                    "algo": algo,
                    "runs": len(group),
                    "timestep": int(group["timestep"].min()),
                    "last": int(group["evaluations"].min()),
                    "scores": (),
                    "iqm": float(iqm(np.concatenate(strata))),
                    "low": low,
                    "high": high,
                    "spread": spread,
                }
            )
    columns = ["env", "algo", "runs", "timestep", "last", "scores", "iqm", "low", "high", "spread"]
    return pd.DataFrame(rows, columns=columns)


def improvements(results: pd.DataFrame, seed: int = 0, last: int = LAST_EVALUATIONS) -> pd.DataFrame:
    """``P(X > Y)`` for every pair of algos that ran on the same envs (X: the one more likely to score higher),
    with its 95 % stratified-bootstrap interval when both have at least ``MIN_RUNS_FOR_INTERVAL`` runs on every
    env (else ``low`` and ``high`` are NaN).

    Returns:
        Columns ``x, y, envs, runs_x, runs_y, fewest_runs, probability, low, high`` (``fewest_runs``: the
        fewest runs of either group on one env).
    """
    scores = run_scores(results, last)
    envs_of = {algo: sorted(group["env"].unique()) for algo, group in scores.groupby("algo", sort=True)}
    rows = []
    for a, b in combinations(sorted(envs_of), 2):
        if envs_of[a] != envs_of[b]:
            continue
        envs = envs_of[a]
        ahead = probability_of_improvement(_group_strata(scores, a, envs), _group_strata(scores, b, envs)) >= 0.5
        x, y = (a, b) if ahead else (b, a)
        first, second = _group_strata(scores, x, envs), _group_strata(scores, y, envs)
        if min(len(s) for s in first + second) >= MIN_RUNS_FOR_INTERVAL:
            probability, low, high = probability_of_improvement_ci(first, second, seed=seed)
        else:
            probability, low, high = probability_of_improvement(first, second), float("nan"), float("nan")
        rows.append(
            {
                "x": x,
                "y": y,
                "envs": len(envs),
                "runs_x": sum(map(len, first)),
                "runs_y": sum(map(len, second)),
                "fewest_runs": min(len(s) for s in first + second),
                "probability": probability,
                "low": low,
                "high": high,
            }
        )
    columns = ["x", "y", "envs", "runs_x", "runs_y", "fewest_runs", "probability", "low", "high"]
    return pd.DataFrame(rows, columns=columns)


def format_spread(low: float, high: float, spread: str) -> str:
    """``"[low, high] (95 % CI)"`` or ``"range low to high"``, one decimal: how every summary writes a spread."""
    if spread == "range":
        return f"range {low:.1f} to {high:.1f}"
    return f"[{low:.1f}, {high:.1f}] ({spread})"


def format_improvement(row: pd.Series | dict) -> str:
    """One comparison of `improvements` as a sentence (two decimals; the interval or why there is none)."""
    text = f"P({row['x']} > {row['y']}) = {row['probability']:.2f}"
    if np.isnan(row["low"]):
        n = int(row["fewest_runs"])
        return text + f" (no interval: {n} run{'s' * (n != 1)} in a group, fewer than {MIN_RUNS_FOR_INTERVAL})"
    return text + f", 95 % CI [{row['low']:.2f}, {row['high']:.2f}]"


METHOD = (
    "Score of a run: the mean of its last {last} evaluations. IQM: the interquartile mean of the run scores "
    "(rliable's definition; with fewer than 4 runs it trims nothing and is their mean). Spread: with "
    f"{MIN_RUNS_FOR_INTERVAL} runs or more per env, a 95 % stratified-bootstrap confidence interval "
    f"({N_RESAMPLES:,} resamples of the runs within each env); with fewer, the range of the run scores (lowest "
    "to highest), which is not a confidence interval. P(X > Y): the probability that a run of X scores higher "
    "than a run of Y (ties count one half), averaged over envs (rliable's probability of improvement)."
)
"""The method paragraph every summary states (``{last}`` is filled in)."""


def summary_markdown(summary: pd.DataFrame, comparisons: pd.DataFrame | None = None, command: str | None = None) -> str:
    """``summary.md``: the method, a table per env (runs, IQM, spread, each run's score) and the
    probabilities of improvement between the algos.

    Args:
        summary: `summarize`'s table.
        comparisons: `improvements`'s table, or ``None`` for none.
        command: the command line that made the comparison, quoted at the top.
    """
    lines = ["# Comparison summary", ""]
    if command:
        lines += ["Made by:", "", "```bash", command, "```", ""]
    last = int(summary["last"].min()) if len(summary) else LAST_EVALUATIONS
    lines += [METHOD.format(last=last), ""]
    for env, group in summary.groupby("env", sort=True):
        lines += [f"## {env}", ""]
        if env == ALL_ENVS:
            lines += ["The IQM of each algo's runs × envs matrix of scores (returns of different envs pooled).", ""]
        lines += ["| algo | runs | IQM | spread | run scores |", "|---|---:|---:|---|---|"]
        for row in group.itertuples():
            runs = ", ".join(f"s{s}: {v:.1f}" for s, v in row.scores) or "-"
            lines.append(
                f"| {row.algo} | {row.runs} | {row.iqm:.1f} | {format_spread(row.low, row.high, row.spread)} | {runs} |"
            )
        lines.append("")
    if comparisons is not None and len(comparisons):
        lines += ["## Probability of improvement", ""]
        lines += [f"- {format_improvement(row)}" for _, row in comparisons.iterrows()]
        lines.append("")
    return "\n".join(lines)

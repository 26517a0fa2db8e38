"""The comparison statistics, against hand-computed cases and rliable's definitions (Agarwal et al. 2021):
run scores, the IQM of a runs × envs matrix, the stratified bootstrap, the probability of improvement, the
summary (an interval only with 5 runs or more, the range below), the curve band."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from rlkit_td3.experiments.stats import (
    final_returns,
    format_improvement,
    format_spread,
    improvements,
    iqm,
    last_evaluations,
    mean_ci_band,
    probability_of_improvement,
    probability_of_improvement_ci,
    run_scores,
    stratified_bootstrap_ci,
    summarize,
    summary_markdown,
)


def _table(runs: dict[tuple[str, str, int], list[float]], step: int = 5_000) -> pd.DataFrame:
    """A results.csv table: ``{(algo, env, seed): evaluations in order}``, one every ``step`` timesteps."""
    rows = [
        (algo, env, seed, step * (i + 1), value, 0.0)
        for (algo, env, seed), values in runs.items()
        for i, value in enumerate(values)
    ]
    return pd.DataFrame(rows, columns=["algo", "env", "seed", "timestep", "mean_return", "std_return"])


# ------------------------------------------------------------------------------------------------ definitions
def test_iqm_drops_a_quarter_at_each_end_of_the_flattened_matrix():
    assert iqm(np.array([400.0, 1, 2, 3, 4, 100, 200, 300])) == pytest.approx((3 + 4 + 100 + 200) / 4)
    assert iqm(np.array([1.0, 2, 9])) == pytest.approx(4.0)  # int(0.75) = 0 trimmed: with 3 runs, the mean
    # a (runs, envs) matrix: all 8 scores together (1 2 3 4 10 20 30 40), not per env or per run
    matrix = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [4.0, 40.0]])
    assert iqm(matrix) == pytest.approx((3 + 4 + 10 + 20) / 4)
    assert iqm(matrix) == pytest.approx(scipy_stats.trim_mean(matrix, 0.25, axis=None))  # rliable's aggregate_iqm


def test_probability_of_improvement_by_hand():
    """Env 1: X = (3, 2, 1), Y = (2, 0): of the 6 pairs X wins 4 and ties 1 (2 against 2): 4.5 / 6 = 0.75.
    Env 2: X = (5,), Y = (6,): 0. Averaged over the two envs: 0.375."""
    assert probability_of_improvement([3.0, 2.0, 1.0], [2.0, 0.0]) == 0.75
    assert probability_of_improvement([np.array([3.0, 2, 1]), np.array([5.0])], [np.array([2.0, 0]), [6.0]]) == 0.375
    assert probability_of_improvement([1.0, 2.0], [2.0, 1.0]) == 0.5  # the same runs: 0.5, as rliable's special case
    assert probability_of_improvement([7.0, 8.0], [1.0, 2.0, 3.0]) == 1.0


def test_probability_of_improvement_is_the_mann_whitney_statistic_over_the_pairs():
    """rliable computes each env's term as scipy's Mann-Whitney U of X over n_x n_y."""
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 6, size=(7, 3)).astype(float), rng.integers(0, 6, size=(4, 3)).astype(float)  # ties
    expected = np.mean(
        [scipy_stats.mannwhitneyu(x[:, j], y[:, j], alternative="greater").statistic / (7 * 4) for j in range(3)]
    )
    assert probability_of_improvement(x, y) == pytest.approx(expected, abs=1e-15)
    assert probability_of_improvement(x, y) + probability_of_improvement(y, x) == pytest.approx(1.0)


def test_run_scores_are_the_mean_of_each_runs_last_five_evaluations():
    table = _table({("td3", "E", 0): [100.0, 0, 1, 2, 3, 4], ("td3", "E", 1): [5.0, 7.0]})
    scores = run_scores(table)
    assert scores["score"].tolist() == [2.0, 6.0]  # the first evaluation of seed 0 is not among its last five
    assert scores["evaluations"].tolist() == [5, 2] and scores["timestep"].tolist() == [30_000, 10_000]
    assert run_scores(table, last=1)["score"].tolist() == [4.0, 7.0]
    with pytest.raises(ValueError, match="last must be a positive int, got 0"):
        run_scores(table, last=0)


def test_the_summary_iqm_is_of_run_scores_not_of_pooled_evaluations():
    """Three runs: A's last five evaluations are 0, 0, 0, 0, 100 (score 20), B's all 10, C's all 30. The IQM of
    the run scores (20, 10, 30) trims nothing from three and is 20. The trimmed mean of the fifteen evaluations
    pooled (the old summary) drops 0, 0, 0 and 30, 30, 100 and gives 140 / 9 = 15.6: a run with one bad
    evaluation would weigh like five runs."""
    table = _table({("td3", "E", 0): [0.0, 0, 0, 0, 100], ("td3", "E", 1): [10.0] * 5, ("td3", "E", 2): [30.0] * 5})
    summary = summarize(table).set_index("algo")
    assert summary.loc["td3", "iqm"] == pytest.approx(20.0)
    assert iqm(table["mean_return"].to_numpy()) == pytest.approx(140 / 9)  # what pooling would say


# ------------------------------------------------------------------------------------------------ bootstrap
def test_the_bootstrap_resamples_runs_within_each_env():
    """Two envs of four runs: each resample keeps four runs of each env, so the IQM of its 8 scores keeps the top
    two of env A (0 or 1) and the bottom two of env B (10 or 11): between 5 and 5.5. Resampling the 8 scores as
    one pool could draw five of A and leave that range."""
    low, high = stratified_bootstrap_ci(np.array([[0.0, 10], [0, 10], [0, 10], [1, 11]]), seed=3)
    assert 5.0 <= low < high <= 5.5
    assert stratified_bootstrap_ci([np.array([0.0, 0, 0, 1]), np.array([10.0, 10, 10, 11])], seed=3) == (low, high)


def test_two_runs_give_the_whole_span_by_hand():
    """Runs at 0 and 10: a resample is (0, 0), (0, 10), (10, 0) or (10, 10), IQMs 0, 5, 5, 10 (two scores are
    not trimmed); the 2.5th and 97.5th percentiles of 50,000 such draws are 0 and 10."""
    assert stratified_bootstrap_ci(np.array([0.0, 10.0]), seed=0) == (0.0, 10.0)
    assert stratified_bootstrap_ci(np.array([7.0, 7.0, 7.0])) == (7.0, 7.0)


def test_the_intervals_are_rliables_own():
    """Computed with rliable 1.2.0: ``np.random.seed(3); rly.get_interval_estimates({"x": X},
    metrics.aggregate_iqm, reps=2000)`` and, for the probability, ``np.random.seed(4)`` and ``{"p": (X, Y)}``
    with ``metrics.probability_of_improvement`` (benchmarks/rliable_crosscheck.py does this on the results)."""
    x = np.array([[2177.4, 1.0], [2203.2, 5.0], [1869.4, 3.0], [1500.0, 2.0], [1700.0, 8.0]])
    y = np.array([[359.9, 1.0], [242.9, 4.0], [585.6, 3.0], [3000.0, 2.0], [100.0, 7.0]])
    assert iqm(x) == pytest.approx(847.5666666666666, abs=1e-9)
    assert stratified_bootstrap_ci(x, seed=3, reps=2000) == pytest.approx((752.5, 1039.8666666666668), abs=1e-9)
    assert probability_of_improvement_ci(x, y, seed=4, reps=2000) == pytest.approx((0.67, 0.4, 0.9), abs=1e-12)
    assert probability_of_improvement_ci(x, y[:3], seed=5, reps=500) == pytest.approx((0.8, 0.6, 0.95), abs=1e-12)


def test_the_probability_interval_separates_only_groups_that_differ():
    rng = np.random.default_rng(0)
    p, low, high = probability_of_improvement_ci(rng.normal(500, 200, 10), rng.normal(500, 200, 10), seed=1)
    assert low < 0.5 < high and low <= p <= high
    assert probability_of_improvement_ci(np.arange(5.0) + 100, np.arange(5.0), reps=200) == (1.0, 1.0, 1.0)
    assert probability_of_improvement_ci([3.0, 1, 2], [1.0, 2], seed=2, reps=300) == probability_of_improvement_ci(
        [3.0, 1, 2], [1.0, 2], seed=2, reps=300
    )  # seeded


def test_bad_scores_and_settings_are_refused_by_name():
    with pytest.raises(ValueError, match=r"scores: env 1 must hold a non-empty 1-D array.*shape \(0,\)"):
        stratified_bootstrap_ci([np.ones(3), np.array([])])
    with pytest.raises(ValueError, match=r"scores: env 0 .*NaN or infinite"):
        stratified_bootstrap_ci([np.array([1.0, np.nan])])
    with pytest.raises(ValueError, match="scores_x has 2 envs and scores_y 1"):
        probability_of_improvement(np.ones((3, 2)), np.ones(3))
    with pytest.raises(ValueError, match="reps must be a positive int, got 0"):
        stratified_bootstrap_ci(np.ones(3), reps=0)
    with pytest.raises(ValueError, match="confidence must be between 0 and 1"):
        probability_of_improvement_ci(np.ones(3), np.ones(3), confidence=95)


# ------------------------------------------------------------------------------------------------ summary
FEW = _table(
    {
        **{("td3", "E", s): [0.0, 10.0 * (s + 1)] for s in range(3)},  # scores 5, 10, 15
        **{("ddpg", "E", s): [0.0, 2.0 * (s + 1)] for s in range(3)},  # scores 1, 2, 3
    }
)
MANY = _table({("td3", "E", s): [float(s)] for s in range(6)})


def test_with_fewer_than_five_runs_the_summary_gives_the_range_not_an_interval():
    summary = summarize(FEW).set_index("algo")
    assert summary.loc["td3", "iqm"] == 10.0 and summary.loc["td3", "spread"] == "range"
    assert (summary.loc["td3", "low"], summary.loc["td3", "high"]) == (5.0, 15.0)
    assert summary.loc["td3", "scores"] == ((0, 5.0), (1, 10.0), (2, 15.0))
    text = summary_markdown(summarize(FEW), improvements(FEW), command="rlkit-td3 compare ...")
    assert "| td3 | 3 | 10.0 | range 5.0 to 15.0 | s0: 5.0, s1: 10.0, s2: 15.0 |" in text
    assert "rlkit-td3 compare ..." in text and "(95 % CI)" not in text
    assert "- P(td3 > ddpg) = 1.00 (no interval: 3 runs in a group, fewer than 5)" in text


def test_with_five_runs_or_more_the_summary_gives_the_bootstrap_interval():
    row = summarize(MANY).iloc[0]
    assert row["spread"] == "95 % CI" and row["iqm"] == 2.5  # 0..5: trims 0 and 5
    assert (row["low"], row["high"]) == stratified_bootstrap_ci(np.arange(6.0), seed=0)
    assert format_spread(row["low"], row["high"], row["spread"]).endswith("(95 % CI)")
    both = pd.concat([MANY, MANY.assign(algo="ddpg", mean_return=MANY["mean_return"] + 100)])
    comparison = improvements(both).iloc[0]
    assert (comparison["x"], comparison["y"], comparison["probability"]) == ("ddpg", "td3", 1.0)
    assert format_improvement(comparison) == "P(ddpg > td3) = 1.00, 95 % CI [1.00, 1.00]"


def test_several_envs_add_the_iqm_of_each_algos_runs_by_envs_matrix():
    table = pd.concat([FEW, FEW.assign(env="F", mean_return=FEW["mean_return"] * 2)])
    summary = summarize(table).set_index(["env", "algo"])
    assert summary.loc[("all envs", "td3"), "iqm"] == pytest.approx(iqm(np.array([[5.0, 10], [10, 20], [15, 30]])))
    assert summary.loc[("all envs", "td3"), "runs"] == 6 and summary.loc[("all envs", "td3"), "spread"] == "range"
    assert improvements(table).iloc[0]["envs"] == 2


def test_final_and_last_evaluations():
    assert final_returns(FEW)["mean_return"].tolist() == [2.0, 4.0, 6.0, 10.0, 20.0, 30.0]
    assert len(last_evaluations(FEW, 1)) == 6 and len(last_evaluations(FEW)) == 12


def test_mean_band():
    curves = np.array([[0.0, 1.0, 5.0], [0.0, 3.0, 5.0], [0.0, 8.0, 5.0]])
    low, high = mean_ci_band(curves)
    assert low[0] == high[0] == 0.0 and low[2] == high[2] == 5.0  # no spread, no band
    assert 1.0 <= low[1] < curves[:, 1].mean() < high[1] <= 8.0
    one_low, one_high = mean_ci_band(curves[:1])
    assert one_low.tolist() == one_high.tolist() == [0.0, 1.0, 5.0]


def test_the_cli_prints_the_summary_of_summary_md(tmp_path, capsys):
    """``rlkit-td3 plot`` (and ``compare`` at its end) print the statistics summary.md holds, the same words."""
    from rlkit_td3.cli import main
    from rlkit_td3.experiments import write_outputs

    write_outputs(FEW, tmp_path)
    assert main(["plot", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    written = (tmp_path / "summary.md").read_text()
    for line in ("| td3 | 3 | 10.0 | range 5.0 to 15.0 | s0: 5.0, s1: 10.0, s2: 15.0 |", "- P(td3 > ddpg) = 1.00"):
        assert line in printed and line in written

"""The comparison statistics: IQM, the stratified bootstrap CI, the curve band, the summary table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rlkit_td3.experiments.stats import (
    final_returns,
    iqm,
    iqm_difference_ci,
    last_evaluations,
    mean_ci_band,
    run_scores,
    stratified_bootstrap_ci,
    summarize,
    summary_markdown,
)


def test_iqm_drops_the_top_and_bottom_quarter():
    assert iqm(np.array([400.0, 1, 2, 3, 4, 100, 200, 300])) == pytest.approx((3 + 4 + 100 + 200) / 4)
    assert iqm(np.array([1.0, 2, 9])) == pytest.approx(4.0)  # with 3 runs nothing is trimmed: the mean


def test_bootstrap_resamples_within_each_stratum():
    """Two tasks of four runs: stratified resamples always hold four runs of each task, so the pooled IQM keeps
    the top two of task A and the bottom two of task B, between 5 and 6. Pooled resampling would leave that range."""
    low, high = stratified_bootstrap_ci([np.array([0.0, 0, 0, 1]), np.array([10.0, 10, 10, 11])], seed=3)
    assert 5.0 <= low < high <= 6.0


def test_bootstrap_ci_brackets_the_iqm_and_is_reproducible():
    rng = np.random.default_rng(0)
    scores = rng.normal(100.0, 20.0, size=10)
    low, high = stratified_bootstrap_ci([scores], seed=1)
    assert low < iqm(scores) < high and high - low < 60
    assert stratified_bootstrap_ci([scores], seed=1) == (low, high)
    more = stratified_bootstrap_ci([rng.normal(100.0, 20.0, size=200)], seed=1)
    assert more[1] - more[0] < (high - low) / 2  # more runs, a narrower interval
    assert stratified_bootstrap_ci([np.array([7.0, 7.0, 7.0])]) == (7.0, 7.0)


def test_mean_band():
    curves = np.array([[0.0, 1.0, 5.0], [0.0, 3.0, 5.0], [0.0, 8.0, 5.0]])
    low, high = mean_ci_band(curves)
    assert low[0] == high[0] == 0.0 and low[2] == high[2] == 5.0  # no spread, no band
    assert 1.0 <= low[1] < curves[:, 1].mean() < high[1] <= 8.0
    one_low, one_high = mean_ci_band(curves[:1])
    assert one_low.tolist() == one_high.tolist() == [0.0, 1.0, 5.0]


def test_a_run_is_resampled_as_one_unit():
    """Two runs of twenty evaluations each, one at 0, one at 10. Resampling runs gives (A, A), (A, B) or (B, B):
    IQMs of 0, 5 and 10, so the interval spans [0, 10]. Resampling the forty evaluations one by one (as if they were
    forty runs) would concentrate near 5 and claim a much narrower interval."""
    scores = np.array([[0.0] * 20, [10.0] * 20])
    assert stratified_bootstrap_ci([scores], seed=0) == (0.0, 10.0)
    one_by_one = stratified_bootstrap_ci([scores.ravel()], seed=0)
    assert 0.0 < one_by_one[0] and one_by_one[1] < 10.0


def test_bootstrap_refuses_empty_or_three_dimensional_strata():
    with pytest.raises(ValueError, match=r"strata\[1\] must be a non-empty array.*shape \(0,\)"):
        stratified_bootstrap_ci([np.ones(3), np.array([])])
    with pytest.raises(ValueError, match=r"strata\[0\].*shape \(2, 2, 2\)"):
        stratified_bootstrap_ci([np.ones((2, 2, 2))])


TABLE = pd.DataFrame(
    [
        ("td3", "E", 0, 100, -5.0),
        ("td3", "E", 0, 200, 10.0),
        ("td3", "E", 1, 200, 20.0),
        ("td3", "E", 1, 100, 0.0),
        ("ddpg", "E", 0, 200, 1.0),
    ],
    columns=["algo", "env", "seed", "timestep", "mean_return"],
)


def test_summary_scores_each_runs_last_evaluations():
    assert final_returns(TABLE)["mean_return"].tolist() == [1.0, 10.0, 20.0]
    assert last_evaluations(TABLE, 1)["mean_return"].tolist() == [1.0, 10.0, 20.0]
    assert run_scores(TABLE[TABLE.algo == "td3"]).tolist() == [[-5.0, 10.0], [0.0, 20.0]]
    summary = summarize(TABLE).set_index("algo")  # last 5: both evaluations of each td3 run
    assert summary.loc["td3", "last"] == 2 and summary.loc["td3", "runs"] == 2
    assert summary.loc["td3", "iqm"] == 5.0  # IQM of -5, 0, 10, 20: the middle two
    assert summary.loc["td3", "mean"] == 15.0 and summary.loc["td3", "std"] == 5.0  # final returns 10 and 20
    assert summary.loc["ddpg", "iqm"] == summary.loc["ddpg", "iqm_low"] == 1.0
    finals_only = summarize(TABLE, last=1).set_index("algo")  # the final evaluation alone
    assert finals_only.loc["td3", "iqm"] == 15.0
    assert (finals_only.loc["td3", "iqm_low"], finals_only.loc["td3", "iqm_high"]) == (10.0, 20.0)
    with pytest.raises(ValueError, match="last must be a positive int, got 0"):
        summarize(TABLE, last=0)


def test_runs_of_unequal_length_are_scored_on_the_same_number_of_evaluations():
    table = pd.concat([TABLE, pd.DataFrame([("td3", "E", 0, 300, 30.0)], columns=TABLE.columns)])
    assert run_scores(table[table.algo == "td3"]).tolist() == [[10.0, 30.0], [0.0, 20.0]]


def test_summary_table_leads_with_the_iqm_of_the_last_evaluations():
    text = summary_markdown(summarize(TABLE), command="rlkit-td3 compare ...")
    header = next(line for line in text.splitlines() if line.startswith("| algo"))
    assert header.index("IQM") < header.index("final return")
    assert "| td3 | 2 | 200 | 5.0 [" in text and "(last 2) | 15.0 ± 5.0 |" in text


def test_iqm_difference_interval_separates_only_groups_that_differ():
    rng = np.random.default_rng(0)
    same = rng.normal(500.0, 200.0, size=(5, 5)), rng.normal(500.0, 200.0, size=(5, 5))
    difference, low, high = iqm_difference_ci(*same, seed=1)
    assert low < 0.0 < high and low < difference < high
    apart = rng.normal(1000.0, 20.0, size=(5, 5)), rng.normal(500.0, 20.0, size=(5, 5))
    difference, low, high = iqm_difference_ci(*apart, seed=1)
    assert 450.0 < low < difference < high < 550.0
    assert iqm_difference_ci(*apart, seed=1) == (difference, low, high)  # seeded


def test_iqm_difference_resamples_runs_as_units():
    """One group's runs sit at 0 and 10 (twenty evaluations each), the other's at 5: a run-level resample can
    draw (0, 0) or (10, 10), so the interval must reach about -5 and +5."""
    first, second = np.array([[0.0] * 20, [10.0] * 20]), np.full((2, 20), 5.0)
    difference, low, high = iqm_difference_ci(first, second, seed=0)
    assert difference == 0.0 and (low, high) == (-5.0, 5.0)
    with pytest.raises(ValueError, match=r"second must be a non-empty array.*shape \(0,\)"):
        iqm_difference_ci(first, np.array([]))

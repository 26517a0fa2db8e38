"""The comparison statistics: IQM, the stratified bootstrap CI, the curve band, the summary table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rlkit_td3.experiments.stats import final_returns, iqm, mean_ci_band, stratified_bootstrap_ci, summarize


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


def test_summary_uses_each_runs_last_evaluation():
    rows = [
        ("td3", "E", 0, 100, -5.0),
        ("td3", "E", 0, 200, 10.0),
        ("td3", "E", 1, 200, 20.0),
        ("td3", "E", 1, 100, 0.0),
        ("ddpg", "E", 0, 200, 1.0),
    ]
    table = pd.DataFrame(rows, columns=["algo", "env", "seed", "timestep", "mean_return"])
    assert final_returns(table)["mean_return"].tolist() == [1.0, 10.0, 20.0]
    summary = summarize(table).set_index("algo")
    assert summary.loc["td3", "mean"] == 15.0 and summary.loc["td3", "std"] == 5.0 and summary.loc["td3", "runs"] == 2
    assert summary.loc["td3", "iqm_low"] == 10.0 and summary.loc["td3", "iqm_high"] == 20.0
    assert summary.loc["ddpg", "iqm"] == summary.loc["ddpg", "iqm_low"] == 1.0

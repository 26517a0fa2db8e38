"""The demo's learning curve (``make demo``): its evaluation band says what it is and stays within what
Pendulum-v1 can score."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from rlkit_td3.demo import DEMO_RETURN_RANGE, evaluation_band, learning_curve_figure, plot_curve


def test_pendulum_returns_are_at_most_zero_and_at_least_200_worst_steps():
    low, high = DEMO_RETURN_RANGE
    assert high == 0.0
    assert np.isclose(low, -200 * 16.2736044, rtol=1e-6)


def test_the_band_is_mean_plus_minus_std_clipped_to_the_scorable_range():
    means, stds = np.array([-1200.0, -150.0, -20.0]), np.array([100.0, 100.0, 60.0])
    low, high = evaluation_band(means, stds)
    assert low.tolist() == [-1300.0, -250.0, -80.0]
    assert high.tolist() == [-1100.0, -50.0, 0.0]  # -20 + 60 would be above what Pendulum can score
    low, _ = evaluation_band(np.array([-3200.0]), np.array([200.0]))
    assert low.tolist() == [DEMO_RETURN_RANGE[0]]


def test_the_figure_labels_the_band_and_keeps_it_at_or_below_zero(tmp_path):
    points = [(1000, -1200.0, 300.0), (2000, -40.0, 90.0)]
    fig = learning_curve_figure(points, episodes=[(200, -1500.0), (400, -900.0)])
    try:
        _, labels = fig.axes[0].get_legend_handles_labels()
        assert "±1 std over those 5 episodes (clipped at 0)" in labels
        (band,) = fig.axes[0].collections
        assert max(path.vertices[:, 1].max() for path in band.get_paths()) <= 0.0
    finally:
        plt.close(fig)
    plot_curve(points, [], tmp_path / "curve.png")
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

"""rlkit_td3.results_plotter: SB3's pyplot learning curves over monitor.csv files."""

from __future__ import annotations

import json

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from rlkit_td3 import monitor  # noqa: E402
from rlkit_td3.results_plotter import (  # noqa: E402
    X_EPISODES,
    X_TIMESTEPS,
    X_WALLTIME,
    plot_curves,
    plot_results,
    rolling_window,
    ts2xy,
    window_func,
)


def _write_monitor(path, t_start: float, rows: list[tuple[float, int, float]]) -> None:
    """A monitor file in SB3's format: a JSON header line, ``r,l,t``, one row per episode."""
    lines = ["#" + json.dumps({"t_start": t_start, "env_id": "Test-v0"}), "r,l,t"]
    lines += [f"{r},{length},{t}" for r, length, t in rows]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture()
def runs(tmp_path):
    """Two run folders; the first has two monitor files whose episodes interleave in time."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    rng = np.random.default_rng(0)
    rows_0 = [(float(rng.normal()), int(rng.integers(5, 20)), 10.0 * i + 1) for i in range(8)]
    rows_1 = [(float(rng.normal()), int(rng.integers(5, 20)), 10.0 * i + 6) for i in range(7)]
    _write_monitor(a / "0.monitor.csv", 1000.0, rows_0)
    _write_monitor(a / "1.monitor.csv", 1000.0, rows_1)
    _write_monitor(b / "monitor.csv", 2000.0, [(float(rng.normal()), 10, 3600.0 * (i + 1)) for i in range(4)])
    return a, b, sorted(rows_0 + rows_1, key=lambda row: row[2])


def test_ts2xy_each_axis(runs):
    a, _, rows = runs
    data = monitor.load_results(a)
    returns = np.array([r for r, _, _ in rows])
    x, y = ts2xy(data, X_TIMESTEPS)
    np.testing.assert_array_equal(x, np.cumsum([length for _, length, _ in rows]))
    np.testing.assert_array_equal(y, returns)
    x, y = ts2xy(data, X_EPISODES)
    np.testing.assert_array_equal(x, np.arange(15))  # SB3 counts episodes from 0
    np.testing.assert_array_equal(y, returns)
    x, y = ts2xy(data, X_WALLTIME)
    np.testing.assert_allclose(x, [t / 3600.0 for _, _, t in rows])
    np.testing.assert_array_equal(y, returns)
    with pytest.raises(ValueError, match="x_axis must be one of timesteps, episodes, walltime_hrs, got 'steps'"):
        ts2xy(data, "steps")


@pytest.mark.parametrize("func", [np.mean, np.max, np.median, np.std])
def test_window_func_against_brute_force(func):
    rng = np.random.default_rng(1)
    x, y = np.arange(12) * 3.0, rng.normal(size=12)
    for window in range(1, 13):
        got_x, got_y = window_func(x, y, window, func)
        want_y = [func(y[end - window + 1 : end + 1]) for end in range(window - 1, 12)]
        np.testing.assert_array_equal(got_x, x[window - 1 :])
        np.testing.assert_allclose(got_y, want_y, rtol=1e-12)


def test_window_bounds():
    with pytest.raises(ValueError, match="window=4 is longer than the 3 values"):
        window_func(np.arange(3), np.arange(3), 4, np.mean)
    with pytest.raises(ValueError, match="window must be a positive int, got 0"):
        rolling_window(np.arange(3), 0)
    with pytest.raises(ValueError, match="same length"):
        window_func(np.arange(3), np.arange(4), 2, np.mean)
    assert rolling_window(np.arange(4), 2).tolist() == [[0, 1], [1, 2], [2, 3]]


def test_plot_results_draws_on_the_task_figure(runs):
    a, b, _ = runs
    figure = plt.figure("Pendulum", figsize=(5, 3))
    plot_results([a, b], None, X_TIMESTEPS, "Pendulum", window=3)
    assert plt.gcf() is figure
    (ax,) = figure.axes
    expected = [ts2xy(monitor.load_results(folder), X_TIMESTEPS) for folder in (a, b)]
    assert len(ax.collections) == 2 and len(ax.lines) == 2
    for scatter, line, (x, y) in zip(ax.collections, ax.lines, expected):
        np.testing.assert_array_equal(scatter.get_offsets(), np.column_stack([x, y]))
        want_x, want_y = window_func(x, y, 3, np.mean)
        np.testing.assert_array_equal(line.get_xdata(), want_x)
        np.testing.assert_allclose(line.get_ydata(), want_y)
    assert ax.get_title() == "Pendulum" and ax.get_xlabel() == X_TIMESTEPS
    assert ax.get_xlim() == (0.0, float(max(x[-1] for x, _ in expected)))
    assert tuple(figure.get_size_inches()) == (5.0, 3.0)  # an existing figure is reused as it is


def test_plot_results_new_figure_and_short_curves(runs):
    a, b, _ = runs
    plot_results([a, b], None, X_EPISODES, "walker", figsize=(4, 2), window=5)
    figure = plt.gcf()
    assert figure.get_label() == "walker" and tuple(figure.get_size_inches()) == (4.0, 2.0)
    (ax,) = figure.axes
    # b has 4 episodes: fewer than the window, so only its dots are drawn (SB3's rule).
    assert len(ax.collections) == 2 and len(ax.lines) == 1
    np.testing.assert_array_equal(ax.lines[0].get_xdata(), np.arange(4, 15))


def test_plot_results_default_window_is_100(runs):
    a, _, _ = runs
    plot_results([a], None, X_WALLTIME, "t")
    assert len(plt.gcf().axes[0].lines) == 0  # 15 episodes < EPISODES_WINDOW


def test_plot_results_num_timesteps(runs):
    a, _, rows = runs
    limit = int(np.cumsum([length for _, length, _ in rows])[5])
    plot_results(str(a), limit, X_TIMESTEPS, "cut", window=2)
    offsets = plt.gcf().axes[0].collections[0].get_offsets()
    assert len(offsets) == 6 and offsets[-1, 0] == limit


def test_plot_results_validation(runs, tmp_path):
    a, _, _ = runs
    with pytest.raises(ValueError, match="x_axis must be one of"):
        plot_results([a], None, "hours", "x")
    with pytest.raises(ValueError, match="num_timesteps must be None or an int >= 0, got -1"):
        plot_results([a], -1, X_TIMESTEPS, "x")
    with pytest.raises(FileNotFoundError, match="monitor.csv"):
        plot_results([tmp_path], None, X_TIMESTEPS, "x")
    with pytest.raises(ValueError, match="xy_list must hold at least one"):
        plot_curves([], X_TIMESTEPS, "x")


def test_monitor_png_writer_still_available(runs, tmp_path):
    a, _, _ = runs
    out = monitor.plot_results([a], path=tmp_path / "curve.png", window=3)
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert isinstance(monitor.load_results(a), pd.DataFrame)

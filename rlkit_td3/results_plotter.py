"""Learning curves of ``monitor.csv`` files drawn with pyplot, as Stable-Baselines3's ``results_plotter``.

The names, arguments and behaviour follow ``stable_baselines3.common.results_plotter`` (SB3 2.9), so
``from rlkit_td3.results_plotter import plot_results`` replaces the SB3 import: `plot_results()` draws
on the pyplot figure named after ``task_name`` (made if missing) and leaves it current, for the caller to
``plt.show()`` or ``plt.savefig(...)``. The data come from `rlkit_td3.monitor.load_results()`.

To write a PNG without pyplot (no global figure state, no display), use
`rlkit_td3.monitor.plot_results()` instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import numpy as np

try:
    import pandas as pd
except ImportError as exc:  # an optional dependency (the "plot" extra), as in SB3
    raise ImportError(
        "pandas is required for plotting (rlkit_td3.results_plotter): pip install pandas matplotlib"
    ) from exc
try:
    from matplotlib import pyplot as plt
except ImportError as exc:
    raise ImportError(
        "matplotlib is required for plotting (rlkit_td3.results_plotter): pip install pandas matplotlib"
    ) from exc

from rlkit_td3.monitor import load_results

X_TIMESTEPS = "timesteps"
"""x axis: the cumulated episode lengths (env timesteps at each episode's end)."""
X_EPISODES = "episodes"
"""x axis: the episode index, from 0."""
X_WALLTIME = "walltime_hrs"
"""x axis: each episode's end in hours since the earliest monitor file started."""
POSSIBLE_X_AXES = [X_TIMESTEPS, X_EPISODES, X_WALLTIME]
"""The x axes `ts2xy()` accepts."""
EPISODES_WINDOW = 100
"""Episodes in the rolling mean drawn by `plot_curves()` (SB3's value)."""


def _check_window(window: int, length: int | None = None) -> int:
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise ValueError(f"window must be a positive int, got {window!r}")
    if length is not None and window > length:
        raise ValueError(f"window={window} is longer than the {length} values it slides over")
    return int(window)


def rolling_window(array: np.ndarray, window: int) -> np.ndarray:
    """A read-only view of every ``window`` consecutive values along the last axis.

    Args:
        array: the values; the windows slide over its last axis.
        window: the window length, 1 to ``array.shape[-1]``.

    Returns:
        Shape ``array.shape[:-1] + (array.shape[-1] - window + 1, window)``.

    Raises:
        ValueError: ``window`` is not an int in that range.
    """
    array = np.asarray(array)
    window = _check_window(window, array.shape[-1])
    return np.lib.stride_tricks.sliding_window_view(array, window, axis=-1)


def window_func(
    var_1: np.ndarray, var_2: np.ndarray, window: int, func: Callable[..., np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Apply ``func`` over each window of ``window`` consecutive ``var_2`` values.

    Args:
        var_1: the x values, as long as ``var_2``.
        var_2: the y values.
        window: the window length, 1 to ``len(var_2)``.
        func: a reduction called as ``func(windows, axis=-1)``, e.g. ``np.mean``.

    Returns:
        ``(x, y)``: ``x`` is ``var_1`` at each window's last value (``var_1[window - 1:]``), ``y`` is
        ``func`` of the window ending there.

    Raises:
        ValueError: ``window`` out of range, or ``var_1`` and ``var_2`` of different lengths.
    """
    var_1, var_2 = np.asarray(var_1), np.asarray(var_2)
    if len(var_1) != len(var_2):
        raise ValueError(f"var_1 and var_2 must have the same length, got {len(var_1)} and {len(var_2)}")
    windows = rolling_window(var_2, window)
    return var_1[window - 1 :], func(windows, axis=-1)


def ts2xy(data_frame: pd.DataFrame, x_axis: str) -> tuple[np.ndarray, np.ndarray]:
    """Split `load_results()` output into the x values and the episode returns.

    Args:
        data_frame: columns ``r`` (return), ``l`` (length) and ``t`` (seconds since the start).
        x_axis: `X_TIMESTEPS` (cumulated lengths), `X_EPISODES` (0, 1, 2, ...) or
            `X_WALLTIME` (``t`` in hours).

    Returns:
        ``(x, returns)``, two arrays of one value per episode.

    Raises:
        ValueError: an unknown ``x_axis``.
    """
    if x_axis == X_TIMESTEPS:
        x = np.cumsum(data_frame["l"].to_numpy())
    elif x_axis == X_EPISODES:
        x = np.arange(len(data_frame))
    elif x_axis == X_WALLTIME:
        x = data_frame["t"].to_numpy() / 3600.0
    else:
        raise ValueError(f"x_axis must be one of {', '.join(POSSIBLE_X_AXES)}, got {x_axis!r}")
    return x, data_frame["r"].to_numpy()


def plot_curves(
    xy_list: Sequence[tuple[np.ndarray, np.ndarray]],
    x_axis: str,
    title: str,
    figsize: tuple[float, float] = (8, 2),
    window: int = EPISODES_WINDOW,
) -> None:
    """Draw each ``(x, returns)`` pair on the pyplot figure named ``title``: the returns as dots and, for a
    curve with at least ``window`` episodes, their rolling mean as a line.

    The figure (``plt.figure(title, figsize=figsize)``: an existing figure of that name is reused as it
    is) is left current.

    Args:
        xy_list: one ``(x, returns)`` pair per curve, e.g. from `ts2xy()`.
        x_axis: the x label.
        title: the figure's name and title.
        figsize: the size in inches of a new figure.
        window: episodes in the rolling mean (SB3 always uses `EPISODES_WINDOW`).

    Raises:
        ValueError: ``xy_list`` is empty or ``window`` is not a positive int.
    """
    if len(xy_list) == 0:
        raise ValueError("xy_list must hold at least one (x, y) pair, got none")
    window = _check_window(window)
    plt.figure(title, figsize=figsize)
    for x, y in xy_list:
        plt.scatter(x, y, s=2)
        if len(x) >= window:
            plt.plot(*window_func(x, y, window, np.mean))
    max_x = max((float(x[-1]) for x, _ in xy_list if len(x)), default=0.0)
    if max_x > 0:
        plt.xlim(0, max_x)
    plt.title(title)
    plt.xlabel(x_axis)
    plt.ylabel("Episode Rewards")
    plt.tight_layout()


def plot_results(
    dirs: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    num_timesteps: int | None,
    x_axis: str,
    task_name: str,
    figsize: tuple[float, float] = (8, 2),
    window: int = EPISODES_WINDOW,
) -> None:
    """Draw the learning curves of monitor folders with `plot_curves()` (one curve per folder).

    Args:
        dirs: folders holding ``*monitor.csv`` files (a single folder is also accepted).
        num_timesteps: only the episodes that end within this many timesteps; ``None`` for all. An integral
            float (``1e5``) is accepted, as in SB3.
        x_axis: `X_TIMESTEPS`, `X_EPISODES` or `X_WALLTIME`.
        task_name: the figure's name and title.
        figsize: the size in inches of a new figure.
        window: episodes in the rolling mean.

    Raises:
        FileNotFoundError: a folder holds no monitor file.
        ValueError: an unknown ``x_axis``, a bad ``window`` or a negative ``num_timesteps``.
    """
    if isinstance(num_timesteps, (float, np.floating)) and float(num_timesteps).is_integer():
        num_timesteps = int(num_timesteps)  # e.g. 1e5, as SB3's examples write it
    if num_timesteps is not None and (
        isinstance(num_timesteps, bool) or not isinstance(num_timesteps, (int, np.integer)) or num_timesteps < 0
    ):
        raise ValueError(f"num_timesteps must be None or an int >= 0, got {num_timesteps!r}")
    if x_axis not in POSSIBLE_X_AXES:
        raise ValueError(f"x_axis must be one of {', '.join(POSSIBLE_X_AXES)}, got {x_axis!r}")
    folders = [dirs] if isinstance(dirs, (str, os.PathLike)) else list(dirs)
    xy_list = []
    for folder in folders:
        data = load_results(folder)
        if num_timesteps is not None:
            data = data[data["l"].cumsum() <= num_timesteps]
        xy_list.append(ts2xy(data, x_axis))
    plot_curves(xy_list, x_axis, task_name, figsize, window)


__all__ = [
    "EPISODES_WINDOW",
    "POSSIBLE_X_AXES",
    "X_EPISODES",
    "X_TIMESTEPS",
    "X_WALLTIME",
    "plot_curves",
    "plot_results",
    "rolling_window",
    "ts2xy",
    "window_func",
]

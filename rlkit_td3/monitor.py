"""Episode monitoring: the ``Monitor`` wrapper, ``monitor.csv`` files, and learning-curve plots.

``monitor.csv`` follows Stable-Baselines3's format, so files from either library load with either:
a first line ``#{"t_start": <unix time>, "env_id": "<id>"}``, then a CSV header ``r,l,t`` and one row
per episode (return, length, seconds since ``t_start``).
"""

from __future__ import annotations

import io
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import gymnasium as gym
import numpy as np

from rlkit_td3.checks.arguments import check_bool
from rlkit_td3.fileio.file_reader import parse_json
from rlkit_td3.fileio.serialization import atomic_write

if TYPE_CHECKING:
    import pandas as pd

MONITOR_SUFFIX = "monitor.csv"
X_AXES = ("timesteps", "episodes", "walltime_hrs")
"""The x axes `plot_results()` accepts."""


class LoadMonitorResultsError(FileNotFoundError):
    """`load_results()` found no monitor file (SB3's exception; here also a ``FileNotFoundError``)."""


class Monitor(gym.Wrapper):
    """Records each episode's return, length and wall time; optionally appends them to ``monitor.csv``.

    At the end of an episode the step's ``info`` gets ``info["episode"] = {"r": return, "l": length,
    "t": seconds since the wrapper was made}``, plus the ``reset_keywords`` and ``info_keywords`` values, which
    are also the CSV row's extra columns. The signature is Stable-Baselines3's.

    Args:
        env: the env to wrap.
        filename: ``None`` (no file), a folder (the file is ``<folder>/monitor.csv``) or a path prefix
            (``"logs/run"`` → ``logs/run.monitor.csv``).
        allow_early_resets: allow ``reset()`` before the episode ends; if False such a reset raises
            ``RuntimeError``.
        reset_keywords: keyword arguments every ``reset()`` must get; their values are recorded per episode.
        info_keywords: keys of the final step's ``info`` to add as CSV columns.
        override_existing: start a new file (True) or append to an existing one (False).

    Raises:
        RuntimeError: (in ``step``) the episode ended and ``reset()`` was not called; (in ``reset``) an early
            reset with ``allow_early_resets=False``.
        ValueError: (in ``reset``) a ``reset_keywords`` argument is missing.
    """

    def __init__(
        self,
        env: gym.Env,
        filename: str | os.PathLike[str] | None = None,
        allow_early_resets: bool = True,
        reset_keywords: Sequence[str] = (),
        info_keywords: Sequence[str] = (),
        override_existing: bool = True,
    ) -> None:
        override_existing = check_bool("override_existing", override_existing)
        super().__init__(env)
        self.t_start = time.time()
        self.allow_early_resets = allow_early_resets
        self.reset_keywords = tuple(reset_keywords)
        self.info_keywords = tuple(info_keywords)
        self.needs_reset = True
        self.current_reset_info: dict[str, Any] = {}
        self._file: TextIO | None = None
        self.path: Path | None = None
        if filename is not None:
            self.path = _monitor_path(filename)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if override_existing or not self.path.exists():
                env_id = env.spec.id if env.spec is not None else None
                header = "#" + json.dumps({"t_start": self.t_start, "env_id": env_id}) + "\n"
                header += ",".join(("r", "l", "t", *self.reset_keywords, *self.info_keywords)) + "\n"
                with atomic_write(self.path) as fh:
                    fh.write(header.encode())
            self._file = open(self.path, "a")  # noqa: SIM115 - closed in close()
        self._rewards: list[float] = []
        self.episode_returns: list[float] = []
        self.episode_lengths: list[int] = []
        self.episode_times: list[float] = []
        self.total_steps = 0

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        if not self.allow_early_resets and not self.needs_reset:
            raise RuntimeError(
                "Tried to reset an environment before done. If you want to allow early resets, "
                "wrap your env with Monitor(env, path, allow_early_resets=True)"
            )
        for key in self.reset_keywords:
            if kwargs.get(key) is None:
                raise ValueError(f"Expected you to pass keyword argument {key} into reset")
            self.current_reset_info[key] = kwargs[key]
        self._rewards = []
        self.needs_reset = False
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self.needs_reset:
            raise RuntimeError("Tried to step environment that needs reset")
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._rewards.append(float(reward))
        self.total_steps += 1
        if terminated or truncated:
            self.needs_reset = True
            ep_return, ep_len = round(sum(self._rewards), 6), len(self._rewards)
            ep_time = round(time.time() - self.t_start, 6)
            info = dict(info)
            extra = {**self.current_reset_info, **{key: info.get(key, "") for key in self.info_keywords}}
            info["episode"] = {"r": ep_return, "l": ep_len, "t": ep_time, **extra}
            self.episode_returns.append(ep_return)
            self.episode_lengths.append(ep_len)
            self.episode_times.append(ep_time)
            if self._file is not None:
                cells = [str(extra[key]) for key in (*self.reset_keywords, *self.info_keywords)]
                self._file.write(",".join([repr(ep_return), str(ep_len), repr(ep_time), *cells]) + "\n")
                self._file.flush()
            self._rewards = []
        return obs, reward, terminated, truncated, info

    def get_episode_rewards(self) -> list[float]:
        """Returns of the finished episodes."""
        return list(self.episode_returns)

    def get_episode_lengths(self) -> list[int]:
        """Lengths of the finished episodes."""
        return list(self.episode_lengths)

    def get_episode_times(self) -> list[float]:
        """Wall times (seconds since the wrapper was made) at which the finished episodes ended."""
        return list(self.episode_times)

    def get_total_steps(self) -> int:
        """Steps taken through this wrapper."""
        return self.total_steps

    def close(self) -> None:
        super().close()
        if self._file is not None:
            self._file.close()
            self._file = None


def _monitor_path(filename: str | os.PathLike[str]) -> Path:
    path = Path(filename)
    if path.is_dir() or str(filename).endswith(os.sep):
        return path / MONITOR_SUFFIX
    if not path.name.endswith(MONITOR_SUFFIX):
        return path.with_name(f"{path.name}.{MONITOR_SUFFIX}")
    return path


def is_monitored(env: gym.Env) -> bool:
    """Whether ``env`` has a `Monitor` anywhere in its wrapper chain."""
    while isinstance(env, gym.Wrapper):
        if isinstance(env, Monitor):
            return True
        env = env.env
    return False


def get_monitor_files(path: str | os.PathLike[str]) -> list[str]:
    """The paths (strings, as in SB3) of the ``*monitor.csv`` files in folder ``path``, sorted."""
    return sorted(str(file) for file in Path(path).glob(f"*{MONITOR_SUFFIX}"))


def _pandas(purpose: str) -> Any:
    """pandas, imported on first use: the module works without it (as SB3's), its readers need it."""
    try:
        import pandas
    except ImportError as exc:
        raise ImportError(f"pandas is required for {purpose} (rlkit_td3.monitor): pip install pandas") from exc
    return pandas


def load_results(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read every ``*monitor.csv`` in folder ``path`` into one DataFrame sorted by wall time.

    Returns:
        As SB3's: columns ``index`` (the row's number in its file), ``r`` (return), ``l`` (length), ``t``
        (seconds since the earliest file's start) and any extra columns the files hold.

    Raises:
        LoadMonitorResultsError: the folder holds no monitor file (a ``FileNotFoundError``).
    """
    pd = _pandas("loading results")
    files = get_monitor_files(path)
    if not files:
        raise LoadMonitorResultsError(f"No monitor files of the form *{MONITOR_SUFFIX} found in {str(path)!r}")
    frames, starts = [], []
    for file in files:
        with open(file) as fh:
            first = fh.readline()
            if not first.startswith("#"):
                raise ValueError(f"{file} is not a monitor file: its first line is not a '#{{...}}' header")
            header = parse_json(first[1:], f"{file}: header")
            frame = pd.read_csv(fh)
        frame["t"] += header["t_start"]
        starts.append(header["t_start"])
        frames.append(frame)
    non_empty = [frame for frame in frames if not frame.empty] or frames[:1]  # pandas warns on empty frames
    data = pd.concat(non_empty).sort_values("t").reset_index()
    data["t"] -= min(starts)
    return data


def ts2xy(data: pd.DataFrame, x_axis: str) -> tuple[np.ndarray, np.ndarray]:
    """Turn `load_results()` output into ``(x, returns)`` for ``x_axis`` in `X_AXES`.

    Raises:
        ValueError: an unknown ``x_axis``.
    """
    if x_axis == "timesteps":
        x = np.cumsum(data["l"].to_numpy())
    elif x_axis == "episodes":
        x = np.arange(1, len(data) + 1)
    elif x_axis == "walltime_hrs":
        x = data["t"].to_numpy() / 3600.0
    else:
        raise ValueError(f"x_axis must be one of {', '.join(X_AXES)}, got {x_axis!r}")
    return x, data["r"].to_numpy()


def plot_results(
    dirs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    x_axis: str = "timesteps",
    path: str | os.PathLike[str] = "learning_curve.png",
    num_timesteps: int | None = None,
    task_name: str = "",
    window: int = 100,
    figsize: tuple[float, float] = (8.0, 4.0),
) -> Path:
    """Plot the episode returns of one or more monitor folders and their rolling mean into a PNG.

    Stable-Baselines3's pyplot version, with its arguments, is `rlkit_td3.results_plotter.plot_results()`.

    Args:
        dirs: folders holding ``monitor.csv`` files; one curve per folder.
        x_axis: ``"timesteps"``, ``"episodes"`` or ``"walltime_hrs"``.
        path: the PNG to write (atomically).
        num_timesteps: only plot episodes that end within this many timesteps.
        task_name: the plot title.
        window: episodes in the rolling mean (fewer while there are not enough episodes yet).
        figsize: the figure size in inches.

    Returns:
        The path of the PNG.

    Raises:
        ValueError: an unknown ``x_axis`` or a ``window`` below 1.
        FileNotFoundError: a folder without monitor file.
    """
    from matplotlib.figure import Figure  # no pyplot: no global state, no display needed

    if x_axis not in X_AXES:
        raise ValueError(f"x_axis must be one of {', '.join(X_AXES)}, got {x_axis!r}")
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise ValueError(f"window must be a positive int, got {window!r}")
    folders = [dirs] if isinstance(dirs, (str, os.PathLike)) else list(dirs)
    fig = Figure(figsize=figsize)
    ax = fig.add_subplot()
    for folder in folders:
        data = load_results(folder)
        if num_timesteps is not None:
            data = data[np.cumsum(data["l"].to_numpy()) <= num_timesteps]
        x, y = ts2xy(data, x_axis)
        mean = _pandas("plotting").Series(y).rolling(window, min_periods=1).mean().to_numpy()
        (line,) = ax.plot(x, mean, label=f"{Path(folder).name} (mean of {window})")
        ax.scatter(x, y, s=4, alpha=0.3, color=line.get_color())
    ax.set_xlabel({"timesteps": "timesteps", "episodes": "episodes", "walltime_hrs": "wall time (hours)"}[x_axis])
    ax.set_ylabel("episode return")
    ax.set_title(task_name)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    out = Path(path)
    with atomic_write(out) as fh:
        fh.write(buf.getvalue())
    return out


__all__ = [
    "X_AXES",
    "LoadMonitorResultsError",
    "Monitor",
    "get_monitor_files",
    "is_monitored",
    "load_results",
    "plot_results",
    "ts2xy",
]

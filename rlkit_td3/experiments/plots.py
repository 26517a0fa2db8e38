"""Learning-curve plots of a comparison: one PNG per env, the mean return over seeds per algo with a band: a
bootstrap 95 % confidence band of the mean with 5 runs or more, the range of the runs (lowest to highest) with
fewer."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from rlkit_td3.experiments.stats import MIN_RUNS_FOR_INTERVAL, mean_ci_band
from rlkit_td3.fileio.serialization import atomic_path


def _file_name(env: str) -> str:
    return "learning_curve_" + re.sub(r"[^A-Za-z0-9_.-]+", "_", env) + ".png"


def plot_learning_curves(results: pd.DataFrame, out_dir: str | Path) -> list[Path]:
    """Write ``learning_curve_<env>.png`` for each env of a ``results.csv`` table.

    Each algo's line is the mean over its seeds of the evaluation return at each timestep that all its seeds
    reached; the band is the 95 % percentile-bootstrap CI of that mean with ``MIN_RUNS_FOR_INTERVAL`` seeds or
    more, and the range of the seeds' returns (lowest to highest) with fewer, where a bootstrap interval would
    claim a confidence it does not have (none with a single seed). The legend says which.

    Returns:
        The PNG paths, in env order.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for env, by_env in results.groupby("env", sort=True):
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for algo, by_algo in by_env.groupby("algo", sort=True):
            table = by_algo.pivot_table(index="seed", columns="timestep", values="mean_return").dropna(axis=1)
            if table.shape[1] == 0:
                continue
            steps = table.columns.to_numpy(dtype=np.int64)
            curves = table.to_numpy(dtype=np.float64)
            if len(curves) >= MIN_RUNS_FOR_INTERVAL:
                (low, high), band = mean_ci_band(curves), "; band: 95 % CI of the mean"
            else:
                low, high, band = curves.min(axis=0), curves.max(axis=0), "; band: range" * (len(curves) > 1)
            runs = f"{len(table.index)} seeds{band}" if len(table.index) > 1 else f"seed {table.index[0]}"
            (line,) = ax.plot(steps, curves.mean(axis=0), label=f"{algo.upper()} ({runs})")
            ax.fill_between(steps, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
        ax.set_title(env)
        ax.set_xlabel("env timesteps")
        ax.set_ylabel("evaluation return")
        ax.grid(alpha=0.3)
        ax.legend(loc="best")
        fig.tight_layout()
        path = out_dir / _file_name(str(env))
        with atomic_path(path, suffix=".png") as tmp:
            fig.savefig(tmp, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths

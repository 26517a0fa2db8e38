"""The outputs of a tuning study: ``trials.csv``, ``best_preset.toml``, the optimization-history and
parameter-importance plots, and ``summary.md``. Every file is written atomically, from the whole study (the trials
of every process that worked on it)."""

from __future__ import annotations

import io
import json
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rlkit_td3.experiments.presets import _DDPG_SWITCHES, HYPERPARAMETERS
from rlkit_td3.fileio.serialization import atomic_write

TRIALS_FILE = "trials.csv"
PRESET_FILE = "best_preset.toml"
SUMMARY_FILE = "summary.md"
HISTORY_PLOT = "optimization_history"
IMPORTANCE_PLOT = "param_importances"


@dataclass
class TuningResult:
    """What `tune()` returns.

    Attributes:
        study: the Optuna study (all its trials, also those of other processes).
        best_number: the best trial's number (``None`` when no trial completed).
        best_value: its value, the mean of its last evaluations.
        best_hyperparameters: its complete hyperparameters (preset keys).
        preset_path: the best trial written as a preset file (``train --preset FILE``), or ``None``.
        files: every output file written.
    """

    study: Any
    best_number: int | None
    best_value: float | None
    best_hyperparameters: dict[str, Any] | None
    preset_path: Path | None
    files: list[Path] = field(default_factory=list)


def _write(path: Path, data: str | bytes) -> Path:
    with atomic_write(path) as fh:
        fh.write(data.encode() if isinstance(data, str) else data)
    return path


def trials_table(study: Any) -> pd.DataFrame:
    """One row per trial: ``number, state, value, duration_s, steps, retry_of, error`` and one column per searched
    value (``params_<name>``)."""
    rows = []
    for trial in study.get_trials(deepcopy=False):
        row = {
            "number": trial.number,
            "state": trial.state.name,
            "value": trial.value if trial.state.name == "COMPLETE" else math.nan,
            "duration_s": trial.duration.total_seconds() if trial.duration is not None else math.nan,
            "steps": trial.user_attrs.get("steps", math.nan),
            "retry_of": trial.system_attrs.get("failed_trial", math.nan),
            "error": trial.user_attrs.get("error", ""),
        }
        row.update({f"params_{name}": value for name, value in trial.params.items()})
        rows.append(row)
    columns = ["number", "state", "value", "duration_s", "steps", "retry_of", "error"]
    table = pd.DataFrame(rows, columns=None if rows else columns)
    for column in ("steps", "retry_of"):
        table[column] = table[column].astype("Int64")  # whole numbers, empty where missing
    return table


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return (
            repr(value) if math.isfinite(value) else ("nan" if math.isnan(value) else ("inf" if value > 0 else "-inf"))
        )
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} to TOML")


def preset_text(algo: str, hyperparameters: dict[str, Any], source: str) -> str:
    """A preset file holding ``hyperparameters`` for every env of ``algo`` (``[ALGO.default]``)."""
    lines = [
        "# A preset written by rlkit-td3 tune: train with it by",
        "#   rlkit-td3 train --algo ALGO --env ENV --preset THIS_FILE",
        f"source = {_toml_value(source)}",
        "",
        f"[{algo}.default]",
    ]
    for key in HYPERPARAMETERS:
        if key in hyperparameters and not (algo == "ddpg" and key in _DDPG_SWITCHES):
            lines.append(f"{key} = {_toml_value(hyperparameters[key])}")
    return "\n".join(lines) + "\n"


def _png(fig_axes: Any) -> bytes:
    import matplotlib.pyplot as plt

    figure = fig_axes.figure if hasattr(fig_axes, "figure") else fig_axes.flat[0].figure
    figure.set_size_inches(8, 5)
    figure.tight_layout()
    buf = io.BytesIO()
    figure.savefig(buf, format="png", dpi=100)
    plt.close(figure)
    return buf.getvalue()


def write_plots(study: Any, out: Path) -> tuple[list[Path], list[str]]:
    """Optuna's optimization history and parameter importances, as PNG (matplotlib) and, when plotly is
    installed, HTML. Returns the files and, for each plot that could not be drawn, why."""
    import matplotlib

    matplotlib.use("Agg")
    import optuna
    from optuna.importance import PedAnovaImportanceEvaluator
    from optuna.visualization import matplotlib as optuna_mpl

    files, notes = [], []
    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    plots = [(HISTORY_PLOT, "plot_optimization_history", {})]
    varied = {name for t in complete for name in t.params if len({repr(u.params.get(name)) for u in complete}) > 1}
    if len(complete) >= 2 and varied:
        # PED-ANOVA needs no scikit-learn (Optuna's default, fANOVA, does)
        plots.append((IMPORTANCE_PLOT, "plot_param_importances", {"evaluator": PedAnovaImportanceEvaluator()}))
    else:
        notes.append(f"{IMPORTANCE_PLOT}.png: needs at least 2 complete trials with different values")
    for name, function, kwargs in plots:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the matplotlib backend is marked experimental
            try:
                files.append(_write(out / f"{name}.png", _png(getattr(optuna_mpl, function)(study, **kwargs))))
            except (ValueError, RuntimeError, ZeroDivisionError) as exc:
                notes.append(f"{name}.png: {exc}")
                continue
            try:
                import plotly  # noqa: F401
            except ImportError:
                continue
            figure = getattr(optuna.visualization, function)(study, **kwargs)
            files.append(_write(out / f"{name}.html", figure.to_html(include_plotlyjs=True)))
    return files, notes


def _table(rows: list[list[str]], header: list[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def summary_text(
    study: Any,
    identity: dict[str, Any],
    study_name: str,
    storage: str,
    best: Any,
    files: list[Path],
    notes: list[str],
    source: str | None,
    command: str | None,
) -> str:
    """``summary.md``: what was tuned, the trials by state, the best trial and its hyperparameters, the top 5."""
    table = trials_table(study)
    counts = table["state"].value_counts().to_dict() if not table.empty else {}
    algo, env_id = identity["algo"], identity["env_id"]
    lines = [
        f"# Tuning {algo} on {env_id}",
        "",
        f"Study `{study_name}` in `{storage}`: {len(table)} trials "
        f"({', '.join(f'{n} {s.lower()}' for s, n in sorted(counts.items())) or 'none'}), "
        f"{identity['timesteps']:,} steps each, evaluated every {identity['eval_freq']:,} steps on "
        f"{identity['eval_episodes']} episode(s); a trial's value is the mean of its last evaluations.",
        "",
        f"Preset under the search: `{identity['preset']}`; fixed overrides: `{identity['overrides'] or {}}`.",
        f"Search space: {', '.join(f'`{k}`' for k in identity['space'])}"
        + (f" (built-in space from {source})." if source else "."),
        "",
    ]
    if command:
        lines += [f"Command: `{command}`", ""]
    if best is None:
        lines += ["No trial has completed yet.", ""]
    else:
        lines += [
            f"## Best trial: {best.number}, value {best.value:.2f}",
            "",
            _table([[f"`{k}`", f"`{v}`"] for k, v in best.params.items()], ["searched", "value"]),
            "",
            f"Train with it: `rlkit-td3 train --algo {algo} --env {env_id} --preset {files[0].parent / PRESET_FILE} "
            "--timesteps N`.",
            "",
        ]
        top = table[table["state"] == "COMPLETE"].sort_values("value", ascending=False).head(5)
        lines += [
            "## Top trials",
            "",
            _table(
                [[str(int(r["number"])), f"{r['value']:.2f}", f"{r['duration_s']:.0f}"] for _, r in top.iterrows()],
                ["trial", "value", "seconds"],
            ),
            "",
        ]
    lines += ["## Files", ""] + [f"- `{p.name}`" for p in files] + [f"- not drawn: {n}" for n in notes]
    return "\n".join(lines) + "\n"


def write_outputs(
    study: Any,
    out: str | Path,
    identity: dict[str, Any],
    study_name: str,
    storage: str,
    source: str | None = None,
    command: str | None = None,
) -> Any:
    """Write every output of the study into ``out``; returns a `TuningResult`."""
    out = Path(out)
    files = [_write(out / TRIALS_FILE, trials_table(study).to_csv(index=False))]
    try:
        best = study.best_trial
    except ValueError:
        best = None
    preset_path = None
    if best is not None:
        hyperparameters = best.user_attrs["hyperparameters"]
        note = (
            f"rlkit-td3 tune: study {study_name!r}, trial {best.number} of {identity['algo']} on "
            f"{identity['env_id']} ({identity['timesteps']} steps), value {best.value:.2f}"
        )
        preset_path = _write(out / PRESET_FILE, preset_text(identity["algo"], hyperparameters, note))
        files.append(preset_path)
    plots, notes = write_plots(study, out)
    files += plots
    files.append(out / SUMMARY_FILE)
    _write(out / SUMMARY_FILE, summary_text(study, identity, study_name, storage, best, files, notes, source, command))
    return TuningResult(
        study=study,
        best_number=None if best is None else best.number,
        best_value=None if best is None else float(best.value),
        best_hyperparameters=None if best is None else dict(best.user_attrs["hyperparameters"]),
        preset_path=preset_path,
        files=files,
    )

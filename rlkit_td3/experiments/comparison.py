"""Compare algorithms over envs × seeds: run the grid (resumably), then write a table, a summary and plots.

``compare(["td3", "ddpg"], ["HopperBulletEnv-v0"], seeds=[0, 1, 2], timesteps=100_000, out="cmp")`` trains
the six runs into ``cmp/runs/<algo>_<env>_seed<S>/`` (run directories, see `.runner`) and writes:

- ``cmp/results.csv``: one row per (algo, env, seed, evaluation timestep) with the mean evaluation return;
- ``cmp/summary.md``: per env and algo, each run's score (the mean of its last 5 evaluations), their IQM and
  a 95 % stratified-bootstrap interval (with 5 runs or more; below that, the range of the scores), and the
  probability that one algo's run beats the other's (`.stats`, rliable's definitions);
- ``cmp/learning_curve_<env>.png``: mean return per algo with a band (`.plots`).

A run is complete once the comparison has stored its ``result.json``; calling ``compare`` again with the same
``out`` skips complete runs and resumes unfinished ones from their newest checkpoint, so an interrupted sweep
continues where it stopped.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from rlkit_td3.experiments.backends import BACKENDS, run_local, run_ray
from rlkit_td3.experiments.plots import plot_learning_curves
from rlkit_td3.experiments.presets import ConfigError, _did_you_mean
from rlkit_td3.experiments.runner import CHECKPOINT_DIR, RunSpec, check_run_folder, read_evaluations
from rlkit_td3.experiments.stats import RESULT_COLUMNS, improvements, summarize, summary_markdown
from rlkit_td3.fileio.file_reader import parse_json, read_json_file
from rlkit_td3.fileio.serialization import atomic_write

RESULT_FILE = "result.json"
SWEEP_FILE = "sweep.json"
_SWEEP_KEYS = ("timesteps", "preset", "overrides", "n_envs", "device", "eval_freq", "eval_episodes")
"""Settings every run of a sweep directory shares; rerunning into the directory with other values is refused."""


class ComparisonError(RuntimeError):
    """Some runs of a comparison failed; the others' results were still written."""


def run_name(algo: str, env_id: str, seed: int) -> str:
    """The run directory's name inside ``<out>/runs``."""
    return f"{algo}_{env_id}_seed{seed}"


def _write_text(path: Path, text: str) -> None:
    with atomic_write(path) as fh:
        fh.write(text.encode())


def _unique(name: str, values: Sequence[Any]) -> list[Any]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) == 0:
        raise ConfigError(f"{name} must be a non-empty list, got {values!r}")
    if len(set(values)) != len(values):
        raise ConfigError(f"{name} has duplicates: {list(values)!r}")
    return list(values)


def _read_json(path: Path, what: str) -> Any:
    try:
        return read_json_file(path)
    except (ValueError, OSError) as exc:
        raise ConfigError(f"{path} is damaged (not {what}): {' '.join(str(exc).split())[:300]}") from None


def _check_sweep_file(out: Path, settings: dict[str, Any]) -> None:
    path = out / SWEEP_FILE
    if path.is_file():
        stored = _read_json(path, "a sweep's settings")
        if not isinstance(stored, dict):
            raise ConfigError(f"{path} is damaged: not a sweep's settings (a JSON object)")
        for key in _SWEEP_KEYS:
            if stored.get(key) != settings[key]:
                raise ConfigError(
                    f"{out} holds a sweep with {key}={stored.get(key)!r}, not {settings[key]!r}; "
                    "use another --out, or the same settings to resume it"
                )
    _write_text(path, json.dumps(settings, indent=2, default=str))


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def read_result(path: Path, spec: RunSpec) -> dict[str, Any]:
    """A run's ``result.json``, counted only if it proves it is ``spec``'s: its own ``spec`` entry equal to
    ``spec`` (algo, env, seed, timesteps, preset, hyperparameters, evaluation schedule), increasing integer
    timesteps, finite returns, one of each per evaluation.

    Raises:
        ConfigError: naming the file and what is wrong with it.
    """
    result = _read_json(path, "a run's result")
    expected = parse_json(json.dumps(spec.to_dict(), default=str), "the run's spec")  # as JSON stores it
    if not isinstance(result, dict):
        raise ConfigError(f"{path} is damaged: not a run's result (a JSON object)")
    if result.get("spec") != expected:
        stored = result.get("spec") if isinstance(result.get("spec"), dict) else {}
        differ = [key for key in expected if stored.get(key) != expected[key]][:3]
        raise ConfigError(
            f"{path} is not this sweep's run: it was made with "
            + ", ".join(f"{key}={stored.get(key)!r}, not {expected[key]!r}" for key in differ)
            + "; remove it to train the run again"
        )
    steps, means, stds = (result.get(key) for key in ("timesteps", "mean_returns", "std_returns"))
    if not (isinstance(steps, list) and isinstance(means, list) and isinstance(stds, list)):
        raise ConfigError(f"{path} is damaged: timesteps, mean_returns and std_returns must be lists")
    if not (len(steps) == len(means) == len(stds)):
        raise ConfigError(f"{path} is damaged: {len(steps)} timesteps, {len(means)} mean and {len(stds)} std returns")
    if not all(isinstance(t, int) and not isinstance(t, bool) and t > 0 for t in steps) or any(
        b <= a for a, b in zip(steps, steps[1:])
    ):
        raise ConfigError(f"{path} is damaged: its timesteps are not increasing positive integers (one row per key)")
    if not all(_is_real(v) for v in (*means, *stds)):
        raise ConfigError(f"{path} is damaged: its returns are not all finite numbers")
    if not isinstance(result.get("num_timesteps"), int) or isinstance(result.get("num_timesteps"), bool):
        raise ConfigError(f"{path} is damaged: num_timesteps is not an integer")
    return result


def _rows(spec: RunSpec, result: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "algo": spec.algo,
            "env": spec.env_id,
            "seed": spec.seed,
            "timestep": t,
            "mean_return": mean,
            "std_return": std,
        }
        for t, mean, std in zip(result["timesteps"], result["mean_returns"], result["std_returns"])
    ]


def compare(
    algos: Sequence[str] = ("td3", "ddpg"),
    envs: Sequence[str] = ("Pendulum-v1",),
    seeds: Sequence[int] = (0, 1, 2),
    timesteps: int | None = None,
    preset: str | None = None,
    overrides: dict[str, Any] | None = None,
    backend: str = "local",
    workers: int | None = None,
    threads: int = 1,
    address: str | None = None,
    connect_timeout: float = 45.0,
    out: str | os.PathLike[str] = "comparison",
    eval_freq: int = 5_000,
    eval_episodes: int = 10,
    checkpoint_freq: int = 10_000,
    n_envs: int = 1,
    device: str = "auto",
    command: str | None = None,
    verbose: bool = True,
) -> pd.DataFrame:
    """Run every (algo, env, seed), skipping complete runs, and write ``results.csv``, ``summary.md`` and plots.

    Args:
        algos: algorithms to compare (``"td3"``, ``"ddpg"``).
        envs: gymnasium ids.
        seeds: one run per seed for each algo and env.
        timesteps: env steps per run; ``None`` takes each preset entry's ``n_timesteps``.
        preset: a shipped preset (``"zoo"``, ``"paper"``) or ``None``.
        overrides: hyperparameter values that win over the preset, for every run.
        backend: ``"local"`` (a process pool) or ``"ray"`` (one Ray task per run, ``num_cpus=threads``).
        workers: local runs at once; default: as many as fit the CPUs at ``threads`` each.
        threads: torch threads of each run (Ray: the task's ``num_cpus``). Runs are bit-for-bit reproducible
            for a given value, whichever the backend.
        address: Ray cluster to join (``"auto"``, ``HOST:PORT``); ``None`` starts a local Ray instance.
        connect_timeout: seconds to wait for the Ray cluster at ``address`` to answer.
        out: the sweep directory.
        eval_freq: env steps between evaluations of each run (TD3 paper: 5,000).
        eval_episodes: episodes per evaluation (TD3 paper: 10).
        checkpoint_freq: env steps between each run's checkpoints (what an interrupted run resumes from).
        n_envs: training envs per run.
        device: torch device of each run.
        command: the command line to quote in ``summary.md`` (the CLI passes its own).
        verbose: print one line per finished run.

    Returns:
        The ``results.csv`` table (columns ``algo, env, seed, timestep, mean_return, std_return``).

    Raises:
        ConfigError: bad input, named, before any run starts (unknown algo, env id, preset or hyperparameter;
            a non-positive count; an ``out`` that holds a sweep with other settings).
        BackendError: Ray is missing or its cluster cannot be reached.
        ComparisonError: some runs failed (the outputs of the others are written first).
    """
    algos = [str(a).lower() for a in _unique("algos", algos)]
    envs = _unique("envs", envs)
    seeds = _unique("seeds", seeds)
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}{_did_you_mean(backend, BACKENDS)}")
    for name, value in (("threads", threads), ("workers", workers)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    if backend == "local" and address is not None:
        raise ConfigError(f"address={address!r} is for backend='ray'; the local backend runs on this machine")
    for seed in seeds:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ConfigError(f"seeds must be integers, got {seed!r}")
    settings = {
        "timesteps": timesteps,
        "preset": preset,
        "overrides": dict(overrides or {}),
        "n_envs": n_envs,
        "device": device,
        "eval_freq": eval_freq,
        "eval_episodes": eval_episodes,
    }
    specs = [
        RunSpec(a, e, s, timesteps, preset, dict(overrides or {}), n_envs, device, eval_freq, eval_episodes,
                checkpoint_freq)
        for e in envs
        for a in algos
        for s in seeds
    ]  # fmt: skip
    for spec in specs:
        spec.resolve()  # every bad value is reported before anything runs
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _check_sweep_file(out, settings)

    run_dirs = [out / "runs" / run_name(s.algo, s.env_id, s.seed) for s in specs]
    results: dict[int, dict[str, Any]] = {}
    for i, run_dir in enumerate(run_dirs):
        if (run_dir / RESULT_FILE).is_file():
            results[i] = read_result(run_dir / RESULT_FILE, specs[i])
    todo = [i for i in range(len(specs)) if i not in results]
    for i in todo:  # a run folder to resume must belong to its run (its checkpoints are checked when it resumes)
        checkpoints = run_dirs[i] / CHECKPOINT_DIR
        if checkpoints.is_dir() and any(checkpoints.glob("rl_model_*_steps.zip")):
            check_run_folder(run_dirs[i], specs[i].resolve())
    if workers is None:
        workers = max(1, (os.cpu_count() or 1) // threads)
    if verbose:
        where = f"{workers} workers" if backend == "local" else f"Ray at {address or 'a local instance'}"
        print(
            f"{len(specs)} runs: {len(results)} complete (skipped), {len(todo)} to run on {backend} "
            f"({where}, {threads} torch thread{'s' * (threads > 1)} each)",
            flush=True,
        )
    jobs = [(specs[i].to_dict(), str(run_dirs[i])) for i in todo]
    if backend == "local":
        stream = run_local(jobs, workers, threads)
    else:
        stream = run_ray(jobs, threads, address, connect_timeout)
    failures = []
    refused = 0  # runs whose folder held damaged or foreign files (a ConfigError in the run): bad input
    started = time.perf_counter()
    for done, (k, outcome) in enumerate(stream, start=1):
        spec = specs[todo[k]]
        label = f"{spec.algo} {spec.env_id} seed {spec.seed}"
        if isinstance(outcome, BaseException):
            reason = f"{type(outcome).__name__}: {(str(outcome).strip() or '-').splitlines()[0]}"
            failures.append(f"{label}: {reason}")
            refused += isinstance(outcome, ConfigError)
            if verbose:
                print(f"[{done}/{len(todo)}] {label}: FAILED ({reason}; see {run_dirs[todo[k]] / 'train.log'})")
            continue
        _write_text(run_dirs[todo[k]] / RESULT_FILE, json.dumps({"spec": spec.to_dict(), **outcome}, indent=2))
        results[todo[k]] = outcome
        if verbose:
            final = outcome["mean_returns"][-1] if outcome["mean_returns"] else float("nan")
            print(
                f"[{done}/{len(todo)}] {label}: final return {final:.1f} after {outcome['num_timesteps']:,} steps "
                f"({outcome['wall_time_s'] / 60:.1f} min; sweep {(time.perf_counter() - started) / 60:.1f} min)",
                flush=True,
            )
    rows = [row for i in sorted(results) for row in _rows(specs[i], results[i])]
    table = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    write_outputs(table, out, command=command)
    if failures:
        message = f"{len(failures)} of {len(specs)} runs failed: " + "; ".join(failures)
        raise ConfigError(message) if refused == len(failures) else ComparisonError(message)
    return table


def write_outputs(results: pd.DataFrame, out: str | os.PathLike[str], command: str | None = None) -> list[Path]:
    """Write ``results.csv``, ``summary.md`` and one learning-curve PNG per env into ``out``; returns the paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _write_text(out / "results.csv", results.to_csv(index=False))
    if results.empty:
        return [out / "results.csv"]
    _write_text(out / "summary.md", summary_markdown(summarize(results), improvements(results), command))
    return [out / "results.csv", out / "summary.md", *plot_learning_curves(results, out)]


def load_results(paths: Sequence[str | os.PathLike[str]]) -> pd.DataFrame:
    """The ``results.csv`` rows of sweep directories and run directories (built from their ``evaluations.npz``
    and ``config.json``), concatenated.

    Raises:
        ConfigError: a path that is neither a sweep directory (with ``results.csv``) nor a run directory, or a
            damaged file in one (named): a ``results.csv`` without the columns of `RESULT_COLUMNS`, not UTF-8, or
            with values that are not numbers; a ``config.json`` without its algo, env id and seed; a damaged
            ``evaluations.npz``.
    """
    frames = []
    for path in map(Path, paths):
        if (path / "results.csv").is_file():
            frames.append(_read_results_csv(path / "results.csv"))
        elif (path / "config.json").is_file() and (path / "evaluations.npz").is_file():
            config = _read_json(path / "config.json", "a run's configuration")
            if not (
                isinstance(config, dict)
                and isinstance(config.get("algo"), str)
                and isinstance(config.get("env_id"), str)
                and isinstance(config.get("seed"), int)
                and not isinstance(config.get("seed"), bool)
            ):
                raise ConfigError(f"{path / 'config.json'} is damaged: it must name the run's algo, env_id and seed")
            evaluations = read_evaluations(path)
            result = {
                "timesteps": evaluations["timesteps"].tolist(),
                "mean_returns": evaluations["results"].mean(axis=1).tolist(),
                "std_returns": evaluations["results"].std(axis=1).tolist(),
            }
            spec = RunSpec(config["algo"], config["env_id"], config["seed"])
            frames.append(pd.DataFrame(_rows(spec, result), columns=list(RESULT_COLUMNS)))
        else:
            raise ConfigError(
                f"{path} is neither a sweep directory (results.csv) nor a run directory (config.json and "
                "evaluations.npz)"
            )
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(RESULT_COLUMNS))
    return table.drop_duplicates(subset=["algo", "env", "seed", "timestep"], keep="last").reset_index(drop=True)


def _read_results_csv(path: Path) -> pd.DataFrame:
    """A sweep's ``results.csv``, checked: UTF-8, the columns of `RESULT_COLUMNS`, integer seeds and timesteps,
    finite returns, at most one row per (algo, env, seed, timestep)."""
    try:
        table = pd.read_csv(path, encoding="utf-8", dtype={"algo": str, "env": str})
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise ConfigError(f"{path} is damaged: {' '.join(str(exc).split())[:200]}") from None
    missing = [column for column in RESULT_COLUMNS if column not in table.columns]
    if missing:
        raise ConfigError(f"{path} is damaged: it lacks the column(s) {', '.join(missing)}")
    table = table[list(RESULT_COLUMNS)]
    if table.empty:  # a sweep whose runs all failed: its header alone
        return table
    for column in ("seed", "timestep"):
        if not pd.api.types.is_integer_dtype(table[column]):
            raise ConfigError(f"{path} is damaged: its {column} column holds other than integers")
    for column in ("mean_return", "std_return"):
        values = pd.to_numeric(table[column], errors="coerce")
        if not pd.api.types.is_numeric_dtype(table[column]) or not values.map(math.isfinite).all():
            raise ConfigError(f"{path} is damaged: its {column} column holds other than finite numbers")
    if table[["algo", "env"]].isna().any().any():
        raise ConfigError(f"{path} is damaged: a row without its algo or env")
    if table.duplicated(subset=["algo", "env", "seed", "timestep"]).any():
        raise ConfigError(f"{path} is damaged: more than one row per (algo, env, seed, timestep)")
    return table


def shell_command(argv: Sequence[str]) -> str:
    """``argv`` as one shell-quoted line (for ``summary.md``)."""
    return shlex.join(argv)

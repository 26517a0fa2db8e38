"""Hyperparameter tuning on Optuna: ``rlkit-td3 tune`` and `tune()`.

A study searches a space (`.search_space`) with Optuna's TPE (or random) sampler. Each trial trains one model for
``timesteps`` steps and is evaluated every ``eval_freq`` steps by a `TrialEvalCallback`, which reports each
evaluation to Optuna so that the pruner (median, by default) can stop a trial that does worse than the others
did at the same step: the RL Zoo's way, on our `EvalCallback`. A trial's value is the mean of its last
evaluations (as `compare` scores runs).

The study lives in an Optuna storage: by default ``<out>/study.db`` (SQLite), so that the same command run again
continues it; any Optuna storage URL (``postgresql://...``, ``mysql://...``, or a journal file ``*.log``) lets
several processes or machines work on one study. A trial whose process died (killed, Ctrl-C) is marked failed
and tried again with the same values, once its process is known to be gone: at once on the same machine, after
the heartbeat's grace period from another one.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import socket
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlkit_td3.callbacks import EvalCallback
from rlkit_td3.experiments.presets import ConfigError, _did_you_mean, algorithm_class, is_preset_file
from rlkit_td3.experiments.runner import _check_device, check_env_id
from rlkit_td3.experiments.search_space import (
    SEARCH_SPACE_SOURCES,
    build_space,
    check_space_values,
    distributions,
    to_hyperparameters,
    without_fixed,
)
from rlkit_td3.experiments.stats import LAST_EVALUATIONS
from rlkit_td3.experiments.tuning_report import TuningResult, write_outputs

STUDY_FILE = "study.db"
"""The default storage's file inside ``out``."""
STUDY_ATTR = "rlkit_td3"
"""The study's user attribute that records what it tunes (algo, env, timesteps, preset, space, ...)."""
SAMPLERS = ("tpe", "random")
PRUNERS = ("median", "none")
HEARTBEAT_S = 20
"""Seconds between a running trial's heartbeats in a database storage."""
GRACE_S = 120
"""A trial of another machine whose heartbeat is older than this is marked failed and retried."""
MAX_RETRIES = 3
"""How often one trial's values are tried again after its process died."""


class TuningError(RuntimeError):
    """A tuning worker process failed; the outputs of the study as it stands were still written."""


def _optuna() -> Any:
    try:
        import optuna
    except ImportError:
        raise ConfigError(
            "tuning needs Optuna: install the 'tune' extra (pip install -e '.[tune]' in the rlkit_td3 clone)"
        ) from None
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # each trial's own line says what happened to it
    return optuna


class TrialEvalCallback(EvalCallback):
    """An `EvalCallback` that reports each evaluation's mean return to an Optuna trial, at the step it was taken,
    and stops training when the trial's pruner says so (then ``is_pruned`` is True).

    Args:
        trial: the ``optuna.Trial``.
        eval_env: see `EvalCallback`.
        **kwargs: the other arguments of `EvalCallback`.
    """

    def __init__(self, trial: Any, eval_env: Any, **kwargs: Any) -> None:
        super().__init__(eval_env, **kwargs)
        self.trial = trial
        self.is_pruned = False

    def evaluate(self) -> bool:
        """Evaluate, report to the trial, and return False when the trial is pruned."""
        keep_going = super().evaluate()
        self.trial.report(self.last_mean_reward, self.num_timesteps)
        if self.trial.should_prune():
            self.is_pruned = True
            return False
        return keep_going


def _check_positive(name: str, value: Any, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")


def open_storage(url: str) -> Any:
    """An Optuna storage from a URL: a database URL (``sqlite:///path.db``, ``postgresql://...``) becomes an
    ``RDBStorage`` with heartbeats (a dead trial is failed and retried), a path ending in ``.log`` a journal file.

    Raises:
        ConfigError: a URL Optuna cannot open, with its reason.
    """
    optuna = _optuna()
    text = str(url)
    try:
        if "://" not in text and text.endswith(".log"):
            if not Path(text).resolve().parent.is_dir():
                raise ConfigError(f"the folder of the journal file {text!r} does not exist")
            from optuna.storages.journal import JournalFileBackend

            return optuna.storages.JournalStorage(JournalFileBackend(text))
        if "://" not in text:
            raise ConfigError(
                f"--storage must be a database URL (sqlite:///FILE.db, postgresql://..., mysql://...) or a journal "
                f"file FILE.log, got {text!r}"
            )
        # SQLite: wait for another process's write lock instead of failing after SQLite's default 5 s
        engine = {"connect_args": {"timeout": 60}} if text.startswith("sqlite") else None
        for attempt in range(5):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the heartbeat is marked experimental
                    return optuna.storages.RDBStorage(
                        text,
                        engine_kwargs=engine,
                        heartbeat_interval=HEARTBEAT_S,
                        grace_period=GRACE_S,
                        heartbeat_stale_trial_callback=optuna.storages.RetryHeartbeatStaleTrialCallback(MAX_RETRIES),
                    )
            except Exception as exc:
                # two processes creating the same new database's tables at once: the loser finds them made (an
                # IntegrityError, or SQLite's "table ... already exists" / "database is locked"): try again
                message = str(exc).lower()
                racing = type(exc).__name__ == "IntegrityError" or (
                    type(exc).__name__ == "OperationalError" and ("already exists" in message or "locked" in message)
                )
                if attempt == 4 or not racing:
                    raise
                time.sleep(0.2 * (attempt + 1))
    except ConfigError:
        raise
    except Exception as exc:  # sqlalchemy's errors, a missing database driver, an unreachable server
        reason = (str(exc).strip() or type(exc).__name__).splitlines()[0]
        raise ConfigError(f"cannot open the storage {text!r}: {type(exc).__name__}: {reason}") from None


def _identity(
    algo: str,
    env_id: str,
    timesteps: int,
    preset: str | None,
    overrides: dict[str, Any],
    space: dict[str, Any],
    eval_freq: int,
    eval_episodes: int,
    seed: int,
) -> dict[str, Any]:
    """What a study tunes: a second command on the same study must ask for the same."""
    return {
        "algo": algo,
        "env_id": env_id,
        "timesteps": timesteps,
        "preset": preset,
        "overrides": {k: list(v) if isinstance(v, tuple) else v for k, v in overrides.items()},
        "space": space,
        "eval_freq": eval_freq,
        "eval_episodes": eval_episodes,
        "seed": seed,
    }


def _open_study(storage: Any, study_name: str, identity: dict[str, Any], where: str) -> Any:
    """Create or load the study and check that it tunes what ``identity`` says.

    Raises:
        ConfigError: a study of the name that tunes another algorithm, env or setting, or that rlkit_td3 did not
            make.
    """
    optuna = _optuna()
    try:
        study = optuna.create_study(storage=storage, study_name=study_name, direction="maximize",
                                    load_if_exists=True)  # fmt: skip
    except Exception as exc:
        raise ConfigError(f"cannot open study {study_name!r} in {where}: {type(exc).__name__}: {exc}") from None
    if len(study.directions) != 1 or study.direction != optuna.study.StudyDirection.MAXIMIZE:
        raise ConfigError(f"study {study_name!r} in {where} was not made by rlkit-td3 tune (it does not maximize one "
                          "value); use another --study-name")  # fmt: skip
    stored = study.user_attrs.get(STUDY_ATTR)
    if stored is None:
        if study.get_trials(deepcopy=False):
            raise ConfigError(f"study {study_name!r} in {where} was not made by rlkit-td3 tune; use another "
                              "--study-name")  # fmt: skip
        study.set_user_attr(STUDY_ATTR, identity)
        stored = study.user_attrs.get(STUDY_ATTR, identity)
    if (stored.get("algo"), stored.get("env_id")) != (identity["algo"], identity["env_id"]):
        raise ConfigError(
            f"study {study_name!r} in {where} tunes {stored.get('algo')} on {stored.get('env_id')}, not "
            f"{identity['algo']} on {identity['env_id']}; use another --study-name or --out"
        )
    for key, value in identity.items():
        if stored.get(key) != value:
            raise ConfigError(
                f"study {study_name!r} in {where} was made with {key}={stored.get(key)!r}, not {value!r}; "
                "rerun with the same settings to continue it, or use another --study-name or --out"
            )
    return study


def _worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _enqueue_retry(study: Any, trial: Any) -> None:
    """Queue the values of an interrupted trial again (at most `MAX_RETRIES` times for one set of values)."""
    optuna = _optuna()
    history = [*trial.system_attrs.get("retry_history", []), trial.number]
    if len(history) > MAX_RETRIES:
        return
    study.add_trial(
        optuna.trial.create_trial(
            state=optuna.trial.TrialState.WAITING,
            params=trial.params,
            distributions=trial.distributions,
            system_attrs={"failed_trial": trial.number, "retry_history": history},
        )
    )


def recover_interrupted_trials(study: Any) -> list[int]:
    """Mark failed the running trials of processes of this machine that are gone, and queue their values again.

    Returns:
        The numbers of the trials marked failed.
    """
    optuna = _optuna()
    host = socket.gethostname()
    failed = []
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        worker_host, _, pid = str(trial.user_attrs.get("worker", "")).rpartition(":")
        if worker_host != host or not pid.isdigit() or not _process_gone(int(pid)):
            continue
        try:
            study._storage.set_trial_user_attr(trial._trial_id, "error", "interrupted (its process is gone)")
            study._storage.set_trial_state_values(trial._trial_id, optuna.trial.TrialState.FAIL)
        except optuna.exceptions.UpdateFinishedTrialError:  # another process marked it first
            continue
        _enqueue_retry(study, trial)
        failed.append(trial.number)
    return failed


@dataclass(frozen=True)
class _Job:
    """One worker's share of a tuning run (picklable: it crosses to spawned processes)."""

    storage_url: str
    study_name: str
    algo: str
    env_id: str
    timesteps: int
    preset: str | None
    overrides: dict[str, Any]
    space: dict[str, Any]
    eval_freq: int
    eval_episodes: int
    seed: int
    sampler: str
    pruner: str | Any
    n_startup_trials: int
    device: str
    threads: int
    verbose: bool
    progress_bar: bool
    seeded: bool


def _make_sampler(job: _Job, start_count: int, index: int) -> Any:
    import numpy as np

    optuna = _optuna()
    # seeded on the folder's own storage (a study reproduces on one machine); unseeded on a shared one, so that
    # workers started together do not try the same values
    seed = int(np.random.SeedSequence([job.seed, start_count, index]).generate_state(1)[0]) if job.seeded else None
    if job.sampler == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # multivariate TPE is marked experimental
        return optuna.samplers.TPESampler(n_startup_trials=job.n_startup_trials, multivariate=True, seed=seed)


def _make_pruner(job: _Job) -> Any:
    optuna = _optuna()
    if not isinstance(job.pruner, str):
        return job.pruner
    if job.pruner == "none":
        return optuna.pruners.NopPruner()
    # the RL Zoo's median pruner: no pruning before n_startup_trials finished, nor in the first third of a trial
    return optuna.pruners.MedianPruner(n_startup_trials=job.n_startup_trials, n_warmup_steps=job.timesteps // 3)


def _objective(job: _Job, trial: Any) -> float:
    import gymnasium as gym
    import numpy as np
    import optuna

    from rlkit_td3.experiments.presets import make_model, resolve_config

    trial.set_user_attr("worker", _worker_id())
    params = {}
    for name, spec in job.space.items():
        if spec["type"] == "categorical":
            params[name] = trial.suggest_categorical(name, spec["choices"])
        elif spec["type"] == "int":
            params[name] = trial.suggest_int(name, spec["low"], spec["high"], log=spec["log"],
                                             step=spec.get("step", 1))  # fmt: skip
        else:
            params[name] = trial.suggest_float(name, spec["low"], spec["high"], log=spec["log"],
                                               step=spec.get("step"))  # fmt: skip
    config = resolve_config(job.algo, job.env_id, job.preset, {**to_hyperparameters(params), **job.overrides})
    hyperparameters = {k: list(v) if isinstance(v, tuple) else v for k, v in config["hyperparameters"].items()}
    trial.set_user_attr("hyperparameters", hyperparameters)
    env = gym.make(job.env_id)
    evaluation = TrialEvalCallback(trial, gym.make(job.env_id), n_eval_episodes=job.eval_episodes,
                                   eval_freq=job.eval_freq, seed=job.seed, verbose=0, warn=False)  # fmt: skip
    try:
        model = make_model(config, env, seed=job.seed, device=job.device)
        model.learn(job.timesteps, callback=evaluation)
    except KeyboardInterrupt:
        trial.set_user_attr("error", "interrupted (Ctrl-C)")
        _enqueue_retry(trial.study, trial.study._storage.get_trial(trial._trial_id))
        raise
    except (ValueError, FloatingPointError, RuntimeError) as exc:  # diverging values, a refused setting
        trial.set_user_attr("error", f"{type(exc).__name__}: {(str(exc).strip() or '-').splitlines()[0]}")
        raise
    finally:
        env.close()
        evaluation.eval_env.close()
    means = [float(np.mean(r)) for r in evaluation.evaluations_results]
    trial.set_user_attr("steps", int(model.num_timesteps))
    if evaluation.is_pruned:
        raise optuna.TrialPruned(f"pruned at {model.num_timesteps} steps")
    if not means:
        raise ValueError(f"no evaluation in {job.timesteps} steps: eval_freq must not exceed timesteps")
    return float(np.mean(means[-LAST_EVALUATIONS:]))


def _describe(trial: Any) -> str:
    state = trial.state.name
    steps = trial.user_attrs.get("steps")
    took = trial.duration.total_seconds() if trial.duration is not None else float("nan")
    if state == "COMPLETE":
        return f"{trial.value:.2f} after {steps:,} steps ({took:.1f} s)"
    if state == "PRUNED":
        last = trial.intermediate_values[max(trial.intermediate_values)] if trial.intermediate_values else math.nan
        return f"pruned at {steps or 0:,} steps ({last:.2f}, {took:.1f} s)"
    return f"failed ({trial.user_attrs.get('error', 'see the log')})"


def _progress_line(study: Any, trial: Any, done: int, total: int) -> str:
    try:
        best = study.best_trial
        best_text = f"best {best.value:.2f} (trial {best.number})"
    except ValueError:
        best_text = "no complete trial yet"
    return f"trial {trial.number} [{done}/{total}]: {_describe(trial)}; {best_text}"


def _work(job: _Job, n_trials: int, index: int) -> None:
    """One worker: run ``n_trials`` trials of the study (a process of its own when ``index`` > 0)."""
    import torch

    optuna = _optuna()
    torch.set_num_threads(job.threads)
    storage = open_storage(job.storage_url)
    study = optuna.load_study(study_name=job.study_name, storage=storage)
    start_count = len(study.get_trials(deepcopy=False))
    study.sampler = _make_sampler(job, start_count, index)
    study.pruner = _make_pruner(job)
    done = [0]

    def progress(study: Any, trial: Any) -> None:
        done[0] += 1
        if job.verbose:
            print(_progress_line(study, trial, done[0], n_trials), flush=True)

    study.optimize(
        lambda trial: _objective(job, trial),
        n_trials=n_trials,
        catch=(ValueError, FloatingPointError, RuntimeError),
        callbacks=[progress],
        show_progress_bar=job.progress_bar and index == 0,
        gc_after_trial=True,
    )


def _shares(n_trials: int, n_jobs: int) -> list[int]:
    return [
        n_trials // n_jobs + (i < n_trials % n_jobs)
        for i in range(n_jobs)
        if n_trials // n_jobs + (i < n_trials % n_jobs)
    ]


def tune(
    algo: str = "td3",
    env_id: str = "Pendulum-v1",
    n_trials: int = 20,
    timesteps: int = 20_000,
    out: str | os.PathLike[str] = "tuning",
    preset: str | None = None,
    overrides: dict[str, Any] | None = None,
    search_space: str | os.PathLike[str] | dict[str, Any] | None = None,
    n_jobs: int = 1,
    storage: str | None = None,
    study_name: str | None = None,
    sampler: str = "tpe",
    pruner: str | Any = "median",
    n_startup_trials: int = 5,
    eval_freq: int | None = None,
    eval_episodes: int = 5,
    seed: int = 0,
    device: str = "auto",
    threads: int = 1,
    enqueue: Sequence[dict[str, Any]] = (),
    progress_bar: bool = False,
    verbose: bool = True,
    command: str | None = None,
) -> TuningResult:
    """Run ``n_trials`` more trials of a study, then write its outputs into ``out``.

    Args:
        algo: the algorithm to tune (``"td3"``, ``"ddpg"``).
        env_id: the gymnasium id.
        n_trials: trials this call runs (rerunning the call adds as many; Optuna's ``n_trials``).
        timesteps: env steps of each trial.
        out: the folder of the outputs, and of the default storage ``study.db``.
        preset: the preset (a shipped name or a preset file) the searched values override.
        overrides: fixed hyperparameter values, over the preset; a key fixed here is not searched.
        search_space: a YAML/JSON file or its content (see `build_space`) that narrows or replaces the
            algorithm's built-in space.
        n_jobs: worker processes on this machine (each runs its share of ``n_trials``).
        storage: an Optuna storage URL shared by several processes or machines (default: ``sqlite:///<out>/study.db``).
        study_name: the study's name in the storage (default ``<algo>_<env_id>``).
        sampler: ``"tpe"`` (Optuna's TPE, multivariate) or ``"random"``.
        pruner: ``"median"`` (Optuna's median pruner), ``"none"``, or an ``optuna.pruners.BasePruner``.
        n_startup_trials: random trials before TPE models the results, and trials before the pruner prunes
            (the RL Zoo uses 10).
        eval_freq: env steps between a trial's evaluations (default ``timesteps // 10``).
        eval_episodes: episodes per evaluation.
        seed: seeds every trial's training and evaluation (every trial sees the same seed, so trials differ by
            their values), and, with the default storage, the sampler (with the number of trials so far); with
            ``storage`` the sampler is unseeded, so that workers started together try different values.
        device: torch device of each trial.
        threads: torch threads of each worker.
        enqueue: values to try first (``{name: value}`` in the space's names), queued when the study is created.
        progress_bar: show Optuna's progress bar (tqdm).
        verbose: print one line per finished trial.
        command: the command line quoted in ``summary.md``.

    Returns:
        A `TuningResult`.

    Raises:
        ConfigError: bad input, before anything is written: unknown algo, env id, preset, hyperparameter or
            search-space key, a bad search-space file, a non-positive count, a storage that cannot be opened,
            or a study of the name that tunes another algorithm, env or setting.
        TuningError: a worker process failed (the outputs are written first).
        KeyboardInterrupt: Ctrl-C, after the outputs of the study as it stands are written (the interrupted
            trial is failed and queued again: the same call continues the study).
    """
    from rlkit_td3.experiments.presets import resolve_config

    algo = str(algo).lower()
    algorithm_class(algo)
    check_env_id(env_id)
    _check_positive("n_trials (--trials)", n_trials)
    _check_positive("timesteps", timesteps)
    _check_positive("n_jobs", n_jobs)
    _check_positive("eval_episodes", eval_episodes)
    _check_positive("threads", threads)
    _check_positive("eval_freq", eval_freq, allow_none=True)
    if isinstance(n_startup_trials, bool) or not isinstance(n_startup_trials, int) or n_startup_trials < 0:
        raise ConfigError(f"n_startup_trials must be a non-negative integer, got {n_startup_trials!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")
    if sampler not in SAMPLERS:
        raise ConfigError(f"unknown sampler {sampler!r}{_did_you_mean(sampler, SAMPLERS)}")
    if isinstance(pruner, str) and pruner not in PRUNERS:
        raise ConfigError(f"unknown pruner {pruner!r}{_did_you_mean(pruner, PRUNERS)}")
    _check_device(device)
    if n_jobs > 1 and not isinstance(pruner, str):
        raise ConfigError("a pruner object works with n_jobs=1 only; pass pruner='median' or 'none'")
    eval_freq = eval_freq or max(1, timesteps // 10)
    if eval_freq > timesteps:
        raise ConfigError(
            f"eval_freq ({eval_freq}) must not exceed timesteps ({timesteps}): a trial needs an evaluation"
        )
    overrides = dict(overrides or {})
    resolve_config(algo, env_id, preset, overrides)  # unknown preset or key, a bad value
    if preset is not None and is_preset_file(preset):
        preset = str(Path(preset).resolve())  # workers in other folders find it too
    space = without_fixed(build_space(algo, search_space), overrides)
    if not space:
        raise ConfigError("every searched hyperparameter is fixed by the overrides (--hp): nothing to search")
    check_space_values(space, algo, env_id, preset, overrides)
    optuna = _optuna()
    distributions(space)  # Optuna accepts every spec
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {str(out)!r} is a file, not a folder")
    identity = _identity(algo, env_id, timesteps, preset, overrides, space, eval_freq, eval_episodes, seed)
    study_name = study_name or f"{algo}_{env_id}"
    if storage is None:
        out.mkdir(parents=True, exist_ok=True)
        storage_url = f"sqlite:///{(out / STUDY_FILE).resolve()}"
    else:
        storage_url = str(storage)
    storage_obj = open_storage(storage_url)
    where = str(out / STUDY_FILE) if storage is None else repr(storage_url)
    if storage is None:  # the folder's own storage holds one study
        others = [s.study_name for s in storage_obj.get_all_studies() if s.study_name != study_name]
        if others:
            raise ConfigError(
                f"{where} holds study {others[0]!r}, not {study_name!r}; use another --out, or --study-name "
                f"{others[0]} to continue it"
            )
    study = _open_study(storage_obj, study_name, identity, where)
    new_study = not study.get_trials(deepcopy=False)
    if new_study:
        for params in enqueue:
            study.enqueue_trial(dict(params))
    recovered = recover_interrupted_trials(study)
    out.mkdir(parents=True, exist_ok=True)
    job = _Job(
        storage_url, study_name, algo, env_id, timesteps, preset, overrides, space, eval_freq, eval_episodes,
        seed, sampler, pruner, n_startup_trials, device, threads, verbose, progress_bar, seeded=storage is None,
    )  # fmt: skip
    if verbose:
        before = len(study.get_trials(deepcopy=False))
        print(
            f"study {study_name!r} in {where}: {before} trials so far"
            + (f"; interrupted trials {recovered} failed, to be retried" if recovered else ""),
            flush=True,
        )
        workers = min(n_jobs, n_trials)
        print(f"running {n_trials} trials of {timesteps:,} steps on {workers} worker{'s' * (workers > 1)}", flush=True)
    shares = _shares(n_trials, n_jobs)
    failures = []
    started = time.perf_counter()
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_work, args=(job, share, i), daemon=False) for i, share in
               enumerate(shares) if i > 0]  # fmt: skip
    for process in workers:
        process.start()
    interrupted = False
    try:
        _work(job, shares[0], 0)
    except KeyboardInterrupt:  # the study as it stands is written; the interrupted trial is queued again
        interrupted = True
    finally:
        for process in workers:
            try:
                process.join()
            except KeyboardInterrupt:
                interrupted = True
                process.join()
            if process.exitcode != 0 and not interrupted:
                failures.append(f"worker {process.pid} exited with code {process.exitcode}")
    study = optuna.load_study(study_name=study_name, storage=storage_obj)
    result = write_outputs(study, out, identity, study_name=study_name, storage=where,
                           source=SEARCH_SPACE_SOURCES.get(algo), command=command)  # fmt: skip
    if verbose:
        print(
            f"wrote {', '.join(p.name for p in result.files)} in {out} "
            f"({(time.perf_counter() - started) / 60:.1f} min)",
            flush=True,
        )
    if interrupted:
        raise KeyboardInterrupt
    if failures:
        raise TuningError("; ".join(failures))
    return result

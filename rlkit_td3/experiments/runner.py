"""One training run into a run directory: what ``rlkit-td3 train`` does, and the unit ``compare`` schedules.

A run directory holds ``model.zip`` (the final model), ``config.json`` (the resolved hyperparameters and where
each came from), ``monitor.csv`` (training episodes), ``progress.csv`` (the training log), ``evaluations.npz``
(periodic deterministic evaluations) and ``checkpoints/`` (model and replay buffer every ``checkpoint_freq``
steps). `train_run()` with ``resume=True`` continues from the newest checkpoint; the three logs are cut back
to that checkpoint first, so a resumed run's files read as if it had never stopped.
"""

from __future__ import annotations

import csv
import dataclasses
import difflib
import io
import json
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rlkit_td3.checks.arguments import check_seed
from rlkit_td3.experiments.presets import ConfigError, algorithm_class, make_model, resolve_config
from rlkit_td3.fileio.file_reader import parse_json, read_json_file, read_npz_file
from rlkit_td3.fileio.serialization import atomic_write
from rlkit_td3.utils import ReplayBufferRunWarning

CHECKPOINT_DIR = "checkpoints"
RUN_FILES = ("model.zip", "config.json", "monitor.csv", "progress.csv", "evaluations.npz", CHECKPOINT_DIR)
"""What a finished run directory holds."""


@dataclass(frozen=True)
class RunSpec:
    """Everything that decides one run's result (the run directory is not part of it).

    Attributes:
        algo: ``"td3"`` or ``"ddpg"``.
        env_id: a registered gymnasium id (importing rlkit_td3 registers the Bullet ids).
        seed: seeds the model, its env and the evaluation env.
        timesteps: env steps to train; ``None`` takes the preset's ``n_timesteps``.
        preset: a shipped preset name, or ``None`` for the algorithm's defaults.
        overrides: hyperparameter values that win over the preset (see ``HYPERPARAMETERS``).
        n_envs: training envs stepped together in one process.
        device: torch device (``"auto"``, ``"cpu"``, ``"cuda"``).
        eval_freq: env steps between deterministic evaluations (TD3 paper: 5,000).
        eval_episodes: episodes per evaluation (TD3 paper: 10).
        checkpoint_freq: env steps between checkpoints (model and replay buffer).
    """

    algo: str
    env_id: str
    seed: int = 0
    timesteps: int | None = None
    preset: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    n_envs: int = 1
    device: str = "auto"
    eval_freq: int = 5_000
    eval_episodes: int = 10
    checkpoint_freq: int = 10_000

    def resolve(self) -> dict[str, Any]:
        """Validate the spec and resolve its configuration (see ``resolve_config``).

        Raises:
            ConfigError: an unknown algo, env id, preset or hyperparameter (with close matches), or a
                non-positive count.
        """
        check_env_id(self.env_id)
        try:
            check_seed("seed", self.seed)
        except (TypeError, ValueError) as exc:
            raise ConfigError(str(exc)) from None
        _check_device(self.device)
        for name in ("n_envs", "eval_freq", "eval_episodes", "checkpoint_freq"):
            _check_positive(name, getattr(self, name))
        if self.timesteps is not None:
            _check_positive("timesteps", self.timesteps)
        config = resolve_config(self.algo, self.env_id, self.preset, dict(self.overrides))
        timesteps = self.timesteps or config["hyperparameters"]["n_timesteps"]
        return {**config, "seed": self.seed, "timesteps": timesteps, "n_envs": self.n_envs}

    def to_dict(self) -> dict[str, Any]:
        """The spec as JSON-ready data."""
        return dataclasses.asdict(self)


def _check_positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")


def _check_device(device: Any) -> None:
    """Raise ConfigError unless ``device`` names a torch device this machine has (``"auto"`` always does)."""
    import torch

    if device == "auto":
        return
    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError) as exc:
        raise ConfigError(f"device {device!r} is not a torch device ({exc}); use auto, cpu or cuda") from None
    available = {"cpu": True, "cuda": torch.cuda.is_available(), "mps": torch.backends.mps.is_available()}
    if not available.get(kind, False):
        raise ConfigError(f"device {device!r} is not available on this machine; use auto or cpu")


def check_env_id(env_id: str) -> None:
    """Raise ConfigError naming ``env_id`` and its close matches when it is not a registered gymnasium id."""
    import rlkit_td3.envs  # noqa: F401  (registers the Bullet ids)

    if env_id not in gym.registry:
        close = difflib.get_close_matches(str(env_id), list(gym.registry), n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise ConfigError(f"unknown env id {env_id!r}{hint}")


def latest_checkpoint(run_dir: str | Path) -> tuple[int, Path, Path] | None:
    """The newest complete checkpoint of a run directory: ``(t, model file, buffer file)`` for the largest ``t``
    with both ``checkpoints/rl_model_<t>_steps.zip`` and ``rl_model_replay_buffer_<t>_steps.npz`` (a checkpoint
    is the pair: a run killed between writing the two leaves a model whose buffer is missing, and the previous
    pair is the last complete one). None when the directory holds no checkpoint at all.

    Raises:
        ConfigError: there are checkpoint models but none with its replay buffer.
    """
    folder = Path(run_dir) / CHECKPOINT_DIR
    stamps = []
    for path in folder.glob("rl_model_*_steps.zip") if folder.is_dir() else ():
        stamp = path.stem[len("rl_model_") : -len("_steps")]
        if stamp.isdigit():
            stamps.append(int(stamp))
    for stamp in sorted(stamps, reverse=True):
        buffer = folder / f"rl_model_replay_buffer_{stamp}_steps.npz"
        if buffer.is_file():
            return stamp, folder / f"rl_model_{stamp}_steps.zip", buffer
    if stamps:
        raise ConfigError(
            f"{folder} holds checkpoint models ({', '.join(f'{t} steps' for t in sorted(stamps))}) but none with its "
            "replay buffer file (a run killed while writing its first checkpoint): resuming would restart from "
            "an empty buffer; remove the run directory and train afresh"
        )
    return None


def read_evaluations(run_dir: str | Path) -> dict[str, np.ndarray]:
    """``evaluations.npz`` of a run directory: ``timesteps`` (n,), ``results`` and ``ep_lengths`` (n, episodes);
    empty arrays when there is none yet.

    Raises:
        ConfigError: the file is damaged: not a plain ``.npz`` of numbers, or arrays of other shapes, timesteps that
            are not increasing integers, returns that are not finite.
    """
    path = Path(run_dir) / "evaluations.npz"
    if not path.is_file():
        return {"timesteps": np.zeros(0, dtype=np.int64), "results": np.zeros((0, 0)), "ep_lengths": np.zeros((0, 0))}
    try:
        arrays = read_npz_file(path, ["timesteps", "results", "ep_lengths"])
    except (ValueError, OSError) as exc:
        raise ConfigError(f"{path} is damaged: {' '.join(str(exc).split())[:300]}") from None
    steps, results, lengths = arrays["timesteps"], arrays["results"], arrays["ep_lengths"]
    if (
        steps.ndim != 1
        or steps.dtype.kind not in "iu"
        or np.any(np.diff(steps) <= 0)
        or results.ndim != 2
        or results.shape[0] != len(steps)
        or lengths.shape != results.shape
        or results.dtype.kind not in "iuf"
        or not np.all(np.isfinite(results))
    ):
        raise ConfigError(
            f"{path} is damaged: it must hold increasing integer timesteps (n,) and finite results and ep_lengths "
            f"(n, episodes), got shapes {steps.shape}, {results.shape}, {lengths.shape}"
        )
    return arrays


def _atomic_text(path: Path, text: str) -> None:
    with atomic_write(path) as fh:
        fh.write(text.encode())


def _cut_monitor(path: Path, env0_steps: int) -> None:
    """Keep the header and the episodes that ended within the first ``env0_steps`` steps of env 0.

    Raises:
        ConfigError: the file is damaged (not UTF-8, or a row whose length is not a number).
    """
    if not path.is_file():
        return
    try:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        kept, steps = lines[:2], 0
        for line in lines[2:]:
            row = line.split(",")
            steps += int(float(row[1]))
            if steps > env0_steps:
                break
            kept.append(line)
    except (ValueError, IndexError, OverflowError) as exc:
        raise ConfigError(f"{path} is damaged: {' '.join(str(exc).split())[:200]}") from None
    _atomic_text(path, "".join(kept))


def _progress_rows(path: Path, num_timesteps: int) -> tuple[list[str], list[dict[str, str]]]:
    """The columns of ``progress.csv`` and its rows logged at or before ``num_timesteps``."""
    if not path.is_file():
        return [], []
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            rows = [r for r in reader if _as_int(r.get("time/total_timesteps")) <= num_timesteps]
            if any(None in r for r in rows):  # a row longer than the header
                raise ValueError("a row has more fields than the header")
            return list(reader.fieldnames or []), rows
    except (ValueError, csv.Error) as exc:
        raise ConfigError(f"{path} is damaged: {' '.join(str(exc).split())[:200]}") from None


def _as_int(text: str | None) -> float:
    try:
        return float(text) if text else float("inf")
    except ValueError:
        return float("inf")


def train_run(
    spec: RunSpec,
    out: str | Path,
    resume: bool = False,
    progress_bar: bool = False,
    verbose: bool = False,
) -> dict[str, Any]:
    """Train one run into the run directory ``out`` (created if missing).

    Args:
        spec: the run.
        out: the run directory.
        resume: continue from the newest checkpoint in ``out`` (a fresh start when there is none). The run then
            ends with exactly the requested number of timesteps, and ``evaluations.npz``, ``progress.csv`` and
            ``monitor.csv`` keep what was logged up to the checkpoint. Without it, a directory that holds
            checkpoints is refused.
        progress_bar: show a progress bar (needs the ``progress`` extra).
        verbose: print each checkpoint as it is written.

    Returns:
        ``{"num_timesteps", "timesteps", "mean_returns", "std_returns", "wall_time_s"}``: the run's evaluations.

    Raises:
        ConfigError: bad input in ``spec`` (see `RunSpec.resolve()`); checkpoints in ``out`` without
            ``resume``; a resume with another algo, env, seed or hyperparameters than ``out``'s ``config.json``.
    """
    from rlkit_td3.callbacks import CheckpointCallback, EvalCallback
    from rlkit_td3.logger import configure

    start = time.perf_counter()
    config = spec.resolve()
    timesteps = config["timesteps"]
    out = Path(out)
    if (out / CHECKPOINT_DIR).is_dir() and any((out / CHECKPOINT_DIR).glob("rl_model_*_steps.zip")) and not resume:
        raise ConfigError(
            f"{out} holds the checkpoints of an earlier run; pass resume=True (--resume) to continue it, "
            "or choose another directory"
        )
    latest = latest_checkpoint(out)
    # every constructor check (hyperparameter values, seed, device) before anything is written in ``out``; on a
    # resume, this model is what the checkpoint must match
    probe_env = gym.make(spec.env_id)
    try:
        reference = make_model(config, probe_env, seed=spec.seed, device=spec.device)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"bad configuration: {exc}") from None
    finally:
        probe_env.close()
    if latest is not None:
        check_run_folder(out, config)
    out.mkdir(parents=True, exist_ok=True)
    if latest is not None:
        steps, model_path, buffer_path = latest
        _check_checkpoint_file(model_path, config)
        # cut before the env opens the file to append; what is cut is what a resume from this checkpoint retrains
        _cut_monitor(out / "monitor.csv", steps // spec.n_envs)
        env = _make_env(spec.env_id, spec.n_envs, out / "monitor.csv", append=True)
        model = _load_checkpoint(model_path, buffer_path, steps, env, reference, spec)
        print(f"resuming {model_path} at {model.num_timesteps} of {timesteps} steps", flush=True)
    else:
        env = _make_env(spec.env_id, spec.n_envs, out / "monitor.csv")
        model = make_model(config, env, seed=spec.seed, device=spec.device)
        _atomic_text(out / "config.json", json.dumps(config, indent=2, default=str))
    logger = configure(str(out), ["csv"])
    evaluation = EvalCallback(
        gym.make(spec.env_id),
        n_eval_episodes=spec.eval_episodes,
        eval_freq=spec.eval_freq,
        log_path=str(out),
        seed=spec.seed,
        verbose=0,
    )
    if latest is not None:
        _restore_logs(out, model.num_timesteps, evaluation, logger.writers)
    else:
        (out / "evaluations.npz").unlink(missing_ok=True)
        (out / "progress.csv").unlink(missing_ok=True)
    model.set_logger(logger)
    checkpoints = CheckpointCallback(
        spec.checkpoint_freq, out / CHECKPOINT_DIR, save_replay_buffer=True, verbose=2 if verbose else 0
    )
    remaining = timesteps - model.num_timesteps
    if remaining > 0:
        model.learn(
            remaining,
            callback=[evaluation, checkpoints],
            reset_num_timesteps=latest is None,
            progress_bar=progress_bar,
        )
    model.save(out / "model.zip")
    logger.close()
    print(f"saved {out / 'model.zip'} after {model.num_timesteps} steps", flush=True)
    results = np.asarray(evaluation.evaluations_results, dtype=np.float64).reshape(-1, spec.eval_episodes)
    return {
        "num_timesteps": int(model.num_timesteps),
        "timesteps": [int(t) for t in evaluation.evaluations_timesteps],
        "mean_returns": results.mean(axis=1).tolist(),
        "std_returns": results.std(axis=1).tolist(),
        "wall_time_s": time.perf_counter() - start,
    }


def check_run_folder(run_dir: str | Path, config: dict[str, Any]) -> None:
    """Refuse (`ConfigError`, naming the file) a run directory whose ``config.json`` is missing, damaged, or made
    with another algorithm, env, seed, ``n_envs`` or hyperparameters than ``config`` (a `RunSpec.resolve()` result;
    a longer ``timesteps`` is fine): what it holds would not belong to the run it is resumed or counted as."""
    path = Path(run_dir) / "config.json"
    if not path.is_file():
        raise ConfigError(
            f"cannot resume {run_dir}: it has checkpoints but no {path.name}, so nothing says which run they belong "
            "to; remove the directory (or its checkpoints) to train afresh"
        )
    stored = _read_json(path, "a run's configuration")
    if not isinstance(stored, dict) or not isinstance(stored.get("hyperparameters"), dict):
        raise ConfigError(f"cannot resume {run_dir}: {path} is not a run's configuration (a JSON object)")
    _check_same_run(path, stored, config)


def _read_json(path: Path, what: str) -> Any:
    """A JSON file the CLI reads from its own folders; a damaged one is a `ConfigError` naming it."""
    try:
        return read_json_file(path)
    except (ValueError, OSError) as exc:
        raise ConfigError(f"{path} is damaged (not {what}): {' '.join(str(exc).split())[:300]}") from None


def _check_checkpoint_file(model_path: Path, config: dict[str, Any]) -> None:
    """The checkpoint is a model file of ours (not Stable-Baselines3's) of the run's algorithm."""
    from rlkit_td3.fileio.serialization import read_model_zip
    from rlkit_td3.persistence.sb3_import import is_sb3_zip

    try:
        if is_sb3_zip(model_path):
            raise ConfigError(f"cannot resume from {model_path}: a Stable-Baselines3 zip, not a checkpoint of this run")
        algorithm = read_model_zip(model_path, entries=())[0].get("algorithm")
    except (ValueError, OSError, AttributeError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"cannot resume from {model_path}: {' '.join(str(exc).split())[:300]}") from None
    if algorithm != algorithm_class(config["algo"]).__name__:
        raise ConfigError(f"cannot resume from {model_path}: it holds a {algorithm!r} model, the run {config['algo']}")


def _load_checkpoint(model_path: Path, buffer_path: Path, steps: int, env: Any, reference: Any, spec: RunSpec) -> Any:
    """The checkpoint's model and replay buffer, refused by name unless they are the run's: the networks' tensors
    (names, shapes, dtypes), the policy and replay-buffer classes and sizes as ``reference`` (a model built from
    the run's ``config.json``) has them, and the step count its file name says."""
    try:
        model = algorithm_class(spec.algo).load(model_path, env=env, device=spec.device)
    except (ValueError, TypeError, OSError) as exc:
        raise ConfigError(f"cannot resume from {model_path}: {' '.join(str(exc).split())[:300]}") from None

    def shapes(m: Any) -> dict[str, Any]:
        return {k: (tuple(v.shape), str(v.dtype)) for k, v in m.policy.state_dict().items()}

    def layout(m: Any) -> tuple[Any, ...]:
        buffer = m.replay_buffer
        return (
            type(m.policy).__name__,
            type(buffer).__name__,
            buffer.buffer_size,
            buffer.optimize_memory_usage,
            getattr(buffer, "n_steps", 1),
        )

    mine, theirs = shapes(reference), shapes(model)
    if mine != theirs or layout(reference) != layout(model):
        differ = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))[:3]
        what = f"tensors {differ} differ" if differ else f"policy and buffer {layout(model)}, not {layout(reference)}"
        raise ConfigError(
            f"cannot resume from {model_path}: it is not this run's architecture ({what}) as config.json records it"
        )
    if model.num_timesteps != steps or model.n_envs != spec.n_envs:
        raise ConfigError(
            f"cannot resume from {model_path}: it holds {model.num_timesteps} steps on {model.n_envs} envs, its name "
            f"says {steps} steps and the run has n_envs={spec.n_envs}"
        )
    try:
        with warnings.catch_warnings():  # another run's buffer is refused here, not merely warned about
            warnings.simplefilter("error", ReplayBufferRunWarning)
            model.load_replay_buffer(buffer_path)
    except ReplayBufferRunWarning:
        raise ConfigError(
            f"cannot resume from {buffer_path}: it was written by run {model.replay_buffer.file_run_id}, the "
            f"checkpoint {model_path.name} by run {model.run_id}"
        ) from None
    except (ValueError, TypeError, OSError) as exc:
        raise ConfigError(f"cannot resume from {buffer_path}: {' '.join(str(exc).split())[:300]}") from None
    return model


def _check_same_run(path: Path, stored: dict[str, Any], config: dict[str, Any]) -> None:
    """Refuse to resume a run directory with another algorithm, env, seed or hyperparameters than it was made with
    (a longer ``timesteps`` is fine)."""
    now = parse_json(json.dumps(config, default=str), "the run's config")  # the same JSON types as the stored file

    def identity(cfg: dict[str, Any]) -> dict[str, Any]:
        hp = {k: v for k, v in cfg.get("hyperparameters", {}).items() if k != "n_timesteps"}
        return {**{k: cfg.get(k) for k in ("algo", "env_id", "seed", "n_envs")}, **hp}

    before, after = identity(stored), identity(now)
    for key, value in after.items():
        if before.get(key) != value:
            raise ConfigError(f"cannot resume {path.parent}: it was made with {key}={before.get(key)!r}, not {value!r}")


def _restore_logs(out: Path, num_timesteps: int, evaluation: Any, writers: list[Any]) -> None:
    """Cut ``evaluations.npz`` and ``progress.csv`` back to the checkpoint and hand their rows to the writers."""
    from rlkit_td3.logger import CSVOutputFormat

    evaluations = read_evaluations(out)
    keep = evaluations["timesteps"] <= num_timesteps
    evaluation.evaluations_timesteps = evaluations["timesteps"][keep].tolist()
    evaluation.evaluations_results = evaluations["results"][keep].tolist()
    evaluation.evaluations_length = evaluations["ep_lengths"][keep].tolist()
    if not keep.all():
        buf = io.BytesIO()
        np.savez(buf, **{key: value[keep] for key, value in evaluations.items()})
        with atomic_write(out / "evaluations.npz") as fh:
            fh.write(buf.getvalue())
    columns, rows = _progress_rows(out / "progress.csv", num_timesteps)
    for writer in writers:
        if isinstance(writer, CSVOutputFormat):
            writer.keys, writer.rows = columns, rows
            text = io.StringIO(newline="")
            table = csv.DictWriter(text, fieldnames=columns)
            table.writeheader()
            table.writerows(rows)
            _atomic_text(writer.path, text.getvalue())


def _make_env(env_id: str, n_envs: int, monitor_file: Path, append: bool = False) -> Any:
    """The training env, monitored: one ``monitor.csv`` per run (written by the first env), appended on resume."""
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    from rlkit_td3.monitor import Monitor

    def make(i: int) -> gym.Env:
        return Monitor(gym.make(env_id), filename=monitor_file if i == 0 else None, override_existing=not append)

    if n_envs == 1:
        return make(0)
    return SyncVectorEnv([lambda i=i: make(i) for i in range(n_envs)], autoreset_mode=AutoresetMode.DISABLED)

"""The ``rlkit-td3`` command (also ``python -m rlkit_td3``): ``train``, ``eval``, ``record``, ``compare``, ``plot``,
``tune``.

It parses arguments and calls the public API (`rlkit_td3.experiments`, `rlkit_td3.video`); bad input (a wrong
argument, or a damaged or foreign file in a folder it reads) ends with one line on stderr naming what is wrong,
and exit code 2 (`run_command`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlkit_td3.version import __version__

EXIT_USAGE = 2
EXIT_FAILURE = 1


class UsageError(Exception):
    """Bad input on the command line: printed as one line, exit code 2."""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def train(args: argparse.Namespace) -> int:
    """``rlkit-td3 train``: one run into ``--out``."""
    from rlkit_td3.experiments import RunSpec, train_run

    spec = RunSpec(algo=args.algo, env_id=args.env, seed=args.seed, n_envs=args.n_envs, **_run_options(args))
    out = args.out or f"runs/{spec.algo.lower()}_{spec.env_id}_seed{spec.seed}"
    train_run(spec, out, resume=args.resume, progress_bar=not args.no_progress_bar, verbose=args.verbose)
    return 0


def _check_seed(seed: int) -> int:
    from rlkit_td3.checks.arguments import check_seed

    try:
        return check_seed("--seed", seed)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None


def _load_run(run: str, env: str | None) -> tuple[Any, str]:
    """The model of a run directory (or a model zip, ours or Stable-Baselines3's) and the env id to use with it,
    checked: a file that does not load, or a model whose spaces are not the env's, is a `UsageError`."""
    import gymnasium as gym

    from rlkit_td3.experiments import algorithm_class, check_env_id
    from rlkit_td3.fileio.file_reader import read_json_file
    from rlkit_td3.fileio.serialization import read_model_zip, spaces_equal
    from rlkit_td3.persistence.sb3_import import is_sb3_zip
    from rlkit_td3.td3 import TD3

    path = Path(run)
    if path.is_dir():
        path = path / "model.zip"
    if not path.is_file():
        raise UsageError(f"no model at {path}")
    env_id = env
    if env_id is None and (path.parent / "config.json").is_file():
        try:
            env_id = read_json_file(path.parent / "config.json")["env_id"]
        except (ValueError, TypeError, KeyError, OSError) as exc:
            raise UsageError(f"cannot read the env id from {path.parent / 'config.json'}: {exc}") from None
        if not isinstance(env_id, str):
            raise UsageError(f"{path.parent / 'config.json'} is damaged: its env_id {env_id!r:.80} is not a string")
    if env_id is None:
        raise UsageError("--env is needed for a model outside a run directory")
    check_env_id(env_id)
    try:
        # an SB3 TD3/DDPG zip loads as TD3 (the general one), as TD3.load accepts it
        algorithm = None if is_sb3_zip(path) else read_model_zip(path, entries=())[0].get("algorithm")
        cls = TD3 if algorithm is None else algorithm_class(str(algorithm).lower())
        model = cls.load(path)
    except (ValueError, TypeError, OSError, AttributeError) as exc:
        raise UsageError(f"cannot load the model {path}: {exc}") from None
    probe = gym.make(env_id)
    try:
        for name in ("observation_space", "action_space"):
            if not spaces_equal(getattr(model, name), getattr(probe, name)):
                raise UsageError(
                    f"the model {path} was trained on another {name} ({getattr(model, name)}) than {env_id}'s "
                    f"({getattr(probe, name)}); pass the env it was trained on with --env"
                )
    finally:
        probe.close()
    return model, env_id


def evaluate(args: argparse.Namespace) -> int:
    """``rlkit-td3 eval``: mean ± std deterministic return of a run's model."""
    import gymnasium as gym

    from rlkit_td3.evaluation import evaluate_policy

    seed = _check_seed(args.seed)
    model, env_id = _load_run(args.run, args.env)
    episodes = args.episodes if _smoke_timesteps() is None else 1
    mean, std = evaluate_policy(model, gym.make(env_id), n_eval_episodes=episodes, seed=seed)
    print(f"{env_id}: mean return {mean:.2f} ± {std:.2f} over {episodes} episodes")
    return 0


def record(args: argparse.Namespace) -> int:
    """``rlkit-td3 record``: a video of a run's deterministic policy."""
    from rlkit_td3.video import record_video

    if Path(args.out).suffix.lower() not in (".mp4", ".gif"):
        raise UsageError(f"--out must end in .mp4 or .gif, got {args.out!r}")
    seed = _check_seed(args.seed)
    model, env_id = _load_run(args.run, args.env)
    cap = _smoke_timesteps()
    steps = args.steps if cap is None else min(args.steps, cap)
    path = record_video(model, env_id, args.out, n_steps=steps, seed=seed)
    print(f"wrote {path} ({steps} steps of {env_id})")
    return 0


def compare(args: argparse.Namespace) -> int:
    """``rlkit-td3 compare``: algos × envs × seeds, then results.csv, summary.md and plots."""
    from rlkit_td3.experiments import compare as run_comparison
    from rlkit_td3.experiments.comparison import shell_command
    from rlkit_td3.experiments.stats import final_returns, improvements, summarize, summary_markdown

    table = run_comparison(
        algos=args.algos,
        envs=args.envs,
        seeds=args.seeds,
        backend=args.backend,
        workers=args.workers,
        threads=args.threads,
        address=args.address,
        connect_timeout=args.connect_timeout,
        out=args.out,
        command=shell_command(["rlkit-td3", *sys.argv[1:]]) if args.argv is None else args.argv,
        **_run_options(args),
    )
    finals = final_returns(table)
    print(f"wrote {Path(args.out) / 'results.csv'} ({len(table)} rows, {len(finals)} runs), summary.md and plots")
    if not table.empty:  # the statistics of summary.md, computed the same way
        print(summary_markdown(summarize(table), improvements(table)))
    return 0


def plot(args: argparse.Namespace) -> int:
    """``rlkit-td3 plot``: learning curves (and the summary table) from existing sweep or run directories."""
    from rlkit_td3.experiments import load_results
    from rlkit_td3.experiments.plots import plot_learning_curves
    from rlkit_td3.experiments.stats import improvements, summarize, summary_markdown

    for path in args.dirs:
        if not Path(path).is_dir():
            raise UsageError(f"no directory {path}")
    table = load_results(args.dirs)
    if table.empty:
        raise UsageError(f"no evaluations found in {' '.join(args.dirs)}")
    out = args.out or (args.dirs[0] if len(args.dirs) == 1 else ".")
    for path in plot_learning_curves(table, out):
        print(f"wrote {path}")
    print(summary_markdown(summarize(table), improvements(table)))
    return 0


def tune(args: argparse.Namespace) -> int:
    """``rlkit-td3 tune``: an Optuna study of an algorithm's hyperparameters on one env, into ``--out``."""
    from rlkit_td3.experiments import parse_override
    from rlkit_td3.experiments.comparison import shell_command
    from rlkit_td3.experiments.tuning import tune as run_tuning

    timesteps, trials, eval_freq, eval_episodes = args.timesteps, args.trials, args.eval_freq, args.eval_episodes
    cap = _smoke_timesteps()
    if cap is not None:  # a quick try: at most 2 trials of the capped length, one episode per evaluation
        timesteps = min(timesteps, cap) if isinstance(timesteps, int) and timesteps > 0 else timesteps
        trials = min(trials, 2) if trials > 0 else trials
        eval_freq = timesteps if eval_freq is None else min(eval_freq, timesteps)
        eval_episodes = 1
    tuning = dict(
        algo=args.algo,
        env_id=args.env,
        n_trials=trials,
        timesteps=timesteps,
        out=args.out,
        preset=args.preset,
        overrides=dict(parse_override(text) for text in args.hp),
        search_space=args.search_space,
        n_jobs=args.n_jobs,
        storage=args.storage,
        study_name=args.study_name,
        sampler=args.sampler,
        pruner=args.pruner,
        n_startup_trials=args.n_startup_trials,
        eval_freq=eval_freq,
        eval_episodes=eval_episodes,
        seed=args.seed,
        device=args.device,
        threads=args.threads,
        progress_bar=args.progress_bar,
        command=shell_command(["rlkit-td3", *sys.argv[1:]]) if args.argv is None else args.argv,
    )
    try:
        result = run_tuning(**tuning)
    except KeyboardInterrupt:
        print(f"rlkit-td3: interrupted; outputs written to {args.out}; rerun the command to continue", file=sys.stderr)
        return 130
    if result.best_number is not None:
        print(f"best: trial {result.best_number}, value {result.best_value:.2f}; preset {result.preset_path}")
    return 0


def _add_tune_parser(sub: Any) -> None:
    u = sub.add_parser("tune", help="search hyperparameters with Optuna (the tune extra)")
    u.add_argument("--algo", required=True, help="td3 or ddpg")
    u.add_argument("--env", required=True, help="a gymnasium id")
    u.add_argument("--trials", type=int, required=True, help="trials to run now (a rerun adds as many)")
    u.add_argument("--timesteps", type=int, required=True, help="env steps of each trial")
    u.add_argument("--out", required=True, help="the output folder (and of the default storage, study.db)")
    u.add_argument("--preset", default=None, help="the preset the searched values override (name or FILE.toml)")
    u.add_argument("--hp", nargs="*", default=[], metavar="KEY=VALUE", help="fixed hyperparameters")
    u.add_argument("--search-space", default=None, metavar="FILE", help="YAML/JSON that narrows or replaces the space")
    u.add_argument("--n-jobs", type=int, default=1, help="worker processes on this machine")
    u.add_argument("--storage", default=None, help="an Optuna storage URL (default: sqlite:///OUT/study.db)")
    u.add_argument("--study-name", default=None, help="default: <algo>_<env>")
    u.add_argument("--sampler", default="tpe", help="tpe or random")
    u.add_argument("--pruner", default="median", help="median or none")
    u.add_argument("--n-startup-trials", type=int, default=5, help="trials before TPE models and the pruner prunes")
    u.add_argument("--eval-freq", type=int, default=None, help="env steps between evaluations (default: T/10)")
    u.add_argument("--eval-episodes", type=int, default=5, help="episodes per evaluation")
    u.add_argument("--seed", type=int, default=0, help="seeds every trial (and the sampler)")
    u.add_argument("--device", default="auto", help="auto, cpu or cuda")
    u.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    u.add_argument("--progress-bar", action="store_true", help="Optuna's progress bar")
    u.set_defaults(func=tune, argv=None)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlkit-td3", description="Train, evaluate and compare TD3 / DDPG / TD7 runs.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train one run into a run directory")
    t.add_argument("--algo", required=True, help="td3, ddpg or td7")
    t.add_argument("--env", required=True, help="a gymnasium id, e.g. HalfCheetahBulletEnv-v0")
    _add_run_options(t)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--out", default=None, help="the run directory (default runs/<algo>_<env>_seed<S>)")
    t.add_argument("--n-envs", type=_positive_int, default=1)
    t.add_argument("--resume", action="store_true", help="continue from the run directory's last checkpoint")
    t.add_argument("--no-progress-bar", action="store_true")
    t.add_argument("--verbose", action="store_true", help="print each checkpoint as it is written")
    t.set_defaults(func=train)

    e = sub.add_parser("eval", help="evaluate a run directory or a model zip")
    e.add_argument("run", help="RUN_DIR or model.zip")
    e.add_argument("--env", default=None, help="default: the run's env")
    e.add_argument("--episodes", type=_positive_int, default=10)
    e.add_argument("--seed", type=int, default=0)
    e.set_defaults(func=evaluate)

    r = sub.add_parser("record", help="record a video of a run's deterministic policy")
    r.add_argument("run", help="RUN_DIR or model.zip")
    r.add_argument("--out", required=True, help="video file, .mp4 (or .gif)")
    r.add_argument("--env", default=None, help="default: the run's env")
    r.add_argument("--steps", type=_positive_int, default=1000, help="env steps to record")
    r.add_argument("--seed", type=int, default=0)
    r.set_defaults(func=record)

    c = sub.add_parser("compare", help="run algos x envs x seeds and summarize them")
    c.add_argument("--algos", nargs="+", default=["td3", "ddpg"], help="default: td3 ddpg")
    c.add_argument("--envs", nargs="+", required=True, metavar="ID")
    c.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    _add_run_options(c)
    c.add_argument("--backend", default="local", help="local (a process pool) or ray")
    c.add_argument("--workers", type=_positive_int, default=None, help="local runs at once (default: CPUs/threads)")
    c.add_argument("--threads", type=_positive_int, default=1, help="torch threads per run (Ray: num_cpus)")
    c.add_argument("--address", default=None, help="Ray cluster: auto or HOST:PORT (default: a local instance)")
    c.add_argument("--connect-timeout", type=float, default=45.0, help="seconds to wait for the Ray cluster")
    c.add_argument("--out", default="comparison", help="the sweep directory")
    c.set_defaults(func=compare, argv=None)

    p = sub.add_parser("plot", help="learning curves from sweep or run directories")
    p.add_argument("dirs", nargs="+", metavar="RUN_OR_SWEEP_DIR")
    p.add_argument("--out", default=None, help="where the PNGs go (default: the directory given, or .)")
    p.set_defaults(func=plot)
    _add_tune_parser(sub)
    return parser


SMOKE_VARIABLE = "RLKIT_TD3_MAX_TIMESTEPS"
"""Environment variable for a quick try of a command line: every run trains this many steps (or ``--timesteps`` if
fewer), checkpoints at half of it and is evaluated once at its end on one episode; ``eval`` uses one episode and
``record`` at most this many steps."""


def _smoke_timesteps() -> int | None:
    """The value of ``RLKIT_TD3_MAX_TIMESTEPS``, if set."""
    text = os.environ.get(SMOKE_VARIABLE)
    if text is None:
        return None
    try:
        return _positive_int(text)
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"environment variable {SMOKE_VARIABLE} {exc}") from None


def _run_options(args: argparse.Namespace) -> dict[str, Any]:
    """The values of the options `_add_run_options()` adds, as keyword arguments of a run (cut to
    ``RLKIT_TD3_MAX_TIMESTEPS`` steps when that variable is set)."""
    from rlkit_td3.experiments import parse_override

    options = {
        "timesteps": args.timesteps,
        "preset": args.preset,
        "overrides": dict(parse_override(text) for text in args.hp),
        "device": args.device,
        "eval_freq": args.eval_freq,
        "eval_episodes": args.eval_episodes,
        "checkpoint_freq": args.checkpoint_freq,
    }
    cap = _smoke_timesteps()
    if cap is not None:
        options["timesteps"] = min(args.timesteps or cap, cap)
        options["eval_freq"] = min(options["eval_freq"], options["timesteps"])
        options["checkpoint_freq"] = min(options["checkpoint_freq"], max(1, options["timesteps"] // 2))
        options["eval_episodes"] = 1
    return options


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timesteps", type=_positive_int, default=None, help="default: the preset's n_timesteps")
    parser.add_argument("--preset", default=None, help="paper, plus (TD3+) or zoo (or a preset file FILE.toml)")
    parser.add_argument("--hp", nargs="*", default=[], metavar="KEY=VALUE", help="override hyperparameters")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--eval-freq", type=_positive_int, default=5000, help="TD3 paper: every 5,000 steps")
    parser.add_argument("--eval-episodes", type=_positive_int, default=10, help="TD3 paper: 10")
    parser.add_argument("--checkpoint-freq", type=_positive_int, default=10_000, help="env steps")


def _error(exc: BaseException) -> None:
    print(f"rlkit-td3: error: {' '.join(str(exc).split())}", file=sys.stderr)  # one line


def run_command(args: argparse.Namespace) -> int:
    """Run a parsed subcommand (``args.func``) and turn its errors into exit codes, for every subcommand alike:
    bad input, whether an argument or a damaged or foreign file (`UsageError`, the experiments' ``ConfigError`` and
    ``BackendError``, a file's ``ModelFileError``), is one line on stderr and exit code 2; runs of ``compare`` that
    failed while training, and ``tune`` workers that failed, are one line and exit code 1."""
    from rlkit_td3.experiments import BackendError, ComparisonError, ConfigError
    from rlkit_td3.experiments.tuning import TuningError
    from rlkit_td3.fileio.serialization import ModelFileError

    try:
        return args.func(args)
    except (UsageError, ConfigError, BackendError, ModelFileError) as exc:
        _error(exc)
        return EXIT_USAGE
    except (ComparisonError, TuningError) as exc:
        _error(exc)
        return EXIT_FAILURE


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rlkit-td3`` console script."""
    args = build_parser().parse_args(argv)
    if argv is not None and args.command in ("compare", "tune"):
        from rlkit_td3.experiments.comparison import shell_command

        args.argv = shell_command(["rlkit-td3", *argv])
    return run_command(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

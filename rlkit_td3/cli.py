"""The ``rlkit-td3`` command (also ``python -m rlkit_td3``): ``train`` and ``eval`` a run directory.

It parses arguments and calls the public API (:mod:`rlkit_td3.experiments`, callbacks, ``Monitor``); bad input
ends with one line on stderr naming what is wrong, and exit code 2.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

EXIT_USAGE = 2
CHECKPOINT_DIR = "checkpoints"


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


def _check_env_id(env_id: str) -> None:
    import rlkit_td3  # noqa: F401  (registers the Bullet ids)

    if env_id not in gym.registry:
        close = difflib.get_close_matches(env_id, list(gym.registry), n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise UsageError(f"unknown env id {env_id!r}{hint}")


def _make_env(env_id: str, n_envs: int, monitor_file: Path, append: bool = False) -> Any:
    """The training env, monitored: one ``monitor.csv`` per run (written by the first env), appended on resume."""
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    from rlkit_td3.monitor import Monitor

    def make(i: int) -> gym.Env:
        return Monitor(gym.make(env_id), filename=monitor_file if i == 0 else None, override_existing=not append)

    if n_envs == 1:
        return make(0)
    return SyncVectorEnv([lambda i=i: make(i) for i in range(n_envs)], autoreset_mode=AutoresetMode.DISABLED)


def _latest_checkpoint(out: Path) -> tuple[Path, Path | None] | None:
    folder = out / CHECKPOINT_DIR
    best: tuple[int, Path] | None = None
    for path in folder.glob("rl_model_*_steps.zip") if folder.is_dir() else ():
        stamp = path.stem[len("rl_model_") : -len("_steps")]
        if stamp.isdigit() and (best is None or int(stamp) > best[0]):
            best = (int(stamp), path)
    if best is None:
        return None
    buffer = folder / f"rl_model_replay_buffer_{best[0]}_steps.npz"
    return best[1], buffer if buffer.exists() else None


def train(args: argparse.Namespace) -> int:
    """``rlkit-td3 train``: one run into ``--out``."""
    from rlkit_td3.callbacks import CheckpointCallback, EvalCallback
    from rlkit_td3.experiments import make_model, parse_override, resolve_config
    from rlkit_td3.experiments.presets import algorithm_class
    from rlkit_td3.logger import configure

    _check_env_id(args.env)
    overrides = dict(parse_override(text) for text in args.hp)
    config = resolve_config(args.algo, args.env, args.preset, overrides)
    timesteps = args.timesteps or config["hyperparameters"]["n_timesteps"]
    out = Path(args.out or f"runs/{config['algo']}_{args.env}_seed{args.seed}")
    out.mkdir(parents=True, exist_ok=True)
    record = {**config, "seed": args.seed, "timesteps": timesteps, "n_envs": args.n_envs}
    latest = _latest_checkpoint(out) if args.resume else None
    env = _make_env(args.env, args.n_envs, out / "monitor.csv", append=latest is not None)
    if latest is not None:
        model_path, buffer_path = latest
        model = algorithm_class(config["algo"]).load(model_path, env=env, device=args.device)
        if buffer_path is not None:
            model.load_replay_buffer(buffer_path)
        print(f"resuming {model_path} at {model.num_timesteps} of {timesteps} steps", flush=True)
    else:
        model = make_model(config, env, seed=args.seed, device=args.device)
        (out / "config.json").write_text(json.dumps(record, indent=2, default=str))
    model.set_logger(configure(str(out), ["csv"]))
    callbacks = [
        EvalCallback(
            gym.make(args.env),
            n_eval_episodes=args.eval_episodes,
            eval_freq=args.eval_freq,
            log_path=str(out),
            seed=args.seed,
            verbose=0,
        ),
        CheckpointCallback(
            args.checkpoint_freq, out / CHECKPOINT_DIR, save_replay_buffer=True, verbose=2 if args.verbose else 0
        ),
    ]
    remaining = timesteps - model.num_timesteps
    if remaining > 0:
        model.learn(
            remaining,
            callback=callbacks,
            reset_num_timesteps=latest is None,
            progress_bar=not args.no_progress_bar,
        )
    model.save(out / "model.zip")
    print(f"saved {out / 'model.zip'} after {model.num_timesteps} steps", flush=True)
    return 0


def evaluate(args: argparse.Namespace) -> int:
    """``rlkit-td3 eval``: mean ± std deterministic return of a run's model."""
    from rlkit_td3.evaluation import evaluate_policy
    from rlkit_td3.experiments.presets import algorithm_class
    from rlkit_td3.serialization import read_model_zip

    path = Path(args.run)
    if path.is_dir():
        path = path / "model.zip"
    if not path.is_file():
        raise UsageError(f"no model at {path}")
    env_id = args.env
    if env_id is None and (path.parent / "config.json").is_file():
        env_id = json.loads((path.parent / "config.json").read_text())["env_id"]
    if env_id is None:
        raise UsageError("--env is needed for a model outside a run directory")
    _check_env_id(env_id)
    algo = read_model_zip(path)[0]["algorithm"].lower()
    model = algorithm_class(algo).load(path)
    mean, std = evaluate_policy(model, gym.make(env_id), n_eval_episodes=args.episodes, seed=args.seed)
    print(f"{env_id}: mean return {mean:.2f} ± {std:.2f} over {args.episodes} episodes")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlkit-td3", description="Train and evaluate TD3 / DDPG runs.")
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train one run into a run directory")
    t.add_argument("--algo", required=True, help="td3 or ddpg")
    t.add_argument("--env", required=True, help="a gymnasium id, e.g. HalfCheetahBulletEnv-v0")
    t.add_argument("--timesteps", type=_positive_int, default=None, help="default: the preset's n_timesteps")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--preset", default=None, help="zoo or paper")
    t.add_argument("--hp", nargs="*", default=[], metavar="KEY=VALUE", help="override hyperparameters")
    t.add_argument("--out", default=None, help="the run directory")
    t.add_argument("--n-envs", type=_positive_int, default=1)
    t.add_argument("--device", default="auto")
    t.add_argument("--resume", action="store_true", help="continue from the run directory's last checkpoint")
    t.add_argument("--eval-freq", type=_positive_int, default=5000, help="TD3 paper: every 5,000 steps")
    t.add_argument("--eval-episodes", type=_positive_int, default=10)
    t.add_argument("--checkpoint-freq", type=_positive_int, default=10_000)
    t.add_argument("--no-progress-bar", action="store_true")
    t.add_argument("--verbose", action="store_true", help="print each checkpoint as it is written")
    t.set_defaults(func=train)
    e = sub.add_parser("eval", help="evaluate a run directory or a model zip")
    e.add_argument("run", help="RUN_DIR or model.zip")
    e.add_argument("--env", default=None, help="default: the run's env")
    e.add_argument("--episodes", type=_positive_int, default=10)
    e.add_argument("--seed", type=int, default=0)
    e.set_defaults(func=evaluate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rlkit-td3`` console script."""
    from rlkit_td3.experiments import ConfigError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (UsageError, ConfigError) as exc:
        print(f"rlkit-td3: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""Does tuning pay? Tune TD3 on a PyBullet robot, then compare the best settings with the ``zoo`` preset.

1. ``rlkit_td3.experiments.tune``: ``--trials`` trials of ``--tune-timesteps`` steps each, searching the RL Zoo's
   TD3 space on top of the ``zoo`` preset (median pruner, TPE), into ``<out>/tuning``. Rerunning the command
   continues the study (``--trials`` more) and skips nothing else.
2. ``rlkit_td3.experiments.compare``: TD3 with the tuned preset (``<out>/tuning/best_preset.toml``) and TD3 with
   ``--preset zoo``, ``--timesteps`` steps each, on the same fresh seeds (``--seeds``, default 100 101 102: not the
   tuning seed), into ``<out>/tuned`` and ``<out>/zoo``; both resume.
3. The field's statistics, as ``compare`` computes them: each run scored by its last 5 evaluations, the IQM per
   group with its 95 % stratified-bootstrap CI (runs resampled as units), and the CI of the IQM difference
   (tuned − zoo). ``<out>/verdict.md`` says whether the tuned settings beat the zoo's, positive or not.

Usage (hours of CPU; 1 torch thread per process)::

    OMP_NUM_THREADS=1 python benchmarks/tune_bullet.py --env HopperBulletEnv-v0 --trials 30 \\
        --tune-timesteps 100000 --timesteps 300000 --out bench_tune_hopper
    python benchmarks/tune_bullet.py --out bench_tune_hopper --smoke   # the whole pipeline on a tiny budget
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rlkit_td3.experiments import compare, tune
from rlkit_td3.experiments.stats import iqm, iqm_difference_ci, run_scores, stratified_bootstrap_ci
from rlkit_td3.fileio.serialization import atomic_write


def _group(out: Path, label: str, table) -> dict:
    scores = run_scores(table)
    low, high = stratified_bootstrap_ci([scores])
    return {"label": label, "scores": scores, "iqm": float(iqm(scores.ravel())), "ci": (low, high), "dir": out}


def verdict(tuned: dict, zoo: dict, difference: tuple[float, float, float], settings: dict) -> str:
    """``verdict.md``: both groups, the difference and what it says."""
    diff, low, high = difference
    if low > 0:
        says = "the tuned settings beat the zoo preset (the CI of the difference excludes 0)"
    elif high < 0:
        says = "the zoo preset beats the tuned settings (the CI of the difference excludes 0)"
    else:
        says = "no difference shown: the CI of the difference includes 0"
    lines = [
        f"# Tuned TD3 vs the zoo preset on {settings['env']}",
        "",
        f"Tuning: {settings['trials_total']} trials of {settings['tune_timesteps']:,} steps "
        f"(best trial {settings['best_number']}, value {settings['best_value']:.1f}). "
        f"Comparison: {settings['timesteps']:,} steps, seeds {settings['seeds']}, each run scored by its last "
        f"{tuned['scores'].shape[1]} evaluations.",
        "",
        "| settings | IQM | 95 % CI | runs |",
        "|---|---|---|---|",
    ]
    for group in (tuned, zoo):
        lines.append(
            f"| {group['label']} | {group['iqm']:.1f} | [{group['ci'][0]:.1f}, {group['ci'][1]:.1f}] | "
            f"{group['scores'].shape[0]} |"
        )
    lines += ["", f"IQM difference (tuned − zoo): {diff:.1f}, 95 % CI [{low:.1f}, {high:.1f}]: {says}.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="HopperBulletEnv-v0")
    parser.add_argument("--trials", type=int, default=30, help="tuning trials to run now (a rerun adds as many)")
    parser.add_argument("--tune-timesteps", type=int, default=100_000, help="env steps of each trial")
    parser.add_argument("--timesteps", type=int, default=300_000, help="env steps of each comparison run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[100, 101, 102])
    parser.add_argument("--n-jobs", type=int, default=1, help="tuning worker processes")
    parser.add_argument("--workers", type=int, default=None, help="comparison runs at once")
    parser.add_argument("--eval-freq", type=int, default=5_000, help="comparison runs: steps between evaluations")
    parser.add_argument("--out", default="bench_tune_bullet")
    parser.add_argument("--smoke", action="store_true", help="a tiny budget: checks the pipeline, says nothing")
    args = parser.parse_args()
    if args.smoke:
        args.trials, args.tune_timesteps, args.timesteps, args.eval_freq = 2, 600, 600, 300
    out = Path(args.out)
    started = time.perf_counter()
    small = {"net_arch": [16], "learning_starts": 100, "buffer_size": 10_000} if args.smoke else {}
    result = tune(
        algo="td3",
        env_id=args.env,
        n_trials=args.trials,
        timesteps=args.tune_timesteps,
        out=out / "tuning",
        preset="zoo",
        overrides=small,
        n_jobs=args.n_jobs,
        eval_freq=max(1, args.tune_timesteps // 10),
        eval_episodes=1 if args.smoke else 5,
    )
    if result.preset_path is None:
        raise SystemExit("no trial completed: nothing to compare")
    common = dict(
        algos=["td3"],
        envs=[args.env],
        seeds=args.seeds,
        timesteps=args.timesteps,
        overrides=small,
        workers=args.workers,
        eval_freq=args.eval_freq,
        eval_episodes=1 if args.smoke else 10,
        checkpoint_freq=max(1, args.timesteps // 10),
    )
    tables = {
        "tuned": compare(preset=str(result.preset_path), out=out / "tuned", **common),
        "zoo": compare(preset="zoo", out=out / "zoo", **common),
    }
    tuned = _group(out / "tuned", f"tuned ({result.preset_path.name})", tables["tuned"])
    zoo = _group(out / "zoo", "zoo preset", tables["zoo"])
    k = min(tuned["scores"].shape[1], zoo["scores"].shape[1])
    tuned["scores"], zoo["scores"] = tuned["scores"][:, -k:], zoo["scores"][:, -k:]
    difference = iqm_difference_ci(tuned["scores"], zoo["scores"])
    settings = {
        "env": args.env,
        "trials_total": len(result.study.trials),
        "tune_timesteps": args.tune_timesteps,
        "best_number": result.best_number,
        "best_value": result.best_value,
        "timesteps": args.timesteps,
        "seeds": args.seeds,
    }
    text = verdict(tuned, zoo, difference, settings)
    if args.smoke:
        text += "\nSmoke run (--smoke): a tiny budget that checks the pipeline; it says nothing about tuning.\n"
    with atomic_write(out / "verdict.md") as fh:
        fh.write(text.encode())
    print(text)
    print(f"{(time.perf_counter() - started) / 60:.1f} min")


if __name__ == "__main__":
    main()

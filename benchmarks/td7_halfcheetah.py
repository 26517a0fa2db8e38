"""TD7 against our TD3 on MuJoCo HalfCheetah-v4 (the TD7 paper's env): a resumable sweep, then its statistics.

Each run trains one algorithm with the ``paper`` preset (``rlkit_td3/experiments/presets.toml``: TD7, the authors'
hyperparameters; TD3, the TD3 paper's) and evaluates it every ``--eval-every`` steps (5,000, as the authors'
``main.py``) with ``--eval-episodes`` (10) deterministic episodes on a separate env: TD7 acts with its checkpoint
policy there, as the authors' evaluation does. The runs, CSVs, checkpoints and summary are those of
``benchmarks/sb3_compare.py`` (this script drives its ``run_one`` with the two models below): each run appends its
evaluations to ``<out>/runs/rlkit_<algo>_s<seed>.csv`` (columns ``lib, algo, env, seed, timesteps, mean_return,
std_return, wall_s``), saves itself with its replay buffer after every evaluation, and a re-run of the same command
continues every unfinished run exactly where its last checkpoint stood. Seeds are interleaved (seed 0: TD7 then
TD3, seed 1: ...), so a partial sweep is still a fair comparison.

``--summarize`` (also run at the end) writes sb3_compare's ``results.csv``, ``summary.md`` and ``curves.png``, and
``td7_vs_td3.md``: how far each run got, then at the full budget and at the furthest step every run reached, each
algorithm's IQM of the runs' scores (mean of the last 5 evaluations) with its 95 % stratified-bootstrap interval
(with fewer than 5 runs: the range, labelled so), the ratio of the IQMs, and the probability of improvement
P(TD7 > TD3) (Agarwal et al. 2021) with its interval at 5 runs or more (`rlkit_td3.experiments.stats`).

Launch (1 torch thread per run, two processes at a time, in the background: about 3-4 core-hours per TD7 run)::

    cd <repo> && OMP_NUM_THREADS=1 nohup python benchmarks/td7_halfcheetah.py --out /work/sweeps/td7_halfcheetah_300k \\
        --seeds 0 2 4 > td7_a.log 2>&1 &
    cd <repo> && OMP_NUM_THREADS=1 nohup python benchmarks/td7_halfcheetah.py --out /work/sweeps/td7_halfcheetah_300k \\
        --seeds 1 3 > td7_b.log 2>&1 &
    python benchmarks/td7_halfcheetah.py --out /work/sweeps/td7_halfcheetah_300k --summarize

A quick check of the whole path (tiny, minutes): ``--steps 2000 --eval-every 1000 --eval-episodes 1
--learning-starts 500``. ``--env`` runs another env the same way (e.g. ``--env Walker2DBulletEnv-v0 --algos td7``,
to set against the committed TD3 runs there), in its own ``--out`` folder.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sb3_compare  # noqa: E402  (the sweep machinery this script reuses)

from rlkit_td3 import TD3, TD7  # noqa: E402
from rlkit_td3.experiments import stats  # noqa: E402
from rlkit_td3.experiments.presets import make_model, resolve_config  # noqa: E402

ENV_ID = "HalfCheetah-v4"
LAST = 5
OVERRIDES: dict[str, Any] = {}  # --learning-starts for the quick check


def _make(lib: str, algo: str, env_id: str, seed: int) -> Any:
    config = resolve_config(algo, env_id, "paper", dict(OVERRIDES))
    return make_model(config, gym.make(env_id), seed=seed, device="cpu")


def _resume_point(stem: Path, lib: str, algo: str, env_id: str, seed: int) -> Any:
    import json

    ckpt, state_path = stem.with_suffix(".ckpt.zip"), stem.with_suffix(".ckpt.json")
    if not (ckpt.exists() and state_path.exists()):
        return None
    state = json.loads(state_path.read_text())
    model = {"td7": TD7, "td3": TD3}[algo].load(ckpt, env=gym.make(env_id))
    eval_env = gym.make(env_id)
    eval_env.reset(seed=10_000 + seed)
    eval_env.unwrapped.np_random.bit_generator.state = state["eval_rng"]
    return model, eval_env, state


sb3_compare.make_model = _make  # run_one builds and resumes the runs through these
sb3_compare._resume_point = _resume_point


def _runs(out: Path) -> dict[tuple[str, int], list[tuple[int, float]]]:
    """Every run's evaluations so far: ``(algo, seed) -> [(timesteps, mean_return), ...]`` in step order."""
    runs: dict[tuple[str, int], list[tuple[int, float]]] = {}
    for path in sorted((out / "runs").glob("rlkit_*.csv")):
        with path.open(newline="") as handle:
            rows = list(csv.DictReader(handle))
        if rows:
            key = (rows[0]["algo"], int(rows[0]["seed"]))
            runs[key] = sorted((int(r["timesteps"]), float(r["mean_return"])) for r in rows)
    return runs


def _scores_at(runs: dict[tuple[str, int], list[tuple[int, float]]], algo: str, step: int) -> np.ndarray:
    """Each of ``algo``'s runs that reached ``step``: the mean of its last ``LAST`` evaluations up to it."""
    scores = []
    for (name, _seed), evals in sorted(runs.items()):
        upto = [value for timesteps, value in evals if timesteps <= step]
        if name == algo and evals[-1][0] >= step and len(upto) >= LAST:
            scores.append(float(np.mean(upto[-LAST:])))
    return np.asarray(scores)


def _iqm_line(name: str, x: np.ndarray) -> str:
    if len(x) >= stats.MIN_RUNS_FOR_INTERVAL:
        low, high = stats.stratified_bootstrap_ci(x)
        spread = f"[{low:.1f}, {high:.1f}] (95 % CI)"
    else:
        spread = f"{x.min():.1f} to {x.max():.1f} (range: fewer than {stats.MIN_RUNS_FOR_INTERVAL} runs)"
    return f"| {name} | {len(x)} | {float(stats.iqm(x)):.1f} | {spread} | {', '.join(f'{v:.0f}' for v in x)} |"


def td7_vs_td3(out: Path, steps: int = 300_000, env_id: str = ENV_ID) -> str:
    """``td7_vs_td3.md``: how far each run got; then, at ``steps`` and at the furthest step both algorithms
    reached (the runs that reached it), each algorithm's IQM of run scores (an interval with 5 runs or more, else
    the range), the ratio of the IQMs and the probability of improvement (with its interval at 5 runs or more):
    the statistics of `rlkit_td3.experiments.stats`, rliable's definitions."""
    runs = _runs(out)
    lines = [f"# TD7 vs TD3 on {env_id}", "", "## How far each run got", ""]
    lines += ["| algo | seed | steps | last evaluation |", "|---|---|---|---|"]
    for (algo, seed), evals in sorted(runs.items()):
        lines.append(f"| {algo} | {seed} | {evals[-1][0]} | {evals[-1][1]:.1f} |")
    furthest = {}  # each algorithm's furthest step; the runs compared at the nearer of the two are those that got there
    for (algo, _seed), evals in runs.items():
        furthest[algo] = max(furthest.get(algo, 0), evals[-1][0])
    both = {"td7", "td3"} <= set(furthest)
    checkpoints = sorted({steps, min(furthest["td7"], furthest["td3"])}) if both else []
    for step in checkpoints:
        td7, td3 = _scores_at(runs, "td7", step), _scores_at(runs, "td3", step)
        if len(td7) == 0 or len(td3) == 0:
            continue
        lines += [
            "",
            f"## At {step:,} steps",
            "",
            f"Run score: the mean of a run's last {LAST} evaluations up to {step:,} steps (10 deterministic episodes"
            " each); only runs that reached it.",
            "",
            "| algo | runs | IQM | spread | run scores |",
            "|---|---|---|---|---|",
            _iqm_line("td7", td7),
            _iqm_line("td3", td3),
            "",
            f"IQM ratio TD7 / TD3: {float(stats.iqm(td7)) / float(stats.iqm(td3)):.2f}",
        ]
        if min(len(td7), len(td3)) >= stats.MIN_RUNS_FOR_INTERVAL:
            poi, low, high = stats.probability_of_improvement_ci(td7, td3)
            lines.append(f"Probability of improvement P(TD7 > TD3): {poi:.2f} [{low:.2f}, {high:.2f}] (95 % CI)")
        else:
            poi = stats.probability_of_improvement(td7, td3)
            lines.append(f"Probability of improvement P(TD7 > TD3): {poi:.2f} (no interval: fewer than 5 runs)")
    if not checkpoints:
        lines += ["", "No runs of both algorithms yet."]
    text = "\n".join(lines) + "\n"
    (out / "td7_vs_td3.md").write_text(text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--algos", nargs="+", default=["td7", "td3"], choices=["td7", "td3"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--env", default=ENV_ID, help="another env id (e.g. Walker2DBulletEnv-v0, TD7 alone)")
    parser.add_argument("--steps", type=int, default=300_000)
    parser.add_argument("--eval-every", type=int, default=5_000)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--learning-starts", type=int, default=None, help="only for a quick check of the path")
    parser.add_argument("--summarize", action="store_true", help="only write the summaries")
    args = parser.parse_args()
    if args.learning_starts is not None:
        OVERRIDES["learning_starts"] = args.learning_starts
    if not args.summarize:
        torch.set_num_threads(1)
        for seed in args.seeds:
            for algo in args.algos:
                sb3_compare.run_one(
                    args.out, "rlkit", algo, args.env, seed, args.steps, args.eval_every, args.eval_episodes, True
                )
    print(sb3_compare.summarize(args.out))
    print(td7_vs_td3(args.out, args.steps, args.env))


if __name__ == "__main__":
    main()

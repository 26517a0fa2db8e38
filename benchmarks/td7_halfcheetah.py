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
``td7_vs_td3.md``: each algorithm's IQM of the runs' scores (mean of the last 5 evaluations) with its 95 %
stratified-bootstrap interval, the ratio of the IQMs, and the probability of improvement P(TD7 > TD3) (Agarwal et
al. 2021) with its stratified-bootstrap interval.

Launch (1 torch thread per run, two processes at a time, in the background: about 3-4 core-hours per TD7 run)::

    cd <repo> && OMP_NUM_THREADS=1 nohup python benchmarks/td7_halfcheetah.py --out /work/sweeps/td7_halfcheetah_300k \\
        --seeds 0 2 4 > td7_a.log 2>&1 &
    cd <repo> && OMP_NUM_THREADS=1 nohup python benchmarks/td7_halfcheetah.py --out /work/sweeps/td7_halfcheetah_300k \\
        --seeds 1 3 > td7_b.log 2>&1 &
    python benchmarks/td7_halfcheetah.py --out /work/sweeps/td7_halfcheetah_300k --summarize

A quick check of the whole path (tiny, minutes): ``--steps 2000 --eval-every 1000 --eval-episodes 1
--learning-starts 500``.
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
from rlkit_td3.experiments.presets import make_model, resolve_config  # noqa: E402
from rlkit_td3.experiments.stats import iqm  # noqa: E402

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


def _scores(out: Path) -> dict[str, np.ndarray]:
    """Each algorithm's run scores: the mean of each finished run's last evaluations."""
    scores: dict[str, list[float]] = {}
    for path in sorted((out / "runs").glob("rlkit_*.csv")):
        if not path.with_suffix(".done").exists():
            continue
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        algo = rows[0]["algo"]
        scores.setdefault(algo, []).append(float(np.mean([float(r["mean_return"]) for r in rows[-LAST:]])))
    return {algo: np.asarray(values) for algo, values in scores.items()}


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> float:
    """P(X > Y) over every pair of runs, ties counting one half (Agarwal et al. 2021)."""
    diff = x[:, None] - y[None, :]
    return float(np.mean((diff > 0) + 0.5 * (diff == 0)))


def _bootstrap(stat, x: np.ndarray, y: np.ndarray | None, reps: int = 10_000, seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(reps):
        xs = x[rng.integers(0, len(x), len(x))]
        values.append(stat(xs) if y is None else stat(xs, y[rng.integers(0, len(y), len(y))]))
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def td7_vs_td3(out: Path) -> str:
    """``td7_vs_td3.md``: IQMs with intervals, their ratio, and the probability of improvement."""
    scores = _scores(out)
    if not {"td7", "td3"} <= set(scores):
        return "TD7 vs TD3: no finished runs of both yet"
    td7, td3 = scores["td7"], scores["td3"]
    lines = [
        f"# TD7 vs TD3 on {ENV_ID}",
        "",
        f"Run score: mean of the last {LAST} evaluations (10 deterministic episodes each). 95 % stratified-bootstrap"
        " intervals (runs resampled within each algorithm).",
        "",
        "| algo | runs | IQM | 95 % CI | run scores |",
        "|---|---|---|---|---|",
    ]
    for name, x in (("td7", td7), ("td3", td3)):
        low, high = _bootstrap(lambda s: float(iqm(s)), x, None)
        lines.append(f"| {name} | {len(x)} | {float(iqm(x)):.1f} | [{low:.1f}, {high:.1f}] | "
                     f"{', '.join(f'{v:.0f}' for v in x)} |")  # fmt: skip
    ratio = float(iqm(td7)) / float(iqm(td3))
    low, high = _bootstrap(lambda a, b: float(iqm(a)) / float(iqm(b)), td7, td3)
    lines += ["", f"IQM ratio TD7 / TD3: {ratio:.2f} [{low:.2f}, {high:.2f}]"]
    poi = probability_of_improvement(td7, td3)
    low, high = _bootstrap(probability_of_improvement, td7, td3)
    lines += [f"Probability of improvement P(TD7 > TD3): {poi:.2f} [{low:.2f}, {high:.2f}]", ""]
    text = "\n".join(lines)
    (out / "td7_vs_td3.md").write_text(text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--algos", nargs="+", default=["td7", "td3"], choices=["td7", "td3"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
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
                    args.out, "rlkit", algo, ENV_ID, seed, args.steps, args.eval_every, args.eval_episodes, True
                )
    print(sb3_compare.summarize(args.out))
    print(td7_vs_td3(args.out))


if __name__ == "__main__":
    main()

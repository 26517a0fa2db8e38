"""rlkit_td3 against Stable-Baselines3 on one env, several seeds, one evaluation protocol: a resumable sweep.

Each run trains one library's TD3 (or DDPG) with the RL Zoo settings of the env (``--preset zoo``, from
``rlkit_td3/experiments/presets.toml``; the zoo's ``hyperparameters/td3.yml``) and evaluates it every
``--eval-every`` steps on a separate env: ``--eval-episodes`` deterministic episodes, the same loop for both
libraries (``evaluate`` below: ``model.predict(obs, deterministic=True)`` on a plain gymnasium env, the
eval env reset with seed ``10_000 + seed`` once, then unseeded resets). Both libraries build their training env
with ``gym.make(env_id)`` on the ids ``import rlkit_td3`` registers.

Runs are interleaved (seed 0: rlkit_td3 then SB3, seed 1: ...), so a partial sweep is still a fair
comparison. Each run appends its evaluations to ``<out>/runs/<lib>_<algo>_s<seed>.csv`` as it goes and writes
``.done`` when finished; re-running the command skips finished runs and restarts unfinished ones from step 0
(SB3 cannot resume exactly; restarting both keeps the protocol identical). With ``--checkpoint`` an rlkit_td3 run
saves itself, replay buffer included, after every evaluation, and a re-run continues it exactly where it stood
(for long runs that outlive a session, e.g. the Walker2D experiment below); a re-run with a larger ``--steps``
extends finished checkpointed runs, so every seed can be grown together (``--steps 50000``, then ``100000``, ...).
``--summarize`` (also run at the end) writes ``<out>/results.csv`` (one row per evaluation),
``<out>/summary.md`` (`summary_text`: each run's score, the mean of its last 5 evaluations; their IQM and spread;
the probability of improvement between the groups, by rliable's definitions) and ``<out>/curves.png``.

Usage (1 torch thread per run; run it in the background, it takes hours)::

    OMP_NUM_THREADS=1 python benchmarks/sb3_compare.py --out /work/sweeps/halfcheetah_100k \\
        --env HalfCheetahBulletEnv-v0 --algos td3 --libs rlkit sb3 --seeds 0 1 2 3 4 --steps 100000
    python benchmarks/sb3_compare.py --out /work/sweeps/halfcheetah_100k --summarize

The seeds' own experiment (TD3 vs DDPG on Walker2D, rlkit_td3 only)::

    OMP_NUM_THREADS=1 python benchmarks/sb3_compare.py --out /work/sweeps/walker_300k \\
        --env Walker2DBulletEnv-v0 --algos td3 ddpg --libs rlkit --seeds 0 1 2 --steps 300000 --checkpoint
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
import torch

import rlkit_td3  # noqa: F401  (registers the PyBullet ids)
from rlkit_td3.experiments.presets import resolve_config
from rlkit_td3.experiments.stats import format_improvement, format_spread, improvements
from rlkit_td3.experiments.stats import summarize as summarize_scores
from rlkit_td3.noise import NormalActionNoise

RLKIT_LIBS = ("rlkit", "rlkit_uniformwarmup", "rlkit_sb3warmup")
"""The rlkit_td3 variants (see `make_model`); the others is SB3."""
FIELDS = ["lib", "algo", "env", "seed", "timesteps", "mean_return", "std_return", "wall_s"]
LAST_EVALS = 5


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``; ``platform.processor()`` is empty on Linux) and its core count."""
    name = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name or platform.machine()}, {os.cpu_count()} cores"


def evaluate(model: Any, env: gym.Env, episodes: int) -> tuple[float, float]:
    """Mean and std of ``episodes`` deterministic episode returns (the same loop for both libraries)."""
    returns = []
    for _ in range(episodes):
        obs, _ = env.reset()
        done, total = False, 0.0
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return float(np.mean(returns)), float(np.std(returns))


def _settings(algo: str, env_id: str) -> dict[str, Any]:
    hp = resolve_config(algo, env_id, "zoo")["hyperparameters"]
    if hp["noise_type"] != "normal":
        raise SystemExit(f"this script builds Gaussian exploration noise only; the preset has {hp['noise_type']!r}")
    return hp


def _constructor_kwargs(hp: dict[str, Any], algo: str, dim: int, noise_cls: type) -> dict[str, Any]:
    """The same constructor keywords for both libraries (SB3's names; rlkit_td3 takes them unchanged)."""
    kwargs = {
        key: hp[key]
        for key in ("learning_rate", "buffer_size", "learning_starts", "batch_size", "tau", "gamma")
        + ("train_freq", "gradient_steps")
    }
    if algo == "td3":
        kwargs.update({key: hp[key] for key in ("policy_delay", "target_policy_noise", "target_noise_clip")})
    kwargs["action_noise"] = noise_cls(mean=np.zeros(dim), sigma=float(hp["noise_std"]) * np.ones(dim))
    kwargs["policy_kwargs"] = {"net_arch": list(hp["net_arch"])}
    return kwargs


def make_model(lib: str, algo: str, env_id: str, seed: int) -> Any:
    """A model of ``lib`` with the zoo settings of ``env_id``: 'sb3', 'rlkit' (rlkit_td3's defaults: SB3's
    warm-up, the uniform actions plus the exploration noise, clipped), 'rlkit_uniformwarmup' (the TD3 paper's
    pure uniform warm-up, rlkit_td3's default before ``warmup_action_noise`` existed) or 'rlkit_sb3warmup' (the
    name the early-learning study gave SB3's warm-up before it became the default: the same as 'rlkit')."""
    hp = _settings(algo, env_id)
    env = gym.make(env_id)
    dim = int(np.prod(env.action_space.shape))
    if lib in RLKIT_LIBS:
        from rlkit_td3 import DDPG, TD3

        cls = TD3 if algo == "td3" else DDPG
        kwargs = _constructor_kwargs(hp, algo, dim, NormalActionNoise)
        kwargs["warmup_action_noise"] = lib != "rlkit_uniformwarmup"
        model = cls("MlpPolicy", env, seed=seed, **kwargs)
        model.torch_num_threads = 1  # one thread per run, whatever the load: the same bits on every rerun
        return model
    import stable_baselines3 as sb3
    from stable_baselines3.common.noise import NormalActionNoise as SB3Noise

    cls = sb3.TD3 if algo == "td3" else sb3.DDPG
    return cls("MlpPolicy", env, seed=seed, device="cpu", **_constructor_kwargs(hp, algo, dim, SB3Noise))


def _resume_point(stem: Path, lib: str, algo: str, env_id: str, seed: int) -> tuple[Any, gym.Env, dict] | None:
    """The model, eval env and state of an rlkit_td3 run's last checkpoint (``--checkpoint``), or ``None``."""
    ckpt, state_path = stem.with_suffix(".ckpt.zip"), stem.with_suffix(".ckpt.json")
    if lib not in RLKIT_LIBS or not (ckpt.exists() and state_path.exists()):
        return None
    from rlkit_td3 import DDPG, TD3

    state = json.loads(state_path.read_text())
    model = (TD3 if algo == "td3" else DDPG).load(ckpt, env=gym.make(env_id))
    eval_env = gym.make(env_id)
    eval_env.reset(seed=10_000 + seed)  # builds the env as in a fresh run; its generator is then restored
    eval_env.unwrapped.np_random.bit_generator.state = state["eval_rng"]
    return model, eval_env, state


def _write_checkpoint(stem: Path, model: Any, eval_env: gym.Env, wall_s: float) -> None:
    """The model with its replay buffer (exact resume), then the eval env's generator and the counters."""
    model.save(stem.with_suffix(".ckpt.zip"), include_buffer=True)
    state = {
        "timesteps": model.num_timesteps,
        "wall_s": wall_s,
        "eval_rng": eval_env.unwrapped.np_random.bit_generator.state,
    }
    tmp = stem.with_suffix(".ckpt.tmp")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, stem.with_suffix(".ckpt.json"))


def run_one(
    out: Path,
    lib: str,
    algo: str,
    env_id: str,
    seed: int,
    steps: int,
    every: int,
    episodes: int,
    checkpoint: bool = False,
) -> None:
    """Train one run, appending an evaluation row every ``every`` steps; ``.done`` marks it finished.

    With ``checkpoint`` an rlkit_td3 run saves itself (buffer included) after every evaluation and a re-run
    continues from there exactly: the same numbers as an uninterrupted run. The last checkpoint is kept, so a
    re-run with a larger ``steps`` extends a finished run (grow every seed to 50k, then to 100k, ...). SB3 runs
    restart from step 0.
    """
    stem = out / "runs" / f"{lib}_{algo}_s{seed}"
    done_marker = stem.with_suffix(".done")
    if done_marker.exists():
        finished_at = json.loads(done_marker.read_text()).get("timesteps", steps)
        if finished_at >= steps or not (checkpoint and stem.with_suffix(".ckpt.json").exists()):
            return
        done_marker.unlink()  # a checkpointed run that ended at fewer steps: continue it to ``steps``
    csv_path = stem.with_suffix(".csv")
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    resumed = _resume_point(stem, lib, algo, env_id, seed) if checkpoint else None
    if resumed is None:
        with open(csv_path, "w", newline="") as f:  # an unfinished run restarts from step 0
            csv.DictWriter(f, FIELDS).writeheader()
        model = make_model(lib, algo, env_id, seed)
        eval_env = gym.make(env_id)
        eval_env.reset(seed=10_000 + seed)
        first, elapsed = every, 0.0
    else:
        model, eval_env, state = resumed
        with open(csv_path, newline="") as f:  # drop rows written after the checkpoint
            rows = [row for row in csv.DictReader(f) if int(row["timesteps"]) <= state["timesteps"]]
        with open(csv_path, "w", newline="") as f:
            writer = csv.DictWriter(f, FIELDS)
            writer.writeheader()
            writer.writerows(rows)
        first, elapsed = state["timesteps"] + every, state["wall_s"]
        print(f"{lib:5s} {algo} seed {seed}: resumed at {state['timesteps']} steps", flush=True)
    start = time.perf_counter() - elapsed
    for target in range(first, steps + 1, every):
        model.learn(every, reset_num_timesteps=target == every)
        mean, std = evaluate(model, eval_env, episodes)
        row = dict(lib=lib, algo=algo, env=env_id, seed=seed, timesteps=model.num_timesteps)
        row.update(mean_return=f"{mean:.3f}", std_return=f"{std:.3f}", wall_s=f"{time.perf_counter() - start:.1f}")
        with open(csv_path, "a", newline="") as f:
            csv.DictWriter(f, FIELDS).writerow(row)
        print(f"{lib:5s} {algo} seed {seed} {model.num_timesteps:7d} steps: {mean:9.1f} ± {std:7.1f}", flush=True)
        if checkpoint and lib in RLKIT_LIBS:
            _write_checkpoint(stem, model, eval_env, time.perf_counter() - start)
    tmp = done_marker.with_suffix(".tmp")
    info = {"seconds": time.perf_counter() - start, "machine": cpu_name(), "timesteps": steps}
    tmp.write_text(json.dumps(info))
    os.replace(tmp, done_marker)


def _read_runs(out: Path, up_to: int | None = None) -> list[dict[str, Any]]:
    """Every evaluation row of the sweep; with ``up_to``, only those up to that step, and a run counts as
    finished when it reached it (growing runs stopped between stages are summarized at a common length)."""
    rows = []
    for path in sorted((out / "runs").glob("*.csv")):
        with open(path, newline="") as f:
            run = list(csv.DictReader(f))
        if up_to is None:
            finished = path.with_suffix(".done").exists()
        else:
            run = [r for r in run if int(r["timesteps"]) <= up_to]
            finished = any(int(r["timesteps"]) == up_to for r in run)
        rows += [dict(r, finished=finished) for r in run]
    return rows


GROUP_NAMES = {"rlkit": "rlkit_td3", "sb3": "SB3"}


def _group_label(algo: str, lib: str) -> str:
    return f"{algo.upper()} {GROUP_NAMES.get(lib, lib)}"


def summary_text(rows: list[dict[str, Any]], cpus: list[str]) -> str:
    """summary.md of a sweep's evaluation rows (as in results.csv): per group of finished runs, each run's score
    (the mean of its last 5 evaluations), their IQM and spread (a 95 % stratified-bootstrap interval with 5 runs
    or more, the range below), the probability of improvement between the groups compared, and wall times."""
    finished = [r for r in rows if str(r["finished"]) == "True"]
    if not finished:
        return "No finished runs yet.\n"
    table = pd.DataFrame(
        {
            "algo": [_group_label(r["algo"], r["lib"]) for r in finished],
            "env": [r["env"] for r in finished],
            "seed": [int(r["seed"]) for r in finished],
            "timestep": [int(r["timesteps"]) for r in finished],
            "mean_return": [float(r["mean_return"]) for r in finished],
        }
    )
    summary = summarize_scores(table, last=LAST_EVALS)
    envs = sorted(table["env"].unique())
    steps = sorted(summary["timestep"].unique())
    lines = [
        f"{', '.join(envs)}, runs of {' / '.join(f'{t:,}' for t in steps)} steps. Score: the mean of a run's last "
        f"{LAST_EVALS} evaluations; IQM of the scores; spread: their range below 5 runs, a 95 % stratified-bootstrap "
        "interval from 5; P(X > Y): the probability of improvement (rliable's definitions).",
        "",
        "| group | runs | IQM | spread | run scores |",
        "|---|---:|---:|---|---|",
    ]
    for row in summary.itertuples():
        runs = ", ".join(f"s{s}: {v:.1f}" for s, v in row.scores)
        lines.append(f"| {row.algo} | {row.runs} | {row.iqm:.1f} | {format_spread(row.low, row.high, row.spread)} | "
                     f"{runs} |")  # fmt: skip
    groups = {(r["env"], r["algo"], r["lib"]) for r in finished}
    pairs = [((env, algo, "rlkit"), (env, algo, "sb3")) for env, algo, _ in sorted(groups)]  # library against library
    pairs += [((env, algo, "rlkit"), (env, algo, "rlkit_uniformwarmup")) for env, algo, _ in sorted(groups)]  # warm-ups
    pairs += [((env, "td3", lib), (env, "ddpg", lib)) for env, _, lib in sorted(groups)]  # TD3 against DDPG
    compared = []
    for first, second in dict.fromkeys(pairs):
        if first in groups and second in groups:
            x, y = _group_label(*first[1:]), _group_label(*second[1:])
            both = improvements(table[table["algo"].isin([x, y])], last=LAST_EVALS)
            compared += [f"- {first[0]}: {format_improvement(row)}" for _, row in both.iterrows()]
    if compared:
        lines += ["", *compared]
    walls: dict[tuple[str, int], float] = {}  # training + evaluation seconds, the run's last row
    for r in finished:
        key = (_group_label(r["algo"], r["lib"]), int(r["seed"]))
        walls[key] = max(walls.get(key, 0.0), float(r["wall_s"]))
    hours = "; ".join(
        f"{label}: " + ", ".join(f"{walls[(label, s)] / 3600:.2f}" for s in sorted(s for g, s in walls if g == label))
        for label in sorted({g for g, _ in walls})
    )
    lines.append(
        f"\nWall time per run, hours, seeds in order ({hours}): training and evaluation at one torch thread on a "
        "shared machine (an upper bound). "
        f"CPU of the finished runs: {'; '.join(cpus) if cpus else 'not recorded'}."
    )
    unfinished = sorted({(r["algo"], r["lib"], int(r["seed"])) for r in rows} - {
        (r["algo"], r["lib"], int(r["seed"])) for r in finished
    })  # fmt: skip
    if unfinished:
        reached = {
            key: max(int(r["timesteps"]) for r in rows if (r["algo"], r["lib"], int(r["seed"])) == key)
            for key in unfinished
        }
        status = ", ".join(
            f"{_group_label(a, lib)} s{seed} at {reached[(a, lib, seed)]:,}" for a, lib, seed in unfinished
        )
        lines.append(f"\nUnfinished runs (not in the table), steps reached: {status}.")
    return "\n".join(lines) + "\n"


def summarize(out: Path, up_to: int | None = None) -> str:
    """results.csv, summary.md (`summary_text`) and curves.png; with ``up_to`` every run is cut at that step
    (see `_read_runs`)."""
    rows = _read_runs(out, up_to)
    if not rows:
        return "no evaluations yet"
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, [*FIELDS, "finished"])
        writer.writeheader()
        writer.writerows(rows)
    cpus = sorted({json.loads(p.read_text()).get("machine") or "not recorded" for p in (out / "runs").glob("*.done")})
    text = summary_text(rows, cpus)
    (out / "summary.md").write_text(text)
    plot_rows(rows, out / "curves.png")
    return text


def plot_rows(rows: list[dict[str, Any]], path: Path) -> None:
    """curves.png of a sweep's evaluation rows: the finished runs' mean per group, with the min-max band."""
    groups: dict[tuple[str, str, str], dict[int, list[tuple[int, float]]]] = {}
    for r in rows:
        key = (r["env"], r["algo"], r["lib"])
        groups.setdefault(key, {}).setdefault(int(r["seed"]), []).append((int(r["timesteps"]), float(r["mean_return"])))
    finished = {(r["env"], r["algo"], r["lib"], int(r["seed"])) for r in rows if str(r["finished"]) == "True"}
    _plot(groups, finished, path)


def _plot(groups: dict, finished: set, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (env, algo, lib), seeds in sorted(groups.items()):
        done = [s for s in seeds if (env, algo, lib, s) in finished]
        if not done:
            continue
        common = min(len(seeds[s]) for s in done)  # runs grown to different stages: their common steps
        curves = np.array([[v for _, v in sorted(seeds[s])[:common]] for s in done])
        steps = np.array([t for t, _ in sorted(seeds[done[0]])[:common]])
        mean = curves.mean(axis=0)
        name = {"rlkit": "rlkit_td3", "sb3": "SB3"}.get(lib, lib)
        runs = f"{len(done)} seeds" if len(done) > 1 else f"seed {done[0]}"
        label = f"{name} {algo.upper()} ({runs})"
        (line,) = ax.plot(steps, mean, label=label)
        if len(done) > 1:
            ax.fill_between(steps, curves.min(axis=0), curves.max(axis=0), color=line.get_color(), alpha=0.2)
        ax.set_title(env)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("mean deterministic return (band: min-max over seeds)")
    ax.legend()
    fig.tight_layout()
    tmp = path.with_name(path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--env", default="HalfCheetahBulletEnv-v0")
    parser.add_argument("--algos", nargs="+", default=["td3"], choices=["td3", "ddpg"])
    parser.add_argument("--libs", nargs="+", default=["rlkit", "sb3"], choices=["sb3", *RLKIT_LIBS])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--eval-every", type=int, default=5_000)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--summarize", action="store_true", help="only write the summary of what has run")
    parser.add_argument(
        "--up-to", type=int, default=None, help="with --summarize: cut every run at this step (runs that reached it)"
    )
    parser.add_argument(
        "--checkpoint", action="store_true", help="rlkit_td3 runs save after each evaluation and resume exactly"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.summarize:
        for seed in args.seeds:
            for algo in args.algos:
                for lib in args.libs:
                    run_one(
                        args.out,
                        lib,
                        algo,
                        args.env,
                        seed,
                        args.steps,
                        args.eval_every,
                        args.eval_episodes,
                        args.checkpoint,
                    )
                    summarize(args.out)
    print(summarize(args.out, args.up_to if args.summarize else None))


if __name__ == "__main__":
    main()

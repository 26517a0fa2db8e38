"""Did a change slow the loop? rlkit_td3 at an older git commit against the working tree, interleaved in one process.

The older package is extracted with ``git archive <ref> rlkit_td3`` into a temporary folder and renamed
``rlkit_td3_ref`` (its own imports rewritten), so both versions run in the same process, A B A B ...:
a slow phase of a shared machine hits both. Two measurements, as in ``benchmarks/throughput.py`` (whose model
settings and timing helpers this script reuses):

* **update**: ms per gradient step of ``model.train`` on a filled buffer (HalfCheetah's sizes, net [400, 300],
  batch 256), TD3 and DDPG;
* **learn**: env-steps/s of ``learn()`` on HalfCheetahBulletEnv-v0 and Pendulum-v1 after a warm-up;
* **calls**: Python function calls (``cProfile``'s count, built-ins included) per env step of the same
  ``learn()`` runs. Unlike a time, a count does not depend on what else the machine runs: on a shared machine
  it tells a real change of the per-step work from load noise.

Each ratio is ``new / old`` speed per repetition (> 1: the working tree is faster); the median and the range are
printed. Usage::

    python benchmarks/old_vs_new.py --ref c30e45e [--reps 5] [--update-reps 7] [--threads N] [--out FILE]
        [--call-steps 500]
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import io
import platform
import pstats
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from contextlib import redirect_stdout
from datetime import date
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def extract_reference(ref: str, folder: Path) -> str:
    """Write the package at git ``ref`` to ``folder/rlkit_td3_ref`` with its imports renamed; return the commit."""
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", ref], check=True, capture_output=True, text=True
    ).stdout.strip()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "rlkit_td3"], check=True, capture_output=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(folder, filter="data")
    (folder / "rlkit_td3").rename(folder / "rlkit_td3_ref")
    pattern = re.compile(r"\brlkit_td3\b")
    for path in (folder / "rlkit_td3_ref").rglob("*.py"):
        path.write_text(pattern.sub("rlkit_td3_ref", path.read_text()))
    return commit


def build(package: str, algo: str, env, buffer_size: int = 100_000, learning_starts: int = 1000, seed: int = 0):
    """``benchmarks/throughput.py``'s model, from ``package`` (``rlkit_td3`` or ``rlkit_td3_ref``)."""
    from throughput import model_kwargs

    module = importlib.import_module(package)
    noise = importlib.import_module(f"{package}.noise")
    dim = int(np.prod(env.action_space.shape))
    cls = {"td3": module.TD3, "ddpg": module.DDPG}[algo]
    action_noise = noise.NormalActionNoise(np.zeros(dim), 0.1 * np.ones(dim))
    return cls("MlpPolicy", env, action_noise=action_noise, **model_kwargs(buffer_size, learning_starts, seed))


def learn_rate(package: str, env_id: str, warmup: int, steps: int, seed: int) -> float:
    model = build(package, "td3", gym.make(env_id), buffer_size=200_000, learning_starts=warmup // 2, seed=seed)
    with redirect_stdout(io.StringIO()):
        model.learn(warmup)
        start = time.perf_counter()
        model.learn(steps, reset_num_timesteps=False)
    return steps / (time.perf_counter() - start)


def calls_per_step(package: str, env_id: str, warmup: int, steps: int, seed: int = 0) -> float:
    """Python function calls per env step of ``learn()`` after a warm-up (a count: the same on a busy machine)."""
    model = build(package, "td3", gym.make(env_id), buffer_size=200_000, learning_starts=warmup // 2, seed=seed)
    with redirect_stdout(io.StringIO()):
        model.learn(warmup)
        profile = cProfile.Profile()
        profile.enable()
        model.learn(steps, reset_num_timesteps=False)
        profile.disable()
    return pstats.Stats(profile).total_calls / steps


def summary(name: str, unit: str, old: list[float], new: list[float], speed_up: list[float]) -> str:
    return (
        f"{name:34s} old {statistics.median(old):7.2f}  new {statistics.median(new):7.2f} {unit}  "
        f"new/old speed x{statistics.median(speed_up):.3f} (min {min(speed_up):.3f}, max {max(speed_up):.3f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ref", required=True, help="the older commit (any git revision)")
    parser.add_argument("--reps", type=int, default=5, help="interleaved repetitions of each learn() run")
    parser.add_argument("--update-reps", type=int, default=7, help="interleaved repetitions of the update timing")
    parser.add_argument("--learn-steps", type=int, default=2000, help="timed env steps per learn() run")
    parser.add_argument("--update-steps", type=int, default=300, help="timed gradient steps per update timing")
    parser.add_argument("--call-steps", type=int, default=500, help="profiled env steps per call count")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own choice)")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    from throughput import ShapeEnv, fill_buffer, time_train

    tmp = tempfile.TemporaryDirectory()
    commit = extract_reference(args.ref, Path(tmp.name))
    sys.path.insert(0, tmp.name)
    importlib.import_module("rlkit_td3_ref")  # first, so that the working tree's env registrations win
    importlib.import_module("rlkit_td3")
    head = subprocess.run(
        ["git", "-C", str(ROOT), "describe", "--always", "--dirty"], check=True, capture_output=True, text=True
    ).stdout.strip()
    rows = [
        f"rlkit_td3 {head} (new) vs {commit} (old), {date.today()}, {platform.machine()} "
        f"{platform.processor() or ''} {torch.get_num_threads()} torch thread(s), torch {torch.__version__}"
    ]
    print(rows[0], flush=True)

    for algo in ("td3", "ddpg"):
        models = {}
        for package in ("rlkit_td3_ref", "rlkit_td3"):
            models[package] = build(package, algo, ShapeEnv())
            fill_buffer("rlkit_td3", models[package], 50_000)
        old, new = [], []
        for _ in range(args.update_reps):
            old.append(time_train(models["rlkit_td3_ref"], args.update_steps))
            new.append(time_train(models["rlkit_td3"], args.update_steps))
        rows.append(summary(f"update {algo.upper()}", "ms", old, new, [o / n for o, n in zip(old, new)]))
        print(rows[-1], flush=True)

    for env_id in ("HalfCheetahBulletEnv-v0", "Pendulum-v1"):
        old, new = [], []
        for rep in range(args.reps):
            old.append(learn_rate("rlkit_td3_ref", env_id, 1000, args.learn_steps, rep))
            new.append(learn_rate("rlkit_td3", env_id, 1000, args.learn_steps, rep))
        rows.append(summary(f"learn {env_id}", "steps/s", old, new, [n / o for o, n in zip(old, new)]))
        print(rows[-1], flush=True)

    for env_id in ("HalfCheetahBulletEnv-v0", "Pendulum-v1"):
        old_calls = calls_per_step("rlkit_td3_ref", env_id, 1000, args.call_steps)
        new_calls = calls_per_step("rlkit_td3", env_id, 1000, args.call_steps)
        rows.append(
            f"{'calls/step learn ' + env_id:34s} old {old_calls:7.1f}  new {new_calls:7.1f} calls  "
            f"new/old x{new_calls / old_calls:.3f} (< 1: less work per step)"
        )
        print(rows[-1], flush=True)

    if args.out:
        Path(args.out).write_text("\n".join(rows) + "\n")
    tmp.cleanup()


if __name__ == "__main__":
    main()

"""Microseconds per ``env.step()`` of the nine Bullet ids: what the learner pays per environment step.

For each id, two envs are made: ``gymnasium.make(id)`` as registered by rlkit_td3 (the port's class with the
fixes of :mod:`rlkit_td3.envs`) and the plain ``pybullet_envs_gymnasium`` class behind the same wrappers. Both
step random float32 actions uniform in [-1, 1] (what a learner passes), in alternating blocks of ``--block``
steps, until each has done ``--steps`` timed steps; resets on termination or truncation are not timed (they are
counted). The script prints and writes (``benchmarks/results/env_step_cost.txt``) the median, mean and p95 of
the per-step times, the steps per second at the median, and the rlkit_td3 / port ratio of the medians.

    .venv/bin/python benchmarks/env_step_cost.py [--steps 4000] [--block 500]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import time
from pathlib import Path

import gymnasium
import numpy as np

import rlkit_td3
from rlkit_td3.envs import BULLET_ENV_IDS
from rlkit_td3.fileio.serialization import atomic_write

RESULTS = Path(__file__).resolve().parent / "results" / "env_step_cost.txt"


def _make_port(env_id: str) -> gymnasium.Env:
    # Same id, spec and wrappers, only the entry point of pybullet_envs_gymnasium's own class.
    name = env_id.split("-")[0]
    module = rlkit_td3.envs.bullet._PORT_CLASSES[name][0]
    return gymnasium.make(
        dataclasses.replace(gymnasium.spec(env_id), entry_point=f"pybullet_envs_gymnasium.{module}:{name}")
    )


class _Stepper:
    def __init__(self, env: gymnasium.Env, seed: int) -> None:
        self.env = env
        self.rng = np.random.default_rng(seed)
        self.env.reset(seed=seed)
        self.times_ns: list[int] = []
        self.resets = 0

    def run(self, n: int) -> None:
        env, shape = self.env, self.env.action_space.shape
        actions = self.rng.uniform(-1.0, 1.0, size=(n, *shape)).astype(np.float32)
        clock = time.perf_counter_ns
        for action in actions:
            start = clock()
            _, _, terminated, truncated, _ = env.step(action)
            self.times_ns.append(clock() - start)
            if terminated or truncated:
                env.reset()
                self.resets += 1


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _stats(times_ns: list[int]) -> tuple[float, float, float]:
    us = np.asarray(times_ns) / 1000.0
    return float(np.median(us)), float(us.mean()), float(np.percentile(us, 95))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4000, help="timed steps per env and variant")
    parser.add_argument("--block", type=int, default=500, help="steps per block; the variants alternate")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    lines = [
        f"env.step() cost, µs per step: {args.steps} random float32 steps per env, blocks of {args.block} "
        "alternating rlkit_td3 / plain pybullet_envs_gymnasium; resets not timed",
        f"machine: {_cpu_name()}, {os.cpu_count()} cores (shared), "
        f"python {platform.python_version()}, numpy {np.__version__}",
        "",
        f"{'env id':38s} {'median':>8s} {'mean':>8s} {'p95':>8s} {'steps/s':>8s} {'resets':>6s}"
        f" {'port median':>11s} {'ratio':>6s}",
    ]
    print("\n".join(lines), flush=True)
    ratios = []
    for k, env_id in enumerate(BULLET_ENV_IDS):
        ours, port = _Stepper(gymnasium.make(env_id), seed=k), _Stepper(_make_port(env_id), seed=k)
        ours.run(50)  # warm-up (first-step costs, caches), not counted
        port.run(50)
        ours.times_ns.clear()
        port.times_ns.clear()
        ours.resets = port.resets = 0
        while len(ours.times_ns) < args.steps:
            ours.run(args.block)
            port.run(args.block)
        ours.env.close()
        port.env.close()
        median, mean, p95 = _stats(ours.times_ns)
        port_median = _stats(port.times_ns)[0]
        line = (
            f"{env_id:38s} {median:8.1f} {mean:8.1f} {p95:8.1f} {1e6 / median:8.0f} {ours.resets:6d}"
            f" {port_median:11.1f} {median / port_median:6.3f}"
        )
        ratios.append(median / port_median)
        lines.append(line)
        print(line, flush=True)
    lines += [
        "",
        "ratio = rlkit_td3 median / port median (>1: the rlkit_td3 subclass costs more per step).",
        f"median of the ratios: {statistics.median(ratios):.3f}",
    ]
    print(lines[-1])
    with atomic_write(args.out) as fh:
        fh.write(("\n".join(lines) + "\n").encode())


if __name__ == "__main__":
    main()

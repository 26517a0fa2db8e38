"""ms per TD3 update at 1 and at 2 torch threads, without and with a busy-loop process on the other cores.

The four cases (threads 1 or 2, spinner or not) are timed interleaved, one repetition of each in turn,
so slow phases of a shared machine hit all of them. "busy" starts one process per core but one that spins in
a Python loop (the CPU a second training run or a test suite would take) and stops it after the timing.
"idle" means only that this script starts no spinner: the header prints the 1-minute load average, and
on a shared machine other work is running too.
HalfCheetahBulletEnv-v0's sizes (obs 26, act 6, net [400, 300], batch 256), TD3, a filled buffer.
The figures behind the Threads sections of docs/tips.md and docs/performance.md. Usage::

    python benchmarks/threads.py [--reps 5] [--steps 100]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from throughput import ShapeEnv, build, fill_buffer, time_train  # noqa: E402


def spin(stop) -> None:
    while not stop.is_set():
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--steps", type=int, default=100, help="timed gradient steps per repetition")
    args = parser.parse_args()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    model = build("rlkit_td3", "td3", ShapeEnv())
    fill_buffer("rlkit_td3", model, 50_000)
    ctx = mp.get_context("spawn")
    times: dict[tuple[str, int], list[float]] = {}
    for _ in range(args.reps):
        for load in ("idle", "busy"):
            stop, spinners = ctx.Event(), []
            if load == "busy":
                spinners = [ctx.Process(target=spin, args=(stop,), daemon=True) for _ in range(max(cpus - 1, 1))]
                for proc in spinners:
                    proc.start()
            try:
                for threads in (1, 2):
                    torch.set_num_threads(threads)
                    times.setdefault((load, threads), []).append(time_train(model, args.steps))
            finally:
                stop.set()
                for proc in spinners:
                    proc.join()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{cpus} usable CPUs, load average {load:.2f} at the end, torch {torch.__version__}, "
        f"{args.reps} interleaved reps of {args.steps} TD3 updates"
    )
    for load in ("idle", "busy"):
        one, two = times[(load, 1)], times[(load, 2)]
        ratios = [b / a for a, b in zip(one, two)]
        print(
            f"{load}: 1 thread {statistics.median(one):7.2f} ms (min {min(one):.2f}, max {max(one):.2f})  "
            f"2 threads {statistics.median(two):7.2f} ms (min {min(two):.2f}, max {max(two):.2f})  "
            f"2/1 x{statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})"
        )


if __name__ == "__main__":
    main()

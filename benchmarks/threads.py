"""ms per TD3 update at 1 and at 2 torch threads, without and with a busy-loop process on the other cores.

The four cases (threads 1 or 2, spinner or not) are timed interleaved, one repetition of each in turn,
so slow phases of a shared machine hit all of them. "busy" starts one process per core but one that spins in
a Python loop (the CPU a second training run or a test suite would take) and stops it after the timing.
"idle" means only that this script starts no spinner: the header prints the 1-minute load average, and
on a shared machine other work is running too.
HalfCheetahBulletEnv-v0's sizes (obs 26, act 6, net [400, 300], batch 256), TD3, a filled buffer.
The figures behind the Threads sections of docs/tips.md and docs/performance.md.

``--section learn`` times the thread-count defaults ``learn()`` could take, end to end: env steps per second of
``learn()`` on HalfCheetahBulletEnv-v0 with the zoo's TD3 settings ([400, 300], batch 256), after a 1,000-step
warm-up, for torch's default (the caller's count, ``torch_num_threads=None``), one thread, and ``"auto"`` (resolved
afresh before each timed segment), interleaved, on a quiet machine and with ``--spinners`` CPU-bound processes
beside it. Usage::

    python benchmarks/threads.py [--reps 5] [--steps 100]
    python benchmarks/threads.py --section learn [--reps 3] [--learn-steps 1500] [--spinners 2]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from throughput import ShapeEnv, build, fill_buffer, time_train  # noqa: E402


def spin(stop) -> None:
    while not stop.is_set():
        pass


class _Spinners:
    """``n`` processes spinning in a Python loop while the ``with`` block runs (none for ``n = 0``)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __enter__(self) -> _Spinners:
        ctx = mp.get_context("spawn")
        self.stop = ctx.Event()
        self.procs = [ctx.Process(target=spin, args=(self.stop,), daemon=True) for _ in range(self.n)]
        for proc in self.procs:
            proc.start()
        if self.procs:
            time.sleep(1.0)  # let them start spinning
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for proc in self.procs:
            proc.join()


def learn_section(reps: int, steps: int, spinners: int) -> None:
    """Env steps/s of ``learn()`` for each thread-count default, quiet and busy, interleaved."""
    import gymnasium as gym

    import rlkit_td3  # noqa: F401  (registers the Bullet ids)
    from rlkit_td3 import TD3
    from rlkit_td3.experiments.presets import make_model, resolve_config
    from rlkit_td3.utils import auto_num_threads

    caller = torch.get_num_threads()
    config = resolve_config("td3", "HalfCheetahBulletEnv-v0", "zoo", {"learning_starts": 1000})
    model: TD3 = make_model(config, gym.make("HalfCheetahBulletEnv-v0"), seed=0)
    model.torch_num_threads = 1
    model.learn(1000 + 200)  # the warm-up and a few updates
    candidates = {"torch default": None, "1 thread": 1, "auto": "auto"}
    rates: dict[tuple[str, str], list[float]] = {}
    chosen: dict[str, list[int]] = {}
    for _ in range(reps):
        for load, n in (("quiet", 0), ("busy", spinners)):
            with _Spinners(n):
                for name, setting in candidates.items():
                    model.torch_num_threads = setting
                    if setting == "auto":
                        chosen.setdefault(load, []).append(auto_num_threads(caller))
                        model.torch_num_threads = chosen[load][-1]
                    start = time.perf_counter()
                    model.learn(steps, reset_num_timesteps=False)
                    rates.setdefault((load, name), []).append(steps / (time.perf_counter() - start))
    print(
        f"learn(): HalfCheetahBulletEnv-v0, zoo TD3 ([400, 300], batch 256), {steps} steps per segment, {reps} "
        f"interleaved reps; {usable_cpus()} usable CPUs, caller's torch threads {caller}, busy = {spinners} "
        f"spinning processes; torch {torch.__version__}"
    )
    for load in ("quiet", "busy"):
        best = max(statistics.median(rates[(load, name)]) for name in candidates)
        for name in candidates:
            values = rates[(load, name)]
            median = statistics.median(values)
            extra = f"  (chose {sorted(set(chosen[load]))} threads)" if name == "auto" else ""
            print(
                f"{load:5s} {name:13s} {median:7.1f} env-steps/s (min {min(values):.1f}, max {max(values):.1f})  "
                f"best/this x{best / median:.2f}{extra}"
            )


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", choices=["update", "learn"], default="update")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--steps", type=int, default=100, help="timed gradient steps per repetition")
    parser.add_argument("--learn-steps", type=int, default=1500, help="env steps per timed learn() segment")
    parser.add_argument("--spinners", type=int, default=2, help="CPU-bound processes beside learn() when busy")
    args = parser.parse_args()
    if args.section == "learn":
        learn_section(args.reps, args.learn_steps, args.spinners)
        return
    cpus = usable_cpus()
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

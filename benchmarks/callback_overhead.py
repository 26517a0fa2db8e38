"""Overhead of the callback hooks and the logger on ``learn()`` throughput (TD3, Pendulum-v1).

Three variants, run interleaved (A B C, A B C, ...) in one process so that machine noise hits them alike:

* ``bare``: no callback at all (the hooks are replaced by a do-nothing object, so no hook code runs) and a
  logger without writers;
* ``default``: ``learn()`` as a user calls it: ``callback=None`` (a ``BaseCallback`` whose hooks run at every
  step) and the default logger;
* ``full``: ``default`` plus a CSV + JSON + TensorBoard logger dumped every episode and a callback list
  (``CheckpointCallback`` with a period beyond the run, a ``StopTrainingOnMaxEpisodes`` that never fires).

Reported: steps per second per variant (median) and the median of the per-repeat ratios to ``bare``
(goal: ``default`` within 5%). Run: ``python benchmarks/callback_overhead.py [steps] [repeats]``.
"""

from __future__ import annotations

import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

import rlkit_td3.off_policy as off_policy
from rlkit_td3 import TD3
from rlkit_td3.callbacks import CheckpointCallback, StopTrainingOnMaxEpisodes
from rlkit_td3.logger import configure

RESULTS = Path(__file__).resolve().parent / "results" / "callback_overhead.txt"


class _NoHooks:
    """Stands in for the callback: every hook is a no-op, nothing is counted."""

    def init_callback(self, model):
        pass

    def on_training_start(self, locals_, globals_):
        pass

    def on_rollout_start(self):
        pass

    def update_locals(self, locals_):
        pass

    def on_step(self):
        return True

    def on_rollout_end(self):
        pass

    def on_training_end(self):
        pass


def run(variant: str, steps: int, seed: int, folder: Path) -> float:
    model = TD3("MlpPolicy", "Pendulum-v1", learning_starts=100, seed=seed)
    callback = None
    original = off_policy.convert_callback
    if variant == "bare":
        off_policy.convert_callback = lambda cb, progress_bar=False: _NoHooks()
    elif variant == "full":
        model.set_logger(configure(folder / f"log_{seed}", ["csv", "json", "tensorboard"]))
        callback = [CheckpointCallback(10 * steps, folder / "ckpt"), StopTrainingOnMaxEpisodes(10**6)]
    try:
        start = time.perf_counter()
        model.learn(steps, callback=callback, log_interval=1)
        elapsed = time.perf_counter() - start
    finally:
        off_policy.convert_callback = original
        model.logger.close()
    return steps / elapsed


def main(steps: int = 3000, repeats: int = 5) -> None:
    torch.set_num_threads(1)
    variants = ("bare", "default", "full")
    fps: dict[str, list[float]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as tmp:
        run("default", 300, 99, Path(tmp))  # warm-up (imports, allocator)
        for rep in range(repeats):
            order = variants if rep % 2 == 0 else variants[::-1]
            for v in order:
                fps[v].append(run(v, steps, rep, Path(tmp)))
            print(f"repeat {rep}: " + ", ".join(f"{v} {fps[v][-1]:.0f} steps/s" for v in variants), flush=True)
    lines = [
        f"callback/logger overhead on learn(): TD3 Pendulum-v1, {steps} steps x {repeats} interleaved repeats, "
        f"torch threads 1, {platform.processor() or platform.machine()}, torch {torch.__version__}",
    ]
    for v in variants:
        lines.append(f"{v:8s} median {statistics.median(fps[v]):7.1f} steps/s   runs: {[round(x) for x in fps[v]]}")
    for v in ("default", "full"):
        ratios = [b / a for a, b in zip(fps["bare"], fps[v])]
        per_repeat = [round(r, 3) for r in ratios]
        lines.append(f"{v}/bare throughput ratio: median {statistics.median(ratios):.3f} (per repeat {per_repeat})")
    text = "\n".join(lines) + "\n"
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))

"""Which library should compute the fused update's products on this CPU? Each ``fused_update_matmul`` value timed
on one model per value, interleaved in one process (A B C A B C ...), so a slow phase of a shared machine hits all.

What ``"auto"`` picks is a rule by CPU vendor and family (`rlkit_td3.update.fused_update.resolve_matmul`), not a timing:
this script is how the rule was measured, and how to check it on another CPU. The models have HalfCheetah's sizes
(obs 26, act 6, net [400, 300], batch 256, the Zoo's TD3 settings of ``benchmarks/sbx_compare.py``) and a buffer of
50,000 random transitions; each repetition times ``model.train(gradient_steps=N)`` per model. Ratios are the first
value's time over each other's, per repetition (> 1: the other value is faster); the median and the range are
printed. Usage::

    python benchmarks/matmul_modes.py [--threads 2] [--reps 9] [--steps 200] [--modes reference onednn mixed]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sbx_compare import BATCH, _fill, _model, cpu_name, make_shape_env  # noqa: E402

from rlkit_td3.update.fused_update import MATMUL_CHOICES, cpu_family, cpu_vendor, resolve_matmul  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--steps", type=int, default=200, help="updates per timed train() call")
    parser.add_argument("--modes", nargs="+", default=["reference", "onednn", "mixed"], choices=MATMUL_CHOICES[1:])
    parser.add_argument("--out", default=None, help="also write the table to this file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    models = {}
    for mode in args.modes:
        model = _model("rlkit", make_shape_env(), learning_starts=0)
        model.fused_update_matmul = mode
        _fill("rlkit", model, 50_000)
        model.train(gradient_steps=50, batch_size=BATCH)  # builds the fused update, its plans and trials
        models[mode] = model
    times: dict[str, list[float]] = {mode: [] for mode in models}
    for _ in range(args.reps):
        for mode, model in models.items():
            start = time.perf_counter()
            model.train(gradient_steps=args.steps, batch_size=BATCH)
            times[mode].append((time.perf_counter() - start) / args.steps * 1e3)
    auto = resolve_matmul("auto", torch.float32)
    rows = [
        f"fused_update_matmul modes, {cpu_name()}, vendor {cpu_vendor()} family {cpu_family()} ('auto' is {auto!r}), "
        f"{args.threads} thread(s), {args.reps} interleaved reps of {args.steps} TD3 updates",
    ]
    for mode, values in times.items():
        rows.append(f"{mode:>9}: {statistics.median(values):.3f} ms/update  ({' '.join(f'{v:.2f}' for v in values)})")
    base = args.modes[0]
    for mode in args.modes[1:]:
        ratios = [a / b for a, b in zip(times[base], times[mode])]
        rows.append(
            f"  {mode} vs {base}: x{statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})"
        )
    print("\n".join(rows))
    if args.out:
        Path(args.out).write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()

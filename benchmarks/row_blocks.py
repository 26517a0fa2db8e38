"""The fused update's row-blocked products (`FusedUpdate._gemm`) on and off, interleaved in one process.

Two models per algorithm at HalfCheetah's sizes (obs 26, act 6, [400, 300], batch 256, a buffer of 50,000 random
transitions), both on the fused update; in one of them every product shape is marked as failing the bitwise trial
(``blocks_agree`` all False), so it makes the plain ``mm``/``addmm`` calls. ms per update of
``train(gradient_steps=200)``, alternating the two, 7 repetitions; the ratio is plain / blocks. Row blocks are
only used at more than one torch thread, so this runs at ``--threads`` (default 2).

Usage::

    python benchmarks/row_blocks.py [--threads 2] [--reps 7] [--out FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import date
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import throughput as tp  # noqa: E402  (the shape env, the model builder and the buffer filler)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = [
        f"row blocks on/off, {date.today()}, obs 26, act 6, [400, 300], batch 256, "
        f"{args.threads} torch threads, {args.reps} reps"
    ]
    print(rows[0], flush=True)
    for algo in ("td3", "ddpg"):
        models = {}
        for name in ("blocks", "plain"):
            model = tp.build("rlkit_td3", algo, tp.ShapeEnv())
            tp.fill_buffer("rlkit_td3", model, 50_000)
            model.train(gradient_steps=20, batch_size=tp.BATCH)  # builds the fused update, tries the shapes
            fused = model._fused_update[1]
            if name == "plain":
                fused.blocks_agree = dict.fromkeys(fused.blocks_agree, False)
                fused._plans.clear()  # the calls are planned again, with these verdicts
            models[name] = (model, fused)
        times: dict[str, list[float]] = {"blocks": [], "plain": []}
        for _ in range(args.reps):
            for name, (model, _) in models.items():
                start = time.perf_counter()
                model.train(gradient_steps=args.steps, batch_size=tp.BATCH)
                times[name].append((time.perf_counter() - start) / args.steps * 1e3)
        ratios = [p / b for p, b in zip(times["plain"], times["blocks"])]
        verdicts = models["blocks"][1].blocks_agree
        rows.append(
            f"{algo}: blocks {statistics.median(times['blocks']):.2f} ms, plain {statistics.median(times['plain']):.2f}"
            f" ms, plain/blocks x{statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f});"
            f" {sum(verdicts.values())} of {len(verdicts)} shapes in row blocks"
        )
        print(rows[-1], flush=True)
    if args.out:
        Path(args.out).write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()

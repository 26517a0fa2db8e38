"""How much slower is each matrix product of the fused update inside training than the same call alone?

The GEMM bound of ``benchmarks/throughput.py`` times each product of one update alone, repeated, with its
operands hot in the caches. Inside an update each product reads operands that other operations have just pushed
out of the caches (a TD3 update at HalfCheetah's sizes touches over 10 MB: four networks, Adam's moments, the
gradients and the activations, against 1 MB of L2 per core). This script measures that gap, product by product.

It trains one model with HalfCheetah's sizes (obs 26, act 6, net [400, 300], batch 256, the Zoo's TD3 settings of
``benchmarks/sbx_compare.py``) on a buffer of random transitions, times every call of ``FusedUpdate._gemm`` (the
products and their fused bias and ReLU) during ``--updates`` updates, then repeats each distinct call alone
(same operands, same output buffer) and reports the median time in the update against the best time alone.
The instrumentation is this script's: it wraps the method for the timed updates only. Usage::

    python benchmarks/products_in_situ.py [--threads 2] [--matmul auto] [--updates 300] [--out FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sbx_compare import BATCH, _fill, _model, cpu_name, make_shape_env  # noqa: E402

from rlkit_td3.update.fused_update import MATMUL_CHOICES, FusedUpdate, resolve_matmul  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--matmul", default="auto", choices=MATMUL_CHOICES)
    parser.add_argument("--updates", type=int, default=300, help="timed updates inside training")
    parser.add_argument("--repeats", type=int, default=50, help="calls per timing of a product alone (best of 5)")
    parser.add_argument("--out", default=None, help="also write the table to this file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = _model("rlkit", make_shape_env(), learning_starts=0)
    model.fused_update_matmul = args.matmul
    _fill("rlkit", model, 50_000)
    model.train(gradient_steps=100, batch_size=BATCH)  # builds the fused update, its plans and trials

    in_update: dict[tuple, list[float]] = defaultdict(list)
    last_call: dict[tuple, tuple] = {}
    original = FusedUpdate._gemm
    clock = time.perf_counter

    def timed_gemm(self, a, b, out, bias=None, relu=False):  # noqa: ANN001, ANN202
        start = clock()
        original(self, a, b, out, bias, relu)
        in_update[(tuple(a.shape), tuple(b.shape), bias is not None, relu)].append(clock() - start)
        last_call[(tuple(a.shape), tuple(b.shape), bias is not None, relu)] = (self, a, b, out, bias, relu)

    FusedUpdate._gemm = timed_gemm
    try:
        start = clock()
        model.train(gradient_steps=args.updates, batch_size=BATCH)
        update_ms = (clock() - start) / args.updates * 1e3
    finally:
        FusedUpdate._gemm = original

    rows = [
        f"products in situ, {cpu_name()}, {args.threads} thread(s), fused_update_matmul={args.matmul!r} "
        f"(resolves to {resolve_matmul(args.matmul, torch.float32)!r}), {args.updates} timed updates "
        f"({update_ms:.2f} ms per update with the timing calls)",
        f"{'a @ b (shapes), bias, relu':52s} {'per update':>10s} {'in update µs':>13s} {'alone µs':>9s} {'ratio':>6s}",
    ]
    total_in = total_alone = 0.0
    with torch.no_grad():  # the fused update runs without autograd; its output buffers alias parameters' grads
        for key, times in sorted(in_update.items(), key=lambda kv: -sum(kv[1])):
            per_update = len(times) / args.updates
            best = float("inf")
            for _ in range(5):
                start = clock()
                for _ in range(args.repeats):
                    original(*last_call[key])
                best = min(best, (clock() - start) / args.repeats)
            inside, alone = statistics.median(times) * 1e6, best * 1e6
            total_in += inside * per_update
            total_alone += alone * per_update
            a, b, bias, relu = key
            label = f"{list(a)} @ {list(b)}{' +bias' if bias else ''}{' relu' if relu else ''}"
            rows.append(f"{label:52s} {per_update:10.2f} {inside:13.1f} {alone:9.1f} {inside / alone:6.2f}")
    rows.append(
        f"all products per update: {total_in / 1e3:.2f} ms in the update, {total_alone / 1e3:.2f} ms alone "
        f"(x{total_in / total_alone:.2f})"
    )
    print("\n".join(rows))
    if args.out:
        Path(args.out).write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()

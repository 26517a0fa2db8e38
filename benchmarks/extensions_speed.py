"""Cost of the replay extensions (n-step returns, PER, LAP) against plain TD3, interleaved in one process.

Two measurements at batch 256, net [400, 300], obs 26 / act 6 (HalfCheetahBulletEnv-v0's sizes), with
``--capacity`` transitions stored (default 1M, the default ``buffer_size``):

* **update**: ms per gradient step of ``model.train`` for plain TD3, ``n_steps=3``, PER, LAP, PER with
  ``n_steps=3``, LayerNorm critics and the combinations considered for the TD3+ preset, and each one's ratio
  to plain TD3 timed in the same round (median over rounds).
* **replay overhead**: the prioritized buffers' own work per update (``sample`` from the sum-tree plus
  ``update_priorities``), as a fraction of a plain TD3 update timed in the same round; the uniform buffer's
  ``sample`` is shown for comparison. (Acceptance of issue 16: at most 15 %.)

The buffers share one set of storage arrays, filled with random transitions in 1000-step episodes; the priorities
are random. Usage::

    python benchmarks/extensions_speed.py [--rounds 5] [--steps 200] [--capacity 1000000] [--out FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import date

import numpy as np
import torch

from benchmarks.sbx_compare import cpu_name
from benchmarks.throughput import BATCH, NET, ShapeEnv
from rlkit_td3 import TD3
from rlkit_td3.buffers import LAPReplayBuffer, NStepReplayBuffer, PrioritizedReplayBuffer, ReplayBuffer

VARIANTS = {
    "TD3": dict(),
    "n_steps=3": dict(n_steps=3),
    "PER": dict(replay_buffer_class=PrioritizedReplayBuffer),
    "LAP": dict(replay_buffer_class=LAPReplayBuffer),
    "PER + n_steps=3": dict(replay_buffer_class=PrioritizedReplayBuffer, n_steps=3),
    "LAP + n_steps=3 (TD3+ preset)": dict(replay_buffer_class=LAPReplayBuffer, n_steps=3),
    "LayerNorm critics": dict(policy_kwargs={"critic_layer_norm": True}),
    "n_steps=3 + LayerNorm critics": dict(n_steps=3, policy_kwargs={"critic_layer_norm": True}),
    "LAP + n_steps=3 + LayerNorm critics": dict(
        replay_buffer_class=LAPReplayBuffer, n_steps=3, policy_kwargs={"critic_layer_norm": True}
    ),
}
EPISODE = 1000


def build(capacity: int, storage: ReplayBuffer | None, policy_kwargs: dict | None = None, **kwargs) -> TD3:
    policy_kwargs = {"net_arch": NET, **(policy_kwargs or {})}
    model = TD3("MlpPolicy", ShapeEnv(), buffer_size=capacity, batch_size=BATCH, policy_kwargs=policy_kwargs,
                seed=0, **kwargs)  # fmt: skip
    buf = model.replay_buffer
    if storage is None:
        rng = np.random.default_rng(0)
        buf.observations[:] = rng.standard_normal(buf.observations.shape, dtype=np.float32)
        buf.next_observations[:] = np.roll(buf.observations, -1, axis=0)
        buf.actions[:] = rng.uniform(-1, 1, buf.actions.shape).astype(np.float32)
        buf.rewards[:] = rng.standard_normal(capacity, dtype=np.float32)
        buf.truncated[EPISODE - 1 :: EPISODE] = True
    else:
        for name in ("observations", "next_observations", "actions", "rewards", "terminated", "truncated"):
            setattr(buf, name, getattr(storage, name))
    buf.pos, buf.full = 0, True
    if isinstance(buf, NStepReplayBuffer):
        links = np.arange(1, capacity + 1, dtype=np.int64)
        links[buf.truncated | (links == capacity)] = -1
        buf.next_row[:] = links
    if isinstance(buf, PrioritizedReplayBuffer):
        buf.tree.leaves[:] = np.random.default_rng(1).uniform(0.1, 2.0, capacity) ** buf.alpha
        buf.tree.rebuild()
        buf.max_priority = float(buf.tree.leaves.max())
    return model


def time_train(model: TD3, steps: int) -> float:
    model.train(gradient_steps=5)
    start = time.perf_counter()
    model.train(gradient_steps=steps)
    return (time.perf_counter() - start) / steps * 1e3


def time_replay(buffer: ReplayBuffer, steps: int) -> float:
    """ms per update of the buffer's own work: ``sample`` (+ ``update_priorities`` for prioritized buffers)."""
    errors = np.abs(np.random.default_rng(2).standard_normal(BATCH))
    start = time.perf_counter()
    for _ in range(steps):
        batch = buffer.sample(BATCH)
        if isinstance(buffer, PrioritizedReplayBuffer):
            buffer.update_priorities(batch.indices, errors)
    return (time.perf_counter() - start) / steps * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--capacity", type=int, default=1_000_000)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)

    models: dict[str, TD3] = {}
    for name, kwargs in VARIANTS.items():
        storage = models["TD3"].replay_buffer if models else None
        models[name] = build(args.capacity, storage, **kwargs)
    update = {name: [] for name in models}
    ratio = {name: [] for name in models}
    replay = {name: [] for name in ("uniform", "PER", "LAP")}
    fraction = {name: [] for name in replay}
    for _ in range(args.rounds):
        for name, model in models.items():
            update[name].append(time_train(model, args.steps))
        for name in models:
            ratio[name].append(update[name][-1] / update["TD3"][-1])
        for name, key in (("uniform", "TD3"), ("PER", "PER"), ("LAP", "LAP")):
            replay[name].append(time_replay(models[key].replay_buffer, args.steps))
            fraction[name].append(replay[name][-1] / update["TD3"][-1])

    med = statistics.median
    lines = [
        f"# extensions_speed.py, {date.today()}, {cpu_name()}, torch threads 1, "
        f"batch {BATCH}, net {NET}, capacity {args.capacity}, {args.rounds} rounds x {args.steps} updates",
        "",
        "| variant | ms / update | vs TD3 (median ratio) |",
        "|---|---|---|",
        *(f"| {name} | {med(update[name]):.2f} | {med(ratio[name]):.3f} |" for name in models),
        "",
        "| buffer | sample (+ priority update) ms | fraction of a TD3 update |",
        "|---|---|---|",
        *(f"| {name} | {med(replay[name]):.3f} | {100 * med(fraction[name]):.1f} % |" for name in replay),
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        from rlkit_td3.fileio.serialization import atomic_write

        with atomic_write(args.out) as fh:
            fh.write((text + "\n").encode())


if __name__ == "__main__":
    sys.exit(main())

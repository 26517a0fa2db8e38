"""Throughput of rlkit_td3 against Stable-Baselines3, interleaved in one process (A B A B ...).

Three measurements, printed as one table:

* **update**: ms per gradient step of ``model.train(gradient_steps=N, batch_size=256)`` on a filled buffer,
  obs 26 / act 6 (HalfCheetahBulletEnv-v0's sizes), net [400, 300], for TD3 and DDPG, both libraries. The
  script also computes the update's GEMM bound: it counts the FLOPs of every matrix product one update
  performs (forward, input gradients, weight gradients; the actor step at ``1 / policy_delay`` of the steps)
  and times those same products with ``torch.mm`` at the same shapes. ``bound / measured`` is the fraction of
  the bound reached (1.0 would mean the update is nothing but its matmuls at full speed). Where torch has
  oneDNN's inner product, a second bound takes for each product the faster of ``torch.mm`` and oneDNN (on AMD
  CPUs MKL, behind ``torch.mm``, runs an AVX2 code path, and oneDNN is about twice as fast: the first bound is
  then no bound for an update that uses oneDNN).
* **end-to-end**: env-steps/s of ``learn()`` with identical hyperparameters, after a warm-up that fills the
  buffer past ``learning_starts``, on HalfCheetahBulletEnv-v0 and Pendulum-v1.
* **scaling**: rlkit_td3's ms per update with 1k and with 1M transitions stored, and its collection speed
  (env-steps/s of warm-up steps, no updates) with n_envs = 1, 2, 4 on Pendulum-v1.

Every ratio is the median of per-repetition ratios, each repetition timing the two libraries back to back,
so slow phases of a shared machine hit both. Usage::

    python benchmarks/throughput.py [--reps 3] [--update-reps 7] [--quick] [--out benchmarks/results/throughput.txt]

Needs the ``benchmark`` extra (``pip install -e .[benchmark]``) for the SB3 side.
"""

from __future__ import annotations

import argparse
import io
import platform
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import redirect_stdout
from datetime import date

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces

import rlkit_td3  # noqa: F401  (registers the Bullet ids)
from rlkit_td3 import DDPG, TD3

OBS_DIM, ACT_DIM, NET, BATCH = 26, 6, [400, 300], 256


class ShapeEnv(gym.Env):
    """An env with HalfCheetah's sizes and random dynamics: only its spaces matter for the update benchmark."""

    def __init__(self) -> None:
        self.observation_space = spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (ACT_DIM,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


# ---------------------------------------------------------------------------------------------------------
# models


def model_kwargs(buffer_size: int, learning_starts: int, seed: int) -> dict:
    """The constructor settings every library gets (noise aside), shared with ``benchmarks/old_vs_new.py``."""
    return dict(
        learning_rate=1e-3,
        buffer_size=buffer_size,
        learning_starts=learning_starts,
        batch_size=BATCH,
        tau=0.005,
        gamma=0.99,
        train_freq=1,
        gradient_steps=1,
        policy_kwargs={"net_arch": NET},
        seed=seed,
    )


def build(library: str, algo: str, env, buffer_size: int = 100_000, learning_starts: int = 1000, seed: int = 0):
    kwargs = model_kwargs(buffer_size, learning_starts, seed)
    dim = int(np.prod(env.action_space.shape))
    if library == "rlkit_td3":
        from rlkit_td3.noise import NormalActionNoise

        cls = {"td3": TD3, "ddpg": DDPG}[algo]
        return cls("MlpPolicy", env, action_noise=NormalActionNoise(np.zeros(dim), 0.1 * np.ones(dim)), **kwargs)
    from stable_baselines3 import DDPG as SB3DDPG
    from stable_baselines3 import TD3 as SB3TD3
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.noise import NormalActionNoise as SB3Noise

    cls = {"td3": SB3TD3, "ddpg": SB3DDPG}[algo]
    model = cls("MlpPolicy", env, action_noise=SB3Noise(np.zeros(dim), 0.1 * np.ones(dim)), device="cpu", **kwargs)
    model.set_logger(Logger(folder=None, output_formats=[]))  # train() records losses; write them nowhere
    return model


def fill_buffer(library: str, model, n: int, seed: int = 0) -> None:
    """Write ``n`` random transitions straight into the model's buffer arrays."""
    rng = np.random.default_rng(seed)
    buf = model.replay_buffer
    obs = rng.standard_normal((n, OBS_DIM), dtype=np.float32)
    act = rng.uniform(-1, 1, (n, ACT_DIM)).astype(np.float32)
    rew = rng.standard_normal(n, dtype=np.float32)
    if library == "rlkit_td3":
        buf.observations[:n] = obs.reshape(buf.observations[:n].shape)
        if getattr(buf, "next_observations", None) is not None:
            buf.next_observations[:n] = np.roll(obs, -1, axis=0).reshape(buf.next_observations[:n].shape)
        buf.actions[:n] = act
        buf.rewards[:n] = rew
        buf.pos, buf.full = n % buf.buffer_size, n >= buf.buffer_size
    else:
        buf.observations[:n, 0] = obs
        buf.next_observations[:n, 0] = np.roll(obs, -1, axis=0)
        buf.actions[:n, 0] = act
        buf.rewards[:n, 0] = rew
        buf.pos, buf.full = n % buf.buffer_size, n >= buf.buffer_size


def time_train(model, steps: int) -> float:
    """ms per gradient step of ``model.train`` (after a few untimed steps)."""
    with redirect_stdout(io.StringIO()):
        model.train(gradient_steps=10, batch_size=BATCH)
        start = time.perf_counter()
        model.train(gradient_steps=steps, batch_size=BATCH)
    return (time.perf_counter() - start) / steps * 1e3


# ---------------------------------------------------------------------------------------------------------
# the GEMM bound


def update_gemms(policy_delay: int, n_critics: int) -> list[tuple[tuple[int, int, int], float]]:
    """The matrix products of one update as ``((m, k, n), weight)``: an ``(m, k) @ (k, n)`` product done
    ``weight`` times per update on average."""
    actor = [OBS_DIM, *NET, ACT_DIM]
    critic = [OBS_DIM + ACT_DIM, *NET, 1]
    out: list[tuple[tuple[int, int, int], float]] = []

    def forward(sizes, times):
        for k, n in zip(sizes[:-1], sizes[1:]):
            out.append(((BATCH, k, n), times))

    def backward(sizes, times, weights: bool):
        for i, (k, n) in enumerate(zip(sizes[:-1], sizes[1:])):
            if i > 0:  # the input gradient of the first layer is not needed
                out.append(((BATCH, n, k), times))
            if weights:
                out.append(((k, BATCH, n), times))

    forward(actor, 1)  # target actions
    forward(critic, n_critics)  # target Q
    forward(critic, n_critics)  # current Q
    backward(critic, n_critics, weights=True)  # critic loss
    delayed = 1.0 / policy_delay
    forward(actor, delayed)  # actor step: π(s)
    forward(critic, delayed)  # Q1(s, π(s))
    backward(critic, delayed, weights=False)  # dQ1/da only
    out.append(((BATCH, critic[1], critic[0]), delayed))  # ... through the first layer to the action
    backward(actor, delayed, weights=True)
    return out


def _onednn_product() -> Callable | None:
    """oneDNN's inner product on dense tensors (``out = a @ w.T``), or None where this torch has none."""
    try:
        return torch.ops.mkldnn._linear_pointwise.default
    except (AttributeError, RuntimeError):
        return None


def gemm_bound_ms(policy_delay: int, n_critics: int, reps: int = 100) -> tuple[float, float, float | None]:
    """(FLOPs of one update in millions, the time its matmuls take with ``torch.mm`` in ms, the time with the
    faster of ``torch.mm`` and oneDNN's inner product for each product, or None without oneDNN).

    The products are run back to back, in the update's order, ``reps`` times after a warm-up; fractional
    weights (the delayed actor step) are applied to the times.
    """
    gemms = update_gemms(policy_delay, n_critics)
    mflop = sum(2 * m * k * n * w for (m, k, n), w in gemms) / 1e6
    operands = [(torch.randn(m, k), torch.randn(k, n), torch.empty(m, n)) for (m, k, n), _ in gemms]
    linear = _onednn_product()
    weights_t = [b.t().contiguous() for _, b, _ in operands]  # oneDNN's weight layout: (n, k)
    times, dnn_times = np.zeros(len(gemms)), np.zeros(len(gemms))
    for rep in range(reps + 10):
        for i, (a, b, out) in enumerate(operands):
            start = time.perf_counter()
            torch.mm(a, b, out=out)
            middle = time.perf_counter()
            if linear is not None:
                linear(a, weights_t[i], None, "none", [], "")
            if rep >= 10:
                times[i] += middle - start
                dnn_times[i] += time.perf_counter() - middle
    weights = np.array([w for _, w in gemms])
    best = None if linear is None else float((np.minimum(times, dnn_times) / reps * weights).sum() * 1e3)
    return mflop, float((times / reps * weights).sum() * 1e3), best


# ---------------------------------------------------------------------------------------------------------
# sections


def interleave(reps: int, fns: dict[str, Callable[[int], float]]) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {name: [] for name in fns}
    for rep in range(reps):
        for name, fn in fns.items():
            results[name].append(fn(rep))
    return results


def update_section(reps: int, steps: int, rows: list[str]) -> None:
    for algo, delay, n_critics in (("td3", 2, 2), ("ddpg", 1, 1)):
        models = {}
        for library in ("rlkit_td3", "sb3"):
            models[library] = build(library, algo, ShapeEnv())
            fill_buffer(library, models[library], 50_000)
        bound_runs = []

        def ours(rep, models=models):
            return time_train(models["rlkit_td3"], steps)

        def theirs(rep, models=models):
            return time_train(models["sb3"], steps)

        res = interleave(reps, {"rlkit_td3": ours, "sb3": theirs})
        for _ in range(5):
            bound_runs.append(gemm_bound_ms(delay, n_critics))
        mflop = bound_runs[0][0]
        bound = statistics.median(b for _, b, _ in bound_runs)
        best = None if bound_runs[0][2] is None else statistics.median(c for _, _, c in bound_runs)
        a, b = statistics.median(res["rlkit_td3"]), statistics.median(res["sb3"])
        ratios = [y / x for x, y in zip(res["rlkit_td3"], res["sb3"])]
        rows.append(
            f"update {algo.upper():4s}  rlkit_td3 {a:6.2f} ms  SB3 {b:6.2f} ms  "
            f"speed-up x{statistics.median(ratios):.3f} "
            f"(min {min(ratios):.3f}, max {max(ratios):.3f})  |  {mflop:.0f} MFLOP, GEMM bound {bound:.2f} ms "
            f"({mflop / bound:.0f} GFLOP/s): rlkit_td3 at {bound / a:.0%}, SB3 at {bound / b:.0%}"
            + (
                ""
                if best is None
                else f"; with the faster of mm and oneDNN per product {best:.2f} ms ({mflop / best:.0f} GFLOP/s): "
                f"rlkit_td3 at {best / a:.0%}"
            )
        )
        print(rows[-1], flush=True)


def learn_rate(library: str, env_id: str, warmup: int, steps: int, seed: int) -> float:
    model = build(library, "td3", gym.make(env_id), buffer_size=200_000, learning_starts=warmup // 2, seed=seed)
    with redirect_stdout(io.StringIO()):
        model.learn(warmup)
        start = time.perf_counter()
        model.learn(steps, reset_num_timesteps=False)
    return steps / (time.perf_counter() - start)


def end_to_end_section(reps: int, steps: int, rows: list[str]) -> None:
    for env_id in ("HalfCheetahBulletEnv-v0", "Pendulum-v1"):
        res = interleave(
            reps,
            {
                "rlkit_td3": lambda rep, e=env_id: learn_rate("rlkit_td3", e, 1000, steps, rep),
                "sb3": lambda rep, e=env_id: learn_rate("sb3", e, 1000, steps, rep),
            },
        )
        ratios = [x / y for x, y in zip(res["rlkit_td3"], res["sb3"])]
        rows.append(
            f"learn {env_id:24s} rlkit_td3 {statistics.median(res['rlkit_td3']):6.1f}  "
            f"SB3 {statistics.median(res['sb3']):6.1f} env-steps/s  ratio x{statistics.median(ratios):.3f} "
            f"(min {min(ratios):.3f}, max {max(ratios):.3f}; {steps} timed steps)"
        )
        print(rows[-1], flush=True)


def scaling_section(reps: int, steps: int, rows: list[str]) -> None:
    small = build("rlkit_td3", "td3", ShapeEnv(), buffer_size=1_000_000)
    big = build("rlkit_td3", "td3", ShapeEnv(), buffer_size=1_000_000)
    fill_buffer("rlkit_td3", small, 1_000)
    fill_buffer("rlkit_td3", big, 1_000_000)
    res = interleave(reps, {"1k": lambda rep: time_train(small, steps), "1M": lambda rep: time_train(big, steps)})
    ratios = [y / x for x, y in zip(res["1k"], res["1M"])]
    rows.append(
        f"scaling: ms/update with 1k stored {statistics.median(res['1k']):.2f}, with 1M stored "
        f"{statistics.median(res['1M']):.2f}  (1M / 1k = {statistics.median(ratios):.3f})"
    )
    print(rows[-1], flush=True)
    for n_envs in (1, 2, 4):
        env = gym.make_vec("Pendulum-v1", num_envs=n_envs, vectorization_mode="sync")
        model = TD3("MlpPolicy", env, learning_starts=10**9, buffer_size=100_000, policy_kwargs={"net_arch": NET})
        model.learn(200)
        rates = []
        for _ in range(reps):
            start = time.perf_counter()
            model.learn(4000, reset_num_timesteps=False)
            rates.append(4000 / (time.perf_counter() - start))
        rows.append(f"collection Pendulum-v1 n_envs={n_envs}: {statistics.median(rates):8.0f} env-steps/s (warm-up)")
        print(rows[-1], flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions of the end-to-end, scaling runs")
    parser.add_argument(
        "--update-reps", type=int, default=7, help="interleaved repetitions of the update timing (short, noisy)"
    )
    parser.add_argument("--quick", action="store_true", help="fewer steps, for a smoke run")
    parser.add_argument("--sections", nargs="+", default=["update", "learn", "scaling"])
    parser.add_argument("--out", default=None, help="also write the table to this file")
    args = parser.parse_args()
    update_steps, learn_steps, scale_steps = (20, 300, 20) if args.quick else (200, 3000, 200)
    header = (
        f"rlkit_td3 throughput vs Stable-Baselines3, {date.today()}, {platform.machine()} "
        f"{platform.processor() or ''} {torch.get_num_threads()} torch threads, torch {torch.__version__}, "
        f"python {sys.version.split()[0]}, interleaved reps: {args.update_reps} (update), {args.reps} (others)"
    )
    print(header, flush=True)
    rows: list[str] = []
    if "update" in args.sections:
        update_section(args.update_reps, update_steps, rows)
    if "learn" in args.sections:
        end_to_end_section(args.reps, learn_steps, rows)
    if "scaling" in args.sections:
        scaling_section(args.reps, scale_steps, rows)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(header + "\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()

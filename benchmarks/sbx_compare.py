"""rlkit_td3 against Stable-Baselines3 and SBX (SB3's JAX version) on one CPU: update and ``learn()`` speed.

Each measurement runs in a fresh child process; the libraries take turns, repetition after repetition
(rlkit_td3, SB3, SBX, rlkit_td3, ...), so a slow phase of a shared machine hits all three. SBX lives in its own
virtual environment (``--sbx-python``; JAX and torch in one process would fight over threads), which
``--make-sbx-venv DIR`` creates: ``python -m venv DIR``, then ``pip install torch==2.13.0 sbx-rl`` and this
checkout (for the Bullet ids).

Every child is pinned to the same ``--threads`` CPUs (``taskset``), with torch's intra-op threads set to that
number and XLA's CPU thread pool limited to the pinned CPUs (at 1 thread: ``--xla_cpu_multi_thread_eigen=false``).

* **update**: ms per gradient step of ``train(gradient_steps=N, batch_size=256)`` on a buffer of 50,000 random
  transitions with HalfCheetah's sizes (obs 26, act 6), net [400, 300], TD3 (policy delay 2, target smoothing
  0.2/0.5), after two untimed calls of the same ``N`` (SBX compiles per shape and per ``N``: its ``train`` runs
  the ``N`` steps in one jitted ``fori_loop``); SBX's result is waited for (``block_until_ready``).
* **learn**: env-steps/s of ``learn()`` on HalfCheetahBulletEnv-v0 with the same settings, ``train_freq=1``,
  ``gradient_steps=1`` (an update per env step), timed after 1,000 warm-up steps (learning starts at 500).
* **split** (not run by default): the same ``learn()``, with each ``model.train`` call timed (SBX's result waited
  for inside the timer): ms per env step spent in the update and everywhere else (the env step, the action, the
  buffer, the library's loop), so the ``learn()`` ratios can be read as update + collection.

Usage::

    python benchmarks/sbx_compare.py --make-sbx-venv /tmp/sbxvenv [--reps 5] [--threads 1] [--out FILE]
    python benchmarks/sbx_compare.py --sbx-python /tmp/sbxvenv/bin/python ...   # the venv made before
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

OBS_DIM, ACT_DIM, NET, BATCH = 26, 6, [400, 300], 256
SETTINGS = dict(
    learning_rate=1e-3,
    buffer_size=100_000,
    batch_size=BATCH,
    tau=0.005,
    gamma=0.99,
    train_freq=1,
    gradient_steps=1,
    policy_delay=2,
    target_policy_noise=0.2,
    target_noise_clip=0.5,
)
LIBS = ("rlkit", "sb3", "sbx")


# ------------------------------------------------------------------------------------------------ the child side
def _model(lib: str, env, learning_starts: int, seed: int = 0):
    import numpy as np

    dim = int(np.prod(env.action_space.shape))
    if lib == "rlkit":
        from rlkit_td3 import TD3
        from rlkit_td3.noise import NormalActionNoise
    elif lib == "sb3":
        from stable_baselines3 import TD3
        from stable_baselines3.common.noise import NormalActionNoise
    else:
        from sbx import TD3
        from stable_baselines3.common.noise import NormalActionNoise
    kwargs = dict(SETTINGS, learning_starts=learning_starts, seed=seed, policy_kwargs={"net_arch": NET})
    if lib != "rlkit":
        kwargs["device"] = "cpu"
    model = TD3("MlpPolicy", env, action_noise=NormalActionNoise(np.zeros(dim), 0.1 * np.ones(dim)), **kwargs)
    if lib != "rlkit":
        from stable_baselines3.common.logger import Logger

        model.set_logger(Logger(folder=None, output_formats=[]))  # train() records values; write them nowhere
    return model


def _fill(lib: str, model, n: int) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    obs = rng.standard_normal((n + 1, OBS_DIM), dtype=np.float32)
    buf = model.replay_buffer
    if lib == "rlkit":
        buf.observations[:n] = obs[:n]
        buf.next_observations[:n] = obs[1:]
        buf.actions[:n] = rng.uniform(-1, 1, (n, ACT_DIM))
        buf.rewards[:n] = rng.standard_normal(n)
    else:
        buf.observations[:n, 0] = obs[:n]
        buf.next_observations[:n, 0] = obs[1:]
        buf.actions[:n, 0] = rng.uniform(-1, 1, (n, ACT_DIM))
        buf.rewards[:n, 0] = rng.standard_normal(n)
    buf.pos, buf.full = n, False


def _sync(lib: str, model) -> None:
    """Wait for SBX's asynchronous dispatch to finish (torch on CPU is synchronous)."""
    if lib == "sbx":
        import jax

        jax.block_until_ready(model.policy.actor_state.params)


def make_shape_env(obs_dim: int = OBS_DIM, act_dim: int = ACT_DIM):
    """A gymnasium env with float32 Box spaces of ``obs_dim`` and ``act_dim`` (by default HalfCheetahBulletEnv-v0's:
    obs 26, act 6) and random steps: the update timings only read its spaces."""
    import gymnasium as gym
    import numpy as np
    from gymnasium import spaces

    class ShapeEnv(gym.Env):
        observation_space = spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
        action_space = spaces.Box(-1.0, 1.0, (act_dim,), np.float32)

        def reset(self, *, seed=None, options=None):
            return self.observation_space.sample(), {}

        def step(self, action):
            return self.observation_space.sample(), 0.0, False, False, {}

    return ShapeEnv()


def child_update(lib: str, steps: int) -> float:
    model = _model(lib, make_shape_env(), learning_starts=0)
    _fill(lib, model, 50_000)
    for _ in range(2):  # compile (SBX) and warm up at the timed shapes
        model.train(gradient_steps=steps, batch_size=BATCH)
    _sync(lib, model)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        model.train(gradient_steps=steps, batch_size=BATCH)
        _sync(lib, model)
        times.append((time.perf_counter() - start) / steps * 1e3)
    return statistics.median(times)


def child_split(lib: str, steps: int) -> tuple[float, float]:
    """``learn()`` as in `child_learn`, returning (ms per env step inside ``model.train``, ms per env step
    elsewhere)."""
    import gymnasium as gym

    import rlkit_td3  # noqa: F401  (registers the Bullet ids)

    model = _model(lib, gym.make("HalfCheetahBulletEnv-v0"), learning_starts=500)
    model.learn(1_000)
    _sync(lib, model)
    train, in_train = model.train, [0.0]

    def timed_train(*args, **kwargs):
        start = time.perf_counter()
        train(*args, **kwargs)
        _sync(lib, model)
        in_train[0] += time.perf_counter() - start

    model.train = timed_train  # an instance attribute: learn() looks train up on the instance
    start = time.perf_counter()
    model.learn(steps, reset_num_timesteps=False)
    _sync(lib, model)
    total = time.perf_counter() - start
    return in_train[0] / steps * 1e3, (total - in_train[0]) / steps * 1e3


def child_learn(lib: str, steps: int) -> float:
    import gymnasium as gym

    import rlkit_td3  # noqa: F401  (registers the Bullet ids)

    model = _model(lib, gym.make("HalfCheetahBulletEnv-v0"), learning_starts=500)
    model.learn(1_000)
    _sync(lib, model)
    start = time.perf_counter()
    model.learn(steps, reset_num_timesteps=False)
    _sync(lib, model)
    return steps / (time.perf_counter() - start)


# ----------------------------------------------------------------------------------------------- the parent side
def cpu_name() -> str:
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine()
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "")
    family = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("cpu family")), "?")
    avx512 = "avx512f" in info
    return f"{model or platform.machine()} (family {family}, {'AVX-512' if avx512 else 'no AVX-512'})"


def run_child(python: str, lib: str, what: str, steps: int, threads: int) -> Any:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    if threads == 1:
        env["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    cpus = ",".join(str(c) for c in sorted(os.sched_getaffinity(0))[:threads])
    cmd = ["taskset", "-c", cpus, python, __file__, "--child", lib, what, str(steps), str(threads)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    if done.returncode != 0:
        raise RuntimeError(f"{lib} {what} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def split_rows(args: argparse.Namespace) -> list[str]:
    """The rows of the ``split`` section: per library, the medians over reps of the update's and the rest's ms per
    env step, and their sum."""
    results: dict[str, list[tuple[float, float]]] = {lib: [] for lib in args.libs}
    for _ in range(args.reps):
        for lib in args.libs:
            python = args.sbx_python if lib == "sbx" else sys.executable
            results[lib].append(tuple(run_child(python, lib, "split", args.learn_steps, args.threads)))
    rows = ["split  (ms per env step of learn(): in model.train, elsewhere, both)"]
    for lib, pairs in results.items():
        train = statistics.median(p[0] for p in pairs)
        other = statistics.median(p[1] for p in pairs)
        both = statistics.median(p[0] + p[1] for p in pairs)
        rows.append(f"  {lib:5s} train {train:6.3f}  elsewhere {other:6.3f}  step {both:6.3f}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", nargs=4, metavar=("LIB", "WHAT", "STEPS", "THREADS"), help=argparse.SUPPRESS)
    parser.add_argument("--sbx-python", default="/work/sbxvenv/bin/python", help="the Python of SBX's venv")
    parser.add_argument("--libs", nargs="+", default=list(LIBS), choices=LIBS)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--update-steps", type=int, default=200)
    parser.add_argument("--learn-steps", type=int, default=2_000)
    parser.add_argument("--sections", nargs="+", default=["update", "learn"], choices=["update", "learn", "split"])
    parser.add_argument("--out", default=None, help="also write the table to this file")
    parser.add_argument("--make-sbx-venv", metavar="DIR", help="create SBX's venv in DIR, then use it")
    args = parser.parse_args()
    if args.make_sbx_venv:
        venv = Path(args.make_sbx_venv)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, "torch==2.13.0", "sbx-rl"], check=True)
        subprocess.run([*pip, "-e", str(Path(__file__).resolve().parents[1])], check=True)
        args.sbx_python = str(venv / "bin" / "python")
    if args.child:
        lib, what, steps, threads = args.child
        import torch

        torch.set_num_threads(int(threads))
        child = {"update": child_update, "learn": child_learn, "split": child_split}[what]
        print(json.dumps(child(lib, int(steps))), flush=True)
        return

    rows = [f"TD3 speed, {date.today()}, {cpu_name()}, {args.threads} thread(s) per run, {args.reps} interleaved reps"]
    print(rows[0], flush=True)
    for what in args.sections:
        if what == "split":
            rows.extend(split_rows(args))
            print("\n".join(rows[-(len(args.libs) + 1) :]), flush=True)
            continue
        steps = args.update_steps if what == "update" else args.learn_steps
        results: dict[str, list[float]] = {lib: [] for lib in args.libs}
        for _ in range(args.reps):
            for lib in args.libs:
                python = args.sbx_python if lib == "sbx" else sys.executable
                results[lib].append(run_child(python, lib, what, steps, args.threads))
        unit = "ms/update" if what == "update" else "env-steps/s"
        cells = [f"{lib} {statistics.median(v):7.2f}" for lib, v in results.items()]
        rows.append(f"{what:6s} ({unit}): " + "  ".join(cells))
        if "rlkit" in results:
            for other in (lib for lib in args.libs if lib != "rlkit"):
                ours, theirs = results["rlkit"], results[other]
                # speed-up of rlkit_td3: time ratio for updates, rate ratio for learn()
                ratios = [t / o if what == "update" else o / t for o, t in zip(ours, theirs)]
                rows.append(
                    f"  rlkit_td3 vs {other}: x{statistics.median(ratios):.3f} "
                    f"(min {min(ratios):.3f}, max {max(ratios):.3f})"
                )
        print("\n".join(rows[-(len(args.libs)) :]), flush=True)
    if args.out:
        Path(args.out).write_text("\n".join(rows) + "\n")
    print(json.dumps({"rows": rows}))


if __name__ == "__main__":
    main()

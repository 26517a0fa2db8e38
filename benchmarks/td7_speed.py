"""TD7's training speed against the authors' code: env steps per second on MuJoCo HalfCheetah-v4, one torch thread.

Both run the same protocol with their default (the paper's) settings, on the CPU: a warm-up of ``--warmup`` uniform
random steps (the paper's 25,000 shortened: the speed after it does not depend on it), then one unmeasured block and
``--rounds`` measured blocks of ``--block`` env steps each (whole 1,000-step episodes, so each block holds the batch
trainings at its episodes' ends: as many updates as steps). The blocks are interleaved (ours, theirs, theirs, ours,
...), so a change in the machine's load hits both alike. Reported: each block's steps/s, the medians and their
ratio (ours / reference); the same in steps per CPU second of the process (on a machine shared with other
processes, less sensitive to them than the wall time, which counts the time the process waits for a core).

The reference (sfujim/TD7's ``TD7.py`` and ``buffer.py``) is read from ``../shared/reference/td7/`` beside the
repository (``--reference`` to point elsewhere) and driven by the loop of its ``main.py`` (``train_online`` with
checkpoints), written here for gymnasium's API.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/td7_speed.py --block 2000 --rounds 2
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from rlkit_td3 import TD7

ROOT = Path(__file__).resolve().parents[1]


def load_reference(folder: Path):
    """The authors' TD7 module (its ``import buffer`` resolved beside it)."""
    if not (folder / "TD7.py").is_file():
        raise SystemExit(f"the TD7 reference is absent from {folder}")
    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location("td7_reference", folder / "TD7.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
    return module


class ReferenceRun:
    """The authors' online loop (main.py's ``train_online``, checkpoints on), a block of steps at a time."""

    def __init__(self, ref, env_id: str, seed: int, warmup: int) -> None:
        self.env = gym.make(env_id)
        self.env.action_space.seed(seed)
        torch.manual_seed(seed)
        np.random.seed(seed)  # noqa: NPY002  (the authors seed the legacy generator, as their main.py)
        obs_dim = self.env.observation_space.shape[0]
        act_dim = self.env.action_space.shape[0]
        self.agent = ref.Agent(obs_dim, act_dim, float(self.env.action_space.high[0]))
        self.warmup = warmup
        self.state, _ = self.env.reset(seed=seed)
        self.t = self.ep_t = 0
        self.ep_return = 0.0
        self.allow_train = False

    def run(self, steps: int) -> None:
        env, agent = self.env, self.agent
        for _ in range(steps):
            if self.allow_train:
                action = agent.select_action(np.array(self.state))
            else:
                action = env.action_space.sample()
            next_state, reward, terminated, truncated, _ = env.step(action)
            self.ep_return += reward
            self.ep_t += 1
            agent.replay_buffer.add(self.state, action, next_state, reward, float(terminated))
            self.state = next_state
            if terminated or truncated:
                if self.allow_train:
                    agent.maybe_train_and_checkpoint(self.ep_t, self.ep_return)
                if self.t >= self.warmup:
                    self.allow_train = True
                self.state, _ = env.reset()
                self.ep_t, self.ep_return = 0, 0.0
            self.t += 1


class OurRun:
    """Our TD7 with its defaults (learning_starts set to the warm-up), ``learn`` a block at a time."""

    def __init__(self, env_id: str, seed: int, warmup: int) -> None:
        self.model = TD7("MlpPolicy", gym.make(env_id), learning_starts=warmup, seed=seed, device="cpu")
        self.first = True

    def run(self, steps: int) -> None:
        self.model.learn(steps, reset_num_timesteps=self.first)
        self.first = False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="HalfCheetah-v4")
    parser.add_argument("--warmup", type=int, default=2_000)
    parser.add_argument("--block", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reference", type=Path, default=ROOT.parent / "shared" / "reference" / "td7")
    args = parser.parse_args()
    # both on the CPU: the reference picks CUDA when it sees one (read at CUDA's first use, which is later)
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    torch.set_num_threads(1)
    ref = load_reference(args.reference)
    runs = {"rlkit_td3": OurRun(args.env, args.seed, args.warmup), "reference": ReferenceRun(ref, args.env, args.seed,
                                                                                           args.warmup)}  # fmt: skip
    for name, run in runs.items():  # warm-up, then one unmeasured block (past the first trainings)
        start = time.perf_counter()
        run.run(args.warmup + args.block)
        print(f"{name}: warm-up and first block {time.perf_counter() - start:.1f} s", flush=True)
    rates: dict[str, list[float]] = {name: [] for name in runs}
    cpu_rates: dict[str, list[float]] = {name: [] for name in runs}
    for r in range(args.rounds):
        order = list(runs) if r % 2 == 0 else list(runs)[::-1]
        for name in order:
            start, cpu_start = time.perf_counter(), time.process_time()
            runs[name].run(args.block)
            rates[name].append(args.block / (time.perf_counter() - start))
            cpu_rates[name].append(args.block / (time.process_time() - cpu_start))
            cpu = f"({cpu_rates[name][-1]:6.2f} per CPU second)"
            print(f"round {r}: {name:9s} {rates[name][-1]:6.2f} env steps/s {cpu}", flush=True)
    ours, theirs = float(np.median(rates["rlkit_td3"])), float(np.median(rates["reference"]))
    print(f"median env steps/s: rlkit_td3 {ours:.2f}, reference {theirs:.2f}; ratio {ours / theirs:.2f}")
    # on a shared machine the CPU time is less sensitive to other processes than the wall time is
    ours, theirs = float(np.median(cpu_rates["rlkit_td3"])), float(np.median(cpu_rates["reference"]))
    print(f"median env steps per CPU second: rlkit_td3 {ours:.2f}, reference {theirs:.2f}; ratio {ours / theirs:.2f}")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread, CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}")  # fmt: skip


if __name__ == "__main__":
    main()

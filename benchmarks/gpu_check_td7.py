"""TD7 on a CUDA GPU: does ``TD7(..., device="cuda")`` learn, save, load and resume, and how fast is its update
against the authors' code on the same GPU?

Four checks, printed as one report (and written to ``--out``):

* **learning**: the TD7 learning case of ``tests/learning_cases.py`` (Pendulum-v1, [64, 64] networks, 7,000 steps,
  no policy checkpoints, ``evaluate_policy`` over 10 episodes), seeds 0-2 on the GPU; the case's criterion (the
  median of the seeds' returns at least the threshold) and which update ran. On a GPU that is the autograd update:
  TD7's written-out steps (`rlkit_td3.td7.fused`) cover the CPU only.
* **save / load**: a TD7 with policy checkpoints, trained on the GPU past its first checkpoints, saved and loaded
  onto the GPU and onto the CPU. Compared: the deterministic actions (the checkpoint policy's) on 64 observations,
  the value clipping bounds, the checkpoint schedule and the LAP priorities; then 500 more steps on the CPU.
* **resume**: the run of ``tests/test_td7_resume.py`` (checkpoint at 1,000 steps, continued to 1,800) on the GPU, in
  one process: how many saved tensors differ between the resumed and the uninterrupted run, and by how much.
* **update speed**: ms per update at HalfCheetah-v4's sizes (obs 17, act 6) with the paper's settings (our
  defaults; ``use_checkpoints=False`` so that ``train(n)`` is n updates), ours against the reference's
  ``Agent.train()`` on the GPU, both buffers holding 50,000 transitions of priority 1, interleaved in one process
  (A B B A ...), ``torch.cuda.synchronize()`` around each timed call; with ``--cpu-too`` ours on the CPU (its
  default threads, the written-out update) in the same rounds.

The reference (sfujim/TD7's ``TD7.py`` and ``buffer.py``) is read from ``--reference`` (default
``../shared/reference/td7/`` beside the repository).

Usage (needs a CUDA GPU)::

    python benchmarks/gpu_check_td7.py [--reps 7] [--steps 300] [--cpu-too] [--out FILE]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from sbx_compare import make_shape_env  # noqa: E402
from td7_speed import load_reference  # noqa: E402

from tests.test_td7_resume import SMALL  # noqa: E402  (its settings: policies held over several episodes)

OBS_DIM, ACT_DIM, BATCH, FILLED = 17, 6, 256, 50_000  # HalfCheetah-v4's spaces, the paper's batch


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def learning_check(rows: list[str], device: str) -> None:
    from rlkit_td3 import TD7
    from tests.learning_cases import TD7_PENDULUM, TD7_PENDULUM_CASE, effective_path

    case = TD7_PENDULUM_CASE
    returns, paths = [], set()
    start = time.perf_counter()
    for seed in (0, 1, 2):
        model = TD7("MlpPolicy", "Pendulum-v1", seed=seed, device=device, **TD7_PENDULUM)
        returns.append(case.train(model))
        paths.add(f"{next(model.policy.parameters()).device}: {effective_path(model)}, fused steps "
                  f"{getattr(model, '_fused_updates', 0)} of {model._n_updates} updates")  # fmt: skip
    took = time.perf_counter() - start
    median = float(np.median(returns))
    verdict = "PASS" if median >= case.threshold else "FAIL"
    rows.append(
        f"learning: TD7 Pendulum-v1 (the learning case), seeds 0-2: {', '.join(f'{r:.1f}' for r in returns)}; "
        f"median {median:.1f} (threshold {case.threshold}: {verdict}), {took:.1f} s in all"
    )
    rows.extend(f"  update path on {p}" for p in sorted(paths))


def save_load_check(rows: list[str], device: str) -> None:
    from rlkit_td3 import TD7

    model = TD7("MlpPolicy", gym.make("Pendulum-v1"), device=device, **SMALL)
    model.learn(2_000)
    obs = np.random.default_rng(0).normal(size=(64, 3)).astype(np.float32)
    actions, _ = model.predict(obs, deterministic=True)
    bounds, schedule = model._value_bounds.state_dict(), model._checkpoints.state_dict()
    leaves = np.array(model.replay_buffer.tree.leaves[: model.replay_buffer.size()], copy=True)
    rows.append(
        f"save/load: TD7 with checkpoints, 2,000 steps on {next(model.policy.parameters()).device}: "
        f"{model._n_updates} updates, checkpoint schedule {schedule}"
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "td7_gpu.zip"
        model.save(path, include_buffer=True)
        for target in (device, "cpu"):
            loaded = TD7.load(path, env=gym.make("Pendulum-v1"), device=target)
            again, _ = loaded.predict(obs, deterministic=True)
            where = next(loaded.policy.parameters()).device
            same_state = (
                loaded._value_bounds.state_dict() == bounds
                and loaded._checkpoints.state_dict() == schedule
                and np.array_equal(loaded.replay_buffer.tree.leaves[: loaded.replay_buffer.size()], leaves)
            )
            diff = float(np.abs(again - actions).max())
            rows.append(
                f"save/load: loaded on {where}: max |action difference| (checkpoint policy) over 64 observations "
                f"{diff:.2e}; value bounds, checkpoint schedule and LAP priorities equal: {same_state}"
            )
            loaded.learn(500, reset_num_timesteps=False)
            rows.append(f"  then 500 more steps on {where}: {loaded.num_timesteps} steps, {loaded._n_updates} updates")


def _tensors(path: Path) -> dict[str, torch.Tensor]:
    out = {}
    with zipfile.ZipFile(path) as archive:
        for name in archive.namelist():
            if name.endswith(".pth"):
                state = torch.load(io.BytesIO(archive.read(name)), weights_only=True, map_location="cpu")
                _flatten(name[:-4], state, out)
    return out


def _flatten(prefix: str, value, out: dict) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(f"{prefix}/{key}", item, out)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _flatten(f"{prefix}[{i}]", item, out)
    elif isinstance(value, torch.Tensor):
        out[prefix] = value


def resume_check(rows: list[str], device: str) -> None:
    from rlkit_td3 import TD7

    k, n = 1_000, 1_800
    with tempfile.TemporaryDirectory() as folder:
        checkpoint, straight, resumed = (Path(folder) / f"{x}.zip" for x in ("k", "straight", "resumed"))

        def save_at_k(locals_, globals_):
            if locals_["self"].num_timesteps == k:
                locals_["self"].save(checkpoint, include_buffer=True)
            return True

        model = TD7("MlpPolicy", gym.make("Pendulum-v1"), device=device, **SMALL)
        model.learn(n, callback=save_at_k)
        model.save(straight, include_buffer=True)
        again = TD7.load(checkpoint, env=gym.make("Pendulum-v1"), device=device)
        again.learn(n - k, reset_num_timesteps=False)
        again.save(resumed, include_buffer=True)
        a, b = _tensors(straight), _tensors(resumed)
    differ = {
        key: float((a[key].double() - b[key].double()).abs().max()) for key in a if not torch.equal(a[key], b[key])
    }
    worst = max(differ.values(), default=0.0)
    rows.append(
        f"resume on {device}: checkpoint at {k}, continued to {n}: {len(differ)} of {len(a)} saved tensors differ "
        f"from the uninterrupted run (largest |difference| {worst:.2e})"
        + (f"; first: {', '.join(sorted(differ)[:4])}" if differ else "")
    )


def _ours(device: str):
    from rlkit_td3 import TD7

    model = TD7(
        "MlpPolicy", make_shape_env(OBS_DIM, ACT_DIM), learning_starts=0, use_checkpoints=False, seed=0, device=device
    )
    rng = np.random.default_rng(0)
    obs = rng.standard_normal((FILLED + 1, OBS_DIM), dtype=np.float32)
    actions = rng.uniform(-1, 1, (FILLED, ACT_DIM)).astype(np.float32)
    rewards = rng.standard_normal(FILLED).astype(np.float32)
    zero = np.zeros(1, dtype=np.float32)
    for i in range(FILLED):  # through add, so that the LAP tree holds each transition at priority 1
        model.replay_buffer.add(obs[i : i + 1], obs[i + 1 : i + 2], actions[i : i + 1], rewards[i : i + 1], zero, zero)
    return model


def _reference_agent(ref, device: str):
    torch.manual_seed(0)
    agent = ref.Agent(OBS_DIM, ACT_DIM, 1.0)
    assert agent.device.type == device, (agent.device, device)
    rng = np.random.default_rng(0)
    obs = rng.standard_normal((FILLED + 1, OBS_DIM))
    buf = agent.replay_buffer
    buf.state[:FILLED], buf.next_state[:FILLED] = obs[:FILLED], obs[1:]
    buf.action[:FILLED] = rng.uniform(-1, 1, (FILLED, ACT_DIM))
    buf.reward[:FILLED, 0] = rng.standard_normal(FILLED)
    buf.not_done[:FILLED] = 1.0
    buf.priority[:FILLED] = 1.0
    buf.ptr = buf.size = FILLED
    return agent


def speed_check(rows: list[str], ref, reps: int, steps: int, cpu_too: bool, device: str) -> None:
    ours = _ours(device)
    agent = _reference_agent(ref, device)

    def reference_train(n: int) -> None:
        for _ in range(n):
            agent.train()

    runs = {f"rlkit {device}": (lambda n: ours.train(gradient_steps=n, batch_size=BATCH), steps),
            f"reference {device}": (reference_train, steps)}  # fmt: skip
    if cpu_too:
        on_cpu = _ours("cpu")
        runs["rlkit cpu"] = (lambda n: on_cpu.train(gradient_steps=n, batch_size=BATCH), max(steps // 5, 20))
    for fn, n in runs.values():  # warm up at the timed shapes (cuBLAS handles, the caching allocator)
        fn(n)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for r in range(reps):
        order = list(runs) if r % 2 == 0 else list(runs)[::-1]
        for name in order:
            fn, n = runs[name]
            _sync()
            start = time.perf_counter()
            fn(n)
            _sync()
            times[name].append((time.perf_counter() - start) / n * 1e3)
    for name, values in times.items():
        rows.append(f"update {name:>14}: {statistics.median(values):.3f} ms  ({' '.join(f'{v:.3f}' for v in values)})")
    ratios = [b / a for a, b in zip(times[f"rlkit {device}"], times[f"reference {device}"])]
    rows.append(
        f"  rlkit_td3 vs the reference on {device} (reference ms / ours, per round): x{statistics.median(ratios):.3f} "
        f"(min {min(ratios):.3f}, max {max(ratios):.3f})"
    )
    if cpu_too:
        fused = getattr(on_cpu, "_fused_updates", 0)
        rows.append(f"  rlkit cpu: {torch.get_num_threads()} torch threads, written-out steps in {fused} of "
                    f"{on_cpu._n_updates} updates")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--cpu-too", action="store_true", help="also time our update on the CPU in the same rounds")
    parser.add_argument("--skip", nargs="*", default=[], choices=["learning", "save_load", "resume", "speed"])
    parser.add_argument("--device", default="cuda", help="cuda (cpu only to try the script where there is no GPU)")
    parser.add_argument("--reference", type=Path, default=ROOT.parent / "shared" / "reference" / "td7")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: this check needs a GPU")
    name = torch.cuda.get_device_name() if args.device == "cuda" else "the CPU"
    rows = [f"TD7 (rlkit_td3) on {name}, torch {torch.__version__}"]
    checks = {
        "learning": lambda: learning_check(rows, args.device),
        "save_load": lambda: save_load_check(rows, args.device),
        "resume": lambda: resume_check(rows, args.device),
        "speed": lambda: speed_check(
            rows, load_reference(args.reference), args.reps, args.steps, args.cpu_too, args.device
        ),
    }
    for key, check in checks.items():
        if key in args.skip:
            continue
        start, first = time.perf_counter(), len(rows)
        try:
            check()
        except Exception as exc:  # report and go on: one failing check must not hide the others
            rows.append(f"{key}: FAILED with {type(exc).__name__}: {exc}")
        rows.append(f"  ({key}: {time.perf_counter() - start:.1f} s)")
        print("\n".join(rows[first:]), flush=True)
    if args.out:
        Path(args.out).write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()

"""rlkit_td3 on a CUDA GPU: does ``device="cuda"`` train, save and load, and how fast is its update against SB3's?

Three checks, printed as one report (and written to ``--out``):

* **learning**: TD3 on Pendulum-v1 with the Pendulum learning case's settings (``tests/learning_cases.py``:
  [64, 64], ``learning_starts=1000``, ``gamma=0.98``), seed 0, for 12,000 steps on the GPU, then
  ``evaluate_policy`` over 10 episodes; threshold -300 (the one-seed test this check was written against). The
  update on a GPU is the autograd one (`OffPolicyAlgorithm._train_step`): the fused update covers the CPU only.
* **save / load**: the trained model saved, loaded onto the GPU and onto the CPU; the loaded actors' actions on 64
  observations equal the original's (to float32 rounding across devices).
* **update speed**: ms per gradient step of ``model.train(gradient_steps=N, batch_size=256)`` at HalfCheetah's sizes
  (obs 26, act 6, [400, 300], the Zoo's TD3 settings of ``benchmarks/sbx_compare.py``), rlkit_td3 and SB3 on the GPU,
  interleaved in one process (A B A B ...), ``torch.cuda.synchronize()`` around each timed call; with
  ``--cpu-too`` also rlkit_td3 on the CPU in the same rounds.

Usage (needs a CUDA GPU and, for the speed part, the ``benchmark`` extra)::

    python benchmarks/gpu_check.py [--reps 7] [--steps 500] [--out FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sbx_compare import BATCH, NET, SETTINGS, _fill, make_shape_env  # noqa: E402


def learning_check(rows: list[str]) -> None:
    from rlkit_td3 import TD3
    from rlkit_td3.evaluation import evaluate_policy

    start = time.perf_counter()
    model = TD3(
        "MlpPolicy",
        "Pendulum-v1",
        learning_starts=1000,
        gamma=0.98,
        policy_kwargs={"net_arch": [64, 64]},
        seed=0,
        device="cuda",
    )
    model.learn(12_000)
    took = time.perf_counter() - start
    mean, std = evaluate_policy(model, "Pendulum-v1", n_eval_episodes=10, seed=1000)
    device = next(model.policy.parameters()).device
    verdict = "PASS" if mean >= -300.0 else "FAIL"
    fused = model._fused_update is not None and model._fused_update[1] is not None
    rows.append(
        f"learning: TD3 Pendulum-v1 12,000 steps on {device}: mean return {mean:.1f} +- {std:.1f} "
        f"(threshold -300: {verdict}), {took:.1f} s, fused update used: {fused}"
    )
    obs = np.random.default_rng(0).normal(size=(64, 3)).astype(np.float32)
    actions, _ = model.predict(obs, deterministic=True)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "td3_cuda.zip"
        model.save(path)
        for target in ("cuda", "cpu"):
            loaded = TD3.load(path, device=target)
            again, _ = loaded.predict(obs, deterministic=True)
            where = next(loaded.policy.parameters()).device
            diff = float(np.abs(again - actions).max())
            rows.append(f"save/load: loaded on {where}: max |action difference| over 64 observations {diff:.2e}")


def build(lib: str, device: str):
    """TD3 at HalfCheetah's sizes with the Zoo's settings (``sbx_compare.SETTINGS``) on ``device``, buffer filled."""
    if lib == "rlkit":
        from rlkit_td3 import TD3
        from rlkit_td3.noise import NormalActionNoise
    else:
        from stable_baselines3 import TD3
        from stable_baselines3.common.noise import NormalActionNoise
    kwargs = dict(SETTINGS, learning_starts=0, seed=0, policy_kwargs={"net_arch": NET}, device=device)
    model = TD3("MlpPolicy", make_shape_env(), action_noise=NormalActionNoise(np.zeros(6), 0.1 * np.ones(6)), **kwargs)
    if lib == "sb3":
        from stable_baselines3.common.logger import Logger

        model.set_logger(Logger(folder=None, output_formats=[]))
    assert next(model.policy.parameters()).device.type == device, (lib, device)
    _fill(lib, model, 50_000)
    return model


def speed_check(rows: list[str], reps: int, steps: int, cpu_too: bool) -> None:
    runs = {"rlkit cuda": (build("rlkit", "cuda"), steps), "sb3 cuda": (build("sb3", "cuda"), steps)}
    if cpu_too:
        runs["rlkit cpu"] = (build("rlkit", "cpu"), max(steps // 10, 20))
    for model, n in runs.values():  # warm up at the timed shapes (cuBLAS handles, the caching allocator)
        model.train(gradient_steps=n, batch_size=BATCH)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(reps):
        for name, (model, n) in runs.items():
            torch.cuda.synchronize()
            start = time.perf_counter()
            model.train(gradient_steps=n, batch_size=BATCH)
            torch.cuda.synchronize()
            times[name].append((time.perf_counter() - start) / n * 1e3)
    for name, values in times.items():
        rows.append(f"update {name:>10}: {statistics.median(values):.3f} ms  ({' '.join(f'{v:.3f}' for v in values)})")
    ratios = [b / a for a, b in zip(times["rlkit cuda"], times["sb3 cuda"])]
    low, mid, high = min(ratios), statistics.median(ratios), max(ratios)
    rows.append(f"  rlkit_td3 vs sb3 on the GPU: x{mid:.3f} (min {low:.3f}, max {high:.3f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--cpu-too", action="store_true", help="also time rlkit_td3 on the CPU in the same rounds")
    parser.add_argument("--skip-learning", action="store_true")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device: this check needs a GPU")
    rows = [
        f"rlkit_td3 on {torch.cuda.get_device_name()}, torch {torch.__version__}, "
        f"{args.reps} interleaved reps of {args.steps} updates"
    ]
    if not args.skip_learning:
        learning_check(rows)
    speed_check(rows, args.reps, args.steps, args.cpu_too)
    print("\n".join(rows))
    if args.out:
        Path(args.out).write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()

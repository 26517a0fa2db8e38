"""A longer fuzz run of ``TD3.load`` than the test suite's, with the memory and time of every case.

Each case (a corrupted copy of a genuine model file) is loaded in a forked child under an address-space cap
(``--memory-cap-mib``, default 1024 MiB above the child's start). Every case must load cleanly or raise
``ModelFileError``; anything else (another exception, a signal, the cap) is printed and counted as a failure.
For each kind of corruption the script prints the worst peak memory (the child's peak resident set minus its
resident set before loading) and the slowest load, and compares the worst case with loading the genuine file.

Usage: ``python benchmarks/fuzz_load.py [--cases 2000] [--structural 2000] [--seed 1]``.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from rlkit_td3 import TD3  # noqa: E402
from rlkit_td3.fileio.serialization import ModelFileError  # noqa: E402
from tests.model_fuzz import cases, run_isolated, structural_cases  # noqa: E402


def _load(path: Path):
    def run() -> str:
        try:
            TD3.load(path)
        except ModelFileError:
            return "refused"
        return "loaded"

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2_000, help="byte-level corruptions")
    parser.add_argument("--structural", type=int, default=2_000, help="structural corruptions")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--memory-cap-mib", type=int, default=1024)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cap = args.memory_cap_mib * 2**20
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.zip"
        TD3("MlpPolicy", "Pendulum-v1", learning_starts=50, buffer_size=500, policy_kwargs={"net_arch": [8]}).learn(
            120
        ).save(path, include_buffer=True)
        valid = path.read_bytes()
        genuine = [run_isolated(_load(path), cap) for _ in range(20)]
        assert all(outcome == "loaded" for outcome, _ in genuine), genuine
        genuine_mib = max(stats["peak_rss_delta"] for _, stats in genuine) / 2**20
        genuine_ms = statistics.median(stats["seconds"] for _, stats in genuine) * 1e3
        print(f"genuine file ({len(valid) / 1024:.0f} kB): peak +{genuine_mib:.1f} MiB, {genuine_ms:.0f} ms per load")

        all_cases = [("bytes/" + kind, data) for kind, data in cases(valid, args.cases, seed=args.seed)]
        all_cases += [
            ("structural/" + kind.split(" + ")[0], data)
            for _, kind, data in structural_cases([valid], args.structural, seed=args.seed)
        ]
        counts: collections.Counter[str] = collections.Counter()
        worst: dict[str, tuple[float, float]] = {}
        for kind, data in all_cases:
            path.write_bytes(data)
            outcome, stats = run_isolated(_load(path), cap)
            if outcome in ("refused", "loaded"):
                counts[outcome] += 1
            else:
                counts["FAILED"] += 1
                print(f"{kind}: {outcome[:300]}")
            mib, ms = stats["peak_rss_delta"] / 2**20, stats["seconds"] * 1e3
            old = worst.get(kind, (0.0, 0.0))
            worst[kind] = (max(old[0], mib), max(old[1], ms))
    print(f"\n{'kind':45s} {'worst peak MiB':>15s} {'slowest ms':>11s}")
    for kind, (mib, ms) in sorted(worst.items(), key=lambda kv: -kv[1][0]):
        print(f"{kind:45s} {mib:15.1f} {ms:11.0f}")
    peak = max(mib for mib, _ in worst.values())
    print(
        f"\n{len(all_cases)} cases: {dict(counts)}; worst peak +{peak:.1f} MiB = {peak / genuine_mib:.2f}x the "
        f"genuine file's +{genuine_mib:.1f} MiB; slowest case {max(ms for _, ms in worst.values()):.0f} ms "
        "(fork included)"
    )
    sys.exit(1 if counts["FAILED"] else 0)


if __name__ == "__main__":
    main()

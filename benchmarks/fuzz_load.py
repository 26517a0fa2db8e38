"""A longer fuzz run of ``TD3.load`` than the test suite's 1,000 cases.

Every corrupted file must load cleanly or raise ``ModelFileError``; anything else is printed and counted as a
failure. Usage: ``python benchmarks/fuzz_load.py [--cases 20000] [--seed 1]``.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rlkit_td3 import TD3  # noqa: E402
from rlkit_td3.serialization import ModelFileError  # noqa: E402
from tests.model_fuzz import cases  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.zip"
        TD3("MlpPolicy", "Pendulum-v1", learning_starts=50, buffer_size=500, policy_kwargs={"net_arch": [8]}).learn(
            120
        ).save(path, include_buffer=True)
        valid = path.read_bytes()
        counts: collections.Counter[str] = collections.Counter()
        slowest = 0.0
        for kind, data in cases(valid, args.cases, seed=args.seed):
            path.write_bytes(data)
            start = time.perf_counter()
            try:
                TD3.load(path)
                counts["loaded"] += 1
            except ModelFileError:
                counts["refused"] += 1
            except Exception as exc:  # noqa: BLE001
                counts["FAILED"] += 1
                print(f"{kind}: {type(exc).__name__}: {exc}")
            slowest = max(slowest, time.perf_counter() - start)
    print(f"{args.cases} cases: {dict(counts)}; slowest load {slowest * 1e3:.0f} ms")
    sys.exit(1 if counts["FAILED"] else 0)


if __name__ == "__main__":
    main()

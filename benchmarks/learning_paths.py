"""Every learning test under every float path: a table of case x path (median score, threshold, pass).

The cases are the tests' own (``tests/learning_cases.py``: model, budget, score, threshold, seeds), so the table
and the tests cannot drift. The paths (`learning_cases.PATHS`) are the ones this library can take on one machine:
the fused update with the reference (MKL) products and with oneDNN's, the autograd update, torch threads 1 and 2,
and the defaults (``fused_update_matmul="auto"``, ``torch_num_threads="auto"``, resolved on this machine and its
load at that moment; the caller's count is the CPU count, as in a fresh process). Each cell trains every seed of the
case and passes when the median score reaches the threshold, as the test asserts.

``--dedupe`` skips a cell whose floats are those of a cell already run for that case, measured: seed 0 of the case
trains ``PREFIX_UPDATES`` updates under each path and a path whose parameters then equal, bit for bit, those of a
path already run shares that cell (the table says which). Training amplifies any last-bit difference, so equal
parameters after that many updates of the same batches mean the same products in the same order: a case the fused
update does not cover (``MultiInputPolicy``, ``CnnPolicy``) trains through autograd whatever the products setting,
the fused update with the reference products is the autograd update bit for bit, and ``"mixed"`` at one thread is
``"onednn"``; whether a second thread changes the floats depends on the sizes, and the prefix shows it.

Usage (CPU heavy: one process; each path sets its own training threads)::

    OMP_NUM_THREADS=1 python benchmarks/learning_paths.py [--cases a,b] [--paths p,q] [--dedupe]
        [--prefix-only] [--seeds 0,1] [--jsonl FILE] [--table-from FILE ...] [--out FILE.md]

``--jsonl`` appends each cell as a JSON line as it finishes; ``--prefix-only`` computes only the prefix digests
(``--dedupe``'s test) and appends them; ``--table-from`` renders the table from such files (several runs, e.g. one
per case in parallel processes) without training.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import hashlib
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import learning_cases as lc  # noqa: E402

from rlkit_td3.update.matmul_choice import resolve_matmul  # noqa: E402

FRESH_THREADS = os.cpu_count() or 1
"""The caller's torch thread count for the ``default`` path (torch's default in a fresh process is the core count;
``"auto"`` never trains at more)."""


def cpu_model() -> str:
    """``/proc/cpuinfo``'s model name, vendor, family and model (the processor name elsewhere)."""
    try:
        info: dict[str, str] = {}
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
        return f"{info['model name']} ({info['vendor_id']}, family {info['cpu family']}, model {info['model']})"
    except (OSError, KeyError):
        return platform.processor() or "unknown"


PREFIX_UPDATES = 200
"""Updates of the prefix that tells whether two paths compute the same floats (``--dedupe``)."""


def prefix_digest(case: lc.LearningCase, path_name: str) -> str:
    """Hash of seed 0's parameters after the case's warm-up and `PREFIX_UPDATES` updates under ``path_name``, with
    the float path it took."""
    path = lc.PATHS[path_name]
    torch.set_num_threads(FRESH_THREADS if path_name == "default" else 1)
    model = case.build(case.seeds[0])
    path.apply(model)
    model.learn(model.learning_starts + PREFIX_UPDATES)
    torch.set_num_threads(1)
    digest = hashlib.sha256()
    for tensor in model.policy.state_dict().values():
        digest.update(tensor.detach().cpu().numpy().tobytes())
    return f"{lc.effective_path(model)}:{digest.hexdigest()[:16]}"


def run(cases: list[str], paths: list[str], dedupe: bool, jsonl: Path | None, seeds: list[int] | None) -> list[dict]:
    rows = []
    for name in cases:
        case = lc.CASES[name]
        if seeds is not None:  # a part of the case's seeds (the table joins the parts)
            case = dataclasses.replace(case, seeds=tuple(s for s in case.seeds if s in seeds))
        seen: dict[str, str] = {}  # parameters' hash after the prefix -> the path whose cell ran
        for path_name in paths:
            path = lc.PATHS[path_name]
            row: dict = {"case": name, "path": path_name, "threshold": case.threshold, "at_most": case.at_most}
            key = prefix_digest(case, path_name) if dedupe else None
            params = key.rpartition(":")[2] if key is not None else None
            if params is not None and params in seen:
                row.update(same_as=seen[params], key=key)
                print(f"{name} / {path_name}: same floats as {seen[params]} (prefix {key})", flush=True)
            else:
                torch.set_num_threads(FRESH_THREADS if path_name == "default" else 1)
                start = time.perf_counter()
                result = lc.run_case(case, path)
                torch.set_num_threads(1)
                row.update(
                    seeds=list(case.seeds),
                    scores=result.scores,
                    median=result.median,
                    passed=result.passed,
                    effective=result.paths,
                    seconds=round(time.perf_counter() - start, 1),
                    key=key,
                )
                if params is not None:
                    seen[params] = path_name
                print(f"{name} / {path_name}: {result.describe()} via {result.paths} ({row['seconds']} s)", flush=True)
            rows.append(row)
            if jsonl is not None:
                with jsonl.open("a") as f:
                    f.write(json.dumps(row) + "\n")
    return rows


def _join_seeds(rows: list[dict]) -> dict[tuple[str, str], dict]:
    """The trained cells, each with the scores of all its seeds (rows run with ``--seeds`` joined, seed order)."""
    parts: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        if "scores" in r:
            parts.setdefault((r["case"], r["path"]), []).append(r)
    cells = {}
    for (name, path), found in parts.items():
        case = lc.CASES[name]
        by_seed = {}
        for r in found:
            for seed, score, taken in zip(r.get("seeds", case.seeds), r["scores"], r["effective"]):
                by_seed[seed] = (score, taken)
        missing = [s for s in case.seeds if s not in by_seed]
        scores = [by_seed[s][0] for s in case.seeds if s in by_seed]
        median = float(statistics.median(scores))
        cells[(name, path)] = {
            "scores": scores,
            "median": median,
            "passed": case.passes(median) and not missing,
            "missing": missing,
            "effective": [by_seed[s][1] for s in case.seeds if s in by_seed],
            "seconds": round(sum(r["seconds"] for r in found), 1),
        }
    return cells


def table(rows: list[dict]) -> str:
    """Markdown: one row per case, one column per path. A cell not trained whose prefix digest equals that of a
    trained cell of the same case shows that cell's result (``= path``)."""
    cases = [c for c in lc.CASES if any(r["case"] == c for r in rows)]
    paths = [p for p in lc.PATHS if any(r["path"] == p for r in rows)]
    trained = _join_seeds(rows)
    digest = {(r["case"], r["path"]): r["key"] for r in rows if ":" in (r.get("key") or "")}
    params = {cell: key.rpartition(":")[2] for cell, key in digest.items()}  # the parameters' hash alone
    lines = [
        "| case | threshold | " + " | ".join(paths) + " |",
        "| --- | --- | " + " | ".join("---" for _ in paths) + " |",
    ]
    details = []
    for name in cases:
        first = lc.CASES[name]  # today's threshold: cells run before a change are judged by it
        sign = "<=" if first.at_most else ">="
        cells = []
        for p in paths:
            ran, same = trained.get((name, p)), ""
            if ran is None and (name, p) in digest:
                twin = next(
                    (q for q in paths if (name, q) in trained and params.get((name, q)) == params[(name, p)]), None
                )
                if twin is not None:
                    ran, same = trained[(name, twin)], f" (= {twin})"
                    details.append(f"| {name} | {p} | same floats as {twin} (prefix {digest[(name, p)]}) | - |")
            if ran is None:
                cells.append("not run")
                continue
            if not same:
                taken = ", ".join(ran["effective"])
                details.append(f"| {name} | {p} | {taken} (prefix {digest.get((name, p), '-')}) | {ran['seconds']} |")
            scores = ", ".join(f"{v:.4g}" for v in ran["scores"])
            verdict = "PASS" if ran["passed"] else "FAIL"
            if ran["missing"]:
                verdict = f"PARTIAL (seeds {ran['missing']} not run)"
            cells.append(f"{verdict} {ran['median']:.4g} [{scores}]{same}")
        lines.append(f"| {name} | {sign} {first.threshold:g} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Each cell: PASS/FAIL, the median over the case's seeds, [each seed's score, in seed order].",
        "",
        "| case | path | float path each seed took (prefix digest of seed 0) | seconds |",
        "| --- | --- | --- | --- |",
        *details,
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(lc.CASES), help="comma-separated case names")
    parser.add_argument("--paths", default=",".join(lc.PATHS), help="comma-separated path names")
    parser.add_argument("--dedupe", action="store_true", help="skip a cell whose floats already ran")
    parser.add_argument("--prefix-only", action="store_true", help="only the prefix digests (for --table-from)")
    parser.add_argument("--seeds", help="only these of each case's seeds, comma-separated (the table joins parts)")
    parser.add_argument("--jsonl", type=Path, help="append each cell to this file as it finishes")
    parser.add_argument("--table-from", type=Path, nargs="+", help="render the table from --jsonl files only")
    parser.add_argument("--out", type=Path, help="also write the table (markdown) here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.table_from:
        rows = [json.loads(line) for f in args.table_from for line in f.read_text().splitlines() if line.strip()]
    else:
        for name in args.cases.split(","):
            if name not in lc.CASES:
                parser.error(f"--cases: unknown case {name!r}; known: {', '.join(lc.CASES)}")
        for name in args.paths.split(","):
            if name not in lc.PATHS:
                parser.error(f"--paths: unknown path {name!r}; known: {', '.join(lc.PATHS)}")
        if args.prefix_only:
            rows = []
            for name in args.cases.split(","):
                case = lc.CASES[name]
                for path_name in args.paths.split(","):
                    row = {"case": name, "path": path_name, "threshold": case.threshold, "at_most": case.at_most}
                    row["key"] = prefix_digest(case, path_name)
                    print(f"{name} / {path_name}: prefix {row['key']}", flush=True)
                    rows.append(row)
                    if args.jsonl is not None:
                        with args.jsonl.open("a") as f:
                            f.write(json.dumps(row) + "\n")
        else:
            seeds = [int(v) for v in args.seeds.split(",")] if args.seeds else None
            rows = run(args.cases.split(","), args.paths.split(","), args.dedupe, args.jsonl, seeds)
    header = (
        f"CPU: {cpu_model()} ({os.cpu_count()} CPUs, resolve_matmul('auto') = "
        f"{resolve_matmul('auto', torch.float32)}); torch {torch.__version__}; "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC"
    )
    text = header + "\n\n" + table(rows) + "\n"
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)


if __name__ == "__main__":
    main()

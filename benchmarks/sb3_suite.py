"""Stable-Baselines3's own test suite as rlkit_td3's drop-in contract (issue 32).

``python benchmarks/sb3_suite.py [--files tests/test_logger.py ...] [--only ours|sb3] [--jobs 1]``

1. Fetches the sdist of Stable-Baselines3 2.9.2 with ``pip download`` (cached under ``~/.cache/rlkit_sb3_suite``)
   and unpacks its ``tests/`` twice into a temporary folder: once as published (the control, run against SB3
   installed in the same venv) and once with only the imports rewritten by our rule
   (``stable_baselines3.common.X -> rlkit_td3.X``, ``stable_baselines3.X -> rlkit_td3.X``). SB3's test code is
   never copied into this project.
2. Selects the tests on SB3's unmodified files: a test is left out when a value of its parametrization (or the
   class of such a value), or a name in its own body or in the body of a suite fixture it uses, is an algorithm or
   part we do not provide (A2C, PPO, SAC, DQN, the old ``HER`` class, rollout
   buffers and on-policy policies, Atari wrappers, the stochastic policies' distributions); a test parametrized
   with TD3 or DDPG is judged on its parametrization only (other algorithms' names in its body are branches).
   The same selection serves both libraries; it is printed per file. ``ale_py``, which ``test_utils.py`` imports
   at module level for its Atari tests only, is replaced by an empty stand-in module when it is not installed.
3. Runs each file in its own pytest process at one torch thread (``OMP_NUM_THREADS=1`` and a conftest calling
   ``torch.set_num_threads(1)``), with a per-test and a per-file time limit, and records every test's outcome
   as it ends (a test that never reports, e.g. when the file times out, counts as failed).
4. In the rewritten files a name rlkit_td3 lacks fails only the tests that use it: the conftest hands the test
   module a stand-in that raises ``ImportError`` when called or read. The stricter count treats a file whose
   module-level imports lack a name (other than the algorithms above, which a TD3/DDPG user's script would not
   import) as all-failed, as a user's script would be.

Prints the per-file table (selected, passed by SB3, passed by us, ours strict) and writes it, with the tests that
fail for us, to ``benchmarks/results/sb3_suite_<commit>.txt``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SB3_VERSION = "2.9.2"
CACHE = Path.home() / ".cache" / "rlkit_sb3_suite"
ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"

# Names whose use puts a test out of scope: algorithms and parts rlkit_td3 does not provide (decided on SB3's code).
OUT_OF_SCOPE = (
    "A2C PPO SAC DQN HER RolloutBuffer DictRolloutBuffer ActorCriticPolicy ActorCriticCnnPolicy "
    "MultiInputActorCriticPolicy make_atari_env AtariWrapper MaxAndSkipEnv NoopResetEnv FireResetEnv "
    "EpisodicLifeEnv WarpFrame ClipRewardEnv StickyActionEnv "
    # common/distributions.py: the stochastic policies' distributions (SAC, PPO, A2C, gSDE)
    "BernoulliDistribution CategoricalDistribution DiagGaussianDistribution MultiCategoricalDistribution "
    "SquashedDiagGaussianDistribution StateDependentNoiseDistribution TanhBijector kl_divergence"
).split()

IMPORT_LINE = re.compile(r"^(\s*(?:from|import)\s+)stable_baselines3((?:\.common)?)(\.\w+)*", re.M)

CONFTEST = r"""
# Written by rlkit_td3's benchmarks/sb3_suite.py (not part of SB3's tests).
import builtins, inspect, io, json, os, signal, sys, tokenize, types

import pytest
import torch

torch.set_num_threads(1)
MODE = os.environ["SUITE_MODE"]  # collect | sb3 | ours
OUT_OF_SCOPE = set(os.environ["SUITE_OUT_OF_SCOPE"].split())
TEST_TIMEOUT = float(os.environ.get("SUITE_TEST_TIMEOUT", "0"))


def _log(path_var, record):
    with open(os.environ[path_var], "a") as f:
        f.write(json.dumps(record) + "\n")


# --- ours: names rlkit_td3 lacks become stand-ins (installed by the harness's sitecustomize, in worker
# processes too); only this, the main process, records them
import sitecustomize

sitecustomize.LOG_PATH = os.environ.get("SUITE_MISSING")



# --- selection ------------------------------------------------------------------------------------------------
def _names_in(value, depth=0):
    if depth > 3:
        return set()
    if isinstance(value, (list, tuple, set)):
        return set().union(*[_names_in(v, depth + 1) for v in value]) if value else set()
    if isinstance(value, dict):
        return _names_in(list(value.keys()) + list(value.values()), depth + 1)
    if isinstance(value, str):  # an algorithm named by a string, e.g. parametrize("model_name", ["a2c", "td3"])
        return {value.upper()}
    name = getattr(value, "__name__", None)
    if isinstance(name, str):
        return {name}
    return {type(value).__name__}  # an instance, e.g. parametrize("dist", [CategoricalDistribution(2)])


def _body_names(function):
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return set()
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {tok.string for tok in tokens if tok.type == tokenize.NAME}


def _fixture_names(item):
    # names in the bodies of the suite's own fixtures that a test uses (e.g. a fixture that builds an A2C model)
    names = set()
    for defs in getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}).values():
        for fixturedef in defs:
            code = getattr(getattr(fixturedef, "func", None), "__code__", None)
            if code is not None and os.path.dirname(os.path.abspath(code.co_filename)) == os.environ["SUITE_TESTS_DIR"]:
                names |= _body_names(fixturedef.func)
    return names


def pytest_collection_modifyitems(config, items):
    sitecustomize.COLLECTING = False
    if MODE == "collect":
        for item in items:
            params = _names_in(list(getattr(getattr(item, "callspec", None), "params", {}).values()))
            hits = params & OUT_OF_SCOPE
            if not hits and not params & {"TD3", "DDPG"}:  # run with TD3/DDPG, other algorithms' names are branches
                hits = (_body_names(getattr(item, "function", None)) | _fixture_names(item)) & OUT_OF_SCOPE
            _log("SUITE_SELECTION", {"nodeid": item.nodeid, "selected": not hits, "why": sorted(hits)})
        items[:] = []
        return
    with open(os.environ["SUITE_SELECTED"]) as f:
        wanted = set(json.load(f))
    keep = [item for item in items if item.nodeid in wanted]
    config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in wanted])
    items[:] = keep


def pytest_collectreport(report):
    if report.failed and MODE != "collect":
        _log("SUITE_RESULTS", {"nodeid": report.nodeid, "when": "collect", "outcome": "failed",
                               "message": str(report.longrepr)[-2000:]})


# --- outcomes, and a per-test time limit ----------------------------------------------------------------------
def _timeout(signum, frame):
    raise TimeoutError(f"test exceeded the harness's per-test limit of {TEST_TIMEOUT:.0f} s")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if TEST_TIMEOUT > 0:
        signal.signal(signal.SIGALRM, _timeout)
        signal.setitimer(signal.ITIMER_REAL, TEST_TIMEOUT)
    try:
        return (yield)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def pytest_runtest_logreport(report):
    outcome = "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome
    message = "" if report.passed else str(report.longrepr)[-2000:]
    _log("SUITE_RESULTS", {"nodeid": report.nodeid, "when": report.when, "outcome": outcome, "message": message})
"""


SITECUSTOMIZE = r"""
# Written by rlkit_td3's benchmarks/sb3_suite.py: in the rewritten suite ("ours"), a name rlkit_td3 lacks, imported
# by a test module, becomes a stand-in that raises ImportError when called or read, so that it fails only the tests
# using it. Installed at interpreter start, so that SubprocVecEnv workers unpickling a test's env class get it too.
import builtins, json, os, types

TESTS_DIR = os.environ.get("SUITE_TESTS_DIR", "")
LOG_PATH = None  # set by the conftest in the main pytest process
COLLECTING = True


class _MissingMeta(type):
    def __getattr__(cls, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise ImportError(f"cannot import name {cls.__name__!r} from {cls._suite_module!r} (missing in rlkit_td3)")

    def __call__(cls, *args, **kwargs):
        raise ImportError(f"cannot import name {cls.__name__!r} from {cls._suite_module!r} (missing in rlkit_td3)")


def _stand_in(module, name):
    if LOG_PATH:
        with open(LOG_PATH, "a") as f:
            f.write(json.dumps({"module": module, "name": name, "module_level": COLLECTING}) + "\n")
    return _MissingMeta(name, (), {"_suite_module": module})


_real_import = builtins.__import__


def _lenient_import(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__file__") or ""
    if not (name.startswith("rlkit_td3") and fromlist and os.path.dirname(os.path.abspath(importer)) == TESTS_DIR):
        return _real_import(name, globals, locals, fromlist, level)
    try:
        module = _real_import(name, globals, locals, fromlist, level)
    except ImportError:
        module = None
    proxy = types.ModuleType(name)
    if module is not None:
        proxy.__dict__.update(module.__dict__)
    for attr in fromlist:
        if attr != "*" and not hasattr(proxy, attr):
            setattr(proxy, attr, _stand_in(name, attr))
    return proxy


if os.environ.get("SUITE_MODE") == "ours":
    builtins.__import__ = _lenient_import
"""


def fetch_sdist() -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    sdist = CACHE / f"stable_baselines3-{SB3_VERSION}.tar.gz"
    if not sdist.exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             f"stable-baselines3=={SB3_VERSION}", "-d", str(CACHE)],
            check=True,
        )  # fmt: skip
    return sdist


def rewrite_imports(source: str) -> str:
    """Our rule, in import statements only: ``stable_baselines3.common.X -> rlkit_td3.X``,
    ``stable_baselines3.X -> rlkit_td3.X``."""

    def sub(match: re.Match) -> str:
        head = match.group(0)[len(match.group(1)) :]
        return match.group(1) + re.sub(r"^stable_baselines3(\.common)?", "rlkit_td3", head)

    return IMPORT_LINE.sub(sub, source)


def unpack(sdist: Path, dest: Path) -> dict[str, Path]:
    """``tests/`` as published under ``dest/sb3/tests`` and with rewritten imports under ``dest/ours/tests``."""
    prefix = f"stable_baselines3-{SB3_VERSION}/tests/"
    roots = {"sb3": dest / "sb3", "ours": dest / "ours"}
    with tarfile.open(sdist) as tar:
        config = tar.extractfile(f"stable_baselines3-{SB3_VERSION}/pyproject.toml").read().decode()
        pytest_config = config[config.index("[tool.pytest.ini_options]") :]
        pytest_config = pytest_config[: pytest_config.index("\n[", 1)]  # SB3's pytest settings (filterwarnings)
        for root in roots.values():
            root.mkdir(parents=True)
            (root / "pyproject.toml").write_text(pytest_config + "\n")
        for member in tar.getmembers():
            if not (member.isfile() and member.name.startswith(prefix)):
                continue
            rel = member.name[len(prefix) :]
            data = tar.extractfile(member).read()
            for lib, root in roots.items():
                path = root / "tests" / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                if lib == "ours" and rel.endswith(".py"):
                    path.write_text(rewrite_imports(data.decode()))
                else:
                    path.write_bytes(data)
    for root in roots.values():
        (root / "tests" / "conftest.py").write_text(CONFTEST)
        (root / "stubs").mkdir()
        (root / "stubs" / "sitecustomize.py").write_text(SITECUSTOMIZE)
        if importlib.util.find_spec("ale_py") is None:  # test_utils.py imports it at module level, for Atari only
            (root / "stubs" / "ale_py.py").write_text(
                '"""Stand-in for the optional ale_py (Atari tests are out of scope)."""\n'
            )
    return roots


def pytest_env(mode: str, root: Path, **files: Path) -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", SUITE_MODE=mode)
    env["SUITE_OUT_OF_SCOPE"] = " ".join(OUT_OF_SCOPE)
    env["SUITE_TESTS_DIR"] = str(root / "tests")
    paths = [str(ROOT), str(root / "stubs"), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(paths).rstrip(os.pathsep)
    env["MPLBACKEND"] = "Agg"
    env.update({f"SUITE_{key.upper()}": str(value) for key, value in files.items()})
    return env


def run_pytest(args: list[str], env: dict[str, str], cwd: Path, timeout: float) -> tuple[int, str]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *args]
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, text=True)  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return -9, out
    except BaseException:  # interrupted (Ctrl-C, SIGTERM): take the pytest run and its workers down too
        os.killpg(proc.pid, signal.SIGKILL)
        raise


def select(root: Path, files: list[str], work: Path) -> dict[str, list[dict]]:
    """Collect SB3's unmodified tests and decide the selection (same for both libraries)."""
    log = work / "selection.jsonl"
    log.unlink(missing_ok=True)
    code, out = run_pytest(["--collect-only", *files], pytest_env("collect", root, selection=log), root, 900)
    if not log.exists():
        raise SystemExit(f"collection failed (exit {code}):\n{out[-3000:]}")
    per_file: dict[str, list[dict]] = {}
    for line in log.read_text().splitlines():
        record = json.loads(line)
        per_file.setdefault(record["nodeid"].split("::")[0], []).append(record)
    return per_file


def outcomes(log: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Per test id: ``passed`` when every phase passed (or it xfailed as expected), else the failing phase's
    outcome; and the first failure message."""
    result: dict[str, str] = {}
    messages: dict[str, str] = {}
    if not log.exists():
        return result, messages
    for line in log.read_text().splitlines():
        r = json.loads(line)
        ok = r["outcome"] in ("passed", "xfailed")
        if not ok and result.get(r["nodeid"], "passed") == "passed":
            result[r["nodeid"]] = r["outcome"] if r["when"] != "teardown" else "error"
            messages[r["nodeid"]] = r["message"]
        result.setdefault(r["nodeid"], "passed")
    return result, messages


def run_file(lib: str, root: Path, file: str, selected: list[str], work: Path, args) -> dict:
    tag = f"{lib}_{Path(file).stem}"
    sel, res, missing = work / f"{tag}.sel.json", work / f"{tag}.res.jsonl", work / f"{tag}.missing.jsonl"
    for path in (res, missing):
        path.unlink(missing_ok=True)
    sel.write_text(json.dumps(selected))
    env = pytest_env(lib, root, selected=sel, results=res, missing=missing)
    env["SUITE_TEST_TIMEOUT"] = str(args.test_timeout)
    start = time.perf_counter()
    code, out = run_pytest([file], env, root, args.file_timeout)
    seconds = time.perf_counter() - start
    result, messages = outcomes(res)
    collect_error = any(nodeid == file or nodeid.startswith(file) and "::" not in nodeid for nodeid in messages)
    passed = [n for n in selected if result.get(n) == "passed"]
    gaps = set()
    if missing.exists():
        for line in missing.read_text().splitlines():
            m = json.loads(line)
            if m["module_level"] and m["name"] not in OUT_OF_SCOPE:
                gaps.add(f"{m['module']}.{m['name']}")
    failed = {n: (result.get(n, "not run"), messages.get(n, "")) for n in selected if result.get(n) != "passed"}
    if code == -9:
        failed = {n: (o, m or "file timed out") for n, (o, m) in failed.items()}
    return {"passed": len(passed), "seconds": seconds, "timed_out": code == -9, "collect_error": collect_error,
            "module_gaps": sorted(gaps), "failed": failed, "tail": out[-1500:]}  # fmt: skip


def commit_id() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "rlkit_td3"], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", nargs="*", help="test files, e.g. tests/test_logger.py (default: all)")
    parser.add_argument("--only", choices=["ours", "sb3"], help="run one library only")
    parser.add_argument("--jobs", type=int, default=1, help="files run at once")
    parser.add_argument("--test-timeout", type=float, default=180.0, help="seconds per test")
    parser.add_argument("--file-timeout", type=float, default=1800.0, help="seconds per file")
    parser.add_argument("--out", help="result file (default: benchmarks/results/sb3_suite_<commit>.txt)")
    parser.add_argument("--show-failures", action="store_true", help="print our failures' messages")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))  # SystemExit reaches run_pytest's cleanup

    sdist = fetch_sdist()
    work = Path(tempfile.mkdtemp(prefix="sb3_suite_"))
    roots = unpack(sdist, work)
    files = args.files or sorted(f"tests/{p.name}" for p in (roots["sb3"] / "tests").glob("test_*.py"))
    per_file = select(roots["sb3"], files, work)

    lines = [f"Selection (decided on SB3 {SB3_VERSION}'s unmodified tests): selected / collected per file"]
    for file in files:
        records = per_file.get(file, [])
        n_sel = sum(r["selected"] for r in records)
        why = sorted({w for r in records for w in r["why"]})
        lines.append(f"  {file:34s} {n_sel:4d} / {len(records):4d}  {'out: ' + ', '.join(why) if why else ''}")
    print("\n".join(lines), flush=True)

    libs = [args.only] if args.only else ["sb3", "ours"]
    jobs = [(lib, file) for file in files for lib in libs if any(r["selected"] for r in per_file.get(file, []))]

    def one(job):
        lib, file = job
        selected = [r["nodeid"] for r in per_file[file] if r["selected"]]
        r = run_file(lib, roots[lib], file, selected, work, args)
        print(f"  {lib:4s} {file:34s} {r['passed']:4d} / {len(selected):4d} in {r['seconds']:6.1f} s"
              + (" TIMED OUT" if r["timed_out"] else ""), flush=True)  # fmt: skip
        return job, r

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = dict(pool.map(one, jobs))

    header = f"{'file':34s} {'selected':>8s} {'SB3':>6s} {'ours':>6s} {'strict':>6s}  module-level names we lack"
    table = [header, "-" * len(header)]
    totals = {"selected": 0, "sb3": 0, "ours": 0, "strict": 0}
    failures = []
    for file in files:
        n_sel = sum(r["selected"] for r in per_file.get(file, []))
        if not n_sel:
            continue
        sb3 = results.get(("sb3", file))
        ours = results.get(("ours", file))
        strict = None
        if ours is not None:
            strict = 0 if ours["module_gaps"] or ours["collect_error"] else ours["passed"]
            failures += [(n, o, m) for n, (o, m) in ours["failed"].items()]
        cells = [n_sel, sb3 and sb3["passed"], ours and ours["passed"], strict]
        totals["selected"] += n_sel
        for key, value in zip(["sb3", "ours", "strict"], cells[1:]):
            totals[key] += value or 0
        show = ["-" if c is None else str(c) for c in cells]
        gaps = ", ".join(ours["module_gaps"]) if ours else ""
        table.append(f"{file:34s} {show[0]:>8s} {show[1]:>6s} {show[2]:>6s} {show[3]:>6s}  {gaps}")
    table.append("-" * len(header))
    table.append(f"{'total':34s} {totals['selected']:8d} {totals['sb3']:6d} {totals['ours']:6d} {totals['strict']:6d}")
    if "sb3" in libs and "ours" in libs and totals["sb3"]:
        table.append(
            f"ours / SB3 passes: {totals['ours'] / totals['sb3']:.1%} (strict: {totals['strict'] / totals['sb3']:.1%})"
        )
    sb3_failed = [(f, n, o) for (lib, f), r in results.items() if lib == "sb3" for n, (o, _) in r["failed"].items()]
    notes = [
        f"SB3 {SB3_VERSION} tests, rlkit_td3 at {commit_id()}, python {sys.version.split()[0]}, one torch thread, "
        f"per-test limit {args.test_timeout:.0f} s; strict = a file whose module-level imports lack a name "
        "counts as all-failed.",
    ]
    text = "\n".join(notes + [""] + lines + [""] + table)
    text += "\n\nFailing for SB3 itself:\n" + "\n".join(f"  {n} ({o})" for _, n, o in sb3_failed)
    text += "\n\nFailing for rlkit_td3:\n" + "\n".join(f"  {n} ({o}): {_last_line(m)}" for n, o, m in failures)
    print("\n" + "\n".join(table), flush=True)
    if args.show_failures:
        for n, o, m in failures:
            print(f"\n=== {n} ({o})\n{m[-1200:]}")
    out = Path(args.out) if args.out else RESULTS / f"sb3_suite_{commit_id()}.txt"
    if not args.files and not args.only or args.out:
        out.write_text(text + "\n")
        print(f"written: {out}")


def _last_line(message: str) -> str:
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else "")[:200]


if __name__ == "__main__":
    main()

"""rlkit-td3 compare: the local and Ray backends, identical results, resume after SIGKILL, outputs, bad input."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from rlkit_td3.cli import main
from rlkit_td3.experiments import BackendError, ConfigError, compare

# The Ray tests must not run beside each other: the cluster fixture's teardown, `ray stop --force`, stops every Ray
# process on the machine, a local instance another test started included. `make test` runs pytest-xdist with
# --dist loadfile, which keeps this file on one worker.

SMALL = ["--hp", "net_arch=[32]", "learning_starts=200", "batch_size=32"]
SWEEP = ["compare", "--algos", "td3", "ddpg", "--envs", "Pendulum-v1", "--seeds", "0", "1", "--timesteps", "1000"]
SWEEP += ["--eval-freq", "500", "--eval-episodes", "2", *SMALL]
# The test clusters: on the loopback address (by default Ray uses the machine's network address), with token
# authentication and a token of the test's own (so no ~/.ray/auth_token is read or written).
RAY_ENV = {
    **os.environ,
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_AUTH_MODE": "token",
    "RAY_AUTH_TOKEN": secrets.token_hex(32),
    "PYTHONUNBUFFERED": "1",
}


def _final_returns(out) -> dict[tuple[str, int], float]:
    table = pd.read_csv(out / "results.csv")
    last = table[table["timestep"] == table["timestep"].max()]
    return {(row.algo, row.seed): row.mean_return for row in last.itertuples()}


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "local"
    assert main([*SWEEP, "--backend", "local", "--workers", "2", "--out", str(out)]) == 0
    return out


def test_local_sweep_writes_table_summary_and_plot(local_sweep):
    table = pd.read_csv(local_sweep / "results.csv")
    assert list(table.columns) == ["algo", "env", "seed", "timestep", "mean_return", "std_return"]
    assert len(table) == 2 * 2 * 2  # algos × seeds × evaluations
    assert not table.duplicated(["algo", "env", "seed", "timestep"]).any()
    assert set(table["timestep"]) == {500, 1000} and set(table["algo"]) == {"td3", "ddpg"}
    summary = (local_sweep / "summary.md").read_text()
    assert "## Pendulum-v1" in summary and "rlkit-td3 compare" in summary and "P(" in summary
    for algo in ("td3", "ddpg"):
        runs = table[table["algo"] == algo].groupby("seed")["mean_return"].mean()  # a run's score: its 2 evaluations
        cells = f"| {algo} | 2 | {runs.mean():.1f} | range {runs.min():.1f} to {runs.max():.1f} |"  # 2 runs: the mean
        assert cells in summary, summary
    png = (local_sweep / "learning_curve_Pendulum-v1.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    run = local_sweep / "runs" / "td3_Pendulum-v1_seed1"
    assert {"model.zip", "config.json", "evaluations.npz", "result.json", "train.log"} <= {
        p.name for p in run.iterdir()
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_cluster():
    """A one-node Ray cluster on 127.0.0.1, started (and stopped) with the ray command, as a user would."""
    pytest.importorskip("ray")
    ray_cmd = os.path.join(os.path.dirname(sys.executable), "ray")
    port = _free_port()
    start = [ray_cmd, "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false"]
    start += ["--disable-usage-stats", "--object-store-memory=100000000"]
    subprocess.run(start, env=RAY_ENV, check=True, capture_output=True, timeout=120)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([ray_cmd, "stop", "--force"], env=RAY_ENV, capture_output=True, timeout=120)


def test_ray_backend_gives_the_same_runs_as_local(local_sweep, ray_cluster, tmp_path):
    out = tmp_path / "ray"
    argv = [sys.executable, "-m", "rlkit_td3", *SWEEP, "--backend", "ray", "--address", ray_cluster, "--out", str(out)]
    proc = subprocess.run(argv, env=RAY_ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "to run on ray" in proc.stdout and (out / "summary.md").is_file()
    assert (out / "learning_curve_Pendulum-v1.png").is_file()
    ray_returns, local_returns = _final_returns(out), _final_returns(local_sweep)
    assert len(ray_returns) == 4 and ray_returns == local_returns  # bit-for-bit: same floats
    ray_table = pd.read_csv(out / "results.csv").sort_values(["algo", "seed", "timestep"], ignore_index=True)
    local_table = pd.read_csv(local_sweep / "results.csv").sort_values(["algo", "seed", "timestep"], ignore_index=True)
    pd.testing.assert_frame_equal(ray_table, local_table, check_exact=True)


def test_killed_sweep_resumes_without_rerunning_finished_runs(tmp_path):
    out = tmp_path / "sweep"
    argv = [*SWEEP[:9], "--timesteps", "1500", "--eval-freq", "500", "--eval-episodes", "1", *SMALL]
    argv += ["--checkpoint-freq", "500", "--workers", "1", "--out", str(out)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlkit_td3", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        start_new_session=True,  # its own process group: the kill takes the pool's workers too
    )
    for line in proc.stdout:
        if line.startswith("[1/4]"):
            break
    else:
        pytest.fail("the sweep ended before its first run finished")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = sorted(p.parent.name for p in out.glob("runs/*/result.json"))
    assert 1 <= len(finished) < 4 and not (out / "results.csv").exists()
    stamps = {name: (out / "runs" / name / "model.zip").stat().st_mtime_ns for name in finished}

    assert main(argv) == 0
    for name, stamp in stamps.items():  # not rerun
        assert (out / "runs" / name / "model.zip").stat().st_mtime_ns == stamp
    table = pd.read_csv(out / "results.csv")
    assert len(table) == 2 * 2 * 3  # algos × seeds × evaluations at 500, 1000, 1500
    assert not table.duplicated(["algo", "env", "seed", "timestep"]).any()
    for run in out.glob("runs/*"):
        with np.load(run / "evaluations.npz") as evaluations:
            assert evaluations["timesteps"].tolist() == [500, 1000, 1500]
        assert json.loads((run / "result.json").read_text())["num_timesteps"] == 1500


def test_unreachable_ray_address_fails_fast_with_a_clear_message(tmp_path, capsys):
    port = _free_port()  # nothing listens there
    started = time.monotonic()
    assert main([*SWEEP, "--backend", "ray", "--address", f"127.0.0.1:{port}", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert time.monotonic() - started < 60
    assert err.startswith("rlkit-td3: error: cannot reach a Ray cluster at") and len(err.splitlines()) == 1


def test_silent_address_times_out_within_the_limit(tmp_path):
    """Something listens but never answers as Ray would: the connection attempt is abandoned after the timeout."""
    pytest.importorskip("ray")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        address = f"127.0.0.1:{server.getsockname()[1]}"
        argv = [sys.executable, "-m", "rlkit_td3", *SWEEP, "--backend", "ray", "--address", address]
        argv += ["--connect-timeout", "5", "--out", str(tmp_path / "x")]
        started = time.monotonic()
        proc = subprocess.run(argv, env=RAY_ENV, capture_output=True, text=True, timeout=120)
    assert time.monotonic() - started < 60
    assert proc.returncode == 2
    assert f"rlkit-td3: error: no Ray cluster answered at '{address}' within 5 s" in proc.stderr


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"algos": ["td3", "dpg"]}, "unknown algo 'dpg'; did you mean 'ddpg'"),
        ({"envs": ["HalfCheetahBullet-v0"]}, "unknown env id 'HalfCheetahBullet-v0'; did you mean"),
        ({"preset": "zooo"}, "unknown preset 'zooo'"),
        ({"overrides": {"tua": 0.1}}, "unknown hyperparameter 'tua'"),
        ({"backend": "rayy"}, "unknown backend 'rayy'; did you mean 'ray'"),
        ({"address": "auto"}, "address='auto' is for backend='ray'"),
        ({"seeds": []}, "seeds must be a non-empty list"),
        ({"seeds": [0, 0]}, "seeds has duplicates"),
        ({"workers": 0}, "workers must be a positive integer, got 0"),
        ({"timesteps": -1}, "timesteps must be a positive integer, got -1"),
    ],
)
def test_bad_input_is_refused_before_any_run(kwargs, message, tmp_path):
    with pytest.raises(ConfigError, match=message):
        compare(**{"out": tmp_path / "x", **kwargs})
    assert not (tmp_path / "x" / "runs").exists()


def test_cli_bad_input_one_line_exit_2(tmp_path, capsys):
    assert main(["compare", "--algos", "td3", "--envs", "Pendulm-v1", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rlkit-td3: error: unknown env id 'Pendulm-v1'; did you mean 'Pendulum-v1'")
    assert len(err.splitlines()) == 1


def test_sweep_directory_refuses_other_settings(local_sweep):
    with pytest.raises(ConfigError, match="holds a sweep with timesteps=1000, not 2000"):
        compare(["td3"], ["Pendulum-v1"], [0], timesteps=2000, out=local_sweep)


def test_compare_api_skips_complete_runs_and_returns_the_table(local_sweep, tmp_path, capsys):
    """A sub-grid of a finished sweep: nothing reruns, and the table holds just the requested runs."""
    shutil.copytree(local_sweep, tmp_path / "copy")
    small = {"net_arch": [32], "learning_starts": 200, "batch_size": 32}
    table = compare(
        ["td3"], ["Pendulum-v1"], [1], 1000, overrides=small, eval_freq=500, eval_episodes=2, out=tmp_path / "copy"
    )
    assert "1 runs: 1 complete (skipped), 0 to run" in capsys.readouterr().out
    assert table[["algo", "seed", "timestep"]].values.tolist() == [["td3", 1, 500], ["td3", 1, 1000]]


def test_plot_from_sweep_and_run_directories(local_sweep, tmp_path, capsys):
    assert main(["plot", str(local_sweep), "--out", str(tmp_path / "a")]) == 0
    assert (tmp_path / "a" / "learning_curve_Pendulum-v1.png").is_file()
    out = capsys.readouterr().out
    assert "| td3 | 2 | -" in out and "range" in out, out  # two runs a group: each score and the range
    runs = [str(p) for p in sorted((local_sweep / "runs").glob("td3_*"))]
    assert main(["plot", *runs, "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "b" / "learning_curve_Pendulum-v1.png").is_file()
    assert main(["plot", str(tmp_path / "missing")]) == 2
    assert main(["plot", str(tmp_path / "a")]) == 2  # a folder of PNGs is neither a sweep nor a run
    assert "neither a sweep directory" in capsys.readouterr().err


def test_backend_error_without_ray_cluster_address_format():
    from rlkit_td3.experiments.backends import _check_reachable

    with pytest.raises(BackendError, match="--address must be 'auto' or HOST:PORT"):
        _check_reachable("nowhere")


def test_ray_without_address_starts_a_local_instance(tmp_path):
    pytest.importorskip("ray")
    out = tmp_path / "ray_local"
    argv = [sys.executable, "-m", "rlkit_td3", "compare", "--algos", "td3", "--envs", "Pendulum-v1", "--seeds", "0"]
    argv += ["--timesteps", "400", "--eval-freq", "200", "--eval-episodes", "1", "--hp", "net_arch=[16]"]
    argv += ["learning_starts=100", "batch_size=16", "--backend", "ray", "--out", str(out)]
    proc = subprocess.run(argv, env=RAY_ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Ray at a local instance" in proc.stdout and "[1/1] td3 Pendulum-v1 seed 0: final return" in proc.stdout
    assert pd.read_csv(out / "results.csv")["timestep"].tolist() == [200, 400]

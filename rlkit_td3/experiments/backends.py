"""Where a comparison's runs execute: ``local`` (a process pool on this machine) or ``ray`` (Ray tasks).

Both run the same job, `run_job()`, in a fresh process per run with the same number of torch threads, so a
run's result does not depend on the backend. Each backend yields ``(index, result or exception)`` pairs as runs
finish, in the order they finish.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import socket
import sys
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import IO, Any

BACKENDS = ("local", "ray")
Job = tuple[dict[str, Any], str]
"""A run: the `RunSpec` as a dict, and its run directory."""


class BackendError(RuntimeError):
    """A backend cannot start: Ray is missing, or its cluster cannot be reached. The message says which."""


@contextlib.contextmanager
def _redirect_output(log: IO[str]) -> Iterator[None]:
    """Send stdout and stderr, Python's and the C libraries' (pybullet prints from C), to ``log``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        log.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)


def run_job(spec: dict[str, Any], run_dir: str, threads: int) -> dict[str, Any]:
    """Train one run (resuming from its newest checkpoint, if any) with ``threads`` torch threads.

    The run's own output goes to ``<run_dir>/train.log``. Returns `train_run()`'s result plus the host name.
    """
    import torch

    from rlkit_td3.experiments.runner import RunSpec, train_run

    torch.set_num_threads(threads)
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    with open(Path(run_dir) / "train.log", "a") as log, _redirect_output(log):
        result = train_run(RunSpec(**spec), run_dir, resume=True)
    return {**result, "host": socket.gethostname()}


def run_local(jobs: Sequence[Job], workers: int, threads: int) -> Iterator[tuple[int, Any]]:
    """Run ``jobs`` on a pool of ``workers`` processes (spawned, one fresh process per run)."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, max_tasks_per_child=1) as pool:
        pending = {pool.submit(run_job, spec, run_dir, threads): i for i, (spec, run_dir) in enumerate(jobs)}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                index = pending.pop(future)
                error = future.exception()
                yield index, error if error is not None else future.result()


def _check_reachable(address: str) -> None:
    """Fail fast, with a clear message, when nothing listens at a ``host:port`` Ray address."""
    target = address.removeprefix("ray://")
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise BackendError(f"--address must be 'auto' or HOST:PORT (optionally ray://HOST:PORT), got {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=10).close()
    except OSError as exc:
        raise BackendError(
            f"cannot reach a Ray cluster at {address!r} ({exc.strerror or exc}); start one with "
            "'ray start --head' or check --address"
        ) from None


def _connect_ray(address: str | None, timeout: float) -> bool:
    """Connect to (or, without an address, start) Ray; returns whether this call made the connection."""
    try:
        import ray
    except ImportError:
        raise BackendError(
            "--backend ray needs Ray: install the 'ray' extra (pip install -e '.[ray]' in the rlkit_td3 clone)"
        ) from None
    if ray.is_initialized():
        return False
    quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR}
    if address is None:  # a single-node instance for this comparison, reachable from this machine only
        ray.init(address="local", include_dashboard=False, _node_ip_address="127.0.0.1", **quiet)
        return True
    if address != "auto":
        _check_reachable(address)
    options = {"address": address, **quiet}
    outcome: list[BaseException | None] = []

    def connect() -> None:
        try:
            ray.init(**options)
            outcome.append(None)
        except Exception as exc:  # reported below, in the caller's thread
            outcome.append(exc)

    # ray.init retries for minutes when something that is not a Ray cluster answers at the address.
    thread = threading.Thread(target=connect, name="ray-init", daemon=True)
    thread.start()
    thread.join(timeout)
    if not outcome:
        raise BackendError(f"no Ray cluster answered at {address!r} within {timeout:g} s; check --address")
    if outcome[0] is not None:
        first = (str(outcome[0]).strip() or type(outcome[0]).__name__).splitlines()[0]
        hint = (
            ""
            if os.environ.get("RAY_AUTH_MODE")
            else " (a cluster with token authentication needs RAY_AUTH_MODE=token)"
        )
        raise BackendError(f"cannot connect to a Ray cluster at {address!r}: {first}{hint}")
    return True


def run_ray(
    jobs: Sequence[Job], threads: int, address: str | None, connect_timeout: float = 45.0
) -> Iterator[tuple[int, Any]]:
    """Run each job as a Ray task with ``num_cpus=threads`` on the cluster at ``address``.

    ``address`` is ``"auto"`` (a cluster started on this machine with ``ray start``), ``HOST:PORT`` or
    ``ray://HOST:PORT``, or ``None`` to start a local Ray instance for this comparison. Joining fails after
    ``connect_timeout`` seconds (at once when nothing listens at ``HOST:PORT``).

    Raises:
        BackendError: Ray is not installed, or the cluster cannot be reached.
    """
    started_here = _connect_ray(address, connect_timeout)
    import ray

    try:
        task = ray.remote(num_cpus=threads, max_calls=1)(run_job)
        pending = {task.remote(spec, run_dir, threads): i for i, (spec, run_dir) in enumerate(jobs)}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            index = pending.pop(done[0])
            try:
                yield index, ray.get(done[0])
            except ray.exceptions.RayTaskError as exc:
                yield index, exc.as_instanceof_cause()
    finally:
        if started_here:
            ray.shutdown()

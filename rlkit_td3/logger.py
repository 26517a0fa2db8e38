"""A key-value logger: ``record`` values, ``dump`` them as one row to every writer.

Writers (format names as in Stable-Baselines3): ``"stdout"`` (an aligned table), ``"log"`` (the same
table in ``log.txt``), ``"csv"`` (``progress.csv``), ``"json"`` (``progress.json``, one JSON object per
line) and ``"tensorboard"`` (event files through ``torch.utils.tensorboard``; needs the ``tensorboard``
extra). File writers need a folder: nothing is written to disk, and no directory is created, unless
one is given.

Standard keys written by the algorithms: ``rollout/ep_rew_mean``, ``rollout/ep_len_mean``,
``time/episodes``, ``time/fps``, ``time/time_elapsed``, ``time/total_timesteps``, ``train/actor_loss``,
``train/critic_loss``, ``train/n_updates``, ``train/learning_rate``; ``EvalCallback`` adds
``eval/mean_reward`` and ``eval/mean_ep_length``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import sys
from collections import defaultdict
from collections.abc import Sequence
from numbers import Number
from pathlib import Path
from typing import Any, TextIO

from rlkit_td3.serialization import atomic_write

FORMATS = ("stdout", "log", "csv", "json", "tensorboard")
"""The writer names :func:`configure` accepts."""


def _to_python(value: Any) -> Any:
    """numpy / torch scalars → Python numbers, so every writer sees plain values."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        return value.item()
    return value


class KVWriter:
    """A destination for logged rows. Subclasses implement :meth:`write` (and :meth:`close` if they hold files)."""

    name = ""
    """The format name, used by ``Logger.record(..., exclude=...)``."""

    def write(self, values: dict[str, Any], step: int) -> None:
        """Write one row of ``key -> value`` at ``step`` (the total timesteps)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release files; the default has none."""


class HumanOutputFormat(KVWriter):
    """Prints each dump as an aligned two-column table, keys grouped by their ``prefix/`` like SB3's stdout log.

    Args:
        stream: where to write; ``None`` means the current ``sys.stdout`` at each write.
        path: write to this file instead (the ``"log"`` format, ``log.txt``).
    """

    name = "stdout"

    def __init__(self, stream: TextIO | None = None, path: str | os.PathLike[str] | None = None) -> None:
        self.stream = stream
        self._file: TextIO | None = None
        if path is not None:
            self.name = "log"
            self._file = open(path, "a")  # noqa: SIM115 - closed in close()

    def write(self, values: dict[str, Any], step: int) -> None:
        stream = self._file or self.stream or sys.stdout
        rows: list[tuple[str, str]] = []
        last_group = None
        for key in sorted(values):
            val = values[key]
            if isinstance(val, float):
                text = f"{val:<8.3g}"
            elif isinstance(val, (str, Number)):
                text = str(val)
            else:
                continue  # images, histograms...: not for a text table
            group, _, leaf = key.rpartition("/")
            if group and group != last_group:
                rows.append((f"{group}/", ""))
                last_group = group
            rows.append((f"    {leaf}" if group else key, text[:40]))
        if not rows:
            return
        width_k = max(len(k) for k, _ in rows)
        width_v = max(len(v) for _, v in rows)
        line = "-" * (width_k + width_v + 7)
        lines = [line, *(f"| {k:<{width_k}} | {v:<{width_v}} |" for k, v in rows), line]
        stream.write("\n".join(lines) + "\n")
        stream.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class CSVOutputFormat(KVWriter):
    """Appends rows to ``progress.csv``. A new key adds a column: the file is then rewritten atomically."""

    name = "csv"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.keys: list[str] = []
        self.rows: list[dict[str, Any]] = []

    def write(self, values: dict[str, Any], step: int) -> None:
        values = {k: v for k, v in values.items() if isinstance(v, (str, Number))}
        new_keys = sorted(k for k in values if k not in self.keys)
        self.rows.append(values)
        if new_keys or not self.path.exists():
            self.keys += new_keys
            text = io.StringIO(newline="")
            writer = csv.DictWriter(text, fieldnames=self.keys)
            writer.writeheader()
            writer.writerows(self.rows)
            with atomic_write(self.path) as out:
                out.write(text.getvalue().encode())
        else:
            with open(self.path, "a", newline="") as fh:
                csv.DictWriter(fh, fieldnames=self.keys).writerow(values)


class JSONOutputFormat(KVWriter):
    """Appends one JSON object per dump to ``progress.json`` (JSON lines)."""

    name = "json"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._file: TextIO | None = open(self.path, "a")  # noqa: SIM115 - closed in close()

    def write(self, values: dict[str, Any], step: int) -> None:
        row = {}
        for key, val in values.items():
            if isinstance(val, float) and not math.isfinite(val):
                row[key] = None
            elif isinstance(val, (str, Number)):
                row[key] = val
        assert self._file is not None, "writer used after close()"
        self._file.write(json.dumps(row) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class TensorBoardOutputFormat(KVWriter):
    """Writes numeric values as TensorBoard scalars (``torch.utils.tensorboard.SummaryWriter``).

    Raises:
        ImportError: the ``tensorboard`` package is missing (``pip install rlkit_td3[tensorboard]``).
    """

    name = "tensorboard"

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as exc:  # torch raises this when the tensorboard package is absent
            raise ImportError(
                "TensorBoard logging needs the tensorboard package: pip install 'rlkit_td3[tensorboard]'"
            ) from exc
        self.writer = SummaryWriter(log_dir=str(folder))

    def write(self, values: dict[str, Any], step: int) -> None:
        for key, val in values.items():
            if isinstance(val, Number) and not isinstance(val, bool):
                self.writer.add_scalar(key, val, step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class Logger:
    """Collects key-value pairs and writes them to its writers on :meth:`dump`.

    Args:
        folder: the folder the file writers write into (``None`` when there are none).
        writers: the destinations.
    """

    def __init__(self, folder: str | os.PathLike[str] | None, writers: Sequence[KVWriter]) -> None:
        self.folder = None if folder is None else Path(folder)
        self.writers = list(writers)
        self.name_to_value: dict[str, Any] = {}
        self.name_to_excluded: dict[str, tuple[str, ...]] = {}
        self._sums: dict[str, float] = defaultdict(float)
        self._counts: dict[str, int] = defaultdict(int)

    def record(self, key: str, value: Any, exclude: str | Sequence[str] | None = None) -> None:
        """Set ``key`` for the next dump (the last value wins).

        Args:
            key: the name, ``"group/name"`` by convention.
            value: a number or a string (numpy and torch scalars are converted).
            exclude: format names (e.g. ``"tensorboard"``) that skip this key.
        """
        self.name_to_value[key] = _to_python(value)
        self.name_to_excluded[key] = (exclude,) if isinstance(exclude, str) else tuple(exclude or ())

    def record_mean(self, key: str, value: float, exclude: str | Sequence[str] | None = None) -> None:
        """Add ``value`` to a running mean of ``key``, reported at the next dump."""
        self._sums[key] += float(_to_python(value))
        self._counts[key] += 1
        self.name_to_excluded[key] = (exclude,) if isinstance(exclude, str) else tuple(exclude or ())

    def dump(self, step: int = 0) -> None:
        """Write one row with everything recorded since the last dump, then clear it.

        Args:
            step: the x-axis value of the row (total timesteps).
        """
        values = dict(self.name_to_value)
        values.update({k: self._sums[k] / self._counts[k] for k in self._sums})
        for writer in self.writers:
            row = {k: v for k, v in values.items() if writer.name not in self.name_to_excluded.get(k, ())}
            writer.write(row, step)
        self.name_to_value.clear()
        self.name_to_excluded.clear()
        self._sums.clear()
        self._counts.clear()

    def get_dir(self) -> Path | None:
        """The folder of the file writers, or ``None``."""
        return self.folder

    def close(self) -> None:
        """Close every writer's files."""
        for writer in self.writers:
            writer.close()


def configure(folder: str | os.PathLike[str] | None = None, format_strings: Sequence[str] | None = None) -> Logger:
    """Build a logger, e.g. ``configure("logs/run1", ["stdout", "csv", "tensorboard"])``.

    Args:
        folder: where file writers write; created if missing. Never a temporary directory: without a
            folder only ``"stdout"`` is allowed.
        format_strings: writers among ``"stdout"``, ``"log"``, ``"csv"``, ``"json"``, ``"tensorboard"``;
            ``None`` means ``["stdout"]``, ``[]`` a logger that writes nothing.

    Raises:
        ValueError: an unknown format, or a file format without ``folder``.
        ImportError: ``"tensorboard"`` without the tensorboard package.
    """
    formats = list(format_strings) if format_strings is not None else ["stdout"]
    for fmt in formats:
        if fmt not in FORMATS:
            raise ValueError(f"format_strings has unknown format {fmt!r}; allowed: {', '.join(FORMATS)}")
        if fmt != "stdout" and folder is None:
            raise ValueError(f"format {fmt!r} writes files: pass folder=, got folder=None")
    writers: list[KVWriter] = []
    path = None if folder is None else Path(folder)
    if path is not None and any(fmt != "stdout" for fmt in formats):
        path.mkdir(parents=True, exist_ok=True)
    for fmt in formats:
        if fmt == "stdout":
            writers.append(HumanOutputFormat())
        elif fmt == "log":
            writers.append(HumanOutputFormat(path=path / "log.txt"))
        elif fmt == "csv":
            writers.append(CSVOutputFormat(path / "progress.csv"))
        elif fmt == "json":
            writers.append(JSONOutputFormat(path / "progress.json"))
        else:
            writers.append(TensorBoardOutputFormat(path))
    return Logger(path, writers)


__all__ = [
    "FORMATS",
    "CSVOutputFormat",
    "HumanOutputFormat",
    "JSONOutputFormat",
    "KVWriter",
    "Logger",
    "TensorBoardOutputFormat",
    "configure",
]

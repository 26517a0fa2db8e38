"""A small key-value logger: ``record`` values, ``dump`` them as one row.

Writers: a human-readable table on stdout and a CSV file (``progress.csv``). Files are only
created when a folder is configured, so nothing is written to disk by default.
"""

from __future__ import annotations

import csv
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, TextIO


class KVWriter:
    """A destination for logged rows."""

    def write(self, values: dict[str, Any], step: int) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Release files; the default has none."""


class HumanOutputFormat(KVWriter):
    """Prints each dump as an aligned two-column table (like Stable-Baselines3's stdout log)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream

    def write(self, values: dict[str, Any], step: int) -> None:
        stream = self.stream or sys.stdout
        rows = [(key, f"{val:<8.3g}" if isinstance(val, float) else str(val)) for key, val in sorted(values.items())]
        if not rows:
            return
        width_k = max(len(k) for k, _ in rows)
        width_v = max(len(v) for _, v in rows)
        line = "-" * (width_k + width_v + 7)
        stream.write(line + "\n")
        for key, val in rows:
            stream.write(f"| {key:<{width_k}} | {val:<{width_v}} |\n")
        stream.write(line + "\n")
        stream.flush()


class CSVOutputFormat(KVWriter):
    """Appends rows to a CSV file; new keys add columns (the file is rewritten then)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.keys: list[str] = []
        self.rows: list[dict[str, Any]] = []

    def write(self, values: dict[str, Any], step: int) -> None:
        new_keys = [k for k in values if k not in self.keys]
        self.rows.append(dict(values))
        if new_keys or not self.path.exists():
            self.keys += sorted(new_keys)
            with open(self.path, "w", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=self.keys)
                writer.writeheader()
                writer.writerows(self.rows)
        else:
            with open(self.path, "a", newline="") as fh:
                csv.DictWriter(fh, fieldnames=self.keys).writerow(values)


class Logger:
    """Collects key-value pairs and writes them to its writers on ``dump``."""

    def __init__(self, folder: str | os.PathLike[str] | None, writers: list[KVWriter]) -> None:
        self.folder = None if folder is None else Path(folder)
        self.writers = writers
        self._values: dict[str, Any] = {}
        self._sums: dict[str, float] = defaultdict(float)
        self._counts: dict[str, int] = defaultdict(int)

    def record(self, key: str, value: Any) -> None:
        """Set ``key`` for the next dump (the last value wins)."""
        self._values[key] = value

    def record_mean(self, key: str, value: float) -> None:
        """Add ``value`` to a running mean reported at the next dump."""
        self._sums[key] += float(value)
        self._counts[key] += 1

    def dump(self, step: int = 0) -> None:
        """Write one row with everything recorded since the last dump."""
        values = dict(self._values)
        values.update({k: self._sums[k] / self._counts[k] for k in self._sums})
        for writer in self.writers:
            writer.write(values, step)
        self._values.clear()
        self._sums.clear()
        self._counts.clear()

    def close(self) -> None:
        for writer in self.writers:
            writer.close()


def configure(folder: str | os.PathLike[str] | None = None, format_strings: list[str] | None = None) -> Logger:
    """Build a logger. ``format_strings`` picks writers among ``"stdout"`` and ``"csv"`` (needs ``folder``).

    Raises:
        ValueError: an unknown format, or ``"csv"`` without a folder.
    """
    writers: list[KVWriter] = []
    for fmt in format_strings if format_strings is not None else ["stdout"]:
        if fmt == "stdout":
            writers.append(HumanOutputFormat())
        elif fmt == "csv":
            if folder is None:
                raise ValueError("format 'csv' needs a folder")
            Path(folder).mkdir(parents=True, exist_ok=True)
            writers.append(CSVOutputFormat(Path(folder) / "progress.csv"))
        else:
            raise ValueError(f"unknown log format {fmt!r}; allowed: 'stdout', 'csv'")
    return Logger(folder, writers)

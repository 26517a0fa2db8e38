"""Corrupted model files for the loader's fuzz test (``tests/test_security.py``) and the longer run in
``benchmarks/fuzz_load.py``. Each case is ``(kind, bytes)``; every one must load cleanly or raise
:class:`~rlkit_td3.serialization.ModelFileError`."""

from __future__ import annotations

import io
import json
import struct
import zipfile
from collections.abc import Iterator
from typing import Any

import numpy as np

ODD_VALUES: list[Any] = [None, "x", -1, 0, 2**40, 1e308, float("nan"), [], {}, [1, 2], {"a": 1}, True, "inf"]


def _zip(entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buf.getvalue()


def _entries(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _leaf_paths(node: Any, prefix: tuple = ()) -> Iterator[tuple]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaf_paths(value, (*prefix, key))
    elif isinstance(node, list) and node and len(node) <= 8:
        for i, value in enumerate(node):
            yield from _leaf_paths(value, (*prefix, i))
    else:
        yield prefix


def _set(node: Any, path: tuple, value: Any) -> None:
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


def cases(valid: bytes, n: int, seed: int = 0) -> Iterator[tuple[str, bytes]]:
    """``n`` corrupted variants of the model file ``valid`` (bytes of a zip written by ``save``)."""
    rng = np.random.default_rng(seed)
    entries = _entries(valid)
    meta = json.loads(entries["metadata.json"])
    leaves = list(_leaf_paths(meta))
    kinds = ["truncate", "flip", "missing", "json_type", "json_garbage", "entry_garbage", "declared_size", "extra"]
    for i in range(n):
        kind = kinds[i % len(kinds)]
        if kind == "truncate":
            yield kind, valid[: int(rng.integers(0, len(valid)))]
        elif kind == "flip":
            data = bytearray(valid)
            for pos in rng.integers(0, len(data), size=int(rng.integers(1, 12))):
                data[pos] ^= int(rng.integers(1, 256))
            yield kind, bytes(data)
        elif kind == "missing":
            names = sorted(entries)
            drop = names[int(rng.integers(0, len(names)))]
            yield kind, _zip({k: v for k, v in entries.items() if k != drop})
        elif kind == "json_type":
            mutated = json.loads(entries["metadata.json"])
            path = leaves[int(rng.integers(0, len(leaves)))]
            _set(mutated, path, ODD_VALUES[int(rng.integers(0, len(ODD_VALUES)))])
            yield kind, _zip({**entries, "metadata.json": json.dumps(mutated).encode()})
        elif kind == "json_garbage":
            text = bytearray(entries["metadata.json"])
            for pos in rng.integers(0, len(text), size=int(rng.integers(1, 6))):
                text[pos] = int(rng.integers(32, 127))
            yield kind, _zip({**entries, "metadata.json": bytes(text)})
        elif kind == "entry_garbage":
            names = sorted(k for k in entries if k != "metadata.json")
            name = names[int(rng.integers(0, len(names)))]
            data = bytearray(entries[name])
            if rng.random() < 0.5:
                data = data[: int(rng.integers(0, len(data)))]
            else:
                for pos in rng.integers(0, len(data), size=int(rng.integers(1, 20))):
                    data[pos] ^= int(rng.integers(1, 256))
            yield kind, _zip({**entries, name: bytes(data)})
        elif kind == "declared_size":
            # Rewrite an entry's uncompressed size in the central directory (a zip bomb's lie).
            data = bytearray(valid)
            headers = [j for j in range(len(data) - 4) if data[j : j + 4] == b"PK\x01\x02"]
            j = headers[int(rng.integers(0, len(headers)))]
            data[j + 24 : j + 28] = struct.pack("<I", int(rng.choice([2**32 - 1, 2**31, 10**9, 17 * 2**20])))
            yield kind, bytes(data)
        else:  # an entry a model file never has, possibly with a path trick
            name = str(rng.choice(["../evil.py", "/etc/passwd", "x/../../y", "pickled.pkl.bak", "extra.bin"]))
            yield kind, _zip({**entries, name: b"print('hi')"})

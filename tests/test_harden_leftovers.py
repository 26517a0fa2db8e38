"""Issue 33's smaller promises: a killed save's temporary files are cleaned by the next save of the same path, and
``print_system_info`` never prints a file's control characters raw."""

from __future__ import annotations

import io
import json
import os
import time
import zipfile

from rlkit_td3 import TD3
from rlkit_td3.fileio.serialization import STALE_TEMPORARY_SECONDS, atomic_write
from rlkit_td3.persistence.load_arguments import printable


def test_a_killed_saves_temporary_is_removed_by_the_next_save(tmp_path):
    target = tmp_path / "model.zip"
    stale = tmp_path / ".model.zip.ab12cd_9.tmp"  # the name atomic_path gives, left by a killed save
    fresh = tmp_path / ".model.zip.zz99yy_0.tmp"  # another save still writing right now
    other = tmp_path / ".other.zip.ab12cd_9.tmp"  # another file's
    mine = tmp_path / "notes.tmp"
    for path in (stale, fresh, other, mine):
        path.write_bytes(b"half")
    old = time.time() - STALE_TEMPORARY_SECONDS - 60
    for path in (stale, other, mine):
        os.utime(path, (old, old))
    with atomic_write(target) as fh:
        fh.write(b"new")
    assert target.read_bytes() == b"new"
    assert not stale.exists()
    assert fresh.exists() and other.exists() and mine.exists()


def test_print_system_info_escapes_control_characters(tmp_path, capsys):
    path = tmp_path / "m.zip"
    TD3("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [8]}).save(path)
    with zipfile.ZipFile(path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    metadata = json.loads(entries["metadata.json"])
    metadata["system"] = {key: "\x1b]0;owned\x07\x1b[2J\r\nfake: line\x00\u202e" for key in metadata["system"]}
    entries["metadata.json"] = json.dumps(metadata).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        for name, raw in entries.items():
            archive.writestr(name, raw)
    path.write_bytes(buf.getvalue())
    TD3.load(path, print_system_info=True)
    out = capsys.readouterr().out
    assert not any(not ch.isprintable() for ch in out.replace("\n", ""))
    assert "\\x1b" in out and "fake: line" in out
    assert all(line.count("|") == 1 for line in out.splitlines() if line and not line.startswith("=="))
    assert printable("a\tb\x1b") == "a\\tb\\x1b"

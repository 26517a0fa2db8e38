"""docs/changelog.md: its version is rlkit_td3's, and every commit it cites exists in the history."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import rlkit_td3

ROOT = Path(__file__).resolve().parents[1]
TEXT = (ROOT / "docs" / "changelog.md").read_text()


def test_the_first_heading_is_the_package_version_and_says_unreleased():
    (first,) = re.findall(r"^## (.+)$", TEXT, re.M)[:1]
    assert first == f"{rlkit_td3.__version__} — unreleased (development)"


def test_every_cited_commit_exists():
    hashes = sorted(set(re.findall(r"`([0-9a-f]{7})`", TEXT)))
    assert len(hashes) > 30
    result = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "--batch-check"],
        input="".join(f"{h}^{{commit}}\n" for h in hashes),
        capture_output=True,
        text=True,
        check=True,
    )
    missing = [line for line in result.stdout.splitlines() if line.endswith("missing")]
    assert missing == []

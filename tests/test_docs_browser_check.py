"""benchmarks/docs_browser_check.py without a browser: its link crawl and its summary of a run."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("docs_browser_check", ROOT / "benchmarks" / "docs_browser_check.py")
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)


def test_broken_links_finds_a_missing_page_a_missing_anchor_and_a_missing_image(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "index.html").write_text(
        '<h2 id="top">x</h2><a href="a/">ok</a><a href="a/#here">ok</a><a href="#top">ok</a>'
        '<a href="https://example.org/">external</a><a href="b/">missing page</a>'
        '<a href="a/#nowhere">missing anchor</a><img src="img/x.png">'
    )
    (tmp_path / "a" / "index.html").write_text('<p id="here"><a href="../index.html#top">back</a></p>')
    assert check.broken_links(tmp_path) == {"index.html": ["b/", "a/#nowhere", "img/x.png"]}


def _measure(**items):
    keys = ("codeCut", "wideTables", "unboxedTables", "splitCode", "brokenImages", "rawMarkup")
    m = {key: items.get(key, []) for key in keys}
    return {"height": items.get("height", 1000), "external": items.get("external", []), "console_errors": [], **m}


def test_the_summary_counts_and_the_defects_list_what_fails():
    results = {
        "broken_links": {},
        "pages": {
            "a.html": {"1280": _measure(height=20_000, splitCode=["learning_rate"]), "390": _measure()},
            "b.html": {"1280": _measure(), "390": _measure(external=["https://fonts.example/x.css"])},
        },
    }
    rows = check.summary(results)
    assert rows["1280 px: code split in tables (pages)"] == "1 (1)"
    assert rows["1280 px: tallest page"] == "20,000 (a.html)"
    assert rows["1280 px: pages > 12,000 px"] == "1"
    assert rows["390 px: external requests (pages)"] == "1 (1)"
    assert check.defects(results) == [
        "a.html @1280: code split in a table: learning_rate",
        "b.html @390: external request: https://fonts.example/x.css",
    ]

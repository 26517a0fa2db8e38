"""The docs-site HTML check (tests/site_check.py) flags each class of rendering defect, and only those."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from site_check import check_page, check_site

KATEX = '<script src="assets/katex/katex.min.js"></script>'
GOOD = f"""<html><head>{KATEX}</head><body>
<p>See <code>OffPolicyAlgorithm</code> and the formula <span class="arithmatex">\\(y = r + \\gamma q\\)</span>.</p>
<pre><code>print(":class:`kept in code blocks`", "\\\\(")</code></pre>
<table><thead><tr><th>option</th><th>meaning</th></tr></thead>
<tbody><tr><td><code>--algo ALGO</code></td><td>a | b</td></tr></tbody></table>
<blockquote><p>one quote</p></blockquote>
</body></html>"""


def test_a_clean_page_has_no_defect():
    assert check_page(GOOD) == []


@pytest.mark.parametrize(
    ("broken", "kind"),
    [
        ("See :class:<code>~rlkit_td3.off_policy.OffPolicyAlgorithm</code>.", "raw-role"),
        ("Uses :func:<code>evaluate_policy</code>.", "raw-role"),
        ("<p>target \\(a' = \\mathrm{clip}(x)\\)</p>", "raw-math"),
        ("<table><tr><td><code>--algo td3\\|ddpg</code></td></tr></table>", "escaped-pipe"),
        ("<table><thead><tr><th></th><th> </th></tr></thead><tr><td>1</td></tr></table>", "empty-header"),
        ("<blockquote><blockquote><p>&gt;&gt;&gt; model = TD3()</p></blockquote></blockquote>", "nested-quotes"),
    ],
)
def test_each_defect_class_is_flagged(broken, kind):
    page = GOOD.replace("</body>", broken + "</body>")
    assert [d.kind for d in check_page(page)] == [kind]


def test_math_without_a_renderer_is_flagged():
    page = GOOD.replace(KATEX, "")
    defects = check_page(page)
    assert [d.kind for d in defects] == ["raw-math"]
    assert "no KaTeX/MathJax" in defects[0].text


def test_command_line_fails_on_a_broken_site_and_passes_on_a_clean_one(tmp_path: Path):
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "index.html").write_text(GOOD)
    (tmp_path / "bad" / "api").mkdir(parents=True)
    (tmp_path / "bad" / "index.html").write_text(GOOD)
    (tmp_path / "bad" / "api" / "index.html").write_text(GOOD.replace("one quote", "see :mod:`rlkit_td3`"))
    script = Path(__file__).with_name("site_check.py")
    good = subprocess.run([sys.executable, script, tmp_path / "good"], capture_output=True, text=True)
    bad = subprocess.run([sys.executable, script, tmp_path / "bad"], capture_output=True, text=True)
    assert good.returncode == 0, good.stdout
    assert bad.returncode == 1
    assert "api/index.html: raw-role" in bad.stdout
    assert [d.page for d in check_site(tmp_path / "bad")] == ["api/index.html"]


def test_an_empty_site_is_an_error(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="no HTML pages"):
        check_site(tmp_path)

"""Check the built docs site for rendering defects that ``mkdocs build --strict`` does not catch.

Each check is a class of defect seen on the site in a real browser (``../shared/research/docs_review.md``):

- ``raw-role``: a Sphinx role (``:class:``, ``:func:``, ...) left as literal text; mkdocstrings with Google-style
  docstrings does not resolve them.
- ``raw-math``: LaTeX delimiters ``\\(`` or ``\\[`` outside the math spans of ``pymdownx.arithmatex``, or a page
  with math spans that loads no math renderer (the spans would show as raw LaTeX).
- ``escaped-pipe``: a literal ``\\|`` in a table cell (Markdown keeps the backslash inside code spans).
- ``empty-header``: a table whose header row has no text in any cell.
- ``nested-quotes``: a blockquote directly inside a blockquote, what a docstring's ``>>>`` example becomes
  when it is not in a code block.

Text inside ``<pre>``, ``<script>`` and ``<style>`` is not checked.

Usage: ``python tests/site_check.py SITE_DIR`` exits 1 and lists every defect, page by page.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj|ref|doc|py:\w+):`?")
MATH_DELIMITER = re.compile(r"\\[(\[]")
MATH_RENDERERS = ("katex", "mathjax")
_SKIPPED = {"pre", "script", "style"}


@dataclass
class Defect:
    """One defect on one page."""

    page: str
    kind: str
    text: str

    def __str__(self) -> str:
        return f"{self.page}: {self.kind}: {self.text[:120]!r}"


@dataclass
class _PageParser(HTMLParser):
    page: str
    defects: list[Defect] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._stack: list[tuple[str, bool]] = []  # (tag, is an arithmatex element)
        self._skip_depth = 0
        self._math_depth = 0
        self._cell_depth = 0
        self._quote_depth = 0
        self._header_rows: list[list[str]] = []
        self._in_thead_row = False
        self.has_math = False
        self.loads_renderer = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "script" and any(name in (attributes.get("src") or "").lower() for name in MATH_RENDERERS):
            self.loads_renderer = True
        if tag in ("br", "img", "hr", "meta", "link", "input"):
            return
        is_math = "arithmatex" in (attributes.get("class") or "").split()
        self.has_math |= is_math
        self._stack.append((tag, is_math))
        self._skip_depth += tag in _SKIPPED
        self._math_depth += is_math
        self._cell_depth += tag in ("td", "th")
        if tag == "blockquote":
            self._quote_depth += 1
            if self._quote_depth > 1:
                self.defects.append(Defect(self.page, "nested-quotes", "<blockquote> inside <blockquote>"))
        if tag == "tr" and any(t == "thead" for t, _ in self._stack):
            self._in_thead_row = True
            self._header_rows.append([])

    def handle_endtag(self, tag: str) -> None:
        # Pop up to the matching open tag (HTML allows some end tags to be omitted).
        for i in range(len(self._stack) - 1, -1, -1):
            if self._stack[i][0] == tag:
                for closed, is_math in self._stack[i:]:
                    self._skip_depth -= closed in _SKIPPED
                    self._math_depth -= is_math
                    self._cell_depth -= closed in ("td", "th")
                    self._quote_depth -= closed == "blockquote"
                    if closed == "tr" and self._in_thead_row:
                        self._in_thead_row = False
                        if not any(cell.strip() for cell in self._header_rows[-1]):
                            self.defects.append(Defect(self.page, "empty-header", "a table header row without text"))
                del self._stack[i:]
                return

    def handle_data(self, data: str) -> None:
        if self._skip_depth:
            return
        if self._in_thead_row and self._cell_depth:
            self._header_rows[-1].append(data)
        if ROLE.search(data):
            self.defects.append(Defect(self.page, "raw-role", data.strip()))
        if not self._math_depth and MATH_DELIMITER.search(data):
            self.defects.append(Defect(self.page, "raw-math", data.strip()))
        if self._cell_depth and "\\|" in data:
            self.defects.append(Defect(self.page, "escaped-pipe", data.strip()))


def check_page(html: str, page: str = "<page>") -> list[Defect]:
    """The defects of one HTML page."""
    parser = _PageParser(page)
    parser.feed(html)
    parser.close()
    defects = list(parser.defects)
    if parser.has_math and not parser.loads_renderer:
        defects.append(Defect(page, "raw-math", "math spans but no KaTeX/MathJax script on the page"))
    return defects


def check_site(site: str | Path) -> list[Defect]:
    """The defects of every ``*.html`` page under ``site`` (the output folder of ``mkdocs build``)."""
    root = Path(site)
    pages = sorted(root.rglob("*.html"))
    if not pages:
        raise FileNotFoundError(f"site has no HTML pages: {root}")
    defects: list[Defect] = []
    for path in pages:
        defects += check_page(path.read_text(encoding="utf-8"), str(path.relative_to(root)))
    return defects


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python tests/site_check.py SITE_DIR", file=sys.stderr)
        return 2
    defects = check_site(argv[0])
    for defect in defects:
        print(defect)
    print(f"site check: {len(defects)} defect(s)")
    return 1 if defects else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

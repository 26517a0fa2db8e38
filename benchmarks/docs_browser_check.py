"""The built docs site seen in headless Chromium at 1280 px and 390 px: what a reader trips on, page by page.

Serves ``SITE_DIR`` (the output of ``mkdocs build``) on localhost, opens every page at each width with every
request to another host blocked (the site must work offline), and counts:

- ``code cut``: code blocks whose text is wider than their box (the reader must scroll sideways to see a line);
- ``tables > column``: tables wider than the content column (at 1280 px a reader cannot see all columns);
- ``tables, no scroll box``: tables wider than the column whose box neither scrolls (``overflow-x``) nor shows
  that it does (a border or shadow);
- ``code split in tables``: inline code in a table cell broken across lines anywhere but at a space or after
  the dot of a dotted name (an identifier cut mid-word, such as ``learning_ra`` / ``te``);
- ``broken images``: ``<img>`` that did not load;
- ``broken links``: internal links to a missing file or to an anchor the target page lacks;
- ``raw markup``: Markdown or LaTeX left as text outside code (``**``, ``](``, ``\\(``, ``$$``, ``!!!``,
  ``|---``, a Sphinx role);
- ``page height``: the document's height in CSS px (the tallest pages, and how many exceed 12,000 px);
- ``external requests``: requests to any other host (fonts, scripts, images), and console errors.

Chromium is the system's (``apt-get install chromium``), driven by ``playwright`` (the ``browser`` extra), which
downloads no browser of its own here. Usage::

    python benchmarks/docs_browser_check.py SITE_DIR [--json OUT.json] [--chromium /usr/bin/chromium]
    python benchmarks/docs_browser_check.py --compare BEFORE.json AFTER.json

The first prints the summary table and the defects page by page; ``--compare`` prints a before/after table of
two saved runs. The exit status is 1 when any page has a broken image or link, raw markup, an external request,
code split in a table, or a wide table without a scroll box.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import shutil
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlparse

WIDTHS = (1280, 390)
TALL = 12_000

# Runs in the page: everything measured from the rendered layout.
PROBE = r"""
() => {
  const article = document.querySelector(".md-content__inner") || document.body;
  const column = article.getBoundingClientRect().width;
  const out = {height: document.documentElement.scrollHeight, column: Math.round(column),
               codeCut: [], wideTables: [], unboxedTables: [], splitCode: [], brokenImages: [], rawMarkup: []};
  for (const pre of article.querySelectorAll("pre > code")) {
    if (pre.scrollWidth > pre.clientWidth + 1) {
      const longest = pre.textContent.split("\n").reduce((a, b) => (b.length > a.length ? b : a), "");
      out.codeCut.push(longest.trim().slice(0, 60));
    }
  }
  for (const table of article.querySelectorAll("table")) {
    if (table.closest(".highlighttable")) continue;
    const wide = table.scrollWidth;
    if (wide > column + 1) {
      const head = (table.querySelector("th") || table).textContent.trim().slice(0, 30);
      out.wideTables.push(head + " (" + wide + " px)");
      // the element that scrolls: the table itself (Material's inline-block table) or a wrapper
      let box = table, boxed = false;
      for (let i = 0; i < 3 && box && !boxed; i++, box = box.parentElement) {
        const s = getComputedStyle(box);
        const scrolls = ["auto", "scroll"].includes(s.overflowX) && box.scrollWidth > box.clientWidth;
        const shows = s.boxShadow !== "none" || s.backgroundImage !== "none" || parseFloat(s.borderRightWidth) > 0;
        const r = box.getBoundingClientRect();
        boxed = scrolls && shows && r.left >= -1 && r.right <= document.documentElement.clientWidth + 1;
      }
      if (!boxed) out.unboxedTables.push(head);
    }
  }
  // inline code in a table cell broken across lines inside a word
  for (const code of article.querySelectorAll("td code, th code")) {
    const lineHeight = parseFloat(getComputedStyle(code).lineHeight) || 20;
    if (code.getClientRects().length < 2 && code.getBoundingClientRect().height < 1.6 * lineHeight) continue;
    const range = document.createRange();
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    let previous = null, top = null, split = false;
    for (let node = walker.nextNode(); node && !split; node = walker.nextNode()) {
      for (let i = 0; i < node.length && !split; i++) {
        const ch = node.data[i];
        if (/\s/.test(ch)) { previous = ch; continue; }
        range.setStart(node, i); range.setEnd(node, i + 1);
        const rect = range.getClientRects()[0];
        if (!rect) continue;
        const t = Math.round(rect.top);
        // a line may begin after a space, or after the dot of a dotted name (a.b.c): anywhere else is mid-word
        if (top !== null && t > top + 2 && previous !== null && !/[\s.]/.test(previous)) split = true;
        top = t; previous = ch;
      }
    }
    if (split) out.splitCode.push(code.textContent.slice(0, 50));
  }
  for (const img of document.querySelectorAll("img")) {
    if (!img.complete || img.naturalWidth === 0) out.brokenImages.push(img.getAttribute("src"));
  }
  const raw = /(?:^|[\s(])\*\*[^\s*][^*]*\*\*|\]\(|\\\(|\$\$|^!!! |\|---|:(?:class|func|meth|mod|data|attr|exc):`/m;
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement.closest("pre, code, script, style, .arithmatex, .katex")) continue;
    const match = node.textContent.match(raw);
    if (match) out.rawMarkup.push(node.textContent.trim().slice(0, 60));
  }
  return out;
}
"""


class _Links(HTMLParser):
    """The ids of a page and the targets of its links and images."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if attributes.get("id"):
            self.ids.add(attributes["id"])
        if tag == "a" and attributes.get("name"):
            self.ids.add(attributes["name"])
        for key in ("href", "src"):
            value = attributes.get(key)
            if value and tag in ("a", "img", "link", "script", "source"):
                self.links.append(value)


def _target(site: Path, page: Path, link: str) -> tuple[Path | None, str]:
    """The file a relative ``link`` on ``page`` points to (``None`` for an external link), and its anchor."""
    url, anchor = urldefrag(link)
    if urlparse(url).scheme or url.startswith("//") or url.startswith("mailto:"):
        return None, ""
    base = "/" + page.relative_to(site).as_posix()
    path = unquote(urlparse(urljoin(base, url)).path) if url else base
    target = site / path.lstrip("/")
    if target.is_dir() or path.endswith("/"):
        target = target / "index.html"
    return target, anchor


def broken_links(site: Path) -> dict[str, list[str]]:
    """Per page, the internal links and images whose file is missing or whose anchor the target lacks."""
    parsed: dict[Path, _Links] = {}

    def parse(path: Path) -> _Links:
        if path not in parsed:
            parser = _Links()
            parser.feed(path.read_text(encoding="utf-8", errors="replace"))
            parsed[path] = parser
        return parsed[path]

    found: dict[str, list[str]] = {}
    for page in sorted(site.rglob("*.html")):
        for link in parse(page).links:
            target, anchor = _target(site, page, link)
            if target is None:
                continue
            if not target.is_file():
                found.setdefault(page.relative_to(site).as_posix(), []).append(link)
            elif anchor and target.suffix == ".html" and anchor not in parse(target).ids:
                found.setdefault(page.relative_to(site).as_posix(), []).append(link)
    return found


def _serve(site: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def check(site: Path, chromium: str) -> dict:
    """Measure every page at every width; the result is what ``--json`` writes."""
    from playwright.sync_api import sync_playwright

    pages = [p.relative_to(site).as_posix() for p in sorted(site.rglob("*.html")) if p.name != "404.html"]
    server, origin = _serve(site)
    results: dict = {"pages": {}, "broken_links": broken_links(site)}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            for width in WIDTHS:
                context = browser.new_context(viewport={"width": width, "height": 900})
                external: list[str] = []
                errors: list[str] = []

                def route(route, request, external=external):
                    if request.url.startswith(origin) or request.url.startswith("data:"):
                        route.continue_()
                    else:
                        external.append(request.url)
                        route.abort()

                context.route("**/*", route)
                tab = context.new_page()
                tab.on("console", lambda m, errors=errors: errors.append(m.text) if m.type == "error" else None)
                for name in pages:
                    external.clear()
                    errors.clear()
                    tab.goto(f"{origin}/{name}", wait_until="load")
                    tab.wait_for_timeout(50)
                    measured = tab.evaluate(PROBE)
                    measured["external"] = sorted(set(external))
                    measured["console_errors"] = list(errors)
                    results["pages"].setdefault(name, {})[str(width)] = measured
                context.close()
            browser.close()
    finally:
        server.shutdown()
    return results


def summary(results: dict) -> dict[str, str]:
    """The figures of one run, as the rows of the before/after table."""
    pages = results["pages"]
    rows: dict[str, str] = {"pages": str(len(pages))}
    links = sum(len(v) for v in results["broken_links"].values())
    for width in map(str, WIDTHS):
        at = [p[width] for p in pages.values()]
        heights = sorted(((m["height"], n) for n, p in pages.items() for w, m in p.items() if w == width), reverse=True)
        rows[f"{width} px: code blocks cut (pages)"] = (
            f"{sum(len(m['codeCut']) for m in at)} ({sum(bool(m['codeCut']) for m in at)})"
        )
        rows[f"{width} px: tables > column (pages)"] = (
            f"{sum(len(m['wideTables']) for m in at)} ({sum(bool(m['wideTables']) for m in at)})"
        )
        rows[f"{width} px: wide tables without a scroll box"] = str(sum(len(m["unboxedTables"]) for m in at))
        rows[f"{width} px: code split in tables (pages)"] = (
            f"{sum(len(m['splitCode']) for m in at)} ({sum(bool(m['splitCode']) for m in at)})"
        )
        rows[f"{width} px: broken images"] = str(sum(len(m["brokenImages"]) for m in at))
        rows[f"{width} px: raw markup"] = str(sum(len(m["rawMarkup"]) for m in at))
        rows[f"{width} px: tallest page"] = f"{heights[0][0]:,} ({heights[0][1]})"
        rows[f"{width} px: pages > {TALL:,} px"] = str(sum(m["height"] > TALL for m in at))
        rows[f"{width} px: external requests (pages)"] = (
            f"{sum(len(m['external']) for m in at)} ({sum(bool(m['external']) for m in at)})"
        )
        rows[f"{width} px: console errors"] = str(sum(len(m["console_errors"]) for m in at))
    rows["broken internal links/images (static)"] = str(links)
    return rows


def defects(results: dict) -> list[str]:
    """One line per defect that fails the check."""
    lines = []
    for page, links in results["broken_links"].items():
        lines += [f"{page}: broken link {link}" for link in links]
    for page, widths in results["pages"].items():
        for width, m in widths.items():
            for kind, key in (
                ("broken image", "brokenImages"),
                ("raw markup", "rawMarkup"),
                ("external request", "external"),
                ("code split in a table", "splitCode"),
                ("wide table without a scroll box", "unboxedTables"),
            ):
                lines += [f"{page} @{width}: {kind}: {item}" for item in m[key]]
    return lines


def notes(results: dict) -> list[str]:
    """What does not fail the check but a reader meets: cut code, wide tables (they scroll), tall pages."""
    lines = []
    for page, widths in results["pages"].items():
        for width, m in widths.items():
            lines += [f"{page} @{width}: code cut: {item}" for item in m["codeCut"]]
            if width == "1280":
                lines += [f"{page} @{width}: table wider than the column: {item}" for item in m["wideTables"]]
            if m["height"] > TALL:
                lines.append(f"{page} @{width}: {m['height']:,} px tall")
    return lines


def _table(columns: dict[str, dict[str, str]]) -> str:
    names = list(columns)
    keys = list(next(iter(columns.values())))
    out = ["| check | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    out += [f"| {key} | " + " | ".join(columns[n].get(key, "") for n in names) + " |" for key in keys]
    return "\n".join(out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("site", nargs="?", type=Path)
    parser.add_argument("--json", type=Path, help="write the measurements here")
    parser.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser"))
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args(argv)
    if args.compare:
        before, after = (json.loads(p.read_text()) for p in args.compare)
        print(_table({"before": summary(before), "after": summary(after)}))
        return 0
    if args.site is None or not (args.site / "index.html").is_file():
        parser.error("SITE_DIR must be a built site (it has no index.html)")
    if not args.chromium:
        parser.error("no chromium found: install it (apt-get install chromium) or pass --chromium PATH")
    results = check(args.site, args.chromium)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    for line in notes(results):
        print("note:", line)
    found = defects(results)
    for line in found:
        print("DEFECT:", line)
    print(_table({"site": summary(results)}))
    print(f"browser check: {len(found)} defect(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

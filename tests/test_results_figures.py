"""Every result figure quoted on the pages that report results comes from a committed results file.

A "figure" is a number written with a decimal point, a number beside ``±``, or a bound of a bracketed interval
``[a, b]``, in the prose and tables of a page (code blocks, inline code, link targets and layer sizes aside).
Each must occur, as written (the minus sign and thousands separators normalised), in a file under
``benchmarks/results/``: the results of this project's runs (a figure of 10 or more with decimals may be a
file's number rounded) and, in ``benchmarks/results/published_reference.md``, the published figures it is
compared with, each with its source. Hyperparameters are not figures: a number that is a value of the presets
(``rlkit_td3/experiments/presets.toml``) is allowed too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    "index.md",
    "results.md",
    "results_runs.md",
    "tips.md",
    "algorithms/td3.md",
    "algorithms/ddpg.md",
    "environments.md",
    "performance.md",
]
RESULT_SUFFIXES = {".txt", ".md", ".csv", ".json"}

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_INLINE_CODE = re.compile(r"`[^`]*`")
_NET = re.compile(r"net(?:_arch)?\s*=?\s*\[[^\]]*\]")  # a network's layer sizes, not an interval
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_HTML = re.compile(r"<[^>]+>")
_ARXIV = re.compile(r"arXiv[: ]\s*\d{4}\.\d{4,5}", re.I)
_NUMBER = r"[-−]?\d[\d,]*(?:\.\d+)?"
_DECIMAL = re.compile(r"(?<![\w.])[-−]?\d[\d,]*\.\d+(?![\w.])")
_PAIRS = [
    re.compile(rf"({_NUMBER})\s*±\s*({_NUMBER})"),  # a ± b
    re.compile(rf"\[\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\]"),  # [low, high]
]


def _normalise(number: str) -> str:
    return number.replace("−", "-").replace(",", "")


def page_figures(text: str) -> list[str]:
    """The figures of a page's prose, normalised, in order of appearance (duplicates kept)."""
    for pattern in (_FENCE, _INLINE_CODE, _LINK_TARGET, _HTML, _ARXIV, _NET):
        text = pattern.sub(" ", text)
    found = [(m.start(), m.group()) for m in _DECIMAL.finditer(text)]
    for pattern in _PAIRS:
        for m in pattern.finditer(text):
            found += [(m.start(i), m.group(i)) for i in (1, 2)]
    seen, out = set(), []
    for position, figure in sorted(found):
        if position not in seen:
            seen.add(position)
            out.append(_normalise(figure))
    return out


def _roundings(number: str) -> set[str]:
    """``number`` as written, and rounded to 1-3 decimals where it has more (a page may quote a file's
    -121.42686 as -121.4) and is at least 10 in size. Integers and small numbers are matched only as written:
    rounded, they would match some number of a large results file by chance."""
    out = {number}
    if "." in number and abs(float(number)) >= 10:
        value = float(number)
        decimals = len(number.split(".")[1])
        out.update(f"{value:.{d}f}" for d in range(1, min(decimals, 4)))
    return out


def _file_numbers(path: Path) -> set[str]:
    """The numbers of one file, normalised, with their roundings."""
    text = path.read_text(encoding="utf-8", errors="ignore")
    if path.suffix == ".csv":  # a comma there separates fields, not thousands
        text = text.replace(",", " ")
    return {rounded for number in re.findall(_NUMBER, text) for rounded in _roundings(_normalise(number))}


def _corpus_numbers() -> set[str]:
    files = [p for p in (ROOT / "benchmarks" / "results").rglob("*") if p.suffix in RESULT_SUFFIXES]
    files.append(ROOT / "rlkit_td3" / "experiments" / "presets.toml")
    return set().union(*(_file_numbers(path) for path in files))


@pytest.fixture(scope="module")
def corpus() -> set[str]:
    return _corpus_numbers()


@pytest.mark.parametrize("page", PAGES)
def test_every_figure_on_the_page_is_in_a_results_file(page, corpus):
    figures = page_figures((ROOT / "docs" / page).read_text(encoding="utf-8"))
    missing = sorted({f for f in figures if f not in corpus})
    assert not missing, f"docs/{page}: figures in no file under benchmarks/results/: {missing}"


def test_the_figure_finder_finds_what_it_should():
    text = (
        "IQM 692.6 [527.9, 965.1] and 585 ± 151; `code 1.5` [link 2.5](x/3.5.md) arXiv:1802.09477\n"
        "```\n9.75\n```\n| −1,099.9 | 10k steps | net [32, 24] |"
    )
    assert page_figures(text) == ["692.6", "527.9", "965.1", "585", "151", "2.5", "-1099.9"]
    assert _roundings("-121.42686") == {"-121.42686", "-121.4", "-121.43", "-121.427"}
    assert _roundings("585") == {"585"}


def test_a_csv_files_numbers_are_its_fields(tmp_path):
    """A comma in a CSV file separates fields: ``0,410000,2992.973`` holds three numbers, not one."""
    (tmp_path / "runs.csv").write_text("seed,timesteps,mean_return\n0,410000,2992.973\n")
    (tmp_path / "summary.md").write_text("| 1,099.9 |")
    assert {"0", "410000", "2992.973", "2993.0"} <= _file_numbers(tmp_path / "runs.csv")
    assert "04100002992.973" not in _file_numbers(tmp_path / "runs.csv")
    assert "1099.9" in _file_numbers(tmp_path / "summary.md")  # elsewhere, a thousands separator


def test_a_results_curve_shown_in_the_docs_is_the_committed_one():
    """``docs/img/NAME.png`` is a copy of ``benchmarks/results/NAME/curves.png`` where that exists: a page must
    not show the curves of an earlier state of a sweep beside its current table."""
    copies = [
        (ROOT / "docs" / "img" / f"{path.parent.name}.png", path)
        for path in (ROOT / "benchmarks" / "results").glob("*/curves.png")
    ]
    shown = [(image, curves) for image, curves in copies if image.exists()]
    assert len(shown) >= 6  # walker_500k, ant_500k, halfcheetah_100k_v2, walker_td3_ddpg, td3_plus, sb3_compare
    for image, curves in shown:
        assert image.read_bytes() == curves.read_bytes(), f"{image.name} is not {curves.relative_to(ROOT)}"


def test_every_committed_summary_is_its_raw_results_recomputed():
    """Each summary under ``benchmarks/results/`` (the tables the Results page inserts) is what
    ``benchmarks/resummarize.py`` computes now from the committed ``results.csv``, by the statistics of
    ``rlkit_td3.experiments.stats``: a summary cannot keep figures of an older method or an older state of a sweep."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import resummarize
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    texts = resummarize.summaries()
    assert len(texts) == 7
    for path, text in texts.items():
        assert path.read_text() == text, f"{path.relative_to(ROOT)} is not its results.csv recomputed"


def test_the_comparing_page_table_is_its_results_recomputed():
    """docs/comparison.md shows the summary table of ``docs/comparison/results.csv`` row for row."""
    import pandas as pd

    from rlkit_td3.experiments.stats import improvements, summarize, summary_markdown

    table = pd.read_csv(ROOT / "docs" / "comparison" / "results.csv")
    text = summary_markdown(summarize(table), improvements(table))
    page = (ROOT / "docs" / "comparison.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith(("| ", "- P("))]
    assert len(rows) == 4  # the header, two algos, one probability
    for line in rows:
        assert line in page, f"docs/comparison.md lacks the summary line {line!r}"

"""The parameter tables of the algorithm pages are generated from the code (docs_hooks/parameters.py)."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs_hooks"))
from parameters import docstring_args, on_page_markdown, parameter_rows  # noqa: E402

from rlkit_td3 import DDPG, TD3  # noqa: E402


@pytest.mark.parametrize("cls", [TD3, DDPG])
def test_every_constructor_parameter_is_in_the_table_with_its_default_and_a_description(cls):
    rows = {name: (default, text) for name, default, text in parameter_rows(cls)}
    signature = inspect.signature(cls.__init__).parameters
    public = [name for name in signature if name != "self" and not name.startswith("_")]
    assert list(rows) == public
    for name in public:
        default = signature[name].default
        if default is inspect.Parameter.empty:
            assert rows[name][0] == "required"
        else:
            assert rows[name][0].strip("`").replace("_", "") == repr(default).replace("_", "")
        assert rows[name][1], f"{cls.__name__}.{name} has no description in any docstring"


def test_the_switches_show_each_algorithms_own_defaults():
    td3 = {name: default for name, default, _ in parameter_rows(TD3)}
    ddpg = {name: default for name, default, _ in parameter_rows(DDPG)}
    assert (td3["policy_delay"], td3["target_policy_noise"]) == ("`2`", "`0.2`")
    assert "policy_delay" not in ddpg and "target_policy_noise" not in ddpg  # fixed by the class, not parameters


def test_docstring_args_joins_continuation_lines_and_stops_at_the_next_section():
    doc = """Summary.

    Args:
        alpha: first line
            and its continuation.
        beta (int): second.

    Returns:
        gamma: not an argument.
    """
    assert docstring_args(doc) == {"alpha": "first line and its continuation.", "beta": "second."}


def test_the_marker_is_replaced_and_other_text_kept():
    page = on_page_markdown("before\n\n<!-- parameters: rlkit_td3.td3.TD3 -->\n\nafter")
    assert page.startswith("before\n\n| parameter | default | meaning |")
    assert "| `policy_delay` | `2` |" in page
    assert page.endswith("after")


# ---------------------------------------------------------------------------------------------------------
# results tables: docs_hooks/results.py


def test_a_results_marker_becomes_the_committed_file():
    from results import on_page_markdown as include_results

    page = "before\n\n<!-- results: benchmarks/results/walker_td3_ddpg/summary.md -->\n\nafter"
    summary = (Path(__file__).resolve().parents[1] / "benchmarks/results/walker_td3_ddpg/summary.md").read_text()
    rendered = include_results(page)
    assert "<!-- results" not in rendered
    assert summary.strip() in rendered and rendered.startswith("before") and rendered.endswith("after")


@pytest.mark.parametrize(
    ("path", "error"),
    [("benchmarks/results/no_such_sweep/summary.md", FileNotFoundError), ("README.md", ValueError)],
)
def test_a_results_marker_fails_the_build_on_a_missing_or_foreign_file(path, error):
    from results import on_page_markdown as include_results

    with pytest.raises(error, match="results marker"):
        include_results(f"<!-- results: {path} -->")

"""docs_hooks/table_code.py: code in a table may break only between words, never inside one."""

from __future__ import annotations

from docs_hooks.table_code import split_words, wrap_table_code


def test_a_code_span_with_spaces_in_a_table_is_split_into_words():
    html = "<table><tr><td><code>save(path, include_buffer=True)</code></td></tr></table>"
    assert wrap_table_code(html) == (
        '<table><tr><td><code class="code-words"><span>save(path,</span> '
        "<span>include_buffer=True)</span></code></td></tr></table>"
    )


def test_an_identifier_stays_as_it_is_and_code_outside_tables_is_untouched():
    html = "<p><code>a b</code></p><table><tr><td><code>actor_learning_rate</code></td></tr></table>"
    assert wrap_table_code(html) == html


def test_a_long_dotted_name_may_break_after_its_dots_only():
    out = split_words("rlkit_td3.vec_env.vec_normalize.VecNormalize")
    assert out == (
        "<span>rlkit_td3.</span><wbr><span>vec_env.</span><wbr><span>vec_normalize.</span><wbr>"
        "<span>VecNormalize</span>"
    )
    assert split_words("model.save") == "<span>model.save</span>"  # short: kept whole


def test_a_span_holding_markup_is_marked_only_when_it_has_a_space():
    typed = '<table><td><code><span title="str">str</span> | None</code></td></table>'
    assert wrap_table_code(typed) == typed.replace("<code>", '<code class="code-words">')
    linked = '<table><td><code><a href="#x">TD3Policy</a></code></td></table>'
    assert wrap_table_code(linked) == linked

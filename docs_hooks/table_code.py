"""mkdocs hook: code in a table cell may break only between words, never inside one.

Code in table cells never wraps (``white-space: nowrap`` in ``docs/stylesheets/extra.css``): an identifier such
as ``actor_learning_rate`` stays whole. A long call or dotted path (``VecNormalize(venv, training=True, ...)``,
``rlkit_td3.vec_env.vec_normalize.VecNormalize.load``) would then make its table far wider than the column, so
such a span gets the class ``code-words`` (it may wrap) and each of its words a ``<span>`` (which may not): it
breaks at its spaces, and a long dotted name also after its dots (``<wbr>``). A span that already holds markup
(a type annotation with links, from mkdocstrings) gets the class only: it breaks at its spaces.
"""

from __future__ import annotations

import re
from typing import Any

TABLE = re.compile(r"<table\b.*?</table>", re.S)
CODE = re.compile(r"<code>(.*?)</code>", re.S)
LONG_NAME = 24
"""A word longer than this (in characters) may also break after each of its dots."""


def _word(word: str) -> str:
    if len(word) <= LONG_NAME or "." not in word.strip("."):
        return f"<span>{word}</span>"
    parts = re.findall(r"[^.]*\.+|[^.]+$", word)
    return "<wbr>".join(f"<span>{part}</span>" for part in parts)


def split_words(code_text: str) -> str:
    """The escaped text of a code span as ``<span>`` words, joined by the spaces between them."""
    return "".join(part if not part or part.isspace() else _word(part) for part in re.split(r"(\s+)", code_text))


def _code(match: re.Match[str]) -> str:
    text = match.group(1)
    if "<" in text:  # markup inside: break at its spaces only
        return f'<code class="code-words">{text}</code>' if re.search(r"\s", re.sub(r"<[^>]*>", "", text)) else match[0]
    if re.search(r"\s", text) or len(text) > LONG_NAME and "." in text.strip("."):
        return f'<code class="code-words">{split_words(text)}</code>'
    return match.group(0)


def wrap_table_code(html: str) -> str:
    """Every code span of the tables of ``html`` that may break, marked and split (see the module docstring)."""
    return TABLE.sub(lambda table: CODE.sub(_code, table.group(0)), html)


def on_page_content(html: str, **kwargs: Any) -> str:
    """mkdocs event: the page's HTML, after Markdown, before the theme."""
    return wrap_table_code(html)

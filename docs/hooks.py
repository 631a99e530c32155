"""Hooks of the documentation's build (mkdocs.yml names this file under `hooks`).

Chromium breaks a line after any hyphen, even inside inline code and between the two of
`--name`, which then reads "-" at a line's end and "-name" on the next. Each word of inline
code with a hyphen inside is put in a span that does not wrap; the code still breaks at its
spaces, and code blocks (which do not wrap) are left as they are.
"""

from __future__ import annotations

import re
from typing import Any

_BLOCK = re.compile(r"(<pre\b.*?</pre>)", re.S)
_INLINE_CODE = re.compile(r"<code>([^<]*)</code>")
_HYPHENATED = re.compile(r"\S*-\S+")
NOWRAP = '<span style="white-space: nowrap">{}</span>'


def keep_hyphenated_words_whole(html: str) -> str:
    """`html` with each hyphenated word of its inline code in a span that does not wrap."""

    def code(match: re.Match) -> str:
        words = _HYPHENATED.sub(lambda word: NOWRAP.format(word.group()), match.group(1))
        return f"<code>{words}</code>"

    parts = _BLOCK.split(html)  # the odd parts are code blocks
    return "".join(part if k % 2 else _INLINE_CODE.sub(code, part) for k, part in enumerate(parts))


def on_page_content(html: str, **kwargs: Any) -> str:
    return keep_hyphenated_words_whole(html)

"""Patterns of MLIR tokens that more than one module matches, written once.

`STRING_BODY`/`STRING_LITERAL` are pattern text, for the regexes that combine a string with other
alternatives (a string is skipped so that what looks like code inside it is not read).
"""

from __future__ import annotations

import re

# The inside of a string literal on one line: any character but a quote, a backslash or a line
# break, and backslash escapes (`\"`, `\0A`).
STRING_BODY = r'[^"\\\n]*(?:\\.[^"\\\n]*)*'
STRING_LITERAL = f'"{STRING_BODY}"'
STRING = re.compile(STRING_LITERAL)

# A symbol reference: `@name` (group 1: `name`) or `@"any name"` (group 1 with its quotes).
SYMBOL = re.compile(r'@([\w$.\-]+|"[^"]*")')


def symbol_after(text: str, start: int, end: int) -> str | None:
    """The name of the first symbol reference in `text[start:end]` (an op's `@name`), or None."""
    m = SYMBOL.search(text, start, end)
    return m.group(1) if m else None

"""Semantic tokens: highlighting for any client without a grammar of its own.

Ops by dialect (the dialect as `namespace`, the op as `function`), SSA values, block labels,
symbols, types, attributes, strings, numbers and comments. Computed with one compiled regex over
the requested range; a full request on a huge document is capped (clients ask for ranges).
"""

from __future__ import annotations

import re

from lsprotocol import types

from ..syntax.tokens import STRING_BODY
from .protocol import Server

TOKEN_TYPES = ["namespace", "function", "variable", "label", "class", "type", "macro", "string",
               "number", "comment", "keyword"]
LEGEND = types.SemanticTokensLegend(token_types=TOKEN_TYPES, token_modifiers=["declaration"])
MAX_FULL_CHARS = 4 * 1024 * 1024

_TOK = re.compile(
    r'(?P<comment>//[^\n]*)'
    rf'|(?P<string>"{STRING_BODY}"?)'
    r'|(?P<ssa>%[\w$.\-]+(?:#\d+)?)'
    r'|(?P<label>\^[\w$.\-]+)'
    r'|(?P<symbol>@[\w$.\-]+)'
    r'|(?P<attr>#[\w$.\-]+)'
    r'|(?P<dtype>![\w$.\-]+)'
    r'|(?P<op>(?<![\w.$\-])[a-z_][\w$]*\.[\w$.]+)(?=[\s(<{"]|$)'
    r'|(?P<btype>(?<![\w.$\-%@#!])(?:[isuf]\d+|bf16|tf32|index|tensor|memref|vector|complex|none)(?![\w.$\-]))'
    r'|(?P<number>(?<![\w.$\-])-?\d+(?:\.\d+(?:[eE][+-]?\d+)?)?(?![\w$]))'
    r'|(?P<keyword>(?<![\w.$\-%@#!])(?:ins|outs|to|step|attributes|iter_args|loc|dense|affine_map|true|false|'
    r'unit|func|module|return|private|public|nested)(?![\w.$\-]))',
    re.M,
)
# Keyed by a match's `lastgroup`: never None, every alternative of _TOK is a named group.
_KIND: dict[str | None, int] = {"comment": 9, "string": 7, "ssa": 2, "label": 3, "symbol": 4, "attr": 6,
                                "dtype": 5, "btype": 5, "number": 8, "keyword": 10}


def encode(lines, text: str, start: int, end: int) -> list[int]:
    data: list[int] = []
    prev_line, prev_char = 0, 0

    def push(s: int, e: int, kind: int):
        nonlocal prev_line, prev_char
        line, char = lines.position(s)
        eline, echar = lines.position(e)
        length = (echar - char) if eline == line else max(1, len(text[s:text.find("\n", s)]))
        d_line = line - prev_line
        d_char = char - prev_char if d_line == 0 else char
        data.extend((d_line, d_char, length, kind, 0))
        prev_line, prev_char = line, char

    for m in _TOK.finditer(text, start, end):
        g = m.lastgroup
        if g == "op":
            name = m.group("op")
            dot = name.index(".")
            push(m.start(), m.start() + dot, 0)
            push(m.start() + dot + 1, m.end(), 1)
        else:
            push(m.start(), m.end(), _KIND[g])
    return data


def _tokens(ls: Server, uri: str, first_line: int, last_line: int | None) -> types.SemanticTokens:
    """Tokens of whole lines first_line..last_line (None: to the end, capped), read over the
    document's pieces that cover them; only the first token's line is absolute."""
    from ..syntax.lines import LineIndex

    doc = ls.document(uri)
    if doc is None or doc.error:
        return types.SemanticTokens(data=[])
    text, line0 = doc.live.lines_text(first_line, last_line, MAX_FULL_CHARS)
    lines = LineIndex(text)
    s = lines.offset(first_line - line0, 0)
    e = lines.offset(last_line - line0 + 1, 0) if last_line is not None else min(len(text), MAX_FULL_CHARS)
    data = encode(lines, text, s, e)
    if data:
        data[0] += line0
    return types.SemanticTokens(data=data)


def setup(server) -> None:
    @server.feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, LEGEND)
    def semantic_tokens_full(ls, params: types.SemanticTokensParams):
        return _tokens(ls, params.text_document.uri, 0, None)

    @server.feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE, LEGEND)
    def semantic_tokens_range(ls, params: types.SemanticTokensRangeParams):
        return _tokens(ls, params.text_document.uri, params.range.start.line, params.range.end.line)

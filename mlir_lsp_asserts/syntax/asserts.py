"""The asserts of a text: where `cf.assert` ops are, their messages and source locations.

Shared by the checker, the fixes and the dispatch count: candidates are found with one regex
over the whole text, and only the top-level ops that hold one are read in full.
"""

from __future__ import annotations

import re

from .op_tree import Op
from .op_details import AssertOp, op_detail
from .parsed_text import ParsedText, register_literal

ASSERT_CANDIDATE = register_literal(
    re.compile(r'(?<![\w.$"-])cf\.assert(?![\w.$-])|"cf\.assert"'), "cf.assert")
ASSERT_NAMES = frozenset({"cf.assert"})
TRAILING_LOC = re.compile(r'loc\(("[^"\\]*(?:\\.[^"\\]*)*"):(\d+):(\d+)\)\s*$')
LOC_ALIAS_USE = re.compile(r"loc\((#[\w$.\-]+)\)\s*$")


def assert_ops(parsed: ParsedText) -> list[Op]:
    return parsed.ops_matching(ASSERT_CANDIDATE, ASSERT_NAMES)


def assert_message(parsed: ParsedText, op: Op) -> str | None:
    detail = op_detail(parsed.text, op)
    return detail.message if isinstance(detail, AssertOp) else None


def source_location(parsed: ParsedText, op: Op) -> str | None:
    """`file:line:col` of an op's trailing `loc(...)`, through `#loc` aliases (bytecode input)."""
    text = parsed.text[op.start:op.end]
    m = TRAILING_LOC.search(text)
    if m is None:
        a = LOC_ALIAS_USE.search(text)
        if a is None:
            return None
        d = re.search(r"^" + re.escape(a.group(1)) + r'\s*=\s*loc\(("[^"\\]*(?:\\.[^"\\]*)*"):(\d+):(\d+)\)', parsed.text, re.M)
        if d is None:
            return None
        m = d
    return f"{m.group(1)[1:-1]}:{m.group(2)}:{m.group(3)}"

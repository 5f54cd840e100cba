"""The asserts of a text: where `cf.assert` ops are, their messages and source locations, and
the source ops a lowering's asserts in linalg regions came from (`trace_asserts`).

Shared by the checker, the fixes and the dispatch count: candidates are found with one regex
over the whole text, and only the top-level ops that hold one are read in full.
"""

from __future__ import annotations

import os
import re

from ..records import field, record
from .op_details import AssertOp, op_detail
from .op_tree import Op
from .parsed_text import ParsedText, parse, register_literal
from .tokens import STRING_LITERAL

ASSERT_CANDIDATE = register_literal(
    re.compile(r'(?<![\w.$"-])cf\.assert(?![\w.$-])|"cf\.assert"'), "cf.assert")
ASSERT_NAMES = frozenset({"cf.assert"})
LOC_FILE_LINE_COL = rf"loc\(({STRING_LITERAL}):(\d+):(\d+)\)"
TRAILING_LOC = re.compile(LOC_FILE_LINE_COL + r"\s*$")
LOC_ALIAS_USE = re.compile(r"loc\((#[\w$.\-]+)\)\s*$")


def is_torch_input(text: str) -> bool:
    """torch-dialect input, whose asserts appear only when it is lowered (rule MLA004)."""
    return ("torch.aten." in text or "!torch.vtensor" in text) and "cf.assert" not in text


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
        d = re.search(r"^" + re.escape(a.group(1)) + r"\s*=\s*" + LOC_FILE_LINE_COL, parsed.text, re.M)
        if d is None:
            return None
        m = d
    return f"{m.group(1)[1:-1]}:{m.group(2)}:{m.group(3)}"


LINALG_DIALECTS = ("linalg", "iree_linalg_ext")


def enclosing_linalg_op(op: Op) -> Op | None:
    """The innermost linalg op whose region holds `op`, or None."""
    for anc in op.ancestors():
        if anc.dialect in LINALG_DIALECTS:
            return anc
    return None


@record(slots=True)
class AssertSource:
    """A source op whose lowering put `asserts` cf.asserts into linalg regions (1-based place)."""

    line: int
    column: int
    op: str
    asserts: int = 0
    messages: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        return {"line": self.line, "column": self.column, "op": self.op, "asserts": self.asserts,
                "messages": list(self.messages)}

    @classmethod
    def from_json(cls, d: dict) -> AssertSource:
        return cls(d["line"], d["column"], d["op"], d["asserts"], list(d["messages"]))


_SOURCE_OP = re.compile(r'(?:=\s*)?"?([a-z_][\w$]*\.[\w$.]+)')


def trace_asserts(lowered: str, source: str, input_name: str | None) -> list[AssertSource]:
    """The source ops whose lowering put `cf.assert`s into linalg regions, found through the
    lowered asserts' locations (`--mlir-print-debuginfo`), not through a list of op names."""
    parsed = parse(lowered)
    lines = source.split("\n")
    by_place: dict[tuple[int, int], AssertSource] = {}
    for op in assert_ops(parsed):
        if enclosing_linalg_op(op) is None:
            continue
        loc = source_location(parsed, op)
        if loc is None:
            continue
        file, line_s, col_s = loc.rsplit(":", 2)
        if input_name and os.path.basename(file) != os.path.basename(input_name):
            continue
        line, col = int(line_s), int(col_s)
        if not 0 < line <= len(lines):
            continue
        entry = by_place.get((line, col))
        if entry is None:
            m = _SOURCE_OP.search(lines[line - 1][col - 1:])
            entry = by_place[(line, col)] = AssertSource(line, col, m.group(1) if m else "?")
        entry.asserts += 1
        msg = assert_message(parsed, op)
        if msg and msg not in entry.messages:
            entry.messages.append(msg)
    return sorted(by_place.values(), key=lambda e: (e.line, e.column))

"""MLA004 torch-op-lowers-to-assert: a torch op whose lowering puts `cf.assert`s into linalg
regions (e.g. `torch.aten.embedding`, `torch.aten.gather`).

A torch-dialect file has no `cf.assert` yet: they appear during `--compile-to=input`. The
dispatch engine lowers the file with `--mlir-print-debuginfo` and traces each lowered assert
that sits in a linalg region back to the source op through its location, so this works for any
op whose lowering does it, not a fixed list of names. Reported by the dispatch preview (the
CLI's --dispatch-count and the server's dispatch count), not by the plain text check.
"""

from __future__ import annotations

import os
import re

from ..syntax.asserts import assert_message, assert_ops, source_location
from ..syntax.op_tree import Op
from ..syntax.parsed_text import parse
from .base import Placement, Rule, Severity


def _match(op: Op) -> Placement | None:
    return None  # not a placement of a cf.assert: found by tracing a real lowering


RULE = Rule(
    code="MLA004",
    name="torch-op-lowers-to-assert",
    severity=Severity.INFORMATION,
    summary="torch op whose lowering puts cf.assert into linalg regions (costs dispatches)",
    match=_match,
    strip_is_safe=True,
)


def trace_asserts(lowered: str, source: str, input_name: str | None) -> list[dict]:
    """The source ops whose lowering put `cf.assert`s into linalg regions, found through the
    lowered asserts' locations (`--mlir-print-debuginfo`), not through a list of op names."""
    from ..rules.mla001_assert_in_linalg_region import enclosing_linalg_op

    parsed = parse(lowered)
    lines = source.split("\n")
    by_line: dict[tuple[int, int], dict] = {}
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
        m = re.search(r'(?:=\s*)?"?([a-z_][\w$]*\.[\w$.]+)', lines[line - 1][col - 1:])
        entry = by_line.setdefault((line, col), {"line": line, "column": col,
                                                  "op": m.group(1) if m else "?", "asserts": 0, "messages": []})
        entry["asserts"] += 1
        msg = assert_message(parsed, op)
        if msg and msg not in entry["messages"]:
            entry["messages"].append(msg)
    return sorted(by_line.values(), key=lambda e: (e["line"], e["column"]))


def message(src: dict) -> str:
    """The finding's message for one traced source op (an entry of `trace_asserts`)."""
    return (f"`{src['op']}` lowers to {src['asserts']} cf.assert in linalg regions, which block CSE and "
            f"fusion and can cost dispatches: " + "; ".join(f'"{m}"' for m in src["messages"]))


def concise(src: dict) -> str:
    """One line for the command line: `MLA004 `op` lowers to N cf.assert ...`."""
    return (f"MLA004 `{src['op']}` lowers to {src['asserts']} "
            f"cf.assert in linalg regions ({'; '.join(src['messages'])})")

"""MLA004 torch-op-lowers-to-assert: a torch op whose lowering puts `cf.assert`s into linalg
regions (e.g. `torch.aten.embedding`, `torch.aten.gather`).

A torch-dialect file has no `cf.assert` yet: they appear during `--compile-to=input`. The
dispatch engine lowers the file with `--mlir-print-debuginfo` and traces each lowered assert
that sits in a linalg region back to the source op through its location, so this works for any
op whose lowering does it, not a fixed list of names. Reported by the dispatch preview (the
CLI's --dispatch-count and the server's dispatch count) and by `--check --what-if`, not by the
plain text check.
"""

from __future__ import annotations

from ..iree_flags.strip_assertions import StripDecision
from .base import Placement, Rule, Severity, doc_url

TYPE_CHECKING = False  # typing's, without importing it (rules/base.py)
if TYPE_CHECKING:
    from ..findings import Finding
    from ..syntax.asserts import AssertSource
    from ..syntax.lines import LineIndex
    from ..syntax.op_tree import Op


def _match(op: Op) -> Placement | None:
    return None  # not a placement of a cf.assert: found by tracing a real lowering


def when_stripped(d: StripDecision) -> str:
    return f"IREE strips these asserts {d.phrase}: they cost no dispatch with these flags"


RULE = Rule(
    code="MLA004",
    name="torch-op-lowers-to-assert",
    severity=Severity.INFORMATION,
    summary="torch op whose lowering puts cf.assert into linalg regions (costs dispatches)",
    match=_match,
    strip_is_safe=True,
    when_stripped=when_stripped,
)


def message(src: AssertSource) -> str:
    """The finding's message for one traced source op (see `syntax.asserts.trace_asserts`)."""
    return (f"`{src.op}` lowers to {src.asserts} cf.assert in linalg regions, which block CSE and "
            f"fusion and can cost dispatches: " + "; ".join(f'"{m}"' for m in src.messages))


def concise(src: AssertSource) -> str:
    """One line for the command line: `MLA004 `op` lowers to N cf.assert ...`."""
    return (f"MLA004 `{src.op}` lowers to {src.asserts} "
            f"cf.assert in linalg regions ({'; '.join(src.messages)})")


def finding(src: AssertSource, lines: LineIndex, severity: Severity = RULE.severity,
            docs_base_url: str | None = None, strip: StripDecision | None = None) -> Finding:
    """The finding for one traced source op, on its name in the text of `lines` (the CLI's
    `--check --what-if` on torch input, where the what-if's lowering traced it); `strip`: what
    the flags the project compiles with say (IREE strips the lowered asserts from O1 up)."""
    from ..findings import Finding, Position, Span  # here: the rules' metadata (--explain) needs no findings

    start = lines.offset(src.line - 1, src.column - 1)
    end = min(start + len(src.op), lines.line_span(src.line - 1)[1])
    span = Span(start, end, Position(*lines.position(start)), Position(*lines.position(end)))
    stripped = strip is not None and strip.stripped
    text = message(src) + (f"; {when_stripped(strip)}" if strip is not None and stripped else "")
    return Finding(RULE.code, RULE.name, severity, text, span, assert_message="; ".join(src.messages),
                   doc_url=doc_url(RULE.code, docs_base_url), op_start=start,
                   stripped_by=strip.by if strip is not None and stripped else None)

"""MLA002 assert-in-dispatch: a `cf.assert` inside a dispatch or executable, not in linalg.

IREE does not check asserts inside dispatches at runtime, but the side effect still stops
CSE and code motion around it.
"""

from __future__ import annotations

from ..iree_flags.strip_assertions import StripDecision
from .base import Placement, Rule, Severity

TYPE_CHECKING = False  # typing's, without importing it (rules/base.py)
if TYPE_CHECKING:
    from ..syntax.op_tree import Op

DISPATCH_OPS = frozenset(
    {
        "flow.dispatch.workgroups",
        "flow.dispatch.region",
        "flow.executable",
        "stream.executable",
        "hal.executable",
    }
)


def enclosing_dispatch_op(op: Op) -> Op | None:
    for anc in op.ancestors():
        if anc.full_name in DISPATCH_OPS:
            return anc
    return None


def _match(op: Op) -> Placement | None:
    dispatch = enclosing_dispatch_op(op)
    if dispatch is None:
        return None
    return Placement(
        dispatch,
        f"cf.assert inside `{dispatch.full_name}` is never checked at runtime but blocks "
        "CSE and code motion",
    )


def when_stripped(d: StripDecision) -> str:
    return f"IREE strips this assert {d.phrase}: it blocks nothing with these flags"


RULE = Rule(
    code="MLA002",
    name="assert-in-dispatch",
    severity=Severity.WARNING,
    summary="cf.assert inside a dispatch or executable: not checked at runtime, blocks CSE",
    match=_match,
    strip_is_safe=True,
    when_stripped=when_stripped,
    stripped_severity=Severity.INFORMATION,
)

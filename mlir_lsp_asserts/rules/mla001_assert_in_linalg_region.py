"""MLA001 assert-in-linalg-region: a `cf.assert` inside the region of a linalg op.

torch-mlir's lowering of `aten.embedding`/`aten.gather` puts two of these into every gather
`linalg.generic` body. The assert has a side effect, so CSE cannot merge two identical
gathers; after const-expr hoisting they become two initializers and two extra dispatches
(SDXL CLIP: 1660 instead of 1658 for gfx942). Inside a dispatch IREE never checks them.
"""

from __future__ import annotations

from ..iree_flags.strip_assertions import StripDecision
from .base import Placement, Rule, Severity

TYPE_CHECKING = False  # typing's, without importing it (rules/base.py)
if TYPE_CHECKING:
    from ..syntax.op_tree import Op


def _match(op: Op) -> Placement | None:
    from ..syntax.asserts import enclosing_linalg_op  # loaded by the check that calls this

    linalg = enclosing_linalg_op(op)
    if linalg is None:
        return None
    return Placement(
        linalg,
        f"cf.assert inside a `{linalg.full_name}` region blocks CSE and fusion and can cost "
        "dispatches; inside a dispatch it is a no-op at runtime",
    )


def when_stripped(d: StripDecision) -> str:
    return f"IREE strips this assert {d.phrase}: it costs no dispatch with these flags"


RULE = Rule(
    code="MLA001",
    name="assert-in-linalg-region",
    severity=Severity.WARNING,
    summary="cf.assert inside a linalg region: blocks CSE and fusion, costs dispatches",
    match=_match,
    strip_is_safe=True,
    when_stripped=when_stripped,
    stripped_severity=Severity.INFORMATION,
)

"""MLA003 assert-on-host: a `cf.assert` on the host side, which reaches runtime as a check.

These are real runtime checks (e.g. torch-mlir's "mismatching contracting dimension" for
`aten.mm`). Removing one drops a check, so its strip fix is unsafe.
"""

from __future__ import annotations

from ..syntax.op_tree import Op
from .base import Placement, Rule, Severity


def _match(op: Op) -> Placement | None:
    return Placement(None, "host-side cf.assert: runs as a real check at runtime")


RULE = Rule(
    code="MLA003",
    name="assert-on-host",
    severity=Severity.INFORMATION,
    summary="host-side cf.assert: a real runtime check",
    match=_match,
    strip_is_safe=False,
)

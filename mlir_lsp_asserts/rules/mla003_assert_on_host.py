"""MLA003 assert-on-host: a `cf.assert` on the host side, which reaches runtime as a check.

These are real runtime checks (e.g. torch-mlir's "mismatching contracting dimension" for
`aten.mm`). Removing one drops a check, so its strip fix is unsafe.
"""

from __future__ import annotations

from ..iree_flags.strip_assertions import StripDecision
from .base import Placement, Rule, Severity

TYPE_CHECKING = False  # typing's, without importing it (rules/base.py)
if TYPE_CHECKING:
    from ..syntax.op_tree import Op


def _match(op: Op) -> Placement | None:
    return Placement(None, "host-side cf.assert: runs as a real check at runtime")


def when_stripped(d: StripDecision) -> str:
    # Measured with IREE 3.13: at O0 a host assert becomes a `vm.fail` in the module; with the
    # strip on it is gone (functions and initializers alike), only IREE's own input checks stay.
    return (f"IREE strips this assert {d.phrase}: the compiled module does not check it at runtime "
            "(only IREE's own checks of the inputs' shapes and types remain)")


RULE = Rule(
    code="MLA003",
    name="assert-on-host",
    severity=Severity.INFORMATION,
    summary="host-side cf.assert: a real runtime check",
    match=_match,
    strip_is_safe=False,
    when_stripped=when_stripped,
)

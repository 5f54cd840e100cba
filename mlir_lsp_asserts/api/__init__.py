"""The Python API: `check`, `fix`, `count_dispatches`, `compile_fixed` and their typed results,
re-exported by `mlir_lsp_asserts` (docs/python-api.md).

    import mlir_lsp_asserts as mla
    mla.check("model.mlir").findings
"""

from __future__ import annotations

from ..errors import CompileError, FixError, MlirLspError, SourceError, UsageError
from .functions import check, compile_fixed, count_dispatches, fix
from .results import CheckResult, CompileFixedResult, DispatchCount, Finding, FixResult, WhatIfCount

# The same names as the package's `__all__` (which cannot import this module to read them: importing
# the package stays cheap); tests/test_api.py holds the two lists equal.
__all__ = [
    "check",
    "fix",
    "count_dispatches",
    "compile_fixed",
    "CheckResult",
    "Finding",
    "FixResult",
    "DispatchCount",
    "WhatIfCount",
    "CompileFixedResult",
    "MlirLspError",
    "SourceError",
    "FixError",
    "CompileError",
    "UsageError",
]

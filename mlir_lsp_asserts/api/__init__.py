"""The Python API: `check`, `fix`, `count_dispatches`, `compile_fixed` and their typed results,
re-exported by `mlir_lsp_asserts` (docs/python-api.md).

    import mlir_lsp_asserts as mla
    mla.check("model.mlir").findings
"""

from __future__ import annotations

from ..errors import CompileError, FixError, MlirLspError, SourceError, UsageError  # noqa: F401 (in __all__)
from .functions import check, compile_fixed, count_dispatches, fix  # noqa: F401
from .results import CheckResult, CompileFixedResult, DispatchCount, Finding, FixResult, WhatIfCount  # noqa: F401

# The package re-exports these (its `__all__` adds `__version__`; tests/test_api.py holds the two equal).
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

"""The Python API: `check`, `fix`, `count_dispatches`, `compile_fixed` and their typed results,
re-exported by `mlir_lsp_asserts` (docs/python-api.md).

    import mlir_lsp_asserts as mla
    mla.check("model.mlir").findings
"""

from __future__ import annotations

from .. import __all__ as _package_names
from ..errors import CompileError, FixError, MlirLspError, SourceError, UsageError  # noqa: F401 (in __all__)
from .functions import check, compile_fixed, count_dispatches, fix  # noqa: F401
from .results import CheckResult, CompileFixedResult, DispatchCount, Finding, FixResult, WhatIfCount  # noqa: F401

# The package's `__all__` (written once, there: importing the package must not import this).
__all__ = [name for name in _package_names if name != "__version__"]

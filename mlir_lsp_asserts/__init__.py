"""mlir-lsp: find the `cf.assert` ops that cost IREE dispatches, fix them, count the dispatches.

    import mlir_lsp_asserts as mla

    mla.check(src)                                   # findings
    mla.fix(src, mode="assume")                      # the fixed text (or .module())
    mla.count_dispatches(src, what_if="assume")      # flow-level count, per function, what-if
    mla.compile_fixed(src, fix_mode="assume")        # lower, fix, compile on: a .vmfb

`src`: a path, text, bytes (text or bytecode), an `iree.compiler.ir` Module or Operation, or an
iree-turbine `ExportOutput`. See docs/python-api.md. Importing the package loads none of this
(nor IREE): the names below are loaded when first used.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

TYPE_CHECKING = False  # typing's, without importing typing (`mlir-lsp --version` starts without it)
if TYPE_CHECKING:
    from typing import Any

    from .api import (
        CheckResult,
        CompileError,
        CompileFixedResult,
        DispatchCount,
        Finding,
        FixError,
        FixResult,
        MlirLspError,
        SourceError,
        UsageError,
        WhatIfCount,
        check,
        compile_fixed,
        count_dispatches,
        fix,
    )

__all__ = [
    "__version__",
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


def __getattr__(name: str) -> Any:
    """The API's names, imported from `mlir_lsp_asserts.api` on first use (PEP 562)."""
    if name in __all__:
        value = getattr(importlib.import_module(".api", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


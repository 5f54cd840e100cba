"""The API's results: frozen dataclasses, lines and columns 1-based as the CLI prints them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..dispatch.compile_fixed import CompileFixedResult
from ..findings import Finding as CoreFinding

__all__ = ["CheckResult", "CompileFixedResult", "DispatchCount", "Finding", "FixResult", "WhatIfCount"]


@dataclass(frozen=True)
class Finding:
    """One finding: `code` (MLA001...), its rule's `name`, `severity`, `message`, where (1-based
    `line`/`column` to `end_line`/`end_column`), the assert's own message, whether a safe fix
    exists (`fixable`), the rule's page."""

    code: str
    name: str
    severity: str
    message: str
    line: int
    column: int
    end_line: int
    end_column: int
    assert_message: str | None = None
    fixable: bool = False
    doc_url: str | None = None
    source_location: str | None = None  # the op's location in another file (bytecode input)

    @classmethod
    def of(cls, f: CoreFinding) -> Finding:
        s, e = f.span.start_pos, f.span.end_pos
        return cls(f.code, f.name, f.severity.value, f.full_message, s.line + 1, s.character + 1, e.line + 1,
                   e.character + 1, f.assert_message, any(x.applicability == "safe" for x in f.fixes), f.doc_url,
                   f.source_location)

    def __str__(self) -> str:
        return f"{self.line}:{self.column}: {self.code} {self.message}"


@dataclass(frozen=True)
class CheckResult:
    """`findings` of `source` (a path, or <text>, <bytes>, <module>, <export>)."""

    source: str
    findings: tuple[Finding, ...]
    is_bytecode: bool = False
    suppressed: int = 0  # findings silenced by `// mlir-lsp: ignore` comments
    notes: tuple[str, ...] = ()  # e.g. torch IR not lowered: its MLA004 findings are not known

    def by_code(self) -> dict[str, int]:
        """How many findings of each rule code."""
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.code] = out.get(f.code, 0) + 1
        return out


@dataclass(frozen=True)
class FixResult:
    """The fixed `text` (`changed`: whether any fix applied), how many asserts were fixed (by rule
    code; `assumed` of them rewritten to `util.assume.int`), the host asserts kept (MLA003: real
    runtime checks), the findings left, notes."""

    source: str
    text: str
    changed: bool
    asserts_fixed: int
    assumed: int
    fixed_by_code: Mapping[str, int]
    host_asserts_kept: int
    remaining: tuple[Finding, ...]
    notes: tuple[str, ...] = ()

    def module(self, context: Any = None) -> Any:
        """The fixed text parsed into an `iree.compiler.ir.Module` (in `context`, else a new one)."""
        from iree.compiler import ir

        return ir.Module.parse(self.text, context if context is not None else ir.Context())


@dataclass(frozen=True)
class WhatIfCount:
    """The count with all safe fixes applied (`mode` strip or assume) and the dispatches saved."""

    mode: str
    flow_dispatches: int
    per_function: Mapping[str, int]
    asserts_fixed: int
    saved: int
    stream_dispatches: int | None = None


@dataclass(frozen=True)
class DispatchCount:
    """Flow-level dispatches (`flow.dispatch.workgroups` at dispatch-creation) of `source` for
    `profile`, split per function (`util.initializer#N` for hoisted constants, run once at load),
    and with `what_if` the count with the fixes."""

    source: str
    profile: str
    compiler_version: str
    flow_dispatches: int
    per_function: Mapping[str, int]
    initializer_dispatches: int
    function_dispatches: int
    stream_dispatches: int | None = None
    what_if: WhatIfCount | None = None
    notes: tuple[str, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())
    seconds: float = 0.0

"""What a rule is: a code, a name, a default severity, a doc page, and a check on one assert."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..findings import Severity
from ..syntax.op_tree import Op

DOCS_URL = "https://github.com/mlir-lsp/mlir-lsp/blob/main/docs/rules/{code}.md"


@dataclass(frozen=True)
class Placement:
    """Why a rule matched: the ancestor op it is about (or None) and a sentence of reason."""

    related: Op | None
    reason: str


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: Severity
    summary: str
    # Returns a Placement when this rule owns the assert `op`, else None.
    match: Callable[[Op], Placement | None]
    # Whether stripping the assert keeps every observable behaviour (see docs/rules).
    strip_is_safe: bool

    @property
    def doc_url(self) -> str:
        return DOCS_URL.format(code=self.code)

    @property
    def doc_path(self) -> str:
        return f"docs/rules/{self.code}.md"

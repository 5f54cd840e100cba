"""Findings: what the checker reports, as plain data (offsets + line/character positions)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for the annotation only: the findings are below every other module of the core
    from .dispatch.measured_cost import Measured


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFORMATION = "information"
    HINT = "hint"

    @classmethod
    def parse(cls, value: str) -> Severity:
        v = value.strip().lower()
        aliases = {"info": "information", "warn": "warning", "err": "error"}
        return cls(aliases.get(v, v))


class FixMode(StrEnum):
    """How a fix removes an assert: delete it, or rewrite it to `util.assume.int` range facts."""

    STRIP = "strip"
    ASSUME = "assume"


class Applicability(StrEnum):
    """As ruff's: a safe fix keeps every observable behaviour; an unsafe one drops a runtime
    check (a host assert) and is applied only when asked (`--unsafe-fixes`)."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, slots=True)
class Position:
    line: int  # 0-based, as in LSP
    character: int  # 0-based UTF-16 units, as in LSP


@dataclass(frozen=True, slots=True)
class Span:
    start: int  # offsets into the text
    end: int
    start_pos: Position
    end_pos: Position

    def as_json(self) -> dict:
        return {
            "start": {"line": self.start_pos.line, "character": self.start_pos.character},
            "end": {"line": self.end_pos.line, "character": self.end_pos.character},
        }


@dataclass(frozen=True, slots=True)
class TextEdit:
    start: int
    end: int
    new_text: str


@dataclass(frozen=True, slots=True)
class Fix:
    title: str
    mode: FixMode
    applicability: Applicability
    edits: tuple[TextEdit, ...]


@dataclass(frozen=True, slots=True)
class Related:
    span: Span
    message: str


@dataclass(slots=True)
class Finding:
    code: str
    name: str
    severity: Severity
    message: str
    span: Span
    assert_message: str | None = None
    related: tuple[Related, ...] = ()
    doc_url: str | None = None
    fixes: list[Fix] = field(default_factory=list)
    # Why the assume fix is not offered (None when it is, or when not computed).
    assume_unavailable: str | None = None
    # Source location of the op in another file (for .mlirbc input with debug locations).
    source_location: str | None = None
    op_start: int = 0  # offset of the op (fix machinery)
    # What a what-if compile measured for it, when one ran.
    measured: Measured | None = None
    # The flag that makes IREE strip this assert itself (`--iree-opt-level=O3`), when one does.
    stripped_by: str | None = None

    @property
    def full_message(self) -> str:
        """The message, with the measured note when there is one."""
        return f"{self.message}; {self.measured.note}" if self.measured is not None else self.message

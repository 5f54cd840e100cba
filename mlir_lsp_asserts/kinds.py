"""The enumerations a finding is made of: its severity, a fix's mode and applicability. Plain
enums, apart from `findings.py` (which re-exports them) so that the rules' metadata
(`mlir-lsp --explain`) loads without the findings' classes and `dataclasses`."""

from __future__ import annotations

from enum import Enum, StrEnum


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

"""Findings: what the checker reports, as plain data (offsets + line/character positions)."""

from __future__ import annotations

from .kinds import Applicability, FixMode, Severity
from .records import NamedTuple, field, record

__all__ = ["Applicability", "FixMode", "Severity", "Position", "Span", "TextEdit", "Fix", "Related", "Measured",
           "Finding"]


class Position(NamedTuple):
    """A place in the text as LSP counts it."""

    line: int  # 0-based, as in LSP
    character: int  # 0-based UTF-16 units, as in LSP


class Span(NamedTuple):
    """A range of the text: offsets, and the same as positions."""

    start: int  # offsets into the text
    end: int
    start_pos: Position
    end_pos: Position

    def as_json(self) -> dict:
        return {
            "start": {"line": self.start_pos.line, "character": self.start_pos.character},
            "end": {"line": self.end_pos.line, "character": self.end_pos.character},
        }


class TextEdit(NamedTuple):
    """Replace the text from `start` to `end` (offsets) with `new_text`."""

    start: int
    end: int
    new_text: str


class Fix(NamedTuple):
    """One way to fix a finding: its edits, the mode they follow and whether it is safe."""

    title: str
    mode: FixMode
    applicability: Applicability
    edits: tuple[TextEdit, ...]


class Related(NamedTuple):
    """Another place a finding points to, with what it is."""

    span: Span
    message: str


class Measured(NamedTuple):
    """What a what-if compile measured, as it concerns one finding (dispatch/measured_cost.py
    fills it in; the findings carry it)."""

    profile: str
    flags: tuple[str, ...]
    mode: str  # the what-if's fix: strip or assume
    flow_dispatches: int
    what_if_flow_dispatches: int
    # The dispatches the finding's assert (or, failing that, its linalg op) ends up in, and which
    # of them exist only because of asserts; None: the preview had no attribution.
    dispatches: tuple[str, ...] | None
    extra: tuple[str, ...] = ()

    @property
    def saved(self) -> int:
        return self.flow_dispatches - self.what_if_flow_dispatches

    @property
    def free(self) -> bool:
        """Removing the file's asserts saves no dispatch with this profile."""
        return self.saved <= 0

    @property
    def only_because_of_asserts(self) -> bool | None:
        return None if self.dispatches is None else bool(self.extra)

    @property
    def note(self) -> str:
        where = f"profile {self.profile}" + (f" with {' '.join(self.flags)}" if self.flags else "")
        parts = []
        if self.dispatches:
            names = ", ".join(self.dispatches[:4]) + (" ..." if len(self.dispatches) > 4 else "")
            plural = len(self.dispatches) > 1
            if not self.extra:
                tail = "which stay" if plural else "which stays"
                parts.append(f"in dispatch{'es' if plural else ''} {names}, {tail} with the asserts removed")
            elif not plural:
                parts.append(f"in dispatch {names}, which exists only because of asserts")
            else:
                parts.append(f"in dispatches {names}; {', '.join(self.extra)} only because of asserts")
        verb = ("removing the asserts" if self.mode == "strip"
                else "rewriting the asserts to util.assume.int")
        n = abs(self.saved)
        counts = f"({self.flow_dispatches} -> {self.what_if_flow_dispatches})"
        if self.saved >= 0:
            parts.append(f"{verb} in this file saves {n} dispatch{'' if n == 1 else 'es'} {counts}")
        else:
            parts.append(f"{verb} in this file adds {n} dispatch{'' if n == 1 else 'es'} {counts}")
        return f"measured with {where}: " + "; ".join(parts)

    def as_json(self) -> dict:
        return {"profile": self.profile, "flags": list(self.flags), "mode": self.mode,
                "flow_dispatches": self.flow_dispatches, "what_if_flow_dispatches": self.what_if_flow_dispatches,
                "saved": self.saved, "free": self.free,
                "dispatch": self.dispatches[0] if self.dispatches else None,
                "dispatches": None if self.dispatches is None else list(self.dispatches),
                "only_because_of_asserts": self.only_because_of_asserts, "note": self.note}


@record(slots=True)
class Finding:
    """One finding: rule, severity, message and where; its fixes and related places."""

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

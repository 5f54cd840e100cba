"""What a document kept in pieces answers, in document coordinates (see live_text.py).

Findings are checked piece by piece, so their offsets and spans are relative to the text checked;
a `FindingGroup` carries them with what turns them into document positions, the way MLIR's
`MLIRTextFile` adjusts a chunk's locations, and callers never see a piece. A `Place` is a
position resolved for navigation: the check around it, and the lookups a big function needs
across its pieces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..check import CheckResult
from ..findings import Finding, Span, TextEdit
from ..syntax.lines import LineIndex

Pos = tuple[int, int]
Range = tuple[Pos, Pos]


class FindingGroup:
    """Findings checked together, and their positions in the document. `key` names the group for
    a later request about the same version (a code action resolved after it was listed)."""

    __slots__ = ("key", "result", "first_line", "lines")

    def __init__(self, key: int, result: CheckResult, first_line: int, lines: LineIndex):
        self.key = key
        self.result = result
        self.first_line = first_line  # the document line that the group's line 0 is
        self.lines = lines

    @property
    def findings(self) -> list[Finding]:
        return self.result.findings

    def position(self, offset: int) -> Pos:
        line, char = self.lines.position(offset)
        return line + self.first_line, char

    def range(self, start: int, end: int) -> Range:
        return self.position(start), self.position(end)

    def span(self, span: Span) -> Range:
        return ((span.start_pos.line + self.first_line, span.start_pos.character),
                (span.end_pos.line + self.first_line, span.end_pos.character))

    def offset(self, pos: Pos) -> int:
        """The group's offset of a document position (clamped into the group's text)."""
        return self.lines.offset(pos[0] - self.first_line, pos[1])

    def edits(self, edits: list[TextEdit] | tuple[TextEdit, ...]) -> list[tuple[Range, str]]:
        return [(self.range(e.start, e.end), e.new_text) for e in edits]


@dataclass(frozen=True, slots=True)
class Elsewhere:
    """Where a value of a big function is defined, outside the piece asked about."""

    range: Range
    line_text: str  # the first line of the defining statement


class PieceLookups(Protocol):
    """What a `Place` asks of the text that made it (live_text.LiveText), about its piece."""

    def first_line_of(self, i: int) -> int: ...

    def piece_kind(self, i: int) -> str: ...

    def checked_with_fixes(self, i: int) -> CheckResult | None: ...

    def definition_elsewhere(self, i: int, name: str) -> Elsewhere | None: ...

    def uses_elsewhere(self, i: int, name: str) -> list[Range]: ...


class Place(FindingGroup):
    """A document position resolved to the text checked around it (`result`), at its offset `at`."""

    __slots__ = ("at", "_live", "_piece")

    def __init__(self, live: PieceLookups, piece: int, offset: int, result: CheckResult):
        super().__init__(piece, result, live.first_line_of(piece), result.parsed.lines)
        self.at = offset
        self._live, self._piece = live, piece

    @property
    def text(self) -> str:
        return self.result.parsed.text

    @property
    def in_big_function(self) -> bool:
        """Is the place inside the body of a big function (kept in several pieces)?"""
        return self._live.piece_kind(self._piece) == "body"

    def with_fixes(self) -> CheckResult | None:
        """The check with its fixes (None where nothing was found)."""
        return self._live.checked_with_fixes(self._piece)

    def definition_elsewhere(self, name: str) -> Elsewhere | None:
        """Where `%name`, used here in a big function's body but not defined here, is defined."""
        if not self.in_big_function:
            return None
        return self._live.definition_elsewhere(self._piece, name)

    def uses_elsewhere(self, name: str) -> list[Range]:
        """Every `%name` of the big function outside the text checked here."""
        return self._live.uses_elsewhere(self._piece, name)


@dataclass(frozen=True, slots=True)
class Symbol:
    """A top-level op of the document (document symbols, folding, `@name` lookups)."""

    full_name: str
    symbol: str | None
    range: Range  # the whole op
    selection: Range  # its name
    symbol_range: Range  # its `@name` (its name when it has none)
    line_text: str  # its first line

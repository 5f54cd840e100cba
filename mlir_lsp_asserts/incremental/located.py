"""What a document kept in pieces answers, in document coordinates (see live_text.py).

Findings are checked piece by piece, so their offsets and spans are relative to the text checked;
a `FindingGroup` carries them with what turns them into document positions, the way MLIR's
`MLIRTextFile` adjusts a chunk's locations, and callers never see a piece. A `Place` is a
position resolved for navigation: the check around it, and the lookups a big function needs
across its pieces (big_function.py), given the document's pieces and their first lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..checker import CheckResult
from ..config import Settings
from ..findings import Finding, Span, TextEdit
from ..syntax.lines import LineIndex
from .big_function import value_definition_elsewhere, value_uses_elsewhere, with_fixes
from .pieces import Piece

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


def piece_range(p: Piece, first_line: int, start: int, end: int) -> Range:
    """The document range of offsets start..end of piece `p`, whose first line is `first_line`."""
    lines = p.lines
    s, e = lines.position(start), lines.position(end)
    return (s[0] + first_line, s[1]), (e[0] + first_line, e[1])


def definition_elsewhere(pieces: list[Piece], line0: Sequence[int], i: int, name: str) -> Elsewhere | None:
    """Where `%name`, used in body piece i of a big function, is defined in another of its pieces
    (`line0`: each piece's first line)."""
    where = value_definition_elsewhere(pieces, i, name)
    if where is None:
        return None
    j, at = where
    text = pieces[j].text
    nl = text.find("\n", at)
    line_text = text[text.rfind("\n", 0, at) + 1:len(text) if nl == -1 else nl][:300]
    return Elsewhere(piece_range(pieces[j], line0[j], at, at + 1 + len(name)), line_text)


def uses_elsewhere(pieces: list[Piece], line0: Sequence[int], i: int, name: str) -> list[Range]:
    """Every `%name` of the big function of piece i outside that piece."""
    return [piece_range(pieces[j], line0[j], at, at + 1 + len(name))
            for j, at in value_uses_elsewhere(pieces, i, name)]


class Place(FindingGroup):
    """A document position resolved to the text checked around it (`result`), at its offset `at`
    in piece `key`. Its lookups read the document's pieces and their first lines (`line0`), as
    `LiveText.place` passed them: ask them before the document is edited again."""

    __slots__ = ("at", "_pieces", "_line0", "_settings")

    def __init__(self, pieces: list[Piece], line0: Sequence[int], settings: Settings, piece: int, offset: int,
                 result: CheckResult):
        super().__init__(piece, result, line0[piece], result.parsed.lines)
        self.at = offset
        self._pieces, self._line0, self._settings = pieces, line0, settings

    @property
    def text(self) -> str:
        return self.result.parsed.text

    @property
    def in_big_function(self) -> bool:
        """Is the place inside the body of a big function (kept in several pieces)?"""
        return self._pieces[self.key].kind == "body"

    def with_fixes(self) -> CheckResult | None:
        """The check with its fixes (None where nothing was found)."""
        return with_fixes(self._pieces, self.key, self._settings)

    def definition_elsewhere(self, name: str) -> Elsewhere | None:
        """Where `%name`, used here in a big function's body but not defined here, is defined."""
        if not self.in_big_function:
            return None
        return definition_elsewhere(self._pieces, self._line0, self.key, name)

    def uses_elsewhere(self, name: str) -> list[Range]:
        """Every `%name` of the big function outside the text checked here."""
        return uses_elsewhere(self._pieces, self._line0, self.key, name)


@dataclass(frozen=True, slots=True)
class Symbol:
    """A top-level op of the document (document symbols, folding, `@name` lookups)."""

    full_name: str
    symbol: str | None
    range: Range  # the whole op
    selection: Range  # its name
    symbol_range: Range  # its `@name` (its name when it has none)
    line_text: str  # its first line

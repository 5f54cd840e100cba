"""The pieces an editor's document is kept in, and the rules for where they may be cut.

A piece is a run of whole lines: whole top-level ops (*unit*), text between them (*glue*), or the
*header*, *body* runs of statements and *closer* of a big function (see live_text.py). This
module holds the pieces as data and the pure rules on text that decide cuts: where top-level ops
start (`segment`), where a big function's body may be cut (`cut_points`), whether a line starts a
statement (`starts_statement`, the reader's own line rule), and each piece's outline.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import cast

from ..checker import CheckResult
from ..syntax.lines import LineIndex
from ..syntax.op_tree import ChildPairs, Op
from ..syntax.parsed_text import parse
from ..syntax.reader import Reader
from ..syntax.reader_patterns import Matches, skip_ws
from ..syntax.statements import BlockStatements, block_labels, code_end

# Body pieces of a big function are cut at the first statement after this many characters.
BODY_PIECE_CHARS = 16 * 1024
ASSERT_LITERAL = "cf.assert"
# Blank lines and comments (not `// -----` separators) that may follow a top-level op in its piece;
# a suppression comment (`// mlir-lsp: ignore`) belongs to the op after it, so it is not one.
TRAILING = re.compile(r"(?:[ \t]*(?://(?![ \t]*-----)(?![^\n]*mlir-lsp)[^\n]*)?\r?\n)*")
trailing = cast(Matches, TRAILING.match)  # it matches the empty string: never None

Pos = tuple[int, int]


@dataclass(slots=True, eq=False)
class BigUnit:
    """A top-level op kept in header, body and closer pieces. `op` is its header read alone (its
    name and its ancestors are what the rules ask of it); `brace` the offset of its region's `{`
    in the header piece."""

    op: Op
    brace: int
    body_chars: int  # characters of the region from its `{` to its `}` included


@dataclass(slots=True, eq=False)
class Piece:
    """A run of whole lines. Its text is its own string once edited; until then it is a span of the
    text the document was read from (`_base`), so a 50 MB document is held once, not twice."""

    _own: str | None
    newlines: int
    standalone: bool
    # "unit" (whole top-level ops), "glue", or the "header", "body" and "closer" of a big unit.
    kind: str = "unit"
    unit: BigUnit | None = None
    pairs: ChildPairs | None = None  # a body piece's `{...}` pairs (piece-relative)
    labels: bool | None = None  # whether a body piece holds a label of the function's block
    # The piece's own check (offsets and lines relative to the piece); None until needed for a
    # piece known to hold no finding (`clean`).
    result: CheckResult | None = None
    clean: bool = False
    outline: list[Outline] | None = None  # top-level ops, computed on first request
    fixes_ready: bool = False  # fixes are attached on first request (code action, hover)
    # A front end's cache of its rendering of the findings: (the first line and whatever else it
    # depends on, which it was made for; the rendering; how many findings it shows).
    rendered: tuple[int, object, str, int] | None = None
    _lines: LineIndex | None = None
    _base: str = ""  # the text the piece is a span of (none for a piece with its own text)
    _start: int = 0
    _end: int = 0

    @property
    def text(self) -> str:
        return self._own if self._own is not None else self._base[self._start:self._end]

    @property
    def big(self) -> BigUnit:
        """The big unit a header, body or closer piece is part of."""
        assert self.unit is not None, f"a {self.kind} piece is no part of a big unit"
        return self.unit

    @property
    def size(self) -> int:
        return len(self._own) if self._own is not None else self._end - self._start

    def span(self) -> tuple[str, int, int]:
        """The piece as (string, start, end) of a string it is part of (no copy)."""
        if self._own is not None:
            return self._own, 0, len(self._own)
        return self._base, self._start, self._end

    def contains(self, needle: str) -> bool:
        if self._own is not None:
            return needle in self._own
        return self._base.find(needle, self._start, self._end) != -1

    @property
    def lines(self) -> LineIndex:
        if self.result is not None:
            return self.result.parsed.lines
        if self._lines is None:
            self._lines = LineIndex(self.text)
        return self._lines


@dataclass(frozen=True, slots=True)
class Outline:
    """A top-level op of a piece, for document symbols and folding (piece-relative offsets)."""

    full_name: str
    symbol: str | None
    start: int
    end: int
    name_start: int
    name_len: int


SYMBOL = re.compile(r'@([\w$.\-]+|"[^"]*")')


def make_piece(text: str, standalone: bool, kind: str = "unit", unit: BigUnit | None = None) -> Piece:
    return Piece(text, text.count("\n"), standalone, kind if standalone or kind != "unit" else "glue", unit)


def view_piece(base: str, s: int, e: int, standalone: bool, kind: str = "unit", unit: BigUnit | None = None) -> Piece:
    """A piece that is the span [s, e) of `base`, not a copy of it."""
    return Piece(None, base.count("\n", s, e), standalone, kind if standalone or kind != "unit" else "glue", unit,
                 _base=base, _start=s, _end=e)


def segment(text: str, parsed=None) -> list[tuple[int, int, bool]]:
    """Split `text` into (start, end, standalone) pieces at its top-level ops' line starts."""
    parsed = parsed or parse(text)
    out: list[tuple[int, int, bool]] = []
    pos = 0  # end of what is already covered
    for _chunk, op in parsed.units():
        ls = text.rfind("\n", 0, op.start) + 1
        if ls < pos or text[ls:op.start].strip():
            continue  # shares a line with what precedes it: stays in glue
        ls = _with_suppressions(text, pos, ls)
        eol = text.find("\n", op.end)
        eol = len(text) if eol == -1 else eol + 1
        tail = text[op.end:eol].strip()
        if tail and not tail.startswith("//"):
            continue  # something else follows on its last line
        end = trailing(text, eol).end()
        if ls > pos:
            out.append((pos, ls, False))
        out.append((ls, end, True))
        pos = end
    if pos < len(text) or not out:
        out.append((pos, len(text), False))
    return out


def _with_suppressions(text: str, pos: int, ls: int) -> int:
    """The start of the suppression comments right above the line at `ls` (not before `pos`):
    they go into the op's piece, which is checked alone."""
    while ls > pos:
        prev = text.rfind("\n", 0, ls - 1) + 1
        line = text[prev:ls].lstrip()
        if not (line.startswith("//") and "mlir-lsp" in line):
            break
        ls = prev
    return ls


def cut_points(bs: BlockStatements, lo: int, hi: int) -> list[int]:
    """Line starts in (lo, hi) at which body pieces begin: the first statement after every
    `BODY_PIECE_CHARS`, never a block label or a line holding an assert (whose suppression
    comment would then sit in another piece)."""
    text = bs.text
    cuts = []
    target = lo + BODY_PIECE_CHARS
    while target < hi:
        pos = text.find("\n", target, hi) + 1
        if pos == 0:
            break
        while pos < hi:
            q = bs.first_code(pos)
            if q >= hi:
                pos = hi
                break
            span = bs.pairs.span_at(q)
            if span is not None:
                pos = text.find("\n", span[1], hi) + 1 or hi
                continue
            le = text.find("\n", q, hi)
            le = hi if le == -1 else le
            ls = text.rfind("\n", 0, q) + 1
            if text[q] != "^" and "cf.assert" not in text[ls:le] and bs.start_of(q) == q:
                cuts.append(ls)
                break
            pos = le + 1
        target = max(pos, (cuts[-1] if cuts else lo)) + BODY_PIECE_CHARS
    return cuts


def _last_code_line(text: str) -> tuple[int, int] | None:
    """(line start, code end) of the last line of `text` with code, or None."""
    end = len(text)
    while end > 0:
        le = end - 1 if text.endswith("\n", 0, end) else end
        ls = text.rfind("\n", 0, le) + 1
        ce = code_end(text, ls, le)
        if ce > ls:
            return ls, ce
        end = ls
    return None


def starts_statement(before: str, after: str) -> bool:
    """Does the first code of `after` start a statement when `after` follows `before` in a block?
    The reader's line rule on the two lines around the break (syntax/statements.py)."""
    q = skip_ws(after).end()
    if q >= len(after) or after[q] == "^":
        return True
    last = _last_code_line(before)
    if last is None:
        return False  # nothing to judge by here: the caller grows the piece
    ls, ce = last
    if before[skip_ws(before, ls).end()] == "^":
        return True
    le = after.find("\n", q)
    small = before[ls:ce] + "\n" + after[:len(after) if le == -1 else le]
    if after[q] in ")]":
        return False
    return not Reader(small).continues(ce - ls, ce - ls + 1)


def opens_region(header: str, brace: int, body: str) -> bool:
    """Is the header's `{` still read as a region with `body` after it?"""
    le = body.find("\n", skip_ws(body).end())
    small = header[brace:] + body[:len(body) if le == -1 else le]
    return Reader(small).is_region(0)


def keeps_region(before: str, after: str) -> bool:
    """When `before` ends with a `{` (a module's), is it still read as a region with `after`
    following it? (What the first op after it is decides: `"{"  op` makes it a dictionary.)"""
    last = _last_code_line(before)
    if last is None:
        return True
    _ls, ce = last
    return before[ce - 1] != "{" or opens_region(before, ce - 1, after)


def has_labels(p: Piece) -> bool:
    """Does a body piece hold a block label of the function's own block? (Kept on the piece.)"""
    if p.labels is None:
        assert p.pairs is not None, "a body piece has its pairs"
        text = p.text
        p.labels = bool(block_labels(text, 0, len(text), p.pairs))
    return p.labels


def holds(spots: list[int], start: int, end: int) -> bool:
    k = bisect.bisect_left(spots, start)
    return k < len(spots) and spots[k] < end


def outline_pieces(parsed, pieces: list[Piece], starts: list[int]) -> None:
    """Give every piece its outline from the whole read (no piece is read again for it)."""
    outlines: list[list[Outline]] = []
    for p in pieces:
        p.outline = []
        outlines.append(p.outline)
    text = parsed.text
    for _chunk, op in parsed.units():
        k = bisect.bisect_right(starts, op.start) - 1
        outlines[k].append(outline_entry(text, op, starts[k]))


def outline_entry(text: str, op, base: int = 0) -> Outline:
    m = SYMBOL.search(text, op.name_start, min(op.end, op.name_start + 400))
    return Outline(op.full_name, m.group(1) if m else None, op.start - base, op.end - base,
                   op.name_start - base, len(op.name))


def outline_of(result: CheckResult) -> list[Outline]:
    return [outline_entry(result.parsed.text, op) for _chunk, op in result.parsed.units()]

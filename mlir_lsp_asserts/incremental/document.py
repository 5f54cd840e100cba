"""A document kept in pieces, checked piece by piece, for editors: an edit costs one function.

    doc = LiveDocument(text, settings)
    doc.apply_change(((line, char), (end_line, end_char)), "new text")   # or (None, full_text)
    for line0, finding, lines in doc.findings(): ...

The text is split at the line starts of its top-level ops (functions, globals, executables).
A *standalone* piece holds whole top-level ops and the blank lines and comments after them, so
the checker gives the same findings for it read alone as for it read in the whole file; the
rest (module headers and closers, `// -----` separators, aliases) is *glue*. An edit inside
standalone pieces splices only those pieces' small strings and re-checks them alone; an edit
that touches glue re-reads the whole text (rare: editing a module header). Line positions are
a running sum of the pieces' line counts, so nothing proportional to the file's size is done
per keystroke except one C-speed sum over the piece list.

Small documents are one piece: for them a whole re-check is already a few milliseconds, and
the result is exact by construction. Pieces are used from `PIECES_MIN_CHARS` up, and also a
document whose glue holds a finding (an assert written on one line with its module) stays one
piece, so a finding always lives in a piece that can be checked alone.

Knows nothing of LSP: positions are 0-based (line, UTF-16 character) pairs.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections import OrderedDict
from dataclasses import dataclass

from ..check import CheckResult, check_text
from ..config import Settings
from ..syntax.document import parse
from ..syntax.index import LineIndex

PIECES_MIN_CHARS = 512 * 1024
ASSERT_LITERAL = "cf.assert"
# Blank lines and comments (not `// -----` separators) that may follow a top-level op in its piece.
_TRAILING = re.compile(r"(?:[ \t]*(?://(?![ \t]*-----)[^\n]*)?\r?\n)*")
# How many clean pieces keep a parsed form for navigation requests.
PARSED_CACHE = 32

Pos = tuple[int, int]


@dataclass(slots=True, eq=False)
class Piece:
    text: str
    newlines: int
    standalone: bool
    # The piece's own check (offsets and lines relative to the piece); None until needed for a
    # piece known to hold no finding (`clean`).
    result: CheckResult | None = None
    clean: bool = False
    outline: list[Outline] | None = None  # top-level ops, computed on first request
    fixes_ready: bool = False  # fixes are attached on first request (code action, hover)
    # A front end's cache of its rendering of the findings, with the first line it was made for.
    rendered: tuple[int, object] | None = None
    _lines: LineIndex | None = None

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


_SYMBOL = re.compile(r'@([\w$.\-]+|"[^"]*")')


def _make_piece(text: str, standalone: bool) -> Piece:
    return Piece(text, text.count("\n"), standalone)


def segment(text: str, parsed=None) -> list[tuple[int, int, bool]]:
    """Split `text` into (start, end, standalone) pieces at its top-level ops' line starts."""
    parsed = parsed or parse(text)
    out: list[tuple[int, int, bool]] = []
    pos = 0  # end of what is already covered
    for _chunk, op in parsed.units():
        ls = text.rfind("\n", 0, op.start) + 1
        if ls < pos or text[ls:op.start].strip():
            continue  # shares a line with what precedes it: stays in glue
        eol = text.find("\n", op.end)
        eol = len(text) if eol == -1 else eol + 1
        tail = text[op.end:eol].strip()
        if tail and not tail.startswith("//"):
            continue  # something else follows on its last line
        end = _TRAILING.match(text, eol).end()
        if ls > pos:
            out.append((pos, ls, False))
        out.append((ls, end, True))
        pos = end
    if pos < len(text) or not out:
        out.append((pos, len(text), False))
    return out


class LiveDocument:
    def __init__(self, text: str, settings: Settings | None = None, *, version: int | None = None,
                 min_piece_chars: int = PIECES_MIN_CHARS):
        self.settings = settings or Settings()
        self.version = version
        self.min_piece_chars = min_piece_chars
        self.pieces: list[Piece] = []
        self._line0: list[int] = []
        self._text: str | None = None
        self._parsed_cache: OrderedDict[int, CheckResult] = OrderedDict()
        self.rebuilds = 0  # whole re-reads so far (figures for tests and benchmarks)
        self._build(text)

    # -- building ---------------------------------------------------------------------------
    def _build(self, text: str) -> None:
        self.rebuilds += 1
        self._text = text
        self._parsed_cache.clear()
        whole = self._whole(text)
        if len(text) < self.min_piece_chars:
            self.pieces = [whole()]
        else:
            parsed = parse(text)
            bounds = segment(text, parsed)
            pieces = [_make_piece(text[s:e], sa) for s, e, sa in bounds]
            spots = self._spots(parsed)
            if any(not sa and text[s:e].strip() and _holds(spots, s, e) for s, e, sa in bounds):
                pieces = [whole()]  # a finding in glue: one piece is exact
            else:
                for p, (s, e, _sa) in zip(pieces, bounds):
                    if _holds(spots, s, e):
                        self._check_if_needed(p)
                    else:
                        p.clean = True  # the whole read found nothing there
            if len(pieces) > 1:
                _outline_pieces(parsed, pieces, [s for s, _e, _sa in bounds])
            self.pieces = pieces
        self._relines()

    def _whole(self, text: str):
        def make() -> Piece:
            p = _make_piece(text, True)
            p.result = check_text(text, self.settings, with_fixes=False)
            return p
        return make

    @staticmethod
    def _spots(parsed) -> list[int]:
        """Sorted offsets where the whole read saw an assert candidate or a syntax issue."""
        text = parsed.text
        spots = [i.start for i in parsed.issues]
        for lit in (ASSERT_LITERAL, '"cf.assert"'):
            pos = text.find(lit)
            while pos != -1:
                spots.append(pos)
                pos = text.find(lit, pos + 1)
        return sorted(spots)

    def _check_if_needed(self, p: Piece) -> None:
        """Check a standalone piece alone if it can hold a finding; else mark it clean."""
        if p.standalone and ASSERT_LITERAL not in p.text and '"cf.assert"' not in p.text:
            # No assert: only syntax issues could be found; a quick structural read tells.
            parsed = parse(p.text)
            if not parsed.issues:
                p.result, p.clean = None, True
                return
            p.result = check_text(p.text, self.settings, parsed=parsed, with_fixes=False)
            return
        p.result = check_text(p.text, self.settings, with_fixes=False) if p.standalone else None
        p.clean = p.result is None or not p.result.findings

    def _relines(self) -> None:
        self._line0 = [0, *itertools.accumulate(p.newlines for p in self.pieces)][:-1]

    # -- reading ------------------------------------------------------------------------------
    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "".join(p.text for p in self.pieces)
        return self._text

    @property
    def line_count(self) -> int:
        return (self._line0[-1] + self.pieces[-1].newlines + 1) if self.pieces else 1

    def piece_at_line(self, line: int) -> int:
        i = bisect.bisect_right(self._line0, max(line, 0)) - 1
        return max(0, min(i, len(self.pieces) - 1))

    def line0(self, i: int) -> int:
        return self._line0[i]

    def locate(self, line: int, character: int) -> tuple[int, int]:
        """(piece index, offset in the piece) of a position, clamped into the document."""
        i = self.piece_at_line(line)
        p = self.pieces[i]
        return i, p.lines.offset(line - self._line0[i], character)

    def result_of(self, i: int) -> CheckResult:
        """The piece's check (a clean piece is parsed on demand and kept in a small cache)."""
        p = self.pieces[i]
        if p.result is not None:
            return p.result
        key = id(p)
        r = self._parsed_cache.get(key)
        if r is None or r.parsed.text is not p.text:
            r = check_text(p.text, self.settings, with_fixes=False)
            self._parsed_cache[key] = r
            while len(self._parsed_cache) > PARSED_CACHE:
                self._parsed_cache.popitem(last=False)
        self._parsed_cache.move_to_end(key)
        return r

    def with_fixes(self, i: int) -> CheckResult | None:
        """The piece's check with its fixes attached (built on first request, then kept)."""
        p = self.pieces[i]
        if p.result is None:
            return None
        if not p.fixes_ready:
            from ..fixes import attach_fixes

            attach_fixes(p.result, self.settings)
            p.fixes_ready = True
        return p.result

    def findings(self):
        """(piece index, first line of the piece, finding) for every finding, in order."""
        for i, p in enumerate(self.pieces):
            if p.result is not None and p.result.findings:
                l0 = self._line0[i]
                for f in p.result.findings:
                    yield i, l0, f

    def finding_count(self) -> int:
        return sum(len(p.result.findings) for p in self.pieces if p.result is not None)

    def outline(self):
        """(piece index, Outline) of every top-level op, in order."""
        for i, p in enumerate(self.pieces):
            if p.outline is None:
                p.outline = _outline(self.result_of(i) if p.result is None else p.result)
            for o in p.outline:
                yield i, o

    # -- editing ------------------------------------------------------------------------------
    def apply_change(self, rng: tuple[Pos, Pos] | None, new_text: str, version: int | None = None) -> list[int]:
        """Apply one LSP content change; returns the indices of the pieces re-checked.

        `rng` None replaces the whole text. Positions past the end are clamped, like editors do.
        """
        if version is not None:
            self.version = version
        if rng is None:
            self._build(new_text)
            return list(range(len(self.pieces)))
        (sl, sc), (el, ec) = rng
        if (el, ec) < (sl, sc):
            (sl, sc), (el, ec) = (el, ec), (sl, sc)
        i, s = self.locate(sl, sc)
        j, e = self.locate(el, ec)
        if j > i and e == 0:  # the end is the first character of the next piece
            j -= 1
            e = len(self.pieces[j].text)
        merged = self.pieces[i].text[:s] + new_text + self.pieces[j].text[e:]
        standalone = all(p.standalone for p in self.pieces[i:j + 1])
        # A piece must end at a line end (the next one starts a line): else take the next in.
        while not merged.endswith("\n") and j + 1 < len(self.pieces):
            j += 1
            standalone = standalone and self.pieces[j].standalone
            merged += self.pieces[j].text
        self._text = None
        if not standalone:
            self._build("".join([*(p.text for p in self.pieces[:i]), merged,
                                 *(p.text for p in self.pieces[j + 1:])]))
            return list(range(len(self.pieces)))
        piece = _make_piece(merged, True)
        if len(self.pieces) == 1:
            if len(merged) >= self.min_piece_chars:  # grew large (a paste): into pieces
                self._build(merged)
                return list(range(len(self.pieces)))
            self._check_if_needed(piece)
            new = [piece]
        else:
            new = self._resplit(piece)
        if new is None:  # the edit made glue (e.g. pasted `// -----`): read it all again
            self._build("".join([*(p.text for p in self.pieces[:i]), merged,
                                 *(p.text for p in self.pieces[j + 1:])]))
            return list(range(len(self.pieces)))
        old_lines = sum(p.newlines for p in self.pieces[i:j + 1])
        self.pieces[i:j + 1] = new
        if len(new) != j + 1 - i or sum(p.newlines for p in new) != old_lines:
            self._relines()
        return list(range(i, i + len(new)))

    def _resplit(self, piece: Piece) -> list[Piece] | None:
        """Check an edited piece; split it if it now holds several top-level ops."""
        self._check_if_needed(piece)
        parsed = piece.result.parsed if piece.result is not None else None
        if parsed is not None and parsed.issues:
            return [piece]  # broken while typing: keep it whole, its issue stays local
        parsed = parsed or parse(piece.text)
        units = parsed.units()
        if len(units) <= 1:
            return [piece]
        parts = segment(piece.text, parsed)
        if any(not sa and piece.text[s:e].strip() for s, e, sa in parts):
            return None
        out = []
        for s, e, _sa in parts:
            if s == e:
                continue
            p = _make_piece(piece.text[s:e], True)
            self._check_if_needed(p)
            out.append(p)
        return out or [piece]


def _holds(spots: list[int], start: int, end: int) -> bool:
    k = bisect.bisect_left(spots, start)
    return k < len(spots) and spots[k] < end


def _outline_pieces(parsed, pieces: list[Piece], starts: list[int]) -> None:
    """Give every piece its outline from the whole read (no piece is read again for it)."""
    for p in pieces:
        p.outline = []
    text = parsed.text
    for _chunk, op in parsed.units():
        k = bisect.bisect_right(starts, op.start) - 1
        pieces[k].outline.append(_entry(text, op, starts[k]))


def _entry(text: str, op, base: int = 0) -> Outline:
    m = _SYMBOL.search(text, op.name_start, min(op.end, op.name_start + 400))
    return Outline(op.full_name, m.group(1) if m else None, op.start - base, op.end - base,
                   op.name_start - base, len(op.name))


def _outline(result: CheckResult) -> list[Outline]:
    return [_entry(result.parsed.text, op) for _chunk, op in result.parsed.units()]


__all__ = ["LiveDocument", "Piece", "Outline", "segment", "PIECES_MIN_CHARS"]

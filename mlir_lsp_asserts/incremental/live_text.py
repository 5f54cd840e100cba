"""A document kept in pieces, checked piece by piece, for editors: an edit costs one piece.

    doc = LiveText(text, settings)
    doc.apply_change(((line, char), (end_line, end_char)), "new text")   # or (None, full_text)
    for piece_index, first_line, finding in doc.findings(): ...

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

A top-level op whose region is above `statements.BIG_BLOCK_CHARS` (a torch export: one function
holding every op) is kept in pieces below function level: a *header* piece (its lines up to the
region's `{`), *body* pieces of whole statements (about `BODY_PIECE_CHARS` each, cut where the
reader's line rule starts a statement, syntax/statements.py) and a *closer* (the `}` line). A body
piece is checked alone as the content of a block under the function's op, which gives exactly
the findings a whole check gives for those lines (the whole check reads the same statements the
same way), so a keystroke costs one piece of a few KB. An edit that unbalances a piece's braces,
or makes its first line continue the previous statement, merges it with its neighbour; only an
edit that changes the function's region itself reads the whole text again.

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
from ..findings import Fix, TextEdit
from ..fixes import attach_unit_fixes, fix_asserts, fix_text
from ..syntax import statements
from ..syntax.lines import LineIndex
from ..syntax.op_tree import ChildPairs, Op, Region
from ..syntax.parsed_text import parse, parse_block
from ..syntax.reader import SKIP_WS, Reader
from ..syntax.statements import (
    BlockStatements,
    block_labels,
    child_pairs,
    code_end,
    defines_at,
    name_pattern,
    slice_pairs,
)

PIECES_MIN_CHARS = 128 * 1024  # clip_l's 400 KB of IR checked whole: 47 ms an edit; in pieces 2.7 ms
# Issues of a text whose braces do not balance (the reader's messages).
BRACE_ISSUES = frozenset({"'{' is never closed", "region '{' is never closed", "unmatched '}'"})
# An op whose `(` or `[` is not closed runs on to the end of what is read: past its piece.
UNBALANCED = "unbalanced '(' or '[' in operation"
# Body pieces of a big function are cut at the first statement after this many characters.
BODY_PIECE_CHARS = 16 * 1024
ASSERT_LITERAL = "cf.assert"
# Blank lines and comments (not `// -----` separators) that may follow a top-level op in its piece.
_TRAILING = re.compile(r"(?:[ \t]*(?://(?![ \t]*-----)[^\n]*)?\r?\n)*")
# How many clean pieces keep a parsed form for navigation requests.
PARSED_CACHE = 32

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
    # A front end's cache of its rendering of the findings, with what it was made for (the first
    # line, and whatever else the front end's rendering depends on).
    rendered: tuple[object, object] | None = None
    _lines: LineIndex | None = None
    _base: str | None = None
    _start: int = 0
    _end: int = 0

    @property
    def text(self) -> str:
        return self._own if self._own is not None else self._base[self._start:self._end]

    @property
    def size(self) -> int:
        return len(self._own) if self._own is not None else self._end - self._start

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


_SYMBOL = re.compile(r'@([\w$.\-]+|"[^"]*")')


def _make_piece(text: str, standalone: bool, kind: str = "unit", unit: BigUnit | None = None) -> Piece:
    return Piece(text, text.count("\n"), standalone, kind if standalone or kind != "unit" else "glue", unit)


def _view_piece(base: str, s: int, e: int, standalone: bool, kind: str = "unit", unit: BigUnit | None = None) -> Piece:
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


class LiveText:
    def __init__(self, text: str, settings: Settings | None = None, *, version: int | None = None,
                 min_piece_chars: int = PIECES_MIN_CHARS):
        self.settings = settings or Settings()
        self.version = version
        self.min_piece_chars = min_piece_chars
        self.pieces: list[Piece] = []
        self._line0: list[int] = []
        self._text: str | None = None
        self._parsed_cache: OrderedDict[int, tuple[Piece, CheckResult]] = OrderedDict()
        self.rebuilds = 0  # whole re-reads so far (figures for tests and benchmarks)
        self._build(text)

    # -- building ---------------------------------------------------------------------------
    def _build(self, text: str, exact: bool = False) -> None:
        """Read the whole text into pieces. With `exact` (the text held a big function), a text
        whose braces do not balance stays one piece until they do: its findings are then exactly
        a whole check's, at the cost of a whole check per edit while it is broken."""
        self.rebuilds += 1
        self._text = text
        self._parsed_cache.clear()
        # Sticky: a document that held a big function keeps exact findings through broken states.
        self.exact = exact
        whole = self._whole(text)
        if len(text) < self.min_piece_chars:
            self.pieces = [whole()]
        else:
            parsed = parse(text)
            bounds = segment(text, parsed)
            spots = self._spots(parsed)
            if exact and any(i.message in BRACE_ISSUES or i.message == UNBALANCED for i in parsed.issues):
                self.pieces = [whole()]
                self.exact = True
            elif any(not sa and text[s:e].strip() and _holds(spots, s, e) for s, e, sa in bounds):
                self.pieces = [whole()]  # a finding in glue: one piece is exact
                self._relines()
                return
            else:
                self._split_units(text, parsed, bounds, spots)
        self._relines()

    def _split_units(self, text: str, parsed, bounds, spots) -> None:
        units = {}
        for _chunk, op in parsed.units():
            units.setdefault(text.rfind("\n", 0, op.start) + 1, op)
        pieces = []
        for s, e, sa in bounds:
            op = units.get(s) if sa else None
            split = self._split_big(text, s, e, op, spots) if op is not None else None
            if split is not None:
                pieces.extend(split)
                self.exact = True
                continue
            p = _view_piece(text, s, e, sa)
            if _holds(spots, s, e):
                self._check_if_needed(p)
            else:
                p.clean = True  # the whole read found nothing there
            pieces.append(p)
        if len(pieces) > 1:
            _outline_pieces(parsed, pieces, [0, *itertools.accumulate(p.size for p in pieces)][:-1])
        self.pieces = pieces

    def _split_big(self, text: str, s: int, e: int, op: Op, spots: list[int]) -> list[Piece] | None:
        """Header, body pieces and closer of the unit `op` spanning text[s:e], when its one region
        is big and stands on lines of its own; else None."""
        if len(op.lazy_regions) != 1:
            return None
        brace, close = op.lazy_regions[0]
        if close - brace <= statements.BIG_BLOCK_CHARS or text[close - 1] != "}":
            return None
        header_end = text.find("\n", brace, e) + 1
        if header_end == 0 or code_end(text, brace + 1, header_end - 1) != brace + 1:
            return None  # something follows the `{` on its line
        if _holds(spots, s, header_end):
            return None  # a syntax issue in the header: one piece reports it as a whole read does
        closer_ls = text.rfind("\n", 0, close - 1) + 1
        line_end = text.find("\n", close - 1, e)
        line_end = e if line_end == -1 else line_end
        if text[closer_ls:close - 1].strip() or code_end(text, close, line_end) != close:
            return None  # the `}` does not stand alone on its line
        unit = BigUnit(op, brace - s, close - brace)
        bs = BlockStatements(text, brace + 1, close - 1, Op(op.name, 0, 0, 0, [], op.generic, op.parent),
                             op.lazy_children[0])
        cuts = [header_end, *_cut_points(bs, header_end, closer_ls), closer_ls]
        labels = block_labels(text, brace + 1, close - 1, op.lazy_children[0])
        pieces = [_view_piece(text, s, header_end, False, "header", unit)]
        for a, b in zip(cuts, cuts[1:]):
            if a < b:
                p = _view_piece(text, a, b, True, "body", unit)
                p.pairs = slice_pairs(op.lazy_children[0], a, b)
                p.labels = _holds(labels, a, b)
                self._check_body(p)
                pieces.append(p)
        pieces.append(_view_piece(text, closer_ls, e, False, "closer", unit))
        pieces[0].clean = pieces[-1].clean = True
        return pieces

    def _body_piece(self, text: str, unit: BigUnit, pairs: ChildPairs | None = None) -> Piece:
        p = _make_piece(text, True, "body", unit)
        p.pairs = pairs if pairs is not None else child_pairs(text, 0, len(text))[0]
        self._check_body(p)
        return p

    def _check_body(self, p: Piece) -> None:
        """A body piece is checked as the content of the unit's block; only its statements that hold
        an assert are read (a piece without one holds no finding: its braces balance)."""
        p.fixes_ready = False
        p.rendered = None
        if not p.contains("cf.assert"):
            p.result, p.clean = None, True
            return
        text = p.text
        p.result = check_text(text, self.settings, parsed=parse_block(text, p.unit.op, p.pairs), with_fixes=False)
        p.clean = not p.result.findings

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
        if p.standalone and not p.contains(ASSERT_LITERAL):
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
        entry = self._parsed_cache.get(key)
        if entry is None or entry[0] is not p:
            text = p.text
            parsed = parse_block(text, p.unit.op, p.pairs) if p.kind == "body" else None
            entry = self._parsed_cache[key] = (p, check_text(text, self.settings, with_fixes=False, parsed=parsed))
            while len(self._parsed_cache) > PARSED_CACHE:
                self._parsed_cache.popitem(last=False)
        self._parsed_cache.move_to_end(key)
        return entry[1]

    def with_fixes(self, i: int) -> CheckResult | None:
        """The piece's check with its fixes attached (built on first request, then kept)."""
        p = self.pieces[i]
        if p.result is None:
            return None
        if not p.fixes_ready:
            if p.kind == "body":
                self._attach_body_fixes(i)
            else:
                from ..fixes import attach_fixes

                attach_fixes(p.result, self.settings)
            p.fixes_ready = True
        return p.result

    def char0(self, i: int) -> int:
        """Offset of piece i in the document's text."""
        return sum(p.size for p in self.pieces[:i])

    def _unit_reader(self, h: int, c: int, starts: list[int]) -> BlockStatements:
        """The block of the big function between header h and closer c, read from the whole text."""
        text, header, closer = self.text, self.pieces[h], self.pieces[c]
        brace = starts[h] + header.unit.brace
        close = starts[c] + closer.text.index("}")
        owner = header.unit.op
        unit = Op(owner.name, starts[h], close + 1, starts[h], [], owner.generic, owner.parent)
        return BlockStatements(text, brace + 1, close, unit, _PiecePairs(self.pieces, starts, h + 1, c),
                               Region(brace, close + 1), labels=any(_has_labels(q) for q in self.pieces[h + 1:c]))

    @staticmethod
    def _assert_pairs(bs: BlockStatements, p: Piece, base: int) -> dict:
        """{piece offset: (finding, assert op in the whole text)} of a body piece's assert findings."""
        out = {}
        for f in p.result.findings:
            if f.code.startswith("MLA"):
                for top in bs.statement_at(base + f.op_start):
                    for o in top.walk():
                        if o.start == base + f.op_start and o.full_name == "cf.assert":
                            out[f.op_start] = (f, o)
        return out

    def _attach_body_fixes(self, i: int) -> None:
        """Fixes of a body piece's findings, planned on the piece alone with, put before it, the
        statements of other pieces that define the values it uses (`%c77`, found by `str` searches
        of the pieces before it); uses and names elsewhere in the function are asked of the other
        pieces (`_Outside`). Edits stay inside the piece. Cost: the piece and a few searches, not
        the function."""
        p = self.pieces[i]
        text = p.text
        outside = _Outside(self, i)
        prefix: list[str] = []
        fetched: set[str] = set()
        for _round in range(4):
            full = "".join(prefix) + text
            base = len(full) - len(text)
            parsed = parse_block(full, p.unit.op)
            pairs = list(self._assert_pairs(parsed.block, p, base).values())
            if not pairs:
                return
            missing = attach_unit_fixes(full, pairs, self.settings, window=(base, len(full)), outside=outside)
            wanted = [n for n in sorted(missing or ()) if n not in fetched]
            fetched.update(wanted)
            found = [d for d in (self._definition_text(i, n) for n in wanted) if d is not None]
            if not found:
                break
            prefix = [*found, *prefix]
        for f, _o in pairs:
            f.fixes = [Fix(x.title, x.mode, x.applicability,
                           tuple(TextEdit(e.start - base, e.end - base, e.new_text) for e in x.edits))
                       for x in f.fixes]

    def _definition_text(self, i: int, name: str) -> str | None:
        """The text of the statement that defines `%name` in another piece of i's function."""
        where = self.value_definition_elsewhere(i, name)
        if where is None or self.pieces[where[0]].kind != "body":
            return None
        q = self.pieces[where[0]]
        qt = q.text
        reader = BlockStatements(qt, 0, len(qt), Op(q.unit.op.name, 0, 0, 0, []), q.pairs)
        s = reader.start_of(where[1])
        e = reader.end_of(s)
        out = qt[qt.rfind("\n", 0, s) + 1:e]
        return out if out.endswith("\n") else out + "\n"

    def fix_all(self, mode: str, unsafe: bool) -> list[tuple[int, TextEdit]]:
        """Every fix of `mode` in the document at once: (piece index, piece-relative edit). A big
        function's asserts are fixed together on the whole text, as `mlir-lsp --check --fix` does."""
        out: list[tuple[int, TextEdit]] = []
        starts = None
        done: set[int] = set()
        for i, p in enumerate(self.pieces):
            if p.result is None or not p.result.findings:
                continue
            if p.kind != "body":
                out.extend((i, e) for e in fix_text(p.result, mode, unsafe=unsafe).edits)
                continue
            h, c = self.unit_bounds(i)
            if h in done:
                continue
            done.add(h)
            starts = starts or [0, *itertools.accumulate(q.size for q in self.pieces)]
            bs = self._unit_reader(h, c, starts)
            pairs = []
            for j in range(h + 1, c):
                q = self.pieces[j]
                if q.result is not None and q.result.findings:
                    pairs.extend(self._assert_pairs(bs, q, starts[j]).values())
            for e in fix_asserts(self.text, pairs, mode, unsafe).edits:
                j = bisect.bisect_right(starts, e.start) - 1
                if e.start == starts[j] and e.start == e.end and j > 0:
                    j -= 1  # an insertion at a piece's start: at the end of the one before
                out.append((j, TextEdit(e.start - starts[j], e.end - starts[j], e.new_text)))
        return out

    # -- SSA values of a big function, across its pieces ----------------------------------------
    def unit_bounds(self, i: int) -> tuple[int, int] | None:
        """(header, closer) piece indices of the big function that piece i belongs to, or None."""
        if self.pieces[i].unit is None:
            return None
        h, c = i, i
        while self.pieces[h].kind != "header":
            h -= 1
        while self.pieces[c].kind != "closer":
            c += 1
        return h, c

    def value_definition_elsewhere(self, i: int, name: str) -> tuple[int, int] | None:
        """(piece, offset of the `%`) where `%name`, used in body piece i but not defined there, is
        defined in its function: a result at the function's block level in another body piece
        (looked for backwards first, with `str` searches per piece), or an argument in the header."""
        bounds = self.unit_bounds(i)
        if bounds is None:
            return None
        h, c = bounds
        needle, pattern = "%" + name, name_pattern(name)
        for j in [*range(i - 1, h, -1), *range(i + 1, c)]:
            p = self.pieces[j]
            if not p.contains(needle):
                continue
            text = p.text
            for m in pattern.finditer(text):
                at = m.start()
                if p.pairs is not None and p.pairs.span_at(at) is not None:
                    continue
                if defines_at(text, at):
                    return j, at
        header = self.pieces[h].text
        m = re.compile(re.escape(needle) + r"\s*:").search(header, 0, self.pieces[h].unit.brace)
        return (h, m.start()) if m else None

    def value_uses_elsewhere(self, i: int, name: str) -> list[tuple[int, int]]:
        """(piece, offset) of every `%name` in the function of body piece i outside that piece."""
        bounds = self.unit_bounds(i)
        if bounds is None:
            return []
        h, c = bounds
        needle, pattern = "%" + name, name_pattern(name)
        out = []
        for j in range(h, c):
            p = self.pieces[j]
            if j != i and p.contains(needle):
                out.extend((j, m.start()) for m in pattern.finditer(p.text, 0, p.unit.brace if j == h else p.size))
        return out

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

    def outline_span(self, i: int, o: Outline) -> tuple[Pos, Pos]:
        """Start and end (line, character) of a top-level op of piece i in the document: a big
        function's header piece holds its outline, its closer the end."""
        p = self.pieces[i]
        start = p.lines.position(o.start)
        start = (start[0] + self._line0[i], start[1])
        if p.kind == "header":
            c = self.unit_bounds(i)[1]
            closer = self.pieces[c]
            end = closer.lines.position(closer.text.index("}") + 1)
            return start, (end[0] + self._line0[c], end[1])
        end = p.lines.position(o.end)
        return start, (end[0] + self._line0[i], end[1])

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
            e = self.pieces[j].size
        merged = self.pieces[i].text[:s] + new_text + self.pieces[j].text[e:]
        # A piece must end at a line end (the next one starts a line): else take the next in.
        while not merged.endswith("\n") and j + 1 < len(self.pieces):
            j += 1
            merged += self.pieces[j].text
        self._text = None
        kinds = {p.kind for p in self.pieces[i:j + 1]}
        new: list[Piece] | None
        if kinds == {"body"}:
            new, i, j, merged = self._edit_body(i, j, merged)
        elif kinds == {"header"}:
            new = self._edit_header(i, merged)
        elif kinds == {"closer"}:
            new = self._edit_closer(i, merged)
            if new is not None and j + 1 < len(self.pieces) and not _starts_statement(new[-1].text, self.pieces[j + 1].text):
                new = None
        elif kinds == {"unit"}:
            new = self._edit_units(merged)
            if new is not None and self.exact and len(self.pieces) > 1 and not self._boundaries_hold(i, j, new):
                new = None  # an op now runs across a piece's edge: exact, read as a whole check does
        else:
            new = None
        if new is None:  # the edit changed what the pieces stand on: read it all again
            self._build("".join([*(p.text for p in self.pieces[:i]), merged,
                                 *(p.text for p in self.pieces[j + 1:])]), exact=self.exact)
            return list(range(len(self.pieces)))
        old_lines = [p.newlines for p in self.pieces[i:j + 1]]
        self.pieces[i:j + 1] = new
        if [p.newlines for p in new] != old_lines:  # a count changed, or a boundary moved
            self._relines()
        return list(range(i, i + len(new)))

    def _boundaries_hold(self, i: int, j: int, new: list[Piece]) -> bool:
        """Do the new pieces for i..j still start and end where ops start and end?"""
        if i > 0 and not _starts_statement(self.pieces[i - 1].text, new[0].text):
            return False
        return j + 1 >= len(self.pieces) or _starts_statement(new[-1].text, self.pieces[j + 1].text)

    def _edit_units(self, merged: str) -> list[Piece] | None:
        piece = _make_piece(merged, True)
        if len(self.pieces) == 1:
            if len(merged) >= self.min_piece_chars:  # grew large (a paste): into pieces
                return None
            self._check_if_needed(piece)
            return [piece]
        return self._resplit(piece)

    def _edit_body(self, i: int, j: int, merged: str) -> tuple[list[Piece] | None, int, int, str]:
        """New pieces for body pieces i..j whose text became `merged` (grown to a neighbour while
        the result would not stand alone), or None when the function must be read again."""
        unit = self.pieces[i].unit
        if any(p.unit is not unit for p in self.pieces[i:j + 1]):
            return None, i, j, merged
        old_chars = sum(p.size for p in self.pieces[i:j + 1])
        for _ in range(8):
            pairs, balanced = child_pairs(merged, 0, len(merged))
            prev, nxt = self.pieces[i - 1], self.pieces[j + 1]
            if not balanced:
                # a `{` or `}` typed alone: the pair may close in a neighbour
                grow_next = merged.count("{") >= merged.count("}")
            elif prev.kind == "body" and (not _starts_statement(prev.text, merged)
                                          or "cf.assert" in merged[:merged.find("\n") + 1]):
                grow_next = False  # continues the statement above, or an assert on the first line
            elif nxt.kind == "body" and not _starts_statement(merged, nxt.text):
                grow_next = True
            else:
                break
            if grow_next and nxt.kind == "body":
                j += 1
                merged += nxt.text
            elif not grow_next and prev.kind == "body":
                i -= 1
                merged = prev.text + merged
            else:
                return None, i, j, merged
        else:
            return None, i, j, merged
        if self.pieces[i - 1].kind == "header" and not _opens_region(self.pieces[i - 1].text, unit.brace, merged):
            return None, i, j, merged
        unit.body_chars += len(merged) - old_chars
        if unit.body_chars <= statements.BIG_BLOCK_CHARS:
            return None, i, j, merged  # small enough to be read whole again, as a whole check does
        if len(merged) <= 4 * BODY_PIECE_CHARS:
            return [self._body_piece(merged, unit, pairs)], i, j, merged
        bs = BlockStatements(merged, 0, len(merged), Op(unit.op.name, 0, 0, 0, [], False, unit.op.parent), pairs)
        cuts = [0, *_cut_points(bs, 0, len(merged)), len(merged)]
        return [self._body_piece(merged[a:b], unit) for a, b in zip(cuts, cuts[1:]) if a < b], i, j, merged

    def _edit_closer(self, i: int, merged: str) -> list[Piece] | None:
        """A big function's closing line and what follows it edited (typing a new function after
        it): the `}` line stays the closer, anything after its blank and comment lines is read as
        pieces of top-level ops of their own."""
        old = self.pieces[i]
        first = merged.find("\n") + 1
        if first == 0 or merged[:first].strip() != "}" or old.text[:old.text.find("\n") + 1] != merged[:first]:
            return None
        end = _TRAILING.match(merged, first).end()
        closer = _make_piece(merged[:end], False, "closer", old.unit)
        closer.clean = True
        rest = merged[end:]
        if not rest:
            return [closer]
        more = self._resplit(_make_piece(rest, True))
        if more is None or not _starts_statement(closer.text, more[0].text):
            return None  # what follows continues the function's op (`} {`, `} -> ...`)
        return [closer, *more]

    def _edit_header(self, i: int, merged: str) -> list[Piece] | None:
        """A big unit's header edited: read it again (with the first body piece after it, so its
        `{` is judged a region as in the whole text); the body pieces are checked again only when
        the op's name, which the rules look at, changed."""
        old = self.pieces[i]
        unit, first = old.unit, self.pieces[i + 1]
        if first.kind != "body":
            return None
        brace = merged.rfind("{")
        if brace == -1 or code_end(merged, brace + 1, len(merged) - 1) != brace + 1 or not merged.endswith("\n"):
            return None
        parsed = parse(merged + first.text + "}\n")
        units = parsed.units()
        if parsed.issues or len(units) != 1 or len(units[0][1].lazy_regions) != 1 \
                or units[0][1].lazy_regions[0][0] != brace:
            return None
        op = units[0][1]
        op.parent = unit.op.parent
        renamed = op.full_name != unit.op.full_name
        unit.body_chars += (len(merged) - brace) - (len(old.text) - unit.brace)
        unit.op, unit.brace = op, brace
        piece = _make_piece(merged, False, "header", unit)
        piece.clean = True
        piece.outline = [_entry(merged, op)]
        if renamed:
            for p in self.pieces:
                if p.unit is unit and p.kind == "body" and p.contains("cf.assert"):
                    self._check_body(p)
        return [piece]

    def _resplit(self, piece: Piece) -> list[Piece] | None:
        """Check an edited piece; split it if it now holds several top-level ops."""
        self._check_if_needed(piece)
        parsed = piece.result.parsed if piece.result is not None else None
        if parsed is not None and parsed.issues:
            if self.exact and any(i.message in BRACE_ISSUES or i.message == UNBALANCED for i in parsed.issues):
                return None  # a document with a big function: exact, read as a whole check does
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


def _cut_points(bs: BlockStatements, lo: int, hi: int) -> list[int]:
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
            q = bs._first_code(pos)
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


def _starts_statement(before: str, after: str) -> bool:
    """Does the first code of `after` start a statement when `after` follows `before` in a block?
    The reader's line rule on the two lines around the break (syntax/statements.py)."""
    q = SKIP_WS.match(after).end()
    if q >= len(after) or after[q] == "^":
        return True
    last = _last_code_line(before)
    if last is None:
        return False  # nothing to judge by here: the caller grows the piece
    ls, ce = last
    if before[SKIP_WS.match(before, ls).end()] == "^":
        return True
    le = after.find("\n", q)
    small = before[ls:ce] + "\n" + after[:len(after) if le == -1 else le]
    if after[q] in ")]":
        return False
    return not Reader(small)._continues(ce - ls, ce - ls + 1)


def _opens_region(header: str, brace: int, body: str) -> bool:
    """Is the header's `{` still read as a region with `body` after it?"""
    le = body.find("\n", SKIP_WS.match(body).end())
    small = header[brace:] + body[:len(body) if le == -1 else le]
    return Reader(small)._is_region(0)


def _has_labels(p: Piece) -> bool:
    """Does a body piece hold a block label of the function's own block? (Kept on the piece.)"""
    if p.labels is None:
        text = p.text
        p.labels = bool(block_labels(text, 0, len(text), p.pairs))
    return p.labels


_ASSUMED_NAME = re.compile(r"%([\w$.\-]*assumed[\w$.\-]*)")


class _Outside:
    """What a piece of a big function, read alone, asks of the rest of the function."""

    def __init__(self, doc: LiveText, i: int):
        self.doc, self.i = doc, i
        h, c = doc.unit_bounds(i)
        self.others = [q for k, q in enumerate(doc.pieces[h:c + 1], h) if k != i]
        self._assumed: set[str] | None = None

    def used(self, name: str) -> bool:
        """Is `%name` used (or defined) in another piece? A definition copied before the piece is
        found here too, which keeps it: nothing outside the piece is ever removed."""
        return bool(self.doc.value_uses_elsewhere(self.i, name))

    def taken(self, name: str) -> bool:
        """Is a name `%name...` written anywhere else in the function? (A longer name counts.) Fresh
        names all hold `assumed`: the names holding it are collected once, in one pass."""
        if "assumed" in name:
            if self._assumed is None:
                self._assumed = set()
                for q in self.others:
                    if q.contains("assumed"):
                        self._assumed.update(_ASSUMED_NAME.findall(q.text))
            return any(n.startswith(name) for n in self._assumed)
        needle = "%" + name
        return any(q.contains(needle) for q in self.others)


class _PiecePairs:
    """`span_at` over the body pieces h..c-1 of the document, in whole-text offsets."""

    def __init__(self, pieces: list[Piece], starts: list[int], h: int, c: int):
        self.pieces, self.starts, self.h, self.c = pieces, starts, h, c

    def span_at(self, pos: int) -> tuple[int, int] | None:
        k = bisect.bisect_right(self.starts, pos) - 1
        if not self.h <= k < self.c:
            return None
        base = self.starts[k]
        span = self.pieces[k].pairs.span_at(pos - base)
        return None if span is None else (span[0] + base, span[1] + base)


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


__all__ = ["LiveText", "Piece", "Outline", "segment", "PIECES_MIN_CHARS"]

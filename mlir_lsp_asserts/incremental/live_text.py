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
per keystroke: the pieces' first lines and the pieces that hold findings are kept in indexes
updated by each splice (piece_index.py), so an edit and its publish cost the pieces it touched
and the findings, whatever the number of pieces (85,000 in 50 MB of small functions).

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

Knows nothing of LSP: positions are 0-based (line, UTF-16 character) pairs, and every answer
is in document coordinates: no caller sees a piece. The package, one idea a module:

    live_text.py     this facade: the document, its findings, fixes and lookups
    pieces.py        the pieces as data, and where text may be cut (segment, cut_points)
    building.py      a whole text cut into pieces; one piece checked alone
    editing.py       a content change spliced into the pieces it touches
    big_function.py  lookups and fixes across the pieces of one big function
    located.py       answers in document coordinates
    piece_index.py   the pieces' first lines, and which pieces hold findings

The parts below this facade take values (the pieces, the settings, ...) and return values; only
the facade changes its own state (an edit: `editing.Splicer` says which pieces to replace, or
that the whole text is read again, and `apply_change` does it).
"""

from __future__ import annotations

import itertools
import re
from collections import OrderedDict
from collections.abc import Callable, Iterator

from ..checker import CheckResult
from ..config import Settings
from ..findings import Finding, TextEdit
from ..fixes import fix_text
from .big_function import unit_bounds, unit_fixes, with_fixes
from .building import PieceMaker
from .editing import Reread, Splicer
from .located import FindingGroup, Place, Range, Symbol, piece_range
from .piece_index import FoundPieces, LineStarts
from .pieces import Outline, Piece, Pos, outline_of, segment

PIECES_MIN_CHARS = 128 * 1024  # clip_l's 400 KB of IR checked whole: 47 ms an edit; in pieces 2.7 ms
# How many clean pieces keep a parsed form for navigation requests.
PARSED_CACHE = 32


class LiveText:
    def __init__(self, text: str, settings: Settings | None = None, *, version: int | None = None,
                 min_piece_chars: int = PIECES_MIN_CHARS):
        self.settings = settings or Settings()
        self.version = version
        self.min_piece_chars = min_piece_chars
        self.pieces: list[Piece] = []
        self.exact = False
        self._line0 = LineStarts()  # each piece's first line
        self._found = FoundPieces()  # the pieces that hold findings
        self._size = 0
        self._text: str | None = None
        self._parsed_cache: OrderedDict[int, tuple[Piece, CheckResult]] = OrderedDict()
        self.rebuilds = 0  # whole re-reads so far (figures for tests and benchmarks)
        self.maker = PieceMaker(self.settings)
        self.rebuild(text)

    # -- building and editing -----------------------------------------------------------------
    def rebuild(self, text: str, exact: bool = False) -> None:
        """Read the whole text into pieces (see `PieceMaker.pieces_of` for `exact`)."""
        self.rebuilds += 1
        self.maker.outlines_due = None
        self._text = text
        self._parsed_cache.clear()
        self.pieces, self.exact = self.maker.pieces_of(text, exact, self.min_piece_chars)
        self._line0.reset([p.newlines for p in self.pieces])
        self._found.reset([_found_in(p) for p in self.pieces], [p.newlines for p in self.pieces])
        self._size = len(text)

    def apply_change(self, rng: tuple[Pos, Pos] | None, new_text: str, version: int | None = None) -> list[int]:
        """Apply one LSP content change (`rng` None: the whole text); returns the indices of the
        pieces checked again. Positions past the end are clamped, like editors do."""
        if version is not None:
            self.version = version
        self.finish_reading()
        if rng is None:
            self.rebuild(new_text)
            return list(range(len(self.pieces)))
        start, end = rng if rng[0] <= rng[1] else (rng[1], rng[0])
        splicer = Splicer(self.pieces, self.exact, self.maker, self.min_piece_chars)
        edit = splicer.splice(self.locate(*start), self.locate(*end), new_text)
        self._text = None
        if isinstance(edit, Reread):
            self.rebuild(edit.text, exact=self.exact)
            return list(range(len(self.pieces)))
        old = self.pieces[edit.start:edit.stop]
        self._size += sum(p.size for p in edit.pieces) - sum(p.size for p in old)
        self.pieces[edit.start:edit.stop] = edit.pieces
        first_line = self._line0[edit.start]
        newlines = [p.newlines for p in edit.pieces]
        line_shift = sum(newlines) - sum(p.newlines for p in old)
        if newlines != [p.newlines for p in old]:  # a count changed, or a boundary moved
            self._line0.replace(edit.start, edit.stop, newlines)
        self._found.replace(edit.start, edit.stop, first_line, [_found_in(p) for p in edit.pieces], newlines,
                            line_shift)
        shift = len(edit.pieces) - (edit.stop - edit.start)
        for k in splicer.rechecked:  # pieces outside the edit checked again (a big function renamed)
            k += shift if k >= edit.stop else 0
            self._found.set(k, self._line0[k], _found_in(self.pieces[k]))
        return list(range(edit.start, edit.start + len(edit.pieces)))

    def finish_reading(self) -> None:
        """What a whole read leaves for later, since no diagnostic needs it: the pieces'
        outlines, from the read's tree (then freed). Done by the first request or edit, or by
        the server right after its first publish."""
        due, self.maker.outlines_due = self.maker.outlines_due, None
        if due is not None:
            due()

    # -- reading ------------------------------------------------------------------------------
    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "".join(p.text for p in self.pieces)
        return self._text

    @property
    def line_count(self) -> int:
        return self._line0.total + 1

    def piece_at_line(self, line: int) -> int:
        return self._line0.piece_at(line)

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
            entry = self._parsed_cache[key] = (p, self.maker.check_any(p))
            while len(self._parsed_cache) > PARSED_CACHE:
                self._parsed_cache.popitem(last=False)
        self._parsed_cache.move_to_end(key)
        return entry[1]

    def with_fixes(self, i: int) -> CheckResult | None:
        """The piece's check with its fixes attached (built on first request, then kept)."""
        return with_fixes(self.pieces, i, self.settings)

    def fix_all(self, mode: str, unsafe: bool) -> list[tuple[int, TextEdit]]:
        """Every fix of `mode` in the document at once: (piece index, piece-relative edit). A big
        function's asserts are fixed together on the whole text, as `mlir-lsp --check --fix` does."""
        out: list[tuple[int, TextEdit]] = []
        starts = None
        done: set[int] = set()
        for i in self._found.indices:
            p = self.pieces[i]
            assert p.result is not None, "a piece with findings is checked"
            if p.kind != "body":
                out.extend((i, e) for e in fix_text(p.result, mode, unsafe=unsafe).edits)
                continue
            bounds = unit_bounds(self.pieces, i)
            assert bounds is not None, "a body piece is part of a big function"
            if bounds[0] in done:
                continue
            done.add(bounds[0])
            starts = starts or [0, *itertools.accumulate(q.size for q in self.pieces)]
            out.extend(unit_fixes(self.pieces, self.text, starts, *bounds, mode, unsafe))
        return out

    def findings(self):
        """(piece index, first line of the piece, finding) for every finding, in order."""
        for i, l0 in list(zip(self._found.indices, self._found.lines, strict=True)):
            result = self.pieces[i].result
            assert result is not None, "a piece with findings is checked"
            for f in result.findings:
                yield i, l0, f

    def finding_count(self) -> int:
        return self._found.total

    def outline(self):
        """(piece index, Outline) of every top-level op, in order."""
        self.finish_reading()
        for i, p in enumerate(self.pieces):
            if p.outline is None:
                p.outline = outline_of(self.result_of(i) if p.result is None else p.result)
            for o in p.outline:
                yield i, o

    def outline_span(self, i: int, o: Outline) -> tuple[Pos, Pos]:
        """Start and end (line, character) of a top-level op of piece i in the document: a big
        function's header piece holds its outline, its closer the end."""
        p = self.pieces[i]
        start = p.lines.position(o.start)
        start = (start[0] + self._line0[i], start[1])
        if p.kind == "header":
            bounds = unit_bounds(self.pieces, i)
            assert bounds is not None, "a header piece is part of a big function"
            c = bounds[1]
            closer = self.pieces[c]
            end = closer.lines.position(closer.text.index("}") + 1)
            return start, (end[0] + self._line0[c], end[1])
        end = p.lines.position(o.end)
        return start, (end[0] + self._line0[i], end[1])


    # -- answers in document coordinates (no caller sees a piece) ------------------------------
    @property
    def size(self) -> int:
        """Characters of the text (without joining the pieces)."""
        return self._size

    @property
    def in_pieces(self) -> bool:
        return len(self.pieces) > 1

    def place(self, line: int, character: int) -> Place:
        """A position, resolved for navigation (clamped into the document)."""
        i, off = self.locate(line, character)
        return Place(self.pieces, self._line0, self.settings, i, off, self.result_of(i))

    def _group(self, i: int, with_fixes: bool) -> FindingGroup | None:
        p = self.pieces[i]
        result = self.with_fixes(i) if with_fixes else p.result
        return None if result is None else FindingGroup(i, result, self._line0[i], p.lines)

    def finding_groups(self, first_line: int = 0, last_line: int | None = None, *,
                       with_fixes: bool = False) -> list[FindingGroup]:
        """The groups of findings on lines first_line..last_line (None: to the end)."""
        i = self.piece_at_line(first_line)
        j = len(self.pieces) - 1 if last_line is None else self.piece_at_line(last_line)
        out = []
        for k in self._found.between(i, j):
            g = self._group(k, with_fixes)
            if g is not None:
                out.append(g)
        return out

    def finding_group(self, key: object, *, with_fixes: bool = True) -> FindingGroup | None:
        """The group a `FindingGroup.key` named, in this same version of the document."""
        if not isinstance(key, int) or not 0 <= key < len(self.pieces):
            return None
        return self._group(key, with_fixes)

    def rendered_findings(self, render: Callable[[list[Finding], int], str], tag: object,
                          move: Callable[[str, int], str] | None = None) -> Iterator[tuple[str, int, int]]:
        """(rendering, number of findings, first line) of each group, in order. A rendering is
        kept with its group and made again (`render(findings, first_line)`) only when the group
        changed, moved, or `tag` (what else the rendering shows) changed; given `move`, a group
        that only moved (an edit above it added or removed lines) has its rendering moved
        instead (`move(rendering, lines)`)."""
        pieces = self.pieces
        for i, line0 in zip(self._found.indices, self._found.lines, strict=True):
            p = pieces[i]
            made = p.rendered
            if made is None or made[0] != line0 or made[1] != tag:
                assert p.result is not None, "a piece with findings is checked"
                if move is not None and made is not None and made[1] == tag:
                    p.rendered = made = (line0, tag, move(made[2], line0 - made[0]), made[3])
                else:
                    p.rendered = made = (line0, tag, render(p.result.findings, line0), len(p.result.findings))
            yield made[2], made[3], line0

    def fix_all_edits(self, mode: str, unsafe: bool) -> list[tuple[Range, str]]:
        """Every fix of `mode` in the document at once, as document ranges and their new text."""
        out: list[tuple[Range, str]] = []
        for i, e in self.fix_all(mode, unsafe):
            out.append((self._range(i, e.start, e.end), e.new_text))
        return out

    def _range(self, i: int, start: int, end: int) -> Range:
        return piece_range(self.pieces[i], self._line0[i], start, end)

    def symbols(self) -> list[Symbol]:
        """The document's top-level ops, in order."""
        out = []
        for i, o in self.outline():
            text = self.pieces[i].text
            at = text.find("@" + o.symbol, o.name_start) if o.symbol else -1
            sym = (at, at + 1 + len(o.symbol)) if at != -1 and o.symbol else (o.name_start, o.name_start + o.name_len)
            nl = text.find("\n", o.start, o.end)
            out.append(Symbol(o.full_name, o.symbol, self.outline_span(i, o),
                              self._range(i, o.name_start, o.name_start + o.name_len), self._range(i, *sym),
                              text[o.start:nl if nl != -1 else o.end][:300]))
        return out

    def find_all(self, pattern: re.Pattern[str], needle: str, group: int = 0) -> list[Range]:
        """Ranges of every match of `pattern` (which always matches `needle`) in the document: of
        its `group`, in the matches where that group took part."""
        out: list[Range] = []
        for i, p in enumerate(self.pieces):
            if p.contains(needle):
                out.extend(self._range(i, m.start(group), m.end(group)) for m in pattern.finditer(p.text)
                           if m.start(group) != -1)
        return out

    def lines_text(self, first_line: int, last_line: int | None, cap: int) -> tuple[str, int]:
        """(text, its first line) of a run of whole pieces that holds lines first..last (None: to
        the end), stopping once past `cap` characters."""
        i = self.piece_at_line(first_line)
        j = self.piece_at_line(last_line) if last_line is not None else len(self.pieces) - 1
        parts, size = [], 0
        for k in range(i, j + 1):
            parts.append(self.pieces[k].text)
            size += len(parts[-1])
            if size > cap:
                break
        return "".join(parts), self._line0[i]

    def spans(self) -> list[tuple[str, int, int]]:
        """The text as immutable spans (string, start, end), without copying the pieces."""
        return [p.span() for p in self.pieces]

def _found_in(p: Piece) -> int:
    """How many findings the piece's own check holds."""
    return len(p.result.findings) if p.result is not None else 0


__all__ = ["LiveText", "Piece", "Outline", "segment", "PIECES_MIN_CHARS"]

"""Cutting a whole text into pieces, and checking one piece alone (see live_text.py).

`PieceMaker.pieces_of` reads the text once, cuts it at its top-level ops' line starts (and a big
function at statement starts) and checks only the pieces the whole read saw an assert candidate
or a syntax issue in; the others are marked clean. The checks of single pieces (after an edit)
are here too, so that a piece is always checked the same way, whoever made it.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable

from ..checker import CheckResult, check_text
from ..config import Settings
from ..syntax import statements
from ..syntax.op_tree import ChildPairs, Op
from ..syntax.parsed_text import parse, parse_block
from ..syntax.statements import BlockStatements, block_labels, child_pairs, code_end, slice_pairs
from .pieces import (
    ASSERT_LITERAL,
    BigUnit,
    Piece,
    cut_points,
    holds,
    make_piece,
    outline_pieces,
    segment,
    view_piece,
)

# Issues of a text whose braces do not balance (the reader's messages).
BRACE_ISSUES = frozenset({"'{' is never closed", "region '{' is never closed", "unmatched '}'"})
# An op whose `(` or `[` is not closed runs on to the end of what is read: past its piece.
UNBALANCED = "unbalanced '(' or '[' in operation"


def breaks_pieces(result: CheckResult) -> bool:
    """Does this check's text leave braces or brackets open (so it cannot stand as a piece)?"""
    return any(i.message in BRACE_ISSUES or i.message == UNBALANCED for i in result.parsed.issues)


class PieceMaker:
    """Makes and checks pieces with one document's settings."""

    def __init__(self, settings: Settings):
        self.settings = settings
        # The outlines of the last whole read's pieces, to be given once no diagnostic waits
        # (`outlines_due`): a tenth of a read of many small functions.
        self.outlines_due: Callable[[], None] | None = None

    # -- a whole text -------------------------------------------------------------------------
    def pieces_of(self, text: str, exact: bool, min_piece_chars: int) -> tuple[list[Piece], bool]:
        """The pieces of `text`, and whether the document is now *exact* (it held a big function:
        a text whose braces do not balance then stays one piece until they do, so its findings
        are exactly a whole check's, at the cost of a whole check per edit while it is broken)."""
        if len(text) < min_piece_chars:
            return [self.whole(text)], exact
        parsed = parse(text)
        bounds = segment(text, parsed)
        spots = _spots(parsed)
        if exact and any(i.message in BRACE_ISSUES or i.message == UNBALANCED for i in parsed.issues):
            return [self.whole(text)], True
        if any(not sa and text[s:e].strip() and holds(spots, s, e) for s, e, sa in bounds):
            return [self.whole(text)], exact  # a finding in glue: one piece is exact
        return self._split_units(text, parsed, bounds, spots, exact)

    def _split_units(self, text: str, parsed, bounds, spots, exact: bool) -> tuple[list[Piece], bool]:
        # The first op at each line start, where it may be a big function (`_split_big`).
        big: dict[int, Op] = {}
        last = -1
        for _chunk, op in parsed.units():
            if op.end - op.start > statements.BIG_BLOCK_CHARS:
                ls = text.rfind("\n", 0, op.start) + 1
                if last < ls:  # no op before it on its line
                    big[ls] = op
            last = op.start
        pieces: list[Piece] = []
        count, k, n = text.count, 0, len(spots)  # spots[k]: the first spot not before the piece
        for s, e, sa in bounds:
            while k < n and spots[k] < s:
                k += 1
            op = big.get(s) if sa else None
            split = self._split_big(text, s, e, op, spots) if op is not None else None
            if split is not None:
                pieces.extend(split)
                exact = True
                continue
            # view_piece's piece, made here: 85,000 of them in 50 MB of small functions
            p = Piece(None, count("\n", s, e), sa, "unit" if sa else "glue", _base=text, _start=s, _end=e)
            if k < n and spots[k] < e:
                self.check_if_needed(p)
            else:
                p.clean = True  # the whole read found nothing there
            pieces.append(p)
        if len(pieces) > 1:
            starts = [0, *itertools.accumulate(p.size for p in pieces[:-1])]
            self.outlines_due = functools.partial(outline_pieces, parsed, pieces, starts)
        return pieces, exact

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
        if holds(spots, s, header_end):
            return None  # a syntax issue in the header: one piece reports it as a whole read does
        closer_ls = text.rfind("\n", 0, close - 1) + 1
        line_end = text.find("\n", close - 1, e)
        line_end = e if line_end == -1 else line_end
        if text[closer_ls:close - 1].strip() or code_end(text, close, line_end) != close:
            return None  # the `}` does not stand alone on its line
        unit = BigUnit(op, brace - s, close - brace)
        children = statements.region_children(text, (brace, close), op.lazy_children[0])
        bs = BlockStatements(text, brace + 1, close - 1, Op(op.name, 0, 0, 0, [], op.generic, op.parent), children)
        cuts = [header_end, *cut_points(bs, header_end, closer_ls), closer_ls]
        labels = block_labels(text, brace + 1, close - 1, children)
        pieces = [view_piece(text, s, header_end, False, "header", unit)]
        for a, b in itertools.pairwise(cuts):
            if a < b:
                p = view_piece(text, a, b, True, "body", unit)
                p.pairs = slice_pairs(children, a, b)
                p.labels = holds(labels, a, b)
                self.check_body(p)
                pieces.append(p)
        pieces.append(view_piece(text, closer_ls, e, False, "closer", unit))
        pieces[0].clean = pieces[-1].clean = True
        return pieces

    # -- one piece ----------------------------------------------------------------------------
    def whole(self, text: str) -> Piece:
        """The whole text as one piece, checked."""
        p = make_piece(text, True)
        p.result = check_text(text, self.settings, with_fixes=False)
        return p

    def body_piece(self, text: str, unit: BigUnit, pairs: ChildPairs | None = None) -> Piece:
        p = make_piece(text, True, "body", unit)
        p.pairs = pairs if pairs is not None else child_pairs(text, 0, len(text))[0]
        self.check_body(p)
        return p

    def check_body(self, p: Piece) -> None:
        """A body piece is checked as the content of the unit's block; only its statements that hold
        an assert are read (a piece without one holds no finding: its braces balance)."""
        p.fixes_ready = False
        p.rendered = None
        if not p.contains(ASSERT_LITERAL):
            p.result, p.clean = None, True
            return
        text = p.text
        p.result = check_text(text, self.settings, parsed=parse_block(text, p.big.op, p.pairs), with_fixes=False)
        p.clean = not p.result.findings

    def check_if_needed(self, p: Piece) -> None:
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

    def check_any(self, p: Piece) -> CheckResult:
        """A check of any piece, clean ones included (for navigation; not kept on the piece)."""
        text = p.text
        parsed = parse_block(text, p.big.op, p.pairs) if p.kind == "body" else None
        return check_text(text, self.settings, with_fixes=False, parsed=parsed)


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

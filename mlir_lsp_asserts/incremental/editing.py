"""Editing a document kept in pieces (see live_text.py): an LSP content change spliced into the
pieces it touches, which are checked again alone; the pieces around stay as they are. An edit that
changes what the pieces stand on (a top-level op now runs across a piece's edge, a big function's
braces no longer balance, its header no longer opens its region) reads the whole text again.

`Splicer` is given the document's values and returns what to do with them (`Splice` or
`Reread`); the document applies that to itself. The pieces list is only read here: the new
pieces are new objects (a big function's `BigUnit` is updated in place, and a renamed one's
body pieces are checked again)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ..syntax import statements
from ..syntax.op_tree import Op
from ..syntax.parsed_text import parse
from ..syntax.statements import BlockStatements, child_pairs, code_end
from . import pieces
from .building import BRACE_ISSUES, UNBALANCED, PieceMaker
from .pieces import (
    Piece,
    cut_points,
    keeps_region,
    make_piece,
    opens_region,
    outline_entry,
    segment,
    starts_statement,
    trailing,
)


@dataclass(frozen=True, slots=True)
class Splice:
    """Replace the pieces `start:stop` by `pieces` (new, checked as they need)."""

    start: int
    stop: int
    pieces: list[Piece]


@dataclass(frozen=True, slots=True)
class Reread:
    """The edit changed what the pieces stand on: read `text`, the whole new text, again."""

    text: str


class Splicer:
    """Splices one content change into a document's `pieces` (read, never changed), given
    whether the document is exact (building.PieceMaker.pieces_of), its maker and the size from
    which a text is kept in pieces."""

    def __init__(self, pieces: list[Piece], exact: bool, maker: PieceMaker, min_piece_chars: int):
        self.pieces, self.exact, self.maker, self.min_piece_chars = pieces, exact, maker, min_piece_chars
        self.rechecked: list[int] = []  # pieces outside the splice that were checked again

    def splice(self, start: tuple[int, int], end: tuple[int, int], new_text: str) -> Splice | Reread:
        """The text from `start` to `end` (each a piece index and an offset in that piece, in
        order) replaced by `new_text`."""
        (i, s), (j, e) = start, end
        pieces_ = self.pieces
        if j > i and e == 0:  # the end is the first character of the next piece
            j -= 1
            e = pieces_[j].size
        merged = pieces_[i].text[:s] + new_text + pieces_[j].text[e:]
        # A piece must end at a line end (the next one starts a line): else take the next in.
        while not merged.endswith("\n") and j + 1 < len(pieces_):
            j += 1
            merged += pieces_[j].text
        kinds = {p.kind for p in pieces_[i:j + 1]}
        new: list[Piece] | None
        if kinds == {"body"}:
            new, i, j, merged = self._edit_body(i, j, merged)
        elif kinds == {"header"}:
            new = self._edit_header(i, merged)
        elif kinds == {"closer"}:
            new = self._edit_closer(i, merged)
            if new is not None and j + 1 < len(pieces_) and not starts_statement(new[-1].text, pieces_[j + 1].text):
                new = None
        elif kinds == {"unit"}:
            new = self._edit_units(merged)
            if (new is not None and self.exact and len(pieces_) > 1
                    and not self._boundaries_hold(i, j, new)):
                new = None  # an op now runs across a piece's edge: exact, read as a whole check does
        else:
            new = None
        if new is None:  # the edit changed what the pieces stand on: read it all again
            return Reread("".join([*(p.text for p in pieces_[:i]), merged, *(p.text for p in pieces_[j + 1:])]))
        return Splice(i, j + 1, new)

    def _boundaries_hold(self, i: int, j: int, new: list[Piece]) -> bool:
        """Do the new pieces for i..j still start and end where ops start and end?"""
        before = self.pieces[i - 1].text if i > 0 else None
        if before is not None and not (starts_statement(before, new[0].text) and keeps_region(before, new[0].text)):
            return False
        return j + 1 >= len(self.pieces) or starts_statement(new[-1].text, self.pieces[j + 1].text)

    def _edit_units(self, merged: str) -> list[Piece] | None:
        piece = make_piece(merged, True)
        if len(self.pieces) == 1:
            if len(merged) >= self.min_piece_chars:  # grew large (a paste): into pieces
                return None
            self.maker.check_if_needed(piece)
            return [piece]
        return self._resplit(piece)

    def _edit_body(self, i: int, j: int, merged: str) -> tuple[list[Piece] | None, int, int, str]:
        """New pieces for body pieces i..j whose text became `merged` (grown to a neighbour while
        the result would not stand alone), or None when the function must be read again."""
        unit = self.pieces[i].big
        if any(p.unit is not unit for p in self.pieces[i:j + 1]):
            return None, i, j, merged
        old_chars = sum(p.size for p in self.pieces[i:j + 1])
        for _ in range(8):
            pairs, balanced = child_pairs(merged, 0, len(merged))
            prev, nxt = self.pieces[i - 1], self.pieces[j + 1]
            if not balanced:
                # a `{` or `}` typed alone: the pair may close in a neighbour
                grow_next = merged.count("{") >= merged.count("}")
            elif prev.kind == "body" and (not starts_statement(prev.text, merged)
                                          or "cf.assert" in merged[:merged.find("\n") + 1]):
                grow_next = False  # continues the statement above, or an assert on the first line
            elif nxt.kind == "body" and not starts_statement(merged, nxt.text):
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
        before = self.pieces[i - 1]
        if before.kind == "header" and not opens_region(before.text, unit.brace, merged):
            return None, i, j, merged
        unit.body_chars += len(merged) - old_chars
        if unit.body_chars <= statements.BIG_BLOCK_CHARS:
            return None, i, j, merged  # small enough to be read whole again, as a whole check does
        if len(merged) <= 4 * pieces.BODY_PIECE_CHARS:
            return [self.maker.body_piece(merged, unit, pairs)], i, j, merged
        bs = BlockStatements(merged, 0, len(merged), Op(unit.op.name, 0, 0, 0, [], False, unit.op.parent), pairs)
        cuts = [0, *cut_points(bs, 0, len(merged)), len(merged)]
        made = [self.maker.body_piece(merged[a:b], unit) for a, b in itertools.pairwise(cuts) if a < b]
        return made, i, j, merged

    def _edit_closer(self, i: int, merged: str) -> list[Piece] | None:
        """A big function's closing line and what follows it edited (typing a new function after
        it): the `}` line stays the closer, anything after its blank and comment lines is read as
        pieces of top-level ops of their own."""
        old = self.pieces[i]
        first = merged.find("\n") + 1
        if first == 0 or merged[:first].strip() != "}" or old.text[:old.text.find("\n") + 1] != merged[:first]:
            return None
        end = trailing(merged, first).end()
        closer = make_piece(merged[:end], False, "closer", old.unit)
        closer.clean = True
        rest = merged[end:]
        if not rest:
            return [closer]
        more = self._resplit(make_piece(rest, True))
        if more is None or not starts_statement(closer.text, more[0].text):
            return None  # what follows continues the function's op (`} {`, `} -> ...`)
        return [closer, *more]

    def _edit_header(self, i: int, merged: str) -> list[Piece] | None:
        """A big unit's header edited: read it again (with the first body piece after it, so its
        `{` is judged a region as in the whole text); the body pieces are checked again only when
        the op's name, which the rules look at, changed."""
        old = self.pieces[i]
        unit, first = old.big, self.pieces[i + 1]
        if first.kind != "body":
            return None
        if "cf.assert" in merged:
            return None  # a header is never checked: one holding an assert is read in whole
        if i > 0 and not keeps_region(self.pieces[i - 1].text, merged):
            return None  # the module's `{` would no longer open a region
        brace = merged.rfind("{")
        if brace == -1 or code_end(merged, brace + 1, len(merged) - 1) != brace + 1 or not merged.endswith("\n"):
            return None
        parsed = parse(merged + first.text + "}\n")
        units = parsed.units()
        if parsed.issues or len(units) != 1 or len(units[0][1].lazy_regions) != 1 \
                or units[0][1].lazy_regions[0][0] != brace:
            return None
        op = units[0][1]
        op.parent, op.resolved_name = unit.op.parent, None
        renamed = op.full_name != unit.op.full_name
        unit.body_chars += (len(merged) - brace) - (len(old.text) - unit.brace)
        unit.op, unit.brace = op, brace
        piece = make_piece(merged, False, "header", unit)
        piece.clean = True
        piece.outline = [outline_entry(merged, op)]
        if renamed:
            for k, p in enumerate(self.pieces):
                if p.unit is unit and p.kind == "body" and p.contains("cf.assert"):
                    self.maker.check_body(p)
                    self.rechecked.append(k)
        return [piece]

    def _resplit(self, piece: Piece) -> list[Piece] | None:
        """Check an edited piece; split it if it now holds several top-level ops."""
        self.maker.check_if_needed(piece)
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
            p = make_piece(piece.text[s:e], True)
            self.maker.check_if_needed(p)
            out.append(p)
        return out or [piece]

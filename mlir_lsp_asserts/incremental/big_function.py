"""A big function kept in pieces (a torch export's one function, see live_text.py): what needs
more than one of its pieces. SSA values are looked up across them (a use in one piece, its
definition in another), a piece's fixes are planned with the definitions they need copied in
from the pieces before it, and "fix all" fixes every assert of the function on the whole text,
as `mlir-lsp --check --fix` does. Each lookup costs `str` searches over the pieces, never a read
of the function.

Plain functions of the document's piece list (read, never changed: only a piece's fixes are
attached to its check) and piece indices; piece indices and piece-relative offsets come out."""

from __future__ import annotations

import bisect
import re

from ..checker import CheckResult
from ..config import Settings
from ..findings import Finding, Fix, TextEdit
from ..fixes import attach_fixes, attach_unit_fixes, fix_asserts
from ..syntax.op_tree import Op, Region
from ..syntax.parsed_text import parse_block
from ..syntax.statements import BlockStatements, defines_at, name_pattern
from .pieces import Piece, has_labels


def with_fixes(pieces: list[Piece], i: int, settings: Settings) -> CheckResult | None:
    """Piece i's check with its fixes attached (built on first request, then kept on the piece)."""
    p = pieces[i]
    if p.result is None:
        return None
    if not p.fixes_ready:
        if p.kind == "body":
            attach_body_fixes(pieces, i, settings)
        else:
            attach_fixes(p.result, settings)
        p.fixes_ready = True
    return p.result


def _unit_reader(pieces: list[Piece], text: str, starts: list[int], h: int, c: int) -> BlockStatements:
    """The block of the big function between header h and closer c, read from the whole text."""
    header, closer = pieces[h], pieces[c]
    brace = starts[h] + header.big.brace
    close = starts[c] + closer.text.index("}")
    owner = header.big.op
    unit = Op(owner.name, starts[h], close + 1, starts[h], [], owner.generic, owner.parent)
    return BlockStatements(text, brace + 1, close, unit, _PiecePairs(pieces, starts, h + 1, c),
                           Region(brace, close + 1), labels=any(has_labels(q) for q in pieces[h + 1:c]))


def _assert_pairs(bs: BlockStatements, p: Piece, base: int) -> dict[int, tuple[Finding, Op]]:
    """{piece offset: (finding, assert op in the whole text)} of a body piece's assert findings."""
    assert p.result is not None, "only a checked piece has assert findings"
    out = {}
    for f in p.result.findings:
        if f.code.startswith("MLA"):
            for top in bs.statement_at(base + f.op_start):
                for o in top.walk():
                    if o.start == base + f.op_start and o.full_name == "cf.assert":
                        out[f.op_start] = (f, o)
    return out


def attach_body_fixes(pieces: list[Piece], i: int, settings: Settings) -> None:
    """Fixes of a body piece's findings, planned on the piece alone with, put before it, the
    statements of other pieces that define the values it uses (`%c77`, found by `str` searches
    of the pieces before it); uses and names elsewhere in the function are asked of the other
    pieces (`_Outside`). Edits stay inside the piece. Cost: the piece and a few searches, not
    the function."""
    p = pieces[i]
    text = p.text
    outside = _Outside(pieces, i)
    prefix: list[str] = []
    fetched: set[str] = set()
    for _round in range(4):
        full = "".join(prefix) + text
        base = len(full) - len(text)
        parsed = parse_block(full, p.big.op)
        assert parsed.block is not None, "parse_block reads a block"
        pairs = list(_assert_pairs(parsed.block, p, base).values())
        if not pairs:
            return
        missing = attach_unit_fixes(full, pairs, settings, window=(base, len(full)), outside=outside)
        wanted = [n for n in sorted(missing or ()) if n not in fetched]
        fetched.update(wanted)
        found = [d for d in (_definition_text(pieces, i, n) for n in wanted) if d is not None]
        if not found:
            break
        prefix = [*found, *prefix]
    for f, _o in pairs:
        f.fixes = [Fix(x.title, x.mode, x.applicability,
                       tuple(TextEdit(e.start - base, e.end - base, e.new_text) for e in x.edits))
                   for x in f.fixes]


def _definition_text(pieces: list[Piece], i: int, name: str) -> str | None:
    """The text of the statement that defines `%name` in another piece of i's function."""
    where = value_definition_elsewhere(pieces, i, name)
    if where is None or pieces[where[0]].kind != "body":
        return None
    q = pieces[where[0]]
    qt = q.text
    reader = BlockStatements(qt, 0, len(qt), Op(q.big.op.name, 0, 0, 0, []), q.pairs)
    s = reader.start_of(where[1])
    e = reader.end_of(s)
    out = qt[qt.rfind("\n", 0, s) + 1:e]
    return out if out.endswith("\n") else out + "\n"


def unit_fixes(pieces: list[Piece], text: str, starts: list[int], h: int, c: int, mode: str,
               unsafe: bool) -> list[tuple[int, TextEdit]]:
    """Every fix of `mode` of the big function between header h and closer c, planned on the
    whole text (`text`, whose pieces start at `starts`) as `mlir-lsp --check --fix` does:
    (piece index, piece-relative edit)."""
    bs = _unit_reader(pieces, text, starts, h, c)
    pairs: list[tuple[Finding, Op]] = []
    for j in range(h + 1, c):
        q = pieces[j]
        if q.result is not None and q.result.findings:
            pairs.extend(_assert_pairs(bs, q, starts[j]).values())
    out: list[tuple[int, TextEdit]] = []
    for e in fix_asserts(text, pairs, mode, unsafe).edits:
        j = bisect.bisect_right(starts, e.start) - 1
        if e.start == starts[j] and e.start == e.end and j > 0:
            j -= 1  # an insertion at a piece's start: at the end of the one before
        out.append((j, TextEdit(e.start - starts[j], e.end - starts[j], e.new_text)))
    return out


# -- SSA values of a big function, across its pieces --------------------------------------------
def unit_bounds(pieces: list[Piece], i: int) -> tuple[int, int] | None:
    """(header, closer) piece indices of the big function that piece i belongs to, or None."""
    if pieces[i].unit is None:
        return None
    h, c = i, i
    while pieces[h].kind != "header":
        h -= 1
    while pieces[c].kind != "closer":
        c += 1
    return h, c


def value_definition_elsewhere(pieces: list[Piece], i: int, name: str) -> tuple[int, int] | None:
    """(piece, offset of the `%`) where `%name`, used in body piece i but not defined there, is
    defined in its function: a result at the function's block level in another body piece
    (looked for backwards first, with `str` searches per piece), or an argument in the header."""
    bounds = unit_bounds(pieces, i)
    if bounds is None:
        return None
    h, c = bounds
    needle, pattern = "%" + name, name_pattern(name)
    for j in [*range(i - 1, h, -1), *range(i + 1, c)]:
        p = pieces[j]
        if not p.contains(needle):
            continue
        text = p.text
        for m in pattern.finditer(text):
            at = m.start()
            if p.pairs is not None and p.pairs.span_at(at) is not None:
                continue
            if defines_at(text, at):
                return j, at
    header = pieces[h].text
    arg = re.compile(re.escape(needle) + r"\s*:").search(header, 0, pieces[h].big.brace)
    return (h, arg.start()) if arg else None


def value_uses_elsewhere(pieces: list[Piece], i: int, name: str) -> list[tuple[int, int]]:
    """(piece, offset) of every `%name` in the function of body piece i outside that piece."""
    bounds = unit_bounds(pieces, i)
    if bounds is None:
        return []
    h, c = bounds
    needle, pattern = "%" + name, name_pattern(name)
    out: list[tuple[int, int]] = []
    for j in range(h, c):
        p = pieces[j]
        if j != i and p.contains(needle):
            out.extend((j, m.start()) for m in pattern.finditer(p.text, 0, p.big.brace if j == h else p.size))
    return out


_ASSUMED_NAME = re.compile(r"%([\w$.\-]*assumed[\w$.\-]*)")


class _Outside:
    """What a piece of a big function, read alone, asks of the rest of the function."""

    def __init__(self, pieces: list[Piece], i: int):
        self.pieces, self.i = pieces, i
        bounds = unit_bounds(pieces, i)
        assert bounds is not None, "a body piece is part of a big function"
        h, c = bounds
        self.others = [q for k, q in enumerate(pieces[h:c + 1], h) if k != i]
        self._assumed: set[str] | None = None

    def used(self, name: str) -> bool:
        """Is `%name` used (or defined) in another piece? A definition copied before the piece is
        found here too, which keeps it: nothing outside the piece is ever removed."""
        return bool(value_uses_elsewhere(self.pieces, self.i, name))

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
        pairs = self.pieces[k].pairs
        assert pairs is not None, "a body piece has its pairs"
        span = pairs.span_at(pos - base)
        return None if span is None else (span[0] + base, span[1] + base)

"""A whole MLIR text read into chunks (`// -----`) of top-level ops, with lazy expansion."""

from __future__ import annotations

import bisect
import re

from ..records import field, record
from . import statements
from .lines import LineIndex
from .op_tree import Op, Region, SyntaxIssue
from .reader import Reader
from .statements import BlockStatements, child_pairs


@record(slots=True, eq=False)
class Chunk:
    """One `// -----` chunk, read on its own like mlir-lsp-server does."""

    start: int
    end: int
    reader: Reader
    ops: list[Op]

    @property
    def issues(self) -> list[SyntaxIssue]:
        return self.reader.issues


@record(eq=False)
class ParsedText:
    """A text's structure: its top-level chunks, and its lines and units when asked."""

    text: str
    chunks: list[Chunk]
    _lines: LineIndex | None = field(default=None, repr=False)
    _unit_starts: list[int] | None = field(default=None, repr=False)
    _units: list[tuple[Chunk, Op]] | None = field(default=None, repr=False)
    _matches: dict = field(default_factory=dict, repr=False)
    # Set when the text is the content of one block of `block.owner` (a piece of a big function
    # body, incremental/live_text.py): its statements are read on demand, never all.
    block: BlockStatements | None = field(default=None, repr=False)

    @property
    def lines(self) -> LineIndex:
        if self._lines is None:
            self._lines = LineIndex(self.text)
        return self._lines

    @property
    def issues(self) -> list[SyntaxIssue]:
        return [i for c in self.chunks for i in c.issues]

    def units(self) -> list[tuple[Chunk, Op]]:
        """Top-level ops (children of outer modules), in source order. For the content of a
        block (`parse_block`) there are none: its statements are read by `unit_at`."""
        if self.block is not None:
            return []
        if self._units is None:
            units = []
            for chunk in self.chunks:
                stack = list(reversed(chunk.ops))
                while stack:
                    op = stack.pop()
                    if op.name in ("module", "builtin.module") and op.regions:
                        children = [c for r in op.regions for b in r.blocks for c in b.ops]
                        if children:
                            stack.extend(reversed(children))
                            continue
                    units.append((chunk, op))
            units.sort(key=lambda u: u[1].start)
            self._units = units
            self._unit_starts = [u[1].start for u in units]
        return self._units

    def unit_at(self, offset: int) -> tuple[Chunk, Op] | None:
        if self.block is not None:
            if not 0 <= offset < len(self.text):
                return None
            ops = self.block.statement_at(offset)
            op = next((o for o in ops if o.start <= offset < max(o.end, o.start + 1)), None)
            return (self.chunks[0], op) if op is not None else None
        units = self.units()
        assert self._unit_starts is not None, "units() sets the starts with the units"
        i = bisect.bisect_right(self._unit_starts, offset) - 1
        if i >= 0 and units[i][1].start <= offset < max(units[i][1].end, units[i][1].start + 1):
            return units[i]
        return None

    def expand_all(self) -> None:
        for chunk in self.chunks:
            for op in chunk.ops:
                chunk.reader.expand(op)

    def statements_of(self, chunk: Chunk, op: Op) -> list[BlockStatements] | None:
        """For a top-level op with a region above `statements.BIG_BLOCK_CHARS` (a torch export's
        one function): readers of its regions' statements, which replace its lazy regions. None
        for an op small enough to read in full."""
        if not op.lazy_regions:
            sparse = [r.sparse for r in op.regions if isinstance(r.sparse, BlockStatements)]
            return sparse or None
        if all(e - s <= statements.BIG_BLOCK_CHARS for s, e in op.lazy_regions):
            return None
        text = self.text
        out = []
        lazy, children = op.lazy_regions, op.lazy_children
        op.lazy_regions, op.lazy_children = (), ()
        op.regions = []
        for (s, close), pairs in zip(lazy, children, strict=False):
            hi = close - 1 if close > s + 1 and text[close - 1] == "}" else close
            pairs = statements.region_children(text, (s, close), pairs)
            out.append(BlockStatements(text, s + 1, hi, op, pairs, Region(s, close), chunk.reader.issues))
        return out

    def ops_matching(self, pattern: re.Pattern[str], names: frozenset[str]) -> list[Op]:
        """Ops whose name is in `names`, finding candidates with `pattern` over the text.

        Only the top-level ops that contain a textual match are read in full, so the cost is
        one regex scan plus the functions that matter. Matches in comments or strings are
        discarded because the structural read does not make ops of them.
        """
        key = (pattern.pattern, names)
        cached = self._matches.get(key)
        if cached is not None:
            return list(cached)
        found: list[Op] = []
        seen: set[int] = set()
        text = self.text
        literal = _literal_prefix(pattern)
        if literal:
            # str.find for the literal part (C speed), the regex only where it occurs
            positions = []
            pos = text.find(literal)
            while pos != -1:
                positions.append(pos)
                pos = text.find(literal, pos + 1)
            starts = [p for p in positions if any(pattern.match(text, q) for q in (p, p - 1) if q >= 0)]
        else:
            starts = [m.start() for m in pattern.finditer(text)]
        if self.block is not None:
            for top in _tops_at(self.block, starts):
                found.extend(o for o in top.walk() if o.full_name in names)
            starts = []
        for start in starts:
            unit = self.unit_at(start)
            if unit is None:
                continue
            chunk, op = unit
            if id(op) in seen:
                continue
            seen.add(id(op))
            readers = self.statements_of(chunk, op)
            if readers is None:
                chunk.reader.expand(op)
                found.extend(o for o in op.walk() if o.full_name in names)
                continue
            if op.full_name in names:
                found.append(op)
            for bs in readers:
                for top in _tops_at(bs, starts):
                    found.extend(o for o in top.walk() if o.full_name in names)
        # Ops at module level themselves (outside any unit) and modules' direct ops.
        found.sort(key=lambda o: o.start)
        self._matches[key] = found
        return list(found)


def _tops_at(bs: BlockStatements, offsets: list[int]) -> list[Op]:
    """The statements of `bs` holding the offsets, each once, in order."""
    tops: dict[int, Op] = {}
    for p in offsets:
        if bs.lo <= p < bs.hi:
            for top in bs.statement_at(p):
                tops[id(top)] = top
    return sorted(tops.values(), key=lambda o: o.start)


def _literal_prefix(pattern: re.Pattern[str]) -> str | None:
    """The literal declared with `register_literal` for this pattern, else None."""
    return _LITERALS.get(pattern.pattern)


_LITERALS: dict[str, str] = {}


def register_literal(pattern: re.Pattern[str], literal: str) -> re.Pattern[str]:
    """Declare that every match of `pattern` starts at, or one character before, `literal`."""
    _LITERALS[pattern.pattern] = literal
    return pattern


def parse_block(text: str, owner: Op, pairs=None) -> ParsedText:
    """`text` read as the content of one block of `owner` (an op of another text, e.g. the function
    a piece of its body comes from): statements are read on demand, under a copy of `owner` whose
    ancestors are `owner`'s, so rules see the same enclosing ops as in the whole file."""
    if pairs is None:
        pairs, _balanced = child_pairs(text, 0, len(text))
    anchor = Op(owner.name, 0, 0, 0, [], owner.generic, owner.parent)
    region = Region(-1, len(text) + 1)
    bs = BlockStatements(text, 0, len(text), anchor, pairs, region)
    bs.partial = True
    parsed = ParsedText(text, [Chunk(0, len(text), bs.rd, [])])
    parsed.block = bs
    return parsed


def parse(text: str, lazy: bool = True) -> ParsedText:
    chunks = []
    for s, e in split_chunks(text):
        reader = Reader(text, s, e, lazy=lazy)
        ops = reader.read()
        chunks.append(Chunk(s, e, reader, ops))
    return ParsedText(text, chunks)


# `--split-input-file`'s rule (mlir/lib/Support/ToolUtilities.cpp, splitAndProcessBuffer): the
# text is cut at every `// ---` (the marker less its last two characters) anywhere, even mid-line
# or in a string; a cut counts when the text after it starts with `--` and a third character
# that is not `0` (sic: upstream checks '0', not '-'), else it is a near miss and stays in the
# chunk. A chunk ends where its marker starts; the next one starts right after the marker, so
# text after a marker on its line belongs to the next chunk. While the chunk so far is empty (the
# text starts with a marker) the tool joins the next piece to it unchecked, its `--` included;
# `split_chunks` drops that marker instead (the one difference, on purpose: see there).
SPLIT_MARKER = "// -----"
_CUT = SPLIT_MARKER[:-2]
_TAIL = SPLIT_MARKER[-2:]


def split_chunks(text: str) -> list[tuple[int, int]]:
    """The `// -----` chunks `iree-opt --split-input-file` makes of `text`: [(start, end), ...];
    one chunk of the whole text where the tool makes none (the text is empty or only cuts)."""
    bounds = []
    start = end = 0  # the chunk so far: text[start:end]
    at = text.find(_CUT)
    pieces = [0]  # where each piece between cuts starts
    while at != -1:
        pieces.append(at + len(_CUT))
        at = text.find(_CUT, at + len(_CUT))
    for i, p in enumerate(pieces):
        stop = pieces[i + 1] - len(_CUT) if i + 1 < len(pieces) else len(text)
        if start == end:  # the tool joins a piece to an empty chunk with the marker's `--` left in
            # (a file that starts with `// -----` would start with a syntax error); the marker is
            # dropped here instead, as before: such a file reads as its ops, not as an error
            start, end = (p + 2 if p and text.startswith(_TAIL, p) else p), stop
        elif text.startswith(_TAIL, p) and stop > p + 2 and text[p + 2] != "0":
            bounds.append((start, end))
            start, end = p + 2, stop
        else:
            end = stop
    if start != end:
        bounds.append((start, end))
    return bounds or [(0, len(text))]

"""A whole MLIR text read into chunks (`// -----`) of top-level ops, with lazy expansion."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from .index import LineIndex, Op, SyntaxIssue
from .reader import Reader, split_chunks


@dataclass(slots=True, eq=False)
class Chunk:
    """One `// -----` chunk, read on its own like mlir-lsp-server does."""

    start: int
    end: int
    reader: Reader
    ops: list[Op]

    @property
    def issues(self) -> list[SyntaxIssue]:
        return self.reader.issues


@dataclass(eq=False)
class ParsedText:
    text: str
    chunks: list[Chunk]
    _lines: LineIndex | None = field(default=None, repr=False)
    _unit_starts: list[int] | None = field(default=None, repr=False)
    _units: list[tuple[Chunk, Op]] | None = field(default=None, repr=False)
    _matches: dict = field(default_factory=dict, repr=False)

    @property
    def lines(self) -> LineIndex:
        if self._lines is None:
            self._lines = LineIndex(self.text)
        return self._lines

    @property
    def issues(self) -> list[SyntaxIssue]:
        return [i for c in self.chunks for i in c.issues]

    def units(self) -> list[tuple[Chunk, Op]]:
        """Top-level ops (children of outer modules), in source order."""
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
        units = self.units()
        i = bisect.bisect_right(self._unit_starts, offset) - 1
        if i >= 0 and units[i][1].start <= offset < max(units[i][1].end, units[i][1].start + 1):
            return units[i]
        return None

    def expand_all(self) -> None:
        for chunk in self.chunks:
            for op in chunk.ops:
                chunk.reader.expand(op)

    def all_ops(self):
        """Every op (expanding everything): heavy on large files; prefer `ops_matching`."""
        self.expand_all()
        for chunk in self.chunks:
            for top in chunk.ops:
                yield from top.walk()

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
        for start in starts:
            unit = self.unit_at(start)
            if unit is None:
                continue
            chunk, op = unit
            if id(op) in seen:
                continue
            seen.add(id(op))
            chunk.reader.expand(op)
            found.extend(o for o in op.walk() if o.full_name in names)
        # Ops at module level themselves (outside any unit) and modules' direct ops.
        found.sort(key=lambda o: o.start)
        self._matches[key] = found
        return list(found)


def _literal_prefix(pattern: re.Pattern[str]) -> str | None:
    """The literal declared with `register_literal` for this pattern, else None."""
    return _LITERALS.get(pattern.pattern)


_LITERALS: dict[str, str] = {}


def register_literal(pattern: re.Pattern[str], literal: str) -> re.Pattern[str]:
    """Declare that every match of `pattern` starts at, or one character before, `literal`."""
    _LITERALS[pattern.pattern] = literal
    return pattern


def parse(text: str, lazy: bool = True) -> ParsedText:
    chunks = []
    for s, e in split_chunks(text):
        reader = Reader(text, s, e, lazy=lazy)
        ops = reader.read()
        chunks.append(Chunk(s, e, reader, ops))
    return ParsedText(text, chunks)

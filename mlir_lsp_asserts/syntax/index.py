"""The op index: what the structural reader produces.

Plain data with offsets into the document text. Line/character positions are computed on
demand through `LineIndex` (a sorted array of line starts, one `bisect` per lookup), so a
50 MB document costs one array of line starts, not one object per line.
"""

from __future__ import annotations

import bisect
import re
from array import array
from dataclasses import dataclass, field

# Default-dialect resolution for short op names, as the real printer/parser does it:
# `module` and `unrealized_conversion_cast` are builtin ops; ops that declare a default
# dialect (OpAsmOpInterface::getDefaultDialect) let their bodies drop the prefix.
BUILTIN_SHORT_NAMES = frozenset({"module", "unrealized_conversion_cast"})
DEFAULT_DIALECT_OF_PARENT = {
    "func.func": "func",
    "builtin.module": None,
    "transform.sequence": "transform",
    "transform.named_sequence": "transform",
    "pdl.pattern": "pdl",
    "spirv.module": "spirv",
    "gpu.module": None,
}


@dataclass(slots=True)
class SyntaxIssue:
    """A place where the text is not well-formed MLIR structure."""

    start: int
    end: int
    message: str


@dataclass(slots=True)
class ChildPairs:
    """Sorted, disjoint `{...}` spans directly inside a block: `{` offset and one past its `}`."""

    opens: array = field(default_factory=lambda: array("q"))
    closes: array = field(default_factory=lambda: array("q"))

    def span_at(self, pos: int) -> tuple[int, int] | None:
        """(open, close) of the pair with open < pos < close, or None."""
        i = bisect.bisect_left(self.opens, pos) - 1
        return (self.opens[i], self.closes[i]) if i >= 0 and pos < self.closes[i] else None


@dataclass(slots=True, eq=False)
class Block:
    """A block of a region: optional label (`^bb0`) with its arguments, and its ops."""

    label: str | None
    label_start: int
    args: list[tuple[str, int]] = field(default_factory=list)  # (name, offset)
    ops: list[Op] = field(default_factory=list)


@dataclass(slots=True, eq=False)
class Region:
    """A region: `{` ... `}` with its blocks. `start` is the `{`, `end` one past the `}`."""

    start: int
    end: int
    blocks: list[Block] = field(default_factory=list)
    # Set for a big block read statement by statement (syntax/statements.py): its one block holds
    # only the statements read so far, and this object reads more of them on demand.
    sparse: object = None


@dataclass(slots=True, eq=False)
class Op:
    """One operation, custom (`%0 = arith.cmpi ...`) or generic (`"cf.assert"(%0) ...`) form.

    `start` is where the op's text begins (its first result, or its name), `end` one past its
    last character (trailing comments excluded). `name_start` is where the real parser puts the
    op's location (the name, or the quote of a generic name).
    """

    name: str  # as written, e.g. "cf.assert", "return"
    start: int
    end: int
    name_start: int
    results: list[tuple[str, int, int]]  # (name without %, offset of %, number of values)
    generic: bool = False
    parent: Op | None = None
    # Most ops have no region: an empty tuple is shared, a list is made on the first one.
    regions: list[Region] | tuple = ()
    # Regions not read yet (byte ranges of their braces), read on demand by `Reader.expand`.
    lazy_regions: list[tuple[int, int]] | tuple = ()
    # For each lazy region, the `{...}` pairs directly inside it (statements.ChildPairs), recorded
    # by the brace scan that skipped it.
    lazy_children: list | tuple = ()

    @property
    def full_name(self) -> str:
        """The registered name: short default-dialect names resolved (`return` -> `func.return`)."""
        name = self.name
        if "." in name:
            return name
        if name in BUILTIN_SHORT_NAMES:
            return "builtin." + name
        parent = self.parent
        while parent is not None:
            dialect = DEFAULT_DIALECT_OF_PARENT.get(parent.full_name, "")
            if dialect:
                return f"{dialect}.{name}"
            if dialect is None:
                break
            parent = parent.parent
        if name == "func":  # pre-2022 syntax: builtin `func`
            return "func.func"
        if name == "return":
            return "func.return"
        return name

    @property
    def dialect(self) -> str:
        return self.full_name.split(".", 1)[0]

    def ancestors(self):
        op = self.parent
        while op is not None:
            yield op
            op = op.parent

    def walk(self):
        """This op and every op nested in its (read) regions, in source order."""
        stack = [self]
        while stack:
            op = stack.pop()
            yield op
            children = [c for r in op.regions for b in r.blocks for c in b.ops]
            stack.extend(reversed(children))

    def header_spans(self) -> list[tuple[int, int]]:
        """Spans of the op's own text, with its regions cut out."""
        spans = []
        pos = self.start
        cuts = sorted([(r.start, r.end) for r in self.regions] + list(self.lazy_regions))
        for s, e in cuts:
            spans.append((pos, s))
            pos = e
        spans.append((pos, self.end))
        return spans


# SSA uses in an op's own text (strings and comments skipped).
_USE_RE = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|//[^\n]*|%([\w$.\-]+)(?:#(\d+))?')
_SYMBOL_RE = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|//[^\n]*|@([\w$.\-]+|"[^"\\\n]*(?:\\.[^"\\\n]*)*")')


def op_uses(text: str, op: Op) -> list[tuple[str, int]]:
    """SSA values used by `op` itself (not by ops in its regions): (name, offset of %)."""
    out = []
    defined = {r[1] for r in op.results}
    for s, e in op.header_spans():
        for m in _USE_RE.finditer(text, s, e):
            if m.group(1) is not None and m.start() not in defined:
                out.append((m.group(1), m.start()))
    return out


def op_symbols(text: str, op: Op) -> list[tuple[str, int]]:
    """Symbol references and definitions (`@foo`) in the op's own text."""
    out = []
    for s, e in op.header_spans():
        for m in _SYMBOL_RE.finditer(text, s, e):
            if m.group(1) is not None:
                out.append((m.group(1), m.start()))
    return out


class LineIndex:
    """Offsets <-> (line, character) for one text, with LSP's UTF-16 characters."""

    __slots__ = ("text", "starts", "_ascii")

    def __init__(self, text: str):
        self.text = text
        starts = array("q", [0])
        find = text.find
        pos = find("\n")
        # str.find in a loop is C-speed per call; 1 M lines take ~0.1 s.
        while pos != -1:
            starts.append(pos + 1)
            pos = find("\n", pos + 1)
        self.starts = starts
        self._ascii = text.isascii()

    @property
    def line_count(self) -> int:
        return len(self.starts)

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1

    def position(self, offset: int) -> tuple[int, int]:
        """0-based (line, UTF-16 character) of an offset."""
        offset = max(0, min(offset, len(self.text)))
        line = self.line_of(offset)
        start = self.starts[line]
        if self._ascii:
            return line, offset - start
        seg = self.text[start:offset]
        return line, len(seg.encode("utf-16-le")) // 2

    def offset(self, line: int, character: int) -> int:
        """Offset of a 0-based (line, UTF-16 character); clamped into the text."""
        if line < 0:
            return 0
        if line >= len(self.starts):
            return len(self.text)
        start = self.starts[line]
        end = self.starts[line + 1] - 1 if line + 1 < len(self.starts) else len(self.text)
        if self._ascii:
            return min(start + max(character, 0), end)
        seg = self.text[start:end]
        units = 0
        for i, ch in enumerate(seg):
            if units >= character:
                return start + i
            units += 2 if ord(ch) > 0xFFFF else 1
        return end

    def line_span(self, line: int) -> tuple[int, int]:
        start = self.starts[line]
        end = self.starts[line + 1] - 1 if line + 1 < len(self.starts) else len(self.text)
        return start, end

    def line_text(self, line: int) -> str:
        start = self.starts[line]
        end = self.starts[line + 1] - 1 if line + 1 < len(self.starts) else len(self.text)
        return self.text[start:end].rstrip("\r")

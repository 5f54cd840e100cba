"""The op tree: what the structural reader produces (ops, their regions and blocks).

Plain data with offsets into the text; line/character positions come from `syntax.lines`.
"""

from __future__ import annotations

import bisect
import re
from array import array

from ..records import Protocol, field, record
from .tokens import STRING_LITERAL

TYPE_CHECKING = False  # typing's, without importing typing (records.py)
if TYPE_CHECKING:
    from typing import Any

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


@record(slots=True)
class SyntaxIssue:
    """A place where the text is not well-formed MLIR structure."""

    start: int
    end: int
    message: str


@record(slots=True)
class ChildPairs:
    """Sorted, disjoint `{...}` spans directly inside a block: `{` offset and one past its `}`."""

    opens: array = field(default_factory=lambda: array("q"))
    closes: array = field(default_factory=lambda: array("q"))

    def span_at(self, pos: int) -> tuple[int, int] | None:
        """(open, close) of the pair with open < pos < close, or None."""
        i = bisect.bisect_left(self.opens, pos) - 1
        return (self.opens[i], self.closes[i]) if i >= 0 and pos < self.closes[i] else None


@record(slots=True, eq=False)
class Block:
    """A block of a region: optional label (`^bb0`) with its arguments, and its ops."""

    label: str | None
    label_start: int
    args: list[tuple[str, int]] = field(default_factory=list)  # (name, offset)
    ops: list[Op] = field(default_factory=list)


class SparseBlock(Protocol):
    """A big block read statement by statement, as its region holds it (statements.py's
    `BlockStatements` is the one kind; it builds on this module, so this names what it gives)."""

    text: str
    lo: int
    hi: int
    pairs: Any  # answers span_at(offset): a ChildPairs, or a view over several pieces' pairs
    partial: bool
    region: Region
    block: Block

    def has_labels(self) -> bool: ...
    def first_code(self, ls: int) -> int: ...
    def start_of(self, t: int) -> int: ...
    def statement_at(self, t: int) -> list[Op]: ...


@record(slots=True, eq=False)
class Region:
    """A region: `{` ... `}` with its blocks. `start` is the `{`, `end` one past the `}`."""

    start: int
    end: int
    blocks: list[Block] = field(default_factory=list)
    # Set for a big block read statement by statement (syntax/statements.py): its one block holds
    # only the statements read so far, and this object reads more of them on demand.
    sparse: SparseBlock | None = None


@record(slots=True, eq=False)
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
    # Where each child op sits ({id(op): (region, block, index)}), made by `scope.containing` on first
    # use: it lives and dies with its tree (a module-level table kept old texts' trees alive).
    places: dict | None = field(default=None, repr=False)
    # `full_name` of a short name, resolved once: it asks the parents' full names, which would
    # make a chain of short names (a fuzzer's `a { b { c {...`) quadratic, 29 s for 64 kB. Reset
    # by whoever sets `parent` after it was asked (incremental/editing.py).
    resolved_name: str | None = field(default=None, repr=False)

    @property
    def full_name(self) -> str:
        """The registered name: short default-dialect names resolved (`return` -> `func.return`)."""
        name = self.name
        if "." in name:
            return name
        if self.resolved_name is None:
            self.resolved_name = self._resolve(name)
        return self.resolved_name

    def _resolve(self, name: str) -> str:
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
_USE_RE = re.compile(STRING_LITERAL + r'|//[^\n]*|%([\w$.\-]+)(?:#(\d+))?')


def op_uses(text: str, op: Op) -> list[tuple[str, int]]:
    """SSA values used by `op` itself (not by ops in its regions): (name, offset of %)."""
    out = []
    defined = {r[1] for r in op.results}
    for s, e in op.header_spans():
        for m in _USE_RE.finditer(text, s, e):
            if m.group(1) is not None and m.start() not in defined:
                out.append((m.group(1), m.start()))
    return out


MODULE_NAMES = frozenset({"module", "builtin.module"})


def is_unit(op: Op) -> bool:
    """A top-level op: not a module, and every ancestor is a module (a function, a global...)."""
    if op.name in MODULE_NAMES:
        return False
    p = op.parent
    while p is not None:
        if p.name not in MODULE_NAMES:
            return False
        p = p.parent
    return True

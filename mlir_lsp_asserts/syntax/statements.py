"""Statements of one big block, found without reading the block op by op.

A torch export is one function holding every op (the SDXL prompt encoder: 15k ops in one
2.2 MB body; a UNet or an LLM: tens of MB). Reading such a body op by op in Python costs
seconds, so for a block above `BIG_BLOCK_CHARS` only the statements that matter are read:

- the block's *child pairs* (the `{...}` directly inside it: regions and attribute dictionaries
  of its ops) come from the brace scan that skipping the region costs anyway (`Reader._skip_braces`),
  or from `child_pairs` over a piece of text;
- a statement's start is found *backwards* from any offset in it, and its end forwards, by the
  line rule of the structural reader (`Reader.continues`): a line break outside child pairs ends
  a statement unless the line before it or the line after it says the op goes on (a trailing
  `,` `=` `:` `(` `->`, a next line starting with `:` `{` `(` `->` `ins` ...; a next line starting
  with `)` `]` never starts an op; a block label `^bb1:` always stands alone);
- the statement is then read by the ordinary reader, in full, under the block's owner.

The rule looks only at the two lines around a break and at the child pairs, so a statement is
found the same way in the whole text and in a piece of it that starts at a statement: the
checker and the editor's pieces (incremental/live_text.py) agree by construction.
"""

from __future__ import annotations

import bisect
import re

from .op_tree import Block, ChildPairs, Op, Region, SyntaxIssue
from .reader import Reader
from .reader_patterns import BRACES, skip_ws, tokens
from .tokens import STRING_BODY

# Blocks above this are read statement by statement on demand (tests lower it).
BIG_BLOCK_CHARS = 256 * 1024

_LABEL_LINE = re.compile(r"^[ \t]*\^", re.M)
_LINE_CODE = re.compile(f'"{STRING_BODY}"?|//')
# A line that starts with result names: `  %a, %b:2 =` (as the reader's RESULTS, from a line start).
LINE_RESULTS = re.compile(r"[ \t]*%[\w$.\-]+(?::\d+)?(?:[ \t]*,[ \t]*%[\w$.\-]+(?::\d+)?)*\s*=(?!=)")
_NAME_PATTERNS: dict[str, re.Pattern[str]] = {}


def name_pattern(name: str) -> re.Pattern[str]:
    """`%name` as a whole SSA name (not a prefix of a longer one); compiled once per name."""
    p = _NAME_PATTERNS.get(name)
    if p is None:
        if len(_NAME_PATTERNS) > 1024:
            _NAME_PATTERNS.clear()
        p = _NAME_PATTERNS[name] = re.compile(r"%" + re.escape(name) + r"(?![\w$.\-])")
    return p


def defines_at(text: str, at: int) -> bool:
    """Is the `%` at `at` one of the result names that start its line (a definition, not a use)?"""
    line = LINE_RESULTS.match(text, text.rfind("\n", 0, at) + 1)
    return line is not None and at < line.end()


def child_pairs(text: str, lo: int, hi: int) -> tuple[ChildPairs, bool]:
    """The child pairs of text[lo:hi] read as a block's content, and whether its braces balance
    (no `}` closing something opened before `lo`, nothing left open at `hi`)."""
    pairs = ChildPairs()
    depth = 0
    balanced = True
    open_at = 0
    for m in tokens(BRACES, text, lo, hi):
        c = text[m.start()]
        if c == "{":
            if depth == 0:
                open_at = m.start()
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                pairs.opens.append(open_at)
                pairs.closes.append(m.end())
            elif depth < 0:
                balanced = False
                depth = 0
    return pairs, balanced and depth == 0


def region_children(text: str, region: tuple[int, int], pairs: ChildPairs | None) -> ChildPairs:
    """The child pairs of a lazily skipped region (`Op.lazy_regions`, `Op.lazy_children`): the
    reader records them only for a region too large for its one-regex match; read them here."""
    if pairs is not None:
        return pairs
    s, close = region
    return child_pairs(text, s + 1, close - 1 if close > s + 1 and text[close - 1] == "}" else close)[0]


def block_labels(text: str, lo: int, hi: int, pairs: ChildPairs) -> list[int]:
    """Offsets of the block labels (`^bb1:`) of the block text[lo:hi] itself, not of nested regions."""
    ends = [m.end() for m in _LABEL_LINE.finditer(text, lo, hi)]
    opens, closes, bl = pairs.opens, pairs.closes, bisect.bisect_left
    out = []
    for e in ends:
        i = bl(opens, e) - 1
        if i < 0 or e >= closes[i]:
            out.append(e - 1)
    return out


def slice_pairs(pairs: ChildPairs, a: int, b: int) -> ChildPairs:
    """The pairs inside [a, b), shifted to offsets relative to `a`."""
    i, j = bisect.bisect_left(pairs.opens, a), bisect.bisect_left(pairs.opens, b)
    out = ChildPairs()
    out.opens.extend(x - a for x in pairs.opens[i:j])
    out.closes.extend(x - a for x in pairs.closes[i:j])
    return out


def code_end(text: str, ls: int, le: int) -> int:
    """End of the significant text of the line [ls, le) (trailing comment and spaces cut), or
    `ls` when the line is blank or only a comment."""
    seg_end = le
    if "//" in text[ls:le]:
        for m in _LINE_CODE.finditer(text, ls, le):
            if m.group(0) == "//":
                seg_end = m.start()
                break
    e = seg_end
    while e > ls and text[e - 1] in " \t\r":
        e -= 1
    return e


class BlockStatements:
    """Reads statements of the block whose content is text[lo:hi], owned by `owner` (which gets a
    sparse region holding just the statements read so far, in source order). `pairs` answers
    `span_at(offset)` (a `ChildPairs`, or a view over several pieces' pairs); `labels` says whether
    the block has block labels, when the caller knows."""

    def __init__(self, text: str, lo: int, hi: int, owner: Op, pairs,
                 region: Region | None = None, issues: list[SyntaxIssue] | None = None,
                 labels: bool | None = None):
        self.text, self.lo, self.hi, self.owner, self.pairs = text, lo, hi, owner, pairs
        self.rd = Reader(text, lo, hi, lazy=False)
        self.issues = issues if issues is not None else self.rd.issues
        self.rd.issues = self.issues
        if region is None:
            region = Region(lo - 1, hi + 1)
        if not isinstance(owner.regions, list):
            owner.regions = []
        if not any(r is region for r in owner.regions):
            owner.regions.append(region)
        region.sparse = self
        self.region = region
        self.block = Block(None, lo)
        region.blocks = [self.block]
        self._starts: list[int] = []  # statement starts read, sorted; parallel to _ops
        self._ops: list[list[Op]] = []
        self._labels = labels
        # True when text[lo:hi] is only a piece of the real block (an editor's piece of a big
        # function, `parsed_text.parse_block`): a value not found here may be defined elsewhere.
        self.partial = False

    def has_labels(self) -> bool:
        """Does the block's text hold a block label (`^bb1:`), i.e. more than one block?"""
        if self._labels is None:
            self._labels = bool(block_labels(self.text, self.lo, self.hi, self.pairs))
        return self._labels

    # -- the line rule -------------------------------------------------------------------------
    def first_code(self, ls: int) -> int:
        return skip_ws(self.text, ls, self.hi).end()

    def _line_start(self, pos: int) -> int:
        return max(self.text.rfind("\n", 0, pos) + 1, self.lo)

    def _goes_on(self, code_end: int, break_at: int, q: int) -> bool:
        """Does the statement go on across the line break at `break_at` (next code at `q`)?"""
        c = self.text[q]
        if c == "^":
            return False
        rd = self.rd
        rd.start, rd.end = self.lo, self.hi  # reading a statement narrows them
        return c in ")]" or rd.continues(code_end, break_at + 1)

    def start_of(self, t: int) -> int:
        """Offset where the statement holding offset `t` starts."""
        text, lo, pairs = self.text, self.lo, self.pairs
        span = pairs.span_at(t)
        if span is not None:
            t = span[0]
        cur = self._line_start(t)
        while True:
            q = self.first_code(cur)
            span = pairs.span_at(q)
            if span is not None:  # the line starts inside a child pair (`} -> tensor<...>`): go to its `{`
                cur = self._line_start(span[0])
                continue
            # the previous line with code
            n = cur - 1
            while True:
                if n < lo:
                    return q
                ls = self._line_start(n)
                ce = code_end(text, ls, n)
                if ce > ls:
                    break
                n = ls - 1
            if text[self.first_code(ls)] == "^" and pairs.span_at(ls) is None:
                return q  # after a block label
            if self._goes_on(ce, n, q):
                cur = ls
                continue
            return q

    def end_of(self, s: int) -> int:
        """Offset one past the statement that starts at `s` (the start of the next one's line)."""
        text, hi, pairs = self.text, self.hi, self.pairs
        pos = s
        while True:
            n = text.find("\n", pos, hi)
            if n == -1:
                return hi
            span = pairs.span_at(n)
            if span is not None:
                pos = span[1]
                if pos >= hi:
                    return hi
                continue
            q = self.first_code(n + 1)
            if q >= hi:
                return hi
            ls = text.rfind("\n", 0, n) + 1
            if self._goes_on(code_end(text, max(ls, self.lo), n), n, q):
                pos = q
                continue
            return text.rfind("\n", 0, q) + 1

    # -- reading ---------------------------------------------------------------------------------
    def statement_at(self, t: int) -> list[Op]:
        """The op(s) of the statement holding offset `t`, read in full (cached)."""
        s = self.start_of(t)
        i = bisect.bisect_left(self._starts, s)
        if i < len(self._starts) and self._starts[i] == s:
            return self._ops[i]
        e = self.end_of(s)
        rd = self.rd
        rd.start, rd.end = s, e
        blocks = [Block(None, s)]
        rd.read_block_ops(s, self.owner, blocks)
        ops = [o for b in blocks for o in b.ops]
        self._starts.insert(i, s)
        self._ops.insert(i, ops)
        self.block.ops = [o for group in self._ops for o in group]
        return ops


__all__ = ["BIG_BLOCK_CHARS", "BlockStatements", "ChildPairs", "block_labels", "child_pairs", "code_end",
           "defines_at", "name_pattern", "slice_pairs"]

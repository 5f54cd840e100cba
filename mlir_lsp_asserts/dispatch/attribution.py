"""Which source ops end up in which dispatch, and which dispatches exist only because of asserts.

With `--mlir-print-debuginfo` every op of the `--compile-to=dispatch-creation` output carries the
location of the source op it came from (`loc("input.mlir":13:9)`, or inside `callsite(... at
...)` / `fused[...]`). A dispatch's sources are the locations of the ops in its body that lie in
the file being counted. Dispatches are named the way IREE's outlining names executables
(`main_dispatch_0`, `_initializer_1_dispatch_0`: function, then the ordinal inside it).

The dispatches that exist only because of asserts are those of the unfixed compile that have no
counterpart in the fixed one: matched by their source lines (mapped back through the fix's
edits), exactly first, then by the largest overlap within the same function (all initializers
count as one place, since hoisting renumbers them).
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..syntax.tokens import STRING_BODY
from .results import Attribution, Dispatch, SourceOp

# `"file":line:col` inside a loc(...), not the caller part of a callsite (`at "file":l:c`).
_LOC = re.compile(rf'(?<!at )"({STRING_BODY})":(\d+):(\d+)')
_OP_AT = re.compile(r'"?([a-z_][\w$]*(?:\.[\w$]+)+|[a-z_][\w$]*)')
_CONTAINERS = frozenset({"func.func", "util.func", "util.initializer", "module", "builtin.module", "func"})
_ASSERT_OPS = ("cf.assert ", '"cf.assert"(')
MAX_FUZZY = 4000  # dispatches left after exact matching beyond which the overlap pass is skipped


def dispatch_name(key: str, ordinal: int) -> str:
    if key.startswith("util.initializer#"):
        return f"_initializer_{int(key.split('#', 1)[1]) - 1}_dispatch_{ordinal}"
    return f"{key.lstrip('@').strip(chr(34))}_dispatch_{ordinal}"


def op_end(text: str, pos: int) -> int:
    """End of the printed op starting on the line of `pos`: the first later line at the same
    indentation that closes it (`}` not followed by ` count(`). Compiler output only."""
    line_start = text.rfind("\n", 0, pos) + 1
    indent = pos - line_start
    first = text[line_start:pos]
    indent = len(first) - len(first.lstrip(" "))
    needle = "\n" + " " * indent + "}"
    i = text.find(needle, pos)
    while i != -1:
        after = text[i + len(needle):i + len(needle) + 8]
        if not after.startswith(" count("):
            end = text.find("\n", i + 1)
            return len(text) if end == -1 else end
        i = text.find(needle, i + 1)
    return len(text)


@dataclass(slots=True)
class Site:
    """A dispatch as the compiler's output places it: name, function, its root op's (line, col)
    and the sorted (line, col)s of its ops, in the compiled text (see `describe`); `asserts`: the
    sorted lines its `cf.assert` ops are located at (on torch input, the torch op each came from,
    whose location every op of its lowering shares)."""

    name: str
    function: str
    location: tuple[int, int] | None
    sources: list[tuple[int, int]]
    asserts: list[int] = field(default_factory=list)

    def as_json(self) -> dict:  # the form the count cache stores
        out = {"name": self.name, "function": self.function,
               "location": list(self.location) if self.location else None, "sources": self.sources}
        if self.asserts:
            out["asserts"] = self.asserts
        return out

    @classmethod
    def from_json(cls, d: dict) -> Site:
        loc = d["location"]
        return cls(d["name"], d["function"], (loc[0], loc[1]) if loc else None,
                   [(ln, col) for ln, col in d["sources"]], list(d.get("asserts", [])))

    def moved(self, line_map: Callable[[int], int]) -> Site:
        """The site with its lines mapped (e.g. from a fixed text into the original's)."""
        loc = (line_map(self.location[0]), self.location[1]) if self.location else None
        return Site(self.name, self.function, loc, sorted({(line_map(ln), col) for ln, col in self.sources}),
                    sorted({line_map(ln) for ln in self.asserts}))


def dispatch_sites(text: str, ops: list[tuple[str, int]], files: set[str]) -> list[Site]:
    """For each workgroups op (function key, offset) of the output: its name, function, own
    location (the dispatch's root op) and the sorted source (line, col)s of its ops in `files`."""
    out = []
    ordinal: dict[str, int] = defaultdict(int)
    for key, pos in ops:
        end = op_end(text, pos)
        locs: set[tuple[int, int]] = set()
        asserts: set[int] = set()
        own = None
        for line in text[pos:end].split("\n"):
            body = line.lstrip(" ")
            if body.startswith("^"):  # block arguments: not ops
                continue
            is_assert = body.startswith(_ASSERT_OPS)
            for m in _LOC.finditer(line):
                if m.group(1) in files:
                    locs.add((int(m.group(2)), int(m.group(3))))
                    if is_assert:
                        asserts.add(int(m.group(2)))
        last = text[text.rfind("\n", 0, end) + 1:end]
        at = _LOC.search(last)
        if at and at.group(1) in files:
            own = (int(at.group(2)), int(at.group(3)))
        out.append(Site(dispatch_name(key, ordinal[key]), key, own, sorted(locs), sorted(asserts)))
        ordinal[key] += 1
    return out


class LineMap:
    """Lines of a text after edits -> lines of the text before them (lines an edit inserted map to
    the line where it starts). `removed`: the original lines the edits deleted whole."""

    def __init__(self, original: str, edits):
        self._fixed_starts: list[int] = []
        self._entries: list[tuple[int, int, int, int]] = []  # (fixed start, orig start, old nl, new nl)
        self.removed: set[int] = set()
        delta = 0
        for e in sorted(edits, key=lambda e: e.start):
            s_line = original.count("\n", 0, e.start) + 1
            old_nl = original.count("\n", e.start, e.end)
            new_nl = e.new_text.count("\n")
            prefix = original[original.rfind("\n", 0, e.start) + 1:e.start]
            self.removed.update(range(s_line + (0 if not prefix.strip() else 1), s_line + old_nl))
            self._fixed_starts.append(s_line + delta)
            self._entries.append((s_line + delta, s_line, old_nl, new_nl))
            delta += new_nl - old_nl

    def __call__(self, fixed_line: int) -> int:
        i = bisect.bisect_right(self._fixed_starts, fixed_line) - 1
        if i < 0:
            return fixed_line
        f_start, o_start, old_nl, new_nl = self._entries[i]
        if fixed_line == f_start + new_nl:
            return o_start + old_nl
        if fixed_line < f_start + new_nl:
            return o_start + min(fixed_line - f_start, old_nl)
        return o_start + old_nl + (fixed_line - f_start - new_nl)


def describe(sites: Iterable[Site], source: str | list[str], memo: dict | None = None) -> list[Dispatch]:
    """The dispatches with each source location's op as written there in `source` (its text, or
    its lines; `memo` caches the op names read, across calls on the same source)."""
    lines = source.split("\n") if isinstance(source, str) else source
    memo = {} if memo is None else memo
    out = []
    for d in sites:
        srcs: list[SourceOp] = []
        seen = set()
        for line, col in d.sources:
            if (line, col) in seen or not 0 < line <= len(lines):
                continue
            seen.add((line, col))
            op = memo.get((line, col))
            if op is None:
                m = _OP_AT.match(lines[line - 1], max(col - 1, 0))
                op = memo[(line, col)] = m.group(1) if m else "?"
            if op in _CONTAINERS:
                continue
            srcs.append(SourceOp(line, col, op))
        srcs.sort(key=lambda s: (s.line, s.column))
        root = None
        if d.location:
            line = d.location[0]
            root = next((s for s in srcs if s.line == line), SourceOp(line, d.location[1], "?"))
        out.append(Dispatch(d.name, d.function, root, srcs, tuple(d.asserts)))
    return out


def attribution_of(dispatches: list[Dispatch]) -> Attribution:
    return Attribution(dispatches, len({(s.line, s.column) for d in dispatches for s in d.sources}))


def place(d) -> str:
    """Where a dispatch (or a `Change`) lives for matching: its function, or one place for all
    initializers (hoisting renumbers them)."""
    return "util.initializer" if d.function.startswith("util.initializer") else d.function


def unmatched(a: list[Dispatch], b: list[Dispatch], sig_a, sig_b) -> tuple[list[int], list[int]]:
    """Indices of the dispatches of `a` and of `b` with no counterpart on the other side.
    `sig_a(d)`/`sig_b(d)`: a dispatch's source lines, in one numbering for both sides. Exact
    signatures first, then the largest overlap within the same place."""
    sa, sb = [sig_a(d) for d in a], [sig_b(d) for d in b]
    pending: dict[tuple, list[int]] = defaultdict(list)
    for i, d in enumerate(b):
        pending[(place(d), sb[i])].append(i)
    left_a, used = [], set()
    for i, d in enumerate(a):
        bucket = pending.get((place(d), sa[i]))
        if bucket:
            used.add(bucket.pop())
        else:
            left_a.append(i)
    left_b = [i for i in range(len(b)) if i not in used]
    if left_b and left_a and len(left_b) * len(left_a) <= MAX_FUZZY * MAX_FUZZY // 4:
        pairs = []
        for ai in left_a:
            for bi in left_b:
                if place(b[bi]) == place(a[ai]):
                    common = len(sa[ai] & sb[bi])
                    if common:
                        pairs.append((-common, ai, bi))
        pairs.sort()
        taken_a, taken_b = set(), set()
        for _c, ai, bi in pairs:
            if ai not in taken_a and bi not in taken_b:
                taken_a.add(ai)
                taken_b.add(bi)
        left_a = [i for i in left_a if i not in taken_a]
        left_b = [i for i in left_b if i not in taken_b]
    return left_a, left_b


def only_because_of_asserts(base: list[Dispatch], fixed: list[Dispatch],
                            removed: set[int] | frozenset[int] = frozenset()) -> list[Dispatch]:
    """The dispatches of `base` with no counterpart in `fixed` (both in the same source's
    lines); lines the fix deleted do not count."""
    def sig(d: Dispatch) -> frozenset[int]:
        return frozenset(s.line for s in d.sources if s.line not in removed)

    left, _ = unmatched(base, fixed, sig, sig)
    return [base[i] for i in left]


def by_assert_line(attribution: Attribution | None) -> dict[int, list[str]]:
    """Source line -> names of the dispatches holding a `cf.assert` located there."""
    out: dict[int, list[str]] = defaultdict(list)
    for d in attribution.dispatches if attribution else []:
        for line in d.assert_lines:
            if d.name not in out[line]:
                out[line].append(d.name)
    return dict(out)


def by_source_line(attribution: Attribution | None) -> dict[int, list[str]]:
    """Source line -> names of the dispatches its op ends up in."""
    out: dict[int, list[str]] = defaultdict(list)
    for d in attribution.dispatches if attribution else []:
        for s in d.sources:
            if d.name not in out[s.line]:
                out[s.line].append(d.name)
    return dict(out)

"""Which dispatches one compile has and another has not, matched by source ops, and why.

A diff compares two sides of one file: two compilers, two flag sets, two revisions of the file,
or the file against the attribution a baseline stores. Each side is its dispatches in the
`attribution.describe` form (name, function, root op, source ops). Dispatches are matched as the
what-if matches them (`attribution.unmatched`): by their source lines, in the current side's
numbering (another revision's lines are aligned to the current text first; lines only one
revision has do not count), exactly, then by the largest overlap.

What is left on one side is explained where a cause is visible:
    assert               the dispatch holds a `cf.assert` a rule flags, or is rooted at the
                         linalg op whose region holds one (with the finding's code); on torch
                         input, holds a torch op whose lowering puts asserts there (MLA004)
    hoisted-initializer  it lives in a `util.initializer`: const-expr hoisting made it
    split / merged       its root op sits inside another dispatch on the other side
"""

from __future__ import annotations

import bisect
import difflib
import os
from array import array
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from ..checker import check_text
from ..syntax.asserts import AssertSource, trace_asserts
from .attribution import describe, place, unmatched
from .baselines import Baseline, expand
from .compiler import CompilerError
from .count import DispatchCounter, is_torch_input, untargeted_warning
from .preview import Preview, split_json
from .results import BaselineComparison, Change, Dispatch, changes_json

MLA004 = "MLA004"  # the code of a torch op that lowers to asserts (rules/mla004_...)


@dataclass
class Side:
    """One compile of the file: what it is (`label`), where its lines come from (`path`), and
    its dispatches, in the lines of `lines` (None for a baseline, whose lines were already
    resolved against the current text)."""

    label: str
    path: str
    flow_dispatches: int
    per_function: dict[str, int]
    dispatches: list[Dispatch]
    lines: list[str] | None = None
    compiler_version: str | None = None
    profile: str | None = None
    flags: list[str] = field(default_factory=list)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)  # what the flags' translation and the count said
    # Torch input: the source ops whose lowering puts asserts into linalg regions (MLA004), traced
    # through a lowering to input, which runs only when a cause is wanted.
    traced: Callable[[], list[AssertSource]] | None = field(default=None, repr=False)
    _asserts: tuple[dict[int, str], dict[int, list[int]]] | None = field(default=None, repr=False)

    def asserts(self) -> tuple[dict[int, str], dict[int, list[int]]]:
        """(line of a flagged assert -> rule code, linalg op line -> the lines of the asserts in
        its region), from `check_text` of the side's text, read only when a cause is wanted; on
        torch input, the lines of the torch ops that lower to asserts (MLA004)."""
        if self._asserts is None:
            flagged: dict[int, str] = {}
            rooted: dict[int, list[int]] = {}
            if self.lines is not None:
                for f in check_text("\n".join(self.lines), with_fixes=False).findings:
                    line = f.span.start_pos.line + 1
                    flagged[line] = f.code
                    for r in f.related[:1]:
                        rooted.setdefault(r.span.start_pos.line + 1, []).append(line)
            for src in self.traced() if self.traced is not None else []:
                flagged.setdefault(src.line, MLA004)
            self._asserts = (flagged, rooted)
        return self._asserts

    def held_asserts(self, d: Dispatch) -> list[int]:
        """The lines of the flagged asserts dispatch `d` holds (the lines its asserts are at: on
        torch input, the torch op each came from; else its ops'), or of those in the region of
        the linalg op it is rooted at."""
        flagged, rooted = self.asserts()
        lines = (sorted({ln for ln in d.assert_lines if ln in flagged})
                 or sorted({s.line for s in d.sources if s.line in flagged}))
        root = d.location
        if not lines and root and root.line in rooted:
            lines = rooted[root.line]
        return lines

    def as_json(self) -> dict:
        return {"label": self.label, "path": self.path, "compiler_version": self.compiler_version,
                "profile": self.profile, "flags": list(self.flags), "flow_dispatches": self.flow_dispatches,
                "per_function": self.per_function, "seconds": self.seconds, "notes": list(self.notes),
                **split_json(self.per_function)}


def compiled_side(counter: DispatchCounter, label: str, path: str, text: str, flags: list[str], profile: str,
                  *, input_path: str | None = None) -> Side:
    """Compile `text` with debug info (cached as every count) and describe its dispatches."""
    rep = counter.prepare_flags(flags)
    c = counter.count(text, rep.flags, attribution=True, input_path=input_path)
    lines = text.split("\n")
    side = Side(label, path, c.flow_dispatches, c.per_function, describe(c.dispatches or [], lines), lines,
                counter.compiler.version, profile, rep.flags, round(c.seconds, 3),
                notes=[*rep.warnings, *rep.notes])
    if c.untargeted:
        side.notes.append(untargeted_warning(counter.compiler.version, rep.flags, c.untargeted))
    if is_torch_input(text):
        def traced() -> list[AssertSource]:
            try:
                lowered = counter.lower_to_input(text, rep.flags, input_path=input_path)  # cached as the what-if's
            except CompilerError as e:
                side.notes.append(f"the torch ops that lower to asserts are not known: {e}")
                return []
            return trace_asserts(lowered, text, counter.lowered_input_name(text, rep.flags))

        side.traced = traced
    return side


class LineAlignment:
    """Which line of one text is which line of another: `to_current[o]` is the line of the
    current text equal to line `o` of the other (1-based; 0: none), `to_other` the reverse."""

    def __init__(self, n: int, m: int):
        self.to_current = array("i", bytes(4 * (m + 1)))
        self.to_other = array("i", bytes(4 * (n + 1)))

    def pair(self, c: int, o: int) -> None:
        self.to_current[o] = c
        self.to_other[c] = o

    def current_of(self, line: int) -> int | None:
        return self.to_current[line] or None if 0 < line < len(self.to_current) else None

    def other_of(self, line: int) -> int | None:
        return self.to_other[line] or None if 0 < line < len(self.to_other) else None


def align(current: list[str], other: list[str]) -> LineAlignment | None:
    """The lines of two revisions paired, None when the texts are the same. Linear in practice,
    for texts of a million lines that differ all over (a model with every assert removed):
    the common head and tail; then, as patience diff does, the lines that occur once in each
    text, kept where their order agrees (longest increasing run); then equal lines next to each
    pair, forward and backward, until the next."""
    if current == other:
        return None
    n, m = len(current), len(other)
    al = LineAlignment(n, m)
    head = 0
    while head < min(n, m) and current[head] == other[head]:
        head += 1
        al.pair(head, head)
    tail = 0
    while tail < min(n, m) - head and current[n - 1 - tail] == other[m - 1 - tail]:
        al.pair(n - tail, m - tail)
        tail += 1
    where: dict[str, int] = {}  # line text -> its index in current's middle, or -1 if repeated
    for i in range(head, n - tail):
        where[current[i]] = -1 if current[i] in where else i
    seen: dict[str, int] = {}
    for k in range(head, m - tail):
        t = other[k]
        if where.get(t, -1) >= 0:
            seen[t] = -1 if t in seen else k
    pairs = sorted((where[t], k) for t, k in seen.items() if k >= 0)  # by current index
    anchors = _increasing(pairs)
    prev_c, prev_o = head - 1, head - 1
    for c, o in [*anchors, (n - tail, m - tail)]:
        a, b = prev_c + 1, prev_o + 1  # extend the last pair forward ...
        while a < c and b < o and current[a] == other[b]:
            al.pair(a + 1, b + 1)
            a, b = a + 1, b + 1
        x, y = c - 1, o - 1  # ... and the next one backward
        while x >= a and y >= b and current[x] == other[y]:
            al.pair(x + 1, y + 1)
            x, y = x - 1, y - 1
        if a <= x and b <= y:  # lines left on both sides: only repeated ones between the pairs
            _gap(al, current, other, a, x + 1, b, y + 1)
        if c < n - tail:
            al.pair(c + 1, o + 1)
        prev_c, prev_o = c, o
    return al


GAP_DIFF_LINES = 2000


def _gap(al: LineAlignment, current: list[str], other: list[str], a0: int, a1: int, b0: int, b1: int) -> None:
    """Pair the lines of current[a0:a1] and other[b0:b1]: when one is the other with lines
    deleted (what a fix does), every line of the shorter; else a line diff of a small gap."""
    for (x0, x1, xs), (y0, y1, ys), flip in (((a0, a1, current), (b0, b1, other), False),
                                             ((b0, b1, other), (a0, a1, current), True)):
        got, i = [], x0
        for j in range(y0, y1):  # is ys[y0:y1] a subsequence of xs[x0:x1]? (greedy: exact)
            while i < x1 and xs[i] != ys[j]:
                i += 1
            if i == x1:
                break
            got.append((i, j))
            i += 1
        else:
            for i, j in got:
                al.pair(j + 1, i + 1) if flip else al.pair(i + 1, j + 1)
            return
    if a1 - a0 <= GAP_DIFF_LINES and b1 - b0 <= GAP_DIFF_LINES:
        sm = difflib.SequenceMatcher(None, current[a0:a1], other[b0:b1], autojunk=False)
        for i, j, size in sm.get_matching_blocks():
            for k in range(size):
                al.pair(a0 + i + k + 1, b0 + j + k + 1)


def _increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of `pairs` (sorted by their first) whose seconds increase."""
    tails: list[int] = []  # tails[k]: index in pairs of the smallest end of a run of length k+1
    prev = [-1] * len(pairs)
    ends: list[int] = []
    for i, (_c, o) in enumerate(pairs):
        k = bisect.bisect_left(ends, o)
        if k:
            prev[i] = tails[k - 1]
        if k == len(ends):
            ends.append(o)
            tails.append(i)
        else:
            ends[k], tails[k] = o, i
    out, i = [], tails[-1] if tails else -1
    while i != -1:
        out.append(pairs[i])
        i = prev[i]
    return out[::-1]


def _entry(side: Side, d: Dispatch, to_other: Callable[[int], int | None], other_at: dict[int, list[Dispatch]],
           kind: str) -> Change:
    causes: list[dict] = []
    flagged, _rooted = side.asserts()
    lines = side.held_asserts(d)
    root = d.location
    if lines:
        codes = sorted({flagged[ln] for ln in lines})
        causes.append({"kind": "assert", "codes": codes, "lines": lines})
    if place(d) == "util.initializer":
        causes.append({"kind": "hoisted-initializer"})
    if root:
        there = to_other(root.line)
        for e in other_at.get(there, []) if there is not None else []:
            if e.location is None or e.location.line != there:
                causes.append({"kind": "split", "from": e.name} if kind == "new"
                              else {"kind": "merged", "into": e.name})
                break
    return Change(d.name, d.function, side.path, root, d.sources, causes)


def _by_line(dispatches: list[Dispatch]) -> dict[int, list[Dispatch]]:
    out: dict[int, list[Dispatch]] = defaultdict(list)
    for d in dispatches:
        for s in d.sources:
            out[s.line].append(d)
    return out


@dataclass
class Comparison:
    """Both sides' counts, then the dispatches only the current side has (`new`) and only the
    other has (`gone`); both None when the other side is a count without attribution."""

    current: Side
    against: Side
    new: list[Change] | None
    gone: list[Change] | None

    @property
    def path(self) -> str:
        return self.current.path

    @property
    def delta(self) -> int:
        return self.current.flow_dispatches - self.against.flow_dispatches

    def as_json(self) -> dict:
        return {"path": self.path, "current": self.current.as_json(), "against": self.against.as_json(),
                "delta": self.delta, "new": changes_json(self.new), "gone": changes_json(self.gone)}


def diff(current: Side, against: Side) -> Comparison:
    """The dispatches only the current side has and only the other has, each with its source
    ops and causes."""
    al = align(current.lines, against.lines) if current.lines is not None and against.lines is not None else None

    def to_current(line: int) -> int | None:
        return line if al is None else al.current_of(line)

    def to_against(line: int) -> int | None:
        return line if al is None else al.other_of(line)

    def only_cur(line: int) -> bool:  # a line the other revision has not: it does not count
        return al is not None and al.other_of(line) is None

    def sig_current(d: Dispatch) -> frozenset[int]:
        return frozenset(s.line for s in d.sources if not only_cur(s.line))

    def sig_against(d: Dispatch) -> frozenset[int]:
        return frozenset(x for x in (to_current(s.line) for s in d.sources) if x is not None)

    left_c, left_a = unmatched(current.dispatches, against.dispatches, sig_current, sig_against)
    at_a, at_c = _by_line(against.dispatches), _by_line(current.dispatches)
    new = [_entry(current, current.dispatches[i], to_against, at_a, "new") for i in left_c]
    gone = [_entry(against, against.dispatches[i], to_current, at_c, "gone") for i in left_a]
    return Comparison(current, against, new, gone)


def cause_text(c: dict) -> str:
    if c["kind"] == "assert":
        where = ", ".join(str(ln) for ln in c["lines"][:4]) + (" ..." if len(c["lines"]) > 4 else "")
        what = "the cf.asserts of torch ops" if c["codes"] == [MLA004] else "cf.assert"
        return f"holds {what} ({'/'.join(c['codes'])} at line{'s' if len(c['lines']) > 1 else ''} {where})"
    if c["kind"] == "hoisted-initializer":
        return "hoisted initializer"
    if c["kind"] == "split":
        return f"split from {c['from']} (its root op is inside that dispatch on the other side)"
    return f"merged into {c['into']} on the other side"


def causes_text(e: Change) -> str:
    return "; ".join(cause_text(c) for c in e.causes) or "no cause visible"


def entry_line(e: Change, kind: str, other: str) -> str:
    """`FILE:LINE:COL: ` at the dispatch's root op (or `FILE: `), then its `entry_text`."""
    loc = e.location
    where = f"{e.file}:{loc.line}:{loc.column}" if loc else e.file
    return f"{where}: {entry_text(e, kind, other)}"


def entry_text(e: Change, kind: str, other: str) -> str:
    """One line for a dispatch only one side has; `other`: the other side's label."""
    root = e.location.op if e.location else "no root op in the file"
    why = causes_text(e)
    if kind == "new":
        return f"new dispatch {e.name} ({root}, in {e.function}), not with {other}: {why}"
    return f"dispatch {e.name} ({root}, in {e.function}) of {other} is gone here: {why}"


def against_baseline(current: Side, baseline: Baseline, key: str, label: str,
                     explain: bool = True) -> tuple[Comparison, list[Dispatch] | None] | None:
    """(the diff of `current` against what `baseline` stores for `key` and the current profile,
    the baseline's dispatches in the current lines); None when the baseline has no count for
    them. With a count but no attribution (a version-1 baseline), or without `explain` (the
    current side has no attribution to match), the diff has `new` and `gone` None: the count
    says how many, not which."""
    profile = current.profile
    if profile is None:  # a baseline keeps counts per profile
        return None
    golden = baseline.counts.get(key, {}).get(profile)
    if not isinstance(golden, int):
        return None
    stored = baseline.stored(key, profile) if explain else None
    before = expand(stored, current.lines or []) if stored is not None else None
    if before is None:  # the counts only: no dispatches to match, no causes to read
        side = Side(label, current.path, golden, {}, [], None, None, current.profile)
        return Comparison(current, side, None, None), None
    per: dict[str, int] = {}
    for d in before:
        per[d.function] = per.get(d.function, 0) + 1
    return diff(current, Side(label, current.path, golden, per, before, None, None, current.profile)), before


def compare_with_baseline(pv: Preview, lines: list[str], baseline: Baseline, key: str,
                          file: str) -> BaselineComparison:
    """A preview of the text of `lines` against the baseline `file` holds for `key` (the same
    comparison for the CLI's explanation of a count over its baseline and the editor's lenses).
    Without attribution in the preview, the counts only."""
    cur = Side("current", pv.path, pv.flow_dispatches, pv.per_function,
               pv.attribution.dispatches if pv.attribution else [], lines, pv.compiler_version, pv.profile)
    got = against_baseline(cur, baseline, key, "the baseline", explain=pv.attribution is not None)
    if got is None:
        return BaselineComparison(file, error=f"{os.path.basename(file)} has no count for profile {pv.profile!r}")
    d, before = got
    return BaselineComparison(file, key, d.against.flow_dispatches, d.delta, d.new, d.gone, before=before)

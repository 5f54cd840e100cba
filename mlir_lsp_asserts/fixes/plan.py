"""Turning a choice of asserts (and a mode) into text edits.

`plan_edits(parsed, scope, strip=[...], groups=[...])` deletes the asserts, then the ops that
computed only their conditions and are now unused and free of side effects (iterating:
`arith.cmpi`, then the casts and constants that fed it), inserts one `util.assume.int` per
assume target and rewires the later uses of the target to it. Nothing that still has a use
is removed; comments stay.
"""

from __future__ import annotations

import re

from ..findings import TextEdit
from ..syntax.op_tree import Op
from ..syntax.scope import Definition, Scope, base_name, containing
from .assume import AssumeGroup

# Ops without side effects that may be removed when their results are unused.
PURE_OPS = frozenset({
    "arith.cmpi", "arith.constant", "arith.index_cast", "arith.index_castui", "arith.extsi",
    "arith.extui", "arith.trunci", "arith.andi", "arith.ori", "arith.xori", "arith.addi",
    "arith.subi", "arith.muli", "arith.select", "linalg.index",
})


_NEXT_CODE = re.compile(r"(?:\s+|//[^\n]*)*")
# A statement never starts with these: after an op, they mean its statement goes on (MLIR is
# free-form; the reader ends an op such as `arith.cmpi` at its line's end).
_GOES_ON = (",", ":", "=", "(", "[", "<", "->")


def goes_on(text: str, op: Op) -> bool:
    """True when the code after `op` (past blanks, newlines and comments) continues its statement."""
    m = _NEXT_CODE.match(text, op.end)
    return text.startswith(_GOES_ON, m.end() if m else op.end)


def dead_ops(scope: Scope, seeds: list[Op]) -> list[Op]:
    """`seeds` plus every pure op whose results are used only by removed ops."""
    removed: dict[int, Op] = {id(o): o for o in seeds}
    work = list(seeds)
    while work:
        op = work.pop()
        for name, _off in scope.uses_of_op(op):
            d = scope.find_def(name, op)
            if d is None or d.op is None or id(d.op) in removed:
                continue
            cand = d.op
            if cand.full_name not in PURE_OPS or cand.regions or cand.lazy_regions or goes_on(scope.text, cand):
                continue
            if not scope.editable(cand.start, cand.end):
                continue
            names = {r[0] for r in cand.results}
            still_used = False
            where = containing(cand)
            if where is None:
                continue
            for rname in names:
                defn = Definition(rname, cand, where[1], where[0])
                for user, _o in scope.users(defn):
                    if id(user) not in removed:
                        still_used = True
                        break
                if still_used:
                    break
            if not still_used:
                removed[id(cand)] = cand
                work.append(cand)
    return sorted(removed.values(), key=lambda o: o.start)


_BLANK = re.compile(r"[ \t\r]*")


def _blanks_end(text: str, start: int, end: int) -> int:
    """Where the blanks (spaces, tabs, CRs) at `start` end, at most at `end`."""
    m = _BLANK.match(text, start, end)
    return m.end() if m else start  # the pattern matches everywhere, if only the empty string


def line_deletion(text: str, op: Op) -> tuple[int, int]:
    """The span to delete for `op`: its whole line(s) when it stands alone, else the op text."""
    ls = text.rfind("\n", 0, op.start) + 1
    le = text.find("\n", op.end)
    le = len(text) if le == -1 else le
    alone_before = _BLANK.fullmatch(text, ls, op.start) is not None
    after_end = _blanks_end(text, op.end, le)
    if alone_before and after_end == le:
        return ls, (le + 1 if le < len(text) else le)
    if alone_before and text.startswith("//", after_end):
        return op.start, after_end
    end = op.end
    while end < le and text[end] in " \t":
        end += 1
    return op.start, end


def indentation_of(text: str, op: Op) -> str:
    ls = text.rfind("\n", 0, op.start) + 1
    return text[ls:_blanks_end(text, ls, op.start)].replace("\r", "")


def newline_of(text: str) -> str:
    i = text.find("\n")
    return "\r\n" if i > 0 and text[i - 1] == "\r" else "\n"


def plan_edits(text: str, scope: Scope, strip: list[Op], groups: list[AssumeGroup]) -> list[TextEdit]:
    seeds = list(strip) + [a for g in groups for a in g.asserts]
    removed = dead_ops(scope, seeds)
    removed_ids = {id(o) for o in removed}
    nl = newline_of(text)
    taken_in: dict[int, set[str]] = {}  # fresh names given so far, per isolated scope
    # anchors: op -> list of lines to put at its place (replacing it if removed, after it if kept)
    anchored: dict[int, list[str]] = {}
    anchor_ops: dict[int, Op] = {}
    # the rewires by the offset of the use: where two groups' facts reach one use (a value
    # checked again in a nested region), the use takes the nearer one, anchored later
    rewires: dict[int, tuple[int, TextEdit]] = {}
    for g in groups:
        last_assert = max(g.asserts, key=lambda o: o.start)
        for t in g.targets:
            m = t.member
            base = m.name if not m.name[0].isdigit() else f"assumed_{m.name}"
            wanted = base if base.startswith("assumed_") else f"{base}_assumed"
            taken = taken_in.setdefault(id(scope.isolated_scope(last_assert)), set())
            t.new_name = scope.fresh_name(wanted, last_assert, taken)
            taken.add(t.new_name)
            anchor = last_assert
            later_def = m.defining_op
            if later_def is not None and later_def.start > anchor.start:
                where = containing(later_def)
                if where is not None and where[1] is g.block:
                    anchor = later_def
            line = f"%{t.new_name} = util.assume.int %{m.name}{t.fact} : {m.type}"
            anchored.setdefault(id(anchor), []).append(line)
            anchor_ops[id(anchor)] = anchor
            # rewire uses after the anchor in the same block (and nested regions)
            idx = g.block.ops.index(anchor)
            for later in g.block.ops[idx + 1:]:
                for o in later.walk():
                    if id(o) in removed_ids:
                        continue
                    for uname, off in scope.uses_of_op(o):
                        if base_name(uname) == m.name and scope.editable(off, off):
                            if off not in rewires or rewires[off][0] < anchor.start:
                                rewires[off] = (anchor.start, TextEdit(off, off + 1 + len(m.name), "%" + t.new_name))
    edits: list[TextEdit] = []
    for op in removed:
        s, e = line_deletion(text, op)
        lines = anchored.pop(id(op), None)
        if lines:
            indent = indentation_of(text, op)
            if s == op.start:  # not a whole line: replace the op text only
                edits.append(TextEdit(op.start, op.end, (nl + indent).join(lines)))
            else:
                edits.append(TextEdit(s, e, "".join(indent + ln + nl for ln in lines)))
        else:
            edits.append(TextEdit(s, e, ""))
    for key, lines in anchored.items():
        op = anchor_ops[key]
        indent = indentation_of(text, op)
        edits.append(TextEdit(op.end, op.end, "".join(nl + indent + ln for ln in lines)))
    deleted = [(o.start, o.end) for o in removed]
    for _anchor_start, r in rewires.values():
        if not any(s <= r.start < e for s, e in deleted):
            edits.append(r)
    edits.sort(key=lambda e: (e.start, e.end))
    return edits


def apply_edits(text: str, edits: list[TextEdit]) -> str:
    """Apply non-overlapping edits (sorted or not); overlapping ones raise ValueError."""
    out, pos = [], 0
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        if e.start < pos:
            raise ValueError("overlapping edits")
        out.append(text[pos:e.start])
        out.append(e.new_text)
        pos = e.end
    out.append(text[pos:])
    return "".join(out)

"""SSA scoping over the op index: where a value is defined, who uses it, fresh names.

MLIR names are scoped by regions: a value defined in a region is visible in that region and
in the regions nested in it, except inside ops that are isolated from above (functions,
initializers, dispatch regions), which start a fresh scope. Sibling regions may reuse names
(the repro's two `linalg.generic` bodies both define `%5`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .op_tree import Block, Op, Region, op_uses
from .statements import defines_at, name_pattern

ISOLATED_FROM_ABOVE = frozenset({
    "builtin.module", "func.func", "util.func", "util.initializer", "flow.dispatch.workgroups",
    "flow.executable", "stream.executable", "hal.executable", "hal.executable.variant",
    "hal.executable.export", "gpu.module", "gpu.func", "ml_program.func", "torch.global_slot.module_initializer",
    "spirv.module", "llvm.func",
})


@dataclass(frozen=True)
class Definition:
    """Where an SSA value comes from: an op result or a block argument."""

    name: str
    op: Op | None  # defining op (None for a block argument)
    block: Block | None  # the block whose argument it is
    region: Region | None  # region in which the definition sits (None: top level)


def containing(op: Op) -> tuple[Region, Block, int] | None:
    """(region, block, index) of `op` in its parent; one pass per parent, then O(1). The table is
    kept on the parent (`Op.places`), so it goes with its tree."""
    parent = op.parent
    if parent is None:
        return None
    places = parent.places
    if places is None or id(op) not in places:
        places = parent.places = {id(o): (r, b, i) for r in parent.regions for b in r.blocks
                                  for i, o in enumerate(b.ops)}
    return places.get(id(op))


def base_name(use: str) -> str:
    return use.split("#", 1)[0]


class Scope:
    """Caches op uses for one text, and answers scoping questions."""

    def __init__(self, text: str, window: tuple[int, int] | None = None, *, outside=None):
        self.text = text
        # For a piece of a big block read alone (incremental/live_text.py): `outside` answers
        # "is %name used elsewhere in the block?" and "is this name taken elsewhere?", and the
        # names found undefined here are collected in `missing`.
        self.outside = outside
        self.missing: set[str] | None = set() if outside is not None else None
        # When set, fixes may only edit text[window[0]:window[1]] (an editor's piece of a big
        # function): ops outside it are kept even when dead, uses outside it are not rewired.
        self.window = window
        self._uses: dict[int, list[tuple[str, int]]] = {}
        self._by_region: dict[int, dict[str, list[tuple[Op, int]]]] = {}
        self._keep: list[Region] = []  # keeps ids above valid
        self._asked: dict[int, int] = {}  # fresh-name questions per big scope
        self._names: dict[int, set[str]] = {}  # all SSA names of a big scope
        self._found: dict[int, dict[str, bool]] = {}  # names looked up in a big scope so far
        self._keep_ops: list[Op] = []

    def uses_of_op(self, op: Op) -> list[tuple[str, int]]:
        u = self._uses.get(id(op))
        if u is None:
            u = op_uses(self.text, op)
            self._uses[id(op)] = u
        return u

    def find_def(self, name: str, at: Op) -> Definition | None:
        """The definition of `%name` visible from op `at` (walking outward through regions)."""
        name = base_name(name)
        cur = at
        while cur.parent is not None:
            where = containing(cur)
            if where is None:
                return None
            region, _block, _i = where
            parent = cur.parent
            for b in region.blocks:
                for arg, _off in b.args:
                    if arg == name:
                        return Definition(name, None, b, region)
                for o in b.ops:
                    for rname, _off, _count in o.results:
                        if rname == name:
                            return Definition(name, o, b, region)
            if region.sparse is not None:  # a big block: find the statement that defines it
                d = self._sparse_def(region.sparse, name, cur.start)
                if d is not None:
                    return d
                if self.missing is not None and region.sparse.partial:
                    self.missing.add(name)  # a piece of a big block: defined in another piece?
            # Entry-block arguments written in the op's own header: `func.func @f(%r: i4)`,
            # `flow.dispatch.workgroups(...) = (%arg0: ...)`, `scf.for %i = ...`, `iter_args(%a = ...)`.
            if self._declares(parent, name):
                entry = parent.regions[0].blocks[0] if parent.regions and parent.regions[0].blocks else None
                return Definition(name, None, entry, parent.regions[0] if parent.regions else region)
            if parent.full_name in ISOLATED_FROM_ABOVE:
                return None
            cur = parent
        return None

    def _declares(self, op: Op, name: str) -> bool:
        if op.name in ("module", "builtin.module"):
            return False  # a module's region has no arguments
        pat = re.compile(r"%" + re.escape(name) + r"\s*[:=](?!=)")
        for s, e in op.header_spans():
            s = max(s, op.name_start)
            if s < e and pat.search(self.text, s, e):
                return True
        return False

    def _sparse_def(self, bs, name: str, before: int) -> Definition | None:
        """The op of big block `bs` whose results include `%name`, or None. A definition mostly
        comes before its uses, so `str.rfind` looks back from the use at `before` first; then a
        regex looks through the rest of the block. Only the statements at the places found are
        read."""
        text = self.text
        needle, pos = "%" + name, before
        while (at := text.rfind(needle, bs.lo, pos)) != -1:
            pos = at
            nxt = at + len(needle)
            if nxt < len(text) and (text[nxt].isalnum() or text[nxt] in "_$.-"):
                continue  # a longer name
            d = self._def_at(bs, name, at)
            if d is not None:
                return d  # SSA names are unique in a region: the first definition found is it
        for m in name_pattern(name).finditer(text, before, bs.hi):
            d = self._def_at(bs, name, m.start())
            if d is not None:
                return d
        return None

    @staticmethod
    def _def_at(bs, name: str, at: int) -> Definition | None:
        if bs.pairs.span_at(at) is not None:
            return None  # inside a nested region or dictionary: not this block's value
        if not defines_at(bs.text, at):
            return None  # not among the result names that start a line: a use
        for top in bs.statement_at(at):
            for rname, roff, _n in top.results:
                if rname == name and roff == at:
                    return Definition(name, top, bs.block, bs.region)
        return None

    def users(self, d: Definition):
        """(op, offset) of every use of the defined value within its scope. For a big block read
        statement by statement, the uses are found with a regex and yielded as they are read."""
        if d.region is None:
            return []
        if d.region.sparse is not None:
            bs = d.region.sparse
            # In a block without labels, uses follow the definition: search from there.
            start = d.op.start if d.op is not None and not bs.has_labels() else bs.lo
            return self._sparse_users(bs, d.name, start)
        return self._region_uses(d.region).get(d.name, [])

    def _sparse_users(self, bs, name: str, start: int):
        for m in name_pattern(name).finditer(self.text, start, bs.hi):
            at = m.start()
            user = _user_at(self, bs.statement_at(at), at, name)
            if user is not None:
                yield user, at
        if self.outside is not None and self.outside.used(name):
            yield OUTSIDE_USER, -1  # a use in another piece: never removed, never rewired

    def _region_uses(self, region: Region) -> dict[str, list[tuple[Op, int]]]:
        """Uses by name of everything in `region` (not inside isolated ops), built once."""
        idx = self._by_region.get(id(region))
        if idx is None:
            idx = {}
            stack = [o for b in reversed(region.blocks) for o in reversed(b.ops)]
            while stack:
                o = stack.pop()
                for uname, off in self.uses_of_op(o):
                    idx.setdefault(base_name(uname), []).append((o, off))
                if o.full_name in ISOLATED_FROM_ABOVE:
                    continue
                for r in reversed(o.regions):
                    for b in reversed(r.blocks):
                        stack.extend(reversed(b.ops))
            self._by_region[id(region)] = idx
            self._keep.append(region)
        return idx

    def editable(self, start: int, end: int) -> bool:
        w = self.window
        return w is None or (w[0] <= start and end <= w[1])

    def isolated_scope(self, op: Op) -> Op:
        cur = op
        while cur.parent is not None:
            cur = cur.parent
            if cur.full_name in ISOLATED_FROM_ABOVE:
                return cur
        return cur

    def fresh_name(self, wanted: str, near: Op, taken: set[str]) -> str:
        """A valid SSA name (without %) unused in `near`'s isolated scope and not in `taken`."""
        if not re.fullmatch(r"[A-Za-z_$.\-][\w$.\-]*|\d+", wanted):
            wanted = "v_" + re.sub(r"[^\w$.\-]", "_", wanted)
        scope = self.isolated_scope(near)
        used = self._name_test(scope)
        cand, n = wanted, 0
        while cand in taken or used(cand):
            n += 1
            cand = f"{wanted}_{n}"
        return cand

    def _name_test(self, scope: Op):
        """Is a name used in `scope`? A regex search for a small scope; for a big one (a whole
        model in one function) a C-speed `str.find` (a hit on a longer name counts as taken), and
        after 16 questions (a whole file fixed at once), a set of all its names built once (one regex pass)."""
        text, start, end = self.text, scope.start, scope.end
        if self.outside is not None:
            return lambda c: name_pattern(c).search(text) is not None or self.outside.taken(c)
        if end - start < BIG_SCOPE_CHARS:
            return lambda c: name_pattern(c).search(text, start, end) is not None
        asked = self._asked[id(scope)] = self._asked.get(id(scope), 0) + 1
        if asked <= 16:
            seen = self._found.setdefault(id(scope), {})

            def used(c: str) -> bool:
                if c not in seen:
                    seen[c] = text.find("%" + c, start, end) != -1
                return seen[c]
            return used
        names = self._names.get(id(scope))
        if names is None:
            names = self._names[id(scope)] = set(_ANY_NAME.findall(text, start, end))
            self._keep_ops.append(scope)
        return names.__contains__


# Stands for a use of a value in text that a piece of a big block does not hold.
OUTSIDE_USER = Op("<use elsewhere>", -1, -1, -1, [])

_ANY_NAME = re.compile(r"%([\w$.\-]+)")
# Scopes above this many characters answer "is this name used" without a regex per question.
BIG_SCOPE_CHARS = 1 << 20


def _user_at(scope: Scope, tops: list[Op], at: int, name: str) -> Op | None:
    """The op among `tops` (and in their non-isolated regions) whose own text uses `%name` at
    offset `at`, or None (a definition, or a use inside an op isolated from above)."""
    ops = tops
    while ops:
        inner = next((o for o in ops if o.start <= at < max(o.end, o.start + 1)), None)
        if inner is None:
            return None
        region = next((r for r in inner.regions if r.start <= at < r.end), None)
        if region is None:
            if any(off == at for _u, off in scope.uses_of_op(inner)):
                return inner
            return None
        if inner.full_name in ISOLATED_FROM_ABOVE:
            return None
        ops = [o for b in region.blocks for o in b.ops]
    return None

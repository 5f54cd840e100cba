"""SSA scoping over the op index: where a value is defined, who uses it, fresh names.

MLIR names are scoped by regions: a value defined in a region is visible in that region and
in the regions nested in it, except inside ops that are isolated from above (functions,
initializers, dispatch regions), which start a fresh scope. Sibling regions may reuse names
(the repro's two `linalg.generic` bodies both define `%5`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..syntax.index import Block, Op, Region, op_uses

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


_PLACES: dict[int, tuple[Op, dict[int, tuple[Region, Block, int]]]] = {}


def containing(op: Op) -> tuple[Region, Block, int] | None:
    """(region, block, index) of `op` in its parent; one pass per parent, then O(1)."""
    parent = op.parent
    if parent is None:
        return None
    entry = _PLACES.get(id(parent))
    if entry is None or entry[0] is not parent or id(op) not in entry[1]:
        if len(_PLACES) > 4096:
            _PLACES.clear()
        places = {id(o): (r, b, i) for r in parent.regions for b in r.blocks for i, o in enumerate(b.ops)}
        entry = _PLACES[id(parent)] = (parent, places)
    return entry[1].get(id(op))


def base_name(use: str) -> str:
    return use.split("#", 1)[0]


class Scope:
    """Caches op uses for one text, and answers scoping questions."""

    def __init__(self, text: str):
        self.text = text
        self._uses: dict[int, list[tuple[str, int]]] = {}
        self._by_region: dict[int, dict[str, list[tuple[Op, int]]]] = {}
        self._keep: list[Region] = []  # keeps ids above valid

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

    def users(self, d: Definition) -> list[tuple[Op, int]]:
        """(op, offset) of every use of the defined value within its scope."""
        if d.region is None:
            return []
        return self._region_uses(d.region).get(d.name, [])

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
        body = self.text[scope.start:scope.end]
        cand, n = wanted, 0
        while cand in taken or re.search(r"%" + re.escape(cand) + r"(?![\w$.\-])", body):
            n += 1
            cand = f"{wanted}_{n}"
        return cand

"""Which dispatch feeds which, read from the `--compile-to=dispatch-creation` output.

A dispatch's operands are SSA values of the function around it. Each is followed back through
the host ops between dispatches (reshapes, slices, imports, `util.global.load` of a global some
initializer's `util.global.store` wrote) to the dispatches whose results it is made of. What a
dispatch holds (its body's top-level ops) is read on the way.

Compiler output only: one host op per line (a dispatch's body excepted), two spaces of indent
per nesting level, so lines and their indentation are enough; the text is read with regexes,
one pass over the host lines, whatever the size of the bodies.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from .attribution import op_end

_HEADER = re.compile(r"\n  (?:util\.func|func\.func|util\.initializer)\b")  # a literal first: a fast scan
_WORKGROUPS = re.compile(r"\n[ \t]*(?:%[^=\n]*= )?(flow\.dispatch\.workgroups)(?=[\[( {])")
_DEF = re.compile(r"^[ \t]*(%[\w$.\-]+(?::\d+)?(?:, %[\w$.\-]+(?::\d+)?)*) = \"?([\w$.]+)\"?(.*)$", re.M)
_STORE = re.compile(r"^[ \t]*util\.global\.store (%[\w$.\-#]+), @([\w$.\-]+|\"[^\"]*\")", re.M)
_GLOBAL = re.compile(r"(?: immutable)? @([\w$.\-]+|\"[^\"]*\")")
_VALUE = re.compile(r"%([\w$.\-]+)(?:#(\d+))?")
_OPERANDS = re.compile(r"flow\.dispatch\.workgroups(?:\[[^\]]*\])?\(([^)]*)\)")
_OP_NAME = re.compile(r"(?:%[^=\n]*= )?\"?([a-z_][\w$]*\.[\w$.]+)")
_LOC_TAIL = re.compile(r" loc\(.*$")
# a dispatch's plumbing, not what it computes
_PLUMBING = frozenset({"iree_tensor_ext.dispatch.tensor.load", "iree_tensor_ext.dispatch.tensor.store",
                       "flow.return", "arith.constant", "tensor.empty", "flow.dispatch.tie_shape"})


@dataclass(frozen=True, slots=True)
class Flow:
    """Result `output` of dispatch `source` feeds operand `input` of dispatch `target`
    (dispatches by their index in `count.workgroups_ops` order)."""

    source: int
    output: int
    target: int
    input: int


@dataclass
class DataFlow:
    flows: list[Flow]
    ops: list[list[str]] = field(default_factory=list)  # each dispatch's body ops, plumbing left out
    asserts: list[int] = field(default_factory=list)  # cf.assert ops left in each dispatch's body


def _results(text: str) -> list[tuple[str, int | None]]:
    """`%3` -> [(3, None)] (its uses say `%3` or `%3#k`); `%a, %b` -> [(a, 0), (b, 1)]."""
    names = [t.strip() for t in text.split(",")]
    if len(names) == 1:
        return [(names[0].split(":")[0].lstrip("%"), None)]
    return [(n.split(":")[0].lstrip("%"), i) for i, n in enumerate(names)]


def _body(ir: str, pos: int, end: int) -> tuple[list[str], int]:
    """The top-level ops of the dispatch at `pos` (its `count()` region left out) and how many
    cf.assert ops its body keeps."""
    line_start = ir.rfind("\n", 0, pos) + 1
    indent = len(ir[line_start:pos]) - len(ir[line_start:pos].lstrip(" "))
    stop = ir.find("\n" + " " * indent + "} count(", pos, end)
    body = ir[pos:end if stop == -1 else stop]
    ops = []
    lead = " " * (indent + 2)
    for line in body.split("\n"):
        if line.startswith(lead) and line[indent + 2:indent + 3] != " ":
            op = _OP_NAME.match(line, indent + 2)
            if op and op.group(1) not in _PLUMBING:
                ops.append(op.group(1))
    return ops, body.count("cf.assert ")


def dispatch_positions(ir: str) -> list[int]:
    """The offsets of the `flow.dispatch.workgroups` ops of compiler output, in order (what
    `count.workgroups_ops` finds, without reading the functions' structure)."""
    return [m.start(1) for m in _WORKGROUPS.finditer(ir)]


def dispatch_flows(ir: str, positions: list[int]) -> DataFlow:
    """The flows between the dispatches at `positions` (`dispatch_positions`) of `ir`."""
    headers = [m.start() + 1 for m in _HEADER.finditer(ir)]

    def scope(pos: int) -> int:
        return bisect.bisect_right(headers, pos)

    out = DataFlow([])
    # (scope, value name) -> ("d", dispatch, output or None) or ("op", operand values, globals)
    defs: dict[tuple[int, str], tuple] = {}
    operands, spans = _read_dispatches(ir, positions, scope, defs, out)
    producers = _Producers(defs, _read_host_ops(ir, spans, scope, defs))
    seen = set()
    for t, values in enumerate(operands):
        s = scope(positions[t])
        for j, (name, k) in enumerate(values):
            for src, o in sorted(producers.of(("v", s, name, k))):
                if src != t and (src, o, t, j) not in seen:
                    seen.add((src, o, t, j))
                    out.flows.append(Flow(src, o, t, j))
    return out


def _read_dispatches(ir: str, positions: list[int], scope: Callable[[int], int], defs: dict[tuple[int, str], tuple],
                     out: DataFlow) -> tuple[list[list[tuple[str, int]]], list[tuple[int, int]]]:
    """Each dispatch's results (into `defs`), operands, span, body ops and asserts (into `out`)."""
    spans: list[tuple[int, int]] = []
    operands: list[list[tuple[str, int]]] = []
    for i, pos in enumerate(positions):
        line_start = ir.rfind("\n", 0, pos) + 1
        end = op_end(ir, pos)
        spans.append((line_start, end))
        first = ir[line_start:ir.find("\n", pos)]
        s = scope(pos)
        lhs = first[:first.find("=", 0, pos - line_start)].strip() if "=" in first[:pos - line_start] else ""
        for name, k in _results(lhs) if lhs else []:
            defs[(s, name)] = ("d", i, k)
        m = _OPERANDS.search(first)
        operands.append([(v.group(1), int(v.group(2) or 0)) for v in _VALUE.finditer(m.group(1))] if m else [])
        body_ops, asserts = _body(ir, pos, end)
        out.ops.append(body_ops)
        out.asserts.append(asserts)
    return operands, spans


def _read_host_ops(ir: str, spans: list[tuple[int, int]], scope: Callable[[int], int],
                   defs: dict[tuple[int, str], tuple]) -> dict[str, list[tuple[int, str, int]]]:
    """The host ops between the dispatches: what each value is made of (into `defs`), and the
    values stored into each global (returned)."""
    stores: dict[str, list[tuple[int, str, int]]] = defaultdict(list)
    prev = 0
    for start, end in [*spans, (len(ir), len(ir))]:
        for m in _DEF.finditer(ir, prev, start):
            s = scope(m.start())
            rest = _LOC_TAIL.sub("", m.group(3))
            used = [(v.group(1), int(v.group(2) or 0)) for v in _VALUE.finditer(rest)]
            g = _GLOBAL.match(rest) if m.group(2) == "util.global.load" else None
            globals_ = [g.group(1)] if g else []
            for name, _k in _results(m.group(1)):
                defs[(s, name)] = ("op", used, globals_)
        for m in _STORE.finditer(ir, prev, start):
            v = _VALUE.match(m.group(1))
            if v:
                stores[m.group(2)].append((scope(m.start()), v.group(1), int(v.group(2) or 0)))
        prev = max(prev, end)
    return stores


class _Producers:
    """The (dispatch, output) pairs a value (`("v", scope, name, k)`) or a global (`("g", name)`)
    is made of, remembered."""

    def __init__(self, defs: dict[tuple[int, str], tuple], stores: dict[str, list[tuple[int, str, int]]]):
        self.defs, self.stores = defs, stores
        self.memo: dict[tuple, frozenset[tuple[int, int]]] = {}

    def deps(self, node: tuple) -> list[tuple]:
        """A value's operands and the globals it loads; a global's stored values."""
        if node[0] == "g":
            return [("v", s, n, k) for s, n, k in self.stores.get(node[1], [])]
        d = self.defs.get((node[1], node[2]))
        if d is None or d[0] == "d":
            return []
        return [*(("v", node[1], n, k) for n, k in d[1]), *(("g", g) for g in d[2])]

    def own(self, node: tuple) -> set[tuple[int, int]]:
        d = self.defs.get((node[1], node[2])) if node[0] == "v" else None
        return {(d[1], d[2] if d[2] is not None else node[3])} if d is not None and d[0] == "d" else set()

    def of(self, root: tuple) -> frozenset[tuple[int, int]]:
        """Depth first, iterative (chains of host ops can be long), a cycle through globals cut
        where it closes."""
        memo = self.memo
        if root in memo:
            return memo[root]
        on_path = {root}
        stack = [(root, iter(self.deps(root)))]
        while stack:
            node, it = stack[-1]
            for dep in it:
                if dep not in memo and dep not in on_path:
                    on_path.add(dep)
                    stack.append((dep, iter(self.deps(dep))))
                    break
            else:
                stack.pop()
                on_path.discard(node)
                acc = self.own(node)
                for dep in self.deps(node):
                    acc |= memo.get(dep, frozenset())
                memo[node] = frozenset(acc)
        return memo[root]

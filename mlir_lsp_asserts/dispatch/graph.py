"""The dispatches of a compile as a graph for Google's Model Explorer: one node per dispatch,
edges where one dispatch's results feed another's operands, marks where asserts cost dispatches.

The JSON is Model Explorer's graph format (the dataclasses of `model_explorer.graph_builder`:
a `GraphCollection {label, graphs}` of `Graph {id, nodes, groupNodeAttributes}`, each node a
`GraphNode {id, label, namespace, attrs, incomingEdges, style}`), written without importing
Model Explorer: `-o graph.json` works where it is not installed.

    build = graph_for_text(text, path, counter=counter, against=side)
    build.collection        # the JSON
    build.marked["new"]     # ids of the nodes marked new
    build.write("g.json")

Nodes: the dispatch's name as id, its root op as label; attributes: name, function or
initializer, root op and source lines as `file:line`, the ops its body holds, the findings it
holds (rule codes and lines), its marks and, against another side, the cause the diff found.
Layers (`namespace`): the function, or `initializers`; a function of many dispatches is cut
into regions of consecutive source lines. Marks, each a style and a `marks` attribute:

    holds-assert             the dispatch holds a cf.assert: a flagged one of the source (MLA001
                             ...), or one its compiled body keeps (torch ops lower to some)
    only-because-of-asserts  no counterpart in the what-if compile (the asserts fixed)
    new / gone               only this side has it / only the other side has it (`--against*`)

With another side, the collection has one graph per side (the other side's graph marks what
is gone; a baseline has no IR, so no graph of its own).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from dataclasses import dataclass, field

from ..files import write_new_or_atomic
from ..iree_flags.flags import profile_flags
from .count import DispatchCounter
from .dataflow import dispatch_flows, dispatch_positions
from .diff import Comparison, Side, causes_text, diff
from .preview import Preview, preview
from .results import Dispatch

MARKS = ("new", "gone", "only-because-of-asserts", "holds-assert")
# The first mark of a node (in MARKS order) gives its style.
STYLES = {
    "new": {"backgroundColor": "#ffcdd2", "borderColor": "#c62828", "hoveredBorderColor": "#8e0000"},
    "gone": {"backgroundColor": "#e0e0e0", "borderColor": "#616161", "hoveredBorderColor": "#212121"},
    "only-because-of-asserts": {"backgroundColor": "#ffe0b2", "borderColor": "#ef6c00",
                                "hoveredBorderColor": "#b53d00"},
    "holds-assert": {"backgroundColor": "#fff8e1", "borderColor": "#d32f2f", "hoveredBorderColor": "#9a0007"},
}
LEGEND = ("red: new (only this side); grey: gone (only the other side); orange: exists only because of "
          "asserts (what-if); red border: holds a cf.assert")
REGION_ABOVE = 64  # a layer of more dispatches than this is cut into regions of source lines
REGION_SIZE = 40
SOURCES_SHOWN = 40


@dataclass
class GraphBuild:
    """A graph collection and what the front ends need around it: the count it shows, the
    nodes of each mark, the graphs' ids (this side first)."""

    collection: dict
    dispatches: int
    marked: dict[str, list[str]]
    graph_ids: list[str]
    preview: Preview
    comparison: Comparison | None = None
    build_seconds: float = 0.0  # the graph's own cost: the compiles not counted
    _marked_graph: dict[str, str] = field(default_factory=dict, repr=False)

    def graph_of(self, mark: str) -> str:
        """The id of the graph holding the nodes of `mark` ("gone": the other side's)."""
        return self._marked_graph.get(mark, self.graph_ids[0])

    def selection(self) -> tuple[str, str] | None:
        """(graph id, node id) of the node to show first: the first new dispatch, else the
        first that exists only because of asserts, else one holding an assert, else gone."""
        for mark in ("new", "only-because-of-asserts", "holds-assert", "gone"):
            if self.marked.get(mark):
                return self.graph_of(mark), self.marked[mark][0]
        return None

    def layers_around(self, graph_id: str, node_id: str, most: int = 8) -> list[str]:
        """The layers (namespaces) of a node and of the nodes it feeds and is fed by: the ones to
        open so that its edges show."""
        graph = next((g for g in self.collection["graphs"] if g["id"] == graph_id), None)
        if graph is None:
            return []
        by_id = {n["id"]: n for n in graph["nodes"]}
        node = by_id.get(node_id)
        if node is None:
            return []
        near = [node["namespace"], *(by_id[e["sourceNodeId"]]["namespace"] for e in node["incomingEdges"]
                                     if e["sourceNodeId"] in by_id)]
        near += [n["namespace"] for n in graph["nodes"]
                 if any(e["sourceNodeId"] == node_id for e in n["incomingEdges"])]
        return [ns for ns in dict.fromkeys(near) if ns][:most]

    def json_bytes(self) -> bytes:
        return json.dumps(self.collection, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    def write(self, path: str) -> None:
        """The JSON into `path`, whole or not at all (raises OSError)."""
        write_new_or_atomic(path, self.json_bytes())


def graph_for_text(text: str, path: str, *, counter: DispatchCounter, profile: str = "default",
                   flags: list[str] | None = None, what_if_mode: str | None = "strip",
                   against: Side | None = None, against_counter: DispatchCounter | None = None,
                   input_path: str | None = None, parallel: bool = True) -> GraphBuild:
    """The dispatch graph of `text` (the file `path`): counted with `flags` (the profile's when
    None, untranslated), with the what-if (`what_if_mode` None: none) and, with `against`
    (`diff.compiled_side` of the other side; `against_counter`: its counter when it is another
    compiler's), the dispatches only one side has. Every compile is the count's own (cached);
    the dispatch-creation output they keep gives the edges. Raises CompilerError, ValueError."""
    flags = list(flags) if flags is not None else profile_flags(profile)
    other_ir = None
    if against is not None and against.lines is not None:  # taken first: memory keeps the last two outputs
        other_ir, _ = (against_counter or counter).dispatch_ir("\n".join(against.lines), against.flags,
                                                               attribution=True)
    pv = preview(counter, path, text, profile, flags, what_if=what_if_mode, attribution=True,
                 input_path=input_path, parallel=parallel)
    t0 = time.monotonic()
    rep_flags = counter.prepare_flags(flags).flags
    ir, _ = counter.dispatch_ir(text, rep_flags, attribution=True, input_path=input_path)
    lines = text.split("\n")
    current = Side("current", path, pv.flow_dispatches, pv.per_function,
                   pv.attribution.dispatches if pv.attribution else [], lines, counter.compiler.version, profile,
                   rep_flags)
    comparison = diff(current, against) if against is not None else None
    marks: dict[str, list[str]] = {m: [] for m in MARKS}
    causes: dict[str, str] = {}
    only = pv.what_if.only_because_of_asserts if pv.what_if else None
    extra = {"only-because-of-asserts": {d.name for d in only or []}}
    if comparison is not None:
        extra["new"] = {c.name for c in comparison.new or []}
        causes.update({c.name: causes_text(c) for c in comparison.new or []})
    name = os.path.basename(path)
    graph_ids = [name if against is None else f"{name} (this side)"]
    torch_asserts = {a.line: "MLA004" for a in pv.assert_sources}
    graphs = [_graph(graph_ids[0], current, ir, extra, causes, marks, _summary(pv, comparison), torch_asserts)]
    marked_graph: dict[str, str] = {}
    if comparison is not None and against is not None and other_ir is not None:
        gone = {c.name: causes_text(c) for c in comparison.gone or []}
        graph_ids.append(f"{against.label} (other side)")
        marked_graph["gone"] = graph_ids[1]
        graphs.append(_graph(graph_ids[1], against, other_ir, {"gone": set(gone)}, gone, marks,
                             {"side": against.label, "dispatches": str(against.flow_dispatches)}))
    collection = {"label": f"mlir-lsp dispatch graph ({name})", "graphs": graphs}
    return GraphBuild(collection, pv.flow_dispatches, marks, graph_ids, pv, comparison,
                      round(time.monotonic() - t0, 3), marked_graph)


def _summary(pv: Preview, comparison: Comparison | None) -> dict[str, str]:
    """The graph's own attributes (shown when no node is selected)."""
    out = {"file": pv.path, "profile": pv.profile, "iree-compile": pv.compiler_version,
           "dispatches": str(pv.flow_dispatches)}
    if pv.what_if:
        w = pv.what_if
        out["what-if"] = f"{w.flow_dispatches} with the asserts fixed ({w.mode}), {w.saved} saved"
    if comparison is not None:
        out["against"] = (f"{comparison.against.label}: {comparison.against.flow_dispatches} dispatches "
                          f"({comparison.delta:+d}), {len(comparison.new or [])} new, "
                          f"{len(comparison.gone or [])} gone")
    out["marks"] = LEGEND
    return out


def _layer(function: str) -> str:
    if function.startswith("util.initializer"):
        return "initializers"
    return function.lstrip("@").strip('"').replace("/", "_") or "module"


def _line_of(d: Dispatch) -> int | None:
    """Where a dispatch sits in the source: its root op's line, else its first op's."""
    if d.location is not None:
        return d.location.line
    return d.sources[0].line if d.sources else None


def _regions(dispatches: list[Dispatch]) -> list[str]:
    """Each dispatch's namespace: its layer, and in a layer of many dispatches a region of
    consecutive ones in source order (hoisted initializers come in no order), named by the
    lines their root ops span."""
    by_layer: dict[str, list[int]] = {}
    for i, d in enumerate(dispatches):
        by_layer.setdefault(_layer(d.function), []).append(i)
    out = [""] * len(dispatches)
    for layer, idx in by_layer.items():
        if len(idx) <= REGION_ABOVE:
            for i in idx:
                out[i] = layer
            continue
        at = {i: _line_of(dispatches[i]) for i in idx}
        placed = sorted((i for i in idx if at[i] is not None), key=lambda i: at[i] or 0)
        for k in range(0, len(placed), REGION_SIZE):
            chunk = placed[k:k + REGION_SIZE]
            region = f"lines {at[chunk[0]]}-{at[chunk[-1]]}"
            for i in chunk:
                out[i] = f"{layer}/{region}"
        for i in idx:
            if at[i] is None:
                out[i] = f"{layer}/not in the file"
    return out


def _ops_text(ops: list[str]) -> str:
    counts = Counter(ops)
    return ", ".join(op if n == 1 else f"{op} x{n}" for op, n in counts.items()) or "-"


def _findings_text(flagged: dict[int, str], lines: list[int]) -> str:
    by_code: dict[str, list[int]] = {}
    for ln in lines:
        by_code.setdefault(flagged.get(ln, "?"), []).append(ln)
    return "; ".join(f"{code} at line{'s' if len(ls) > 1 else ''} {', '.join(map(str, ls))}"
                     for code, ls in by_code.items())


def _graph(graph_id: str, side: Side, ir: str, extra: dict[str, set[str]], causes: dict[str, str],
           marks: dict[str, list[str]], summary: dict[str, str], torch_asserts: dict[int, str] | None = None) -> dict:
    """One side's graph; the ids of its marked nodes appended to `marks`. `torch_asserts`:
    source lines of torch ops that lower to asserts (MLA004, found by the what-if)."""
    torch_asserts = torch_asserts or {}
    flagged = {**side.asserts()[0], **torch_asserts}
    ops = dispatch_positions(ir)
    flow = dispatch_flows(ir, ops)
    ds = side.dispatches
    names = [d.name for d in ds]
    incoming: dict[int, list[dict]] = {}
    feeds: dict[int, list[str]] = {}
    if len(ops) == len(ds):  # the IR is the one the dispatches were read from
        for f in flow.flows:
            incoming.setdefault(f.target, []).append({"sourceNodeId": names[f.source],
                                                      "sourceNodeOutputId": str(f.output),
                                                      "targetNodeInputId": str(f.input)})
            feeds.setdefault(f.source, []).append(names[f.target])
    spaces = _regions(ds)
    file, short = side.path, os.path.basename(side.path)
    nodes = []
    groups: dict[str, dict[str, str]] = {"": summary}
    for i, d in enumerate(ds):
        same_ir = i < len(flow.ops) and len(ops) == len(ds)
        body = flow.ops[i] if same_ir else []
        compiled_asserts = flow.asserts[i] if same_ir else 0  # also those torch ops lowered to
        root = d.location
        lowered = (compiled_asserts or root and root.line in torch_asserts) and torch_asserts
        held = sorted(set(side.held_asserts(d)) | ({s.line for s in d.sources if s.line in torch_asserts}
                                                   if lowered else set()))
        node_marks = [m for m in MARKS if d.name in extra.get(m, ())]
        if (held or compiled_asserts) and "holds-assert" not in node_marks:
            node_marks.append("holds-assert")
        for m in node_marks:
            marks[m].append(d.name)
        attrs = [("dispatch", d.name), ("function", d.function),
                 ("root op", f"{short}:{root.line}:{root.column} {root.op}" if root else "not in the file"),
                 ("location", f"{file}:{root.line}" if root else file)]
        shown = d.sources[:SOURCES_SHOWN]
        src = "\n".join(f"{short}:{s.line} {s.op}" for s in shown)
        if len(d.sources) > len(shown):
            src += f"\n... {len(d.sources) - len(shown)} more"
        attrs.append(("source lines", src or "none in the file"))
        attrs.append(("ops", _ops_text(body)))
        if held:
            attrs.append(("findings", _findings_text(flagged, held)))
        if compiled_asserts:
            attrs.append(("cf.assert in the dispatch", str(compiled_asserts)))
        if node_marks:
            attrs.append(("marks", ", ".join(node_marks)))
        if d.name in causes:
            attrs.append(("cause", causes[d.name]))
        kv: list[dict] = [{"key": k, "value": v} for k, v in attrs]
        for key, ids in (("fed by", [e["sourceNodeId"] for e in incoming.get(i, [])]), ("feeds", feeds.get(i, []))):
            if ids:
                kv.append({"key": key, "value": {"type": "node_ids", "nodeIds": list(dict.fromkeys(ids))}})
        node: dict = {"id": d.name, "label": root.op if root else (body[0] if body else "dispatch"),
                "namespace": spaces[i], "attrs": kv, "incomingEdges": incoming.get(i, [])}
        if node_marks:
            node["style"] = STYLES[node_marks[0]]
        nodes.append(node)
        _count_into(groups, spaces[i], node_marks)
    return {"id": graph_id, "nodes": nodes, "groupNodeAttributes": groups}


def _count_into(groups: dict[str, dict[str, str]], namespace: str, node_marks: list[str]) -> None:
    """Each layer's attributes: how many dispatches it holds, and of each mark."""
    parts = namespace.split("/")
    for k in range(1, len(parts) + 1):
        g = groups.setdefault("/".join(parts[:k]), {})
        g["dispatches"] = str(int(g.get("dispatches", "0")) + 1)
        for m in node_marks:
            g[m] = str(int(g.get(m, "0")) + 1)


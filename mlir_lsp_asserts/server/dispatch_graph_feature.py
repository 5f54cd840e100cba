"""`mlirLsp.showDispatchGraph`: the document's dispatch graph in Model Explorer, for any client.

    workspace/executeCommand mlirLsp.showDispatchGraph [{uri, select?, line?, open?}]
        -> {url, dispatches, marked, graph, selected, lines}   or   {error}
        builds the graph of the document as it is (its open text; a file the client never syncs:
        its text on disk, as dispatch counts do) with the configured dispatch profile, flags,
        compiler and what-if mode (`dispatch/graph.py`; the compile is cached on disk: a second
        call costs the JSON only), writes it into the server's own temporary folder, starts Model
        Explorer on it (`graph_viewer.py`) and answers with the viewer's URL. `select` (a dispatch
        name) or `line` (0-based: the dispatch of the op on that line) picks the node shown
        selected (else the graph's first marked node); `lines` maps each node to the 0-based line
        of its root op. Unless `open` is false, clients that can (`window.showDocument.support`) are
        asked to open the URL in the browser (`external: true`).

One viewer per server: started on the first call, then serving every document's graph (it reads
the graph file named in the URL on each page load; a document's file is rewritten by each call),
started again only if it died, and stopped with the server (lifecycle.stop_background), so no
Model Explorer outlives it. Errors
(Model Explorer not installed, the compile failed) are a `window/showMessage` error and the
answer's `error`, with the install hint where it applies.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from . import guards
from .arguments import command_arguments
from .dispatch_feature import DISPATCH_GRAPH_COMMAND, dispatch_flags, open_text
from .dispatch_graph_state import GraphViewerState
from .progress import Progress
from .protocol import Server

if TYPE_CHECKING:  # the graph's code is imported by the first graph asked for (issue 37)
    from ..dispatch.graph import GraphBuild

log = logging.getLogger(__name__)


def _selected(build: GraphBuild, select: Any, line: Any) -> str | None:
    """The node to select: the named dispatch, else the dispatch of the op at `line` (0-based),
    else the graph's own first choice (a new dispatch, one that exists only because of asserts,
    one holding an assert), else none."""
    nodes = {n["id"] for g in build.collection.get("graphs", [])[:1] for n in g.get("nodes", [])}
    if isinstance(select, str) and select in nodes:
        return select
    if isinstance(line, int) and not isinstance(line, bool):
        from ..dispatch.attribution import by_source_line

        for name in by_source_line(build.preview.attribution).get(line + 1, []):
            if name in nodes:
                return name
    first = build.selection()
    return first[1] if first is not None and first[1] in nodes else None


def _source_lines(build: GraphBuild) -> dict[str, int]:
    """Node id -> the 0-based line of its dispatch's root op in the document (for a client that
    jumps there when a node is selected)."""
    attr = build.preview.attribution
    return {d.name: d.location.line - 1 for d in (attr.dispatches if attr else []) if d.location}


def show_dispatch_graph(ls: Server, params: Any) -> dict:
    from ..dispatch.compiler import CompilerError
    from ..dispatch.graph import graph_for_text
    from ..graph_viewer import ViewerUnavailable

    args = command_arguments(params)
    uri = args.get("uri")
    if not isinstance(uri, str):
        return _error(ls, f"no document URI in the arguments: {params!r}")
    if refused := guards.refuse_path(ls, uri):
        return _error(ls, refused)
    got = open_text(ls, uri)
    if got is None:
        return _error(ls, f"document not open: {uri}")
    state: GraphViewerState = ls.dispatch_graph
    opts = ls.options.dispatch
    progress = Progress(ls, "graph", f"mlir-lsp: dispatch graph ({opts.profile})")
    own = ls.dispatch.counter_for(opts)
    with state.lock:
        earlier = state.building.pop(uri, None)
        state.building[uri] = own
    if earlier is not None:
        earlier.cancel_all()  # asked again: the newer request wins
    progress.begin()
    try:
        progress.report("iree-compile (cached after the first time)", 10)
        build = graph_for_text(got.text, got.path, counter=own, profile=opts.profile, flags=dispatch_flags(ls),
                               what_if_mode=opts.what_if)
        graph = state.graph_file(uri)
        build.write(str(graph))
        select = _selected(build, args.get("select"), args.get("line"))
        progress.report("starting Model Explorer", 80)
        graph_id = build.graph_ids[0]
        url = state.show(graph, select, graph_id, build.layers_around(graph_id, select) if select else None)
    except ViewerUnavailable as e:
        return _error(ls, str(e))
    except (CompilerError, ValueError, OSError) as e:
        if str(e) == "cancelled":  # asked again for this document, or the server is stopping: no message
            return {"error": "cancelled"}
        return _error(ls, f"dispatch graph: {e}")
    finally:
        progress.end()
        with state.lock:
            if state.building.get(uri) is own:
                del state.building[uri]
    if args.get("open", True) is not False:
        _open_in_browser(ls, url)
    return {"url": url, "dispatches": build.dispatches, "marked": build.marked, "graph": str(graph),
            "selected": select, "lines": _source_lines(build)}


def _error(ls: Server, message: str) -> dict:
    ls.in_loop(ls.window_show_message, types.ShowMessageParams(types.MessageType.Error, f"mlir-lsp: {message}"))
    return {"error": message}


def _open_in_browser(ls: Server, url: str) -> None:
    """Ask the client to open `url` in the browser (`window/showDocument`, external), if it can."""
    caps = ls.client_capabilities
    window = caps.window if caps else None
    if not (window and window.show_document and window.show_document.support):
        return
    params = types.ShowDocumentParams(uri=url, external=True)
    ls.in_loop(lambda: ls.window_show_document(params))


def setup(server: Server) -> None:
    @server.command(DISPATCH_GRAPH_COMMAND)
    @server.thread()
    def show_graph(ls, params):  # no annotation on `ls`: pygls reads them
        return show_dispatch_graph(ls, params)

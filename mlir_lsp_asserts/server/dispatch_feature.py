"""Dispatch-count previews in the editor: the `mlirLsp/dispatchCount` request, a command, and
a code lens at the top of the document with the count, the what-if count and the delta."""

from __future__ import annotations

import threading

from lsprotocol import types

from ..dispatch.compiler import CompilerError, find_compiler
from ..dispatch.count import DispatchCounter, preview
from ..dispatch.flags import profile_flags, split_flags

DISPATCH_REQUEST = "mlirLsp/dispatchCount"
DISPATCH_COMMAND = "mlirLsp.dispatchCount"


class DispatchState:
    def __init__(self):
        self.counter: DispatchCounter | None = None
        self.results: dict[str, tuple[int | None, dict]] = {}  # uri -> (version, preview json)
        self.running: dict[str, DispatchCounter] = {}
        self.lock = threading.Lock()
        self.profile = "default"
        self.extra_flags: list[str] = []
        self.compiler_path: str | None = None
        self.timeout = 900.0
        self.what_if = "strip"

    def get_counter(self) -> DispatchCounter:
        if self.counter is None:
            self.counter = DispatchCounter(find_compiler(self.compiler_path), timeout=self.timeout)
        return self.counter


def compute(ls, state: DispatchState, uri: str) -> dict:
    doc = ls.workspace.get_text_document(uri)
    version, text = doc.version, doc.source
    try:
        counter = state.get_counter()
        flags = profile_flags(state.profile, dict(ls.settings.profiles)) + state.extra_flags
        pv = preview(counter, doc.path, text, state.profile, flags, what_if=state.what_if)
    except (CompilerError, ValueError) as e:
        result = {"error": str(e)}
        ls.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"mlir-lsp: dispatch count: {e}"))
        return result
    result = pv.as_json()
    with state.lock:
        state.results[uri] = (version, result)
    caps = ls.client_capabilities
    ws = caps.workspace if caps else None
    if ws and ws.code_lens and ws.code_lens.refresh_support:
        ls.workspace_code_lens_refresh(None)
    return result


def lens_title(result: dict) -> str:
    if "error" in result:
        return f"mlir-lsp: dispatch count failed: {result['error'][:120]}"
    title = f"{result['flow_dispatches']} dispatches ({result['profile']})"
    w = result.get("what_if")
    if w:
        title += f", {w['flow_dispatches']} with the asserts removed ({w['flow_dispatches'] - result['flow_dispatches']:+d})"
    return title


def setup(server, state: DispatchState) -> None:
    @server.feature(DISPATCH_REQUEST)
    @server.thread()
    def dispatch_count(ls, params):
        uri = params.uri if hasattr(params, "uri") else params["uri"]
        return compute(ls, state, uri)

    @server.command(DISPATCH_COMMAND)
    @server.thread()
    def dispatch_command(ls, args):
        uri = args[0] if args else None
        if isinstance(uri, dict):
            uri = uri.get("uri")
        return compute(ls, state, uri)

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls, params: types.CodeLensParams):
        uri = params.text_document.uri
        doc = ls.workspace.get_text_document(uri)
        top = types.Range(types.Position(0, 0), types.Position(0, 0))
        with state.lock:
            cached = state.results.get(uri)
        if cached and cached[0] == doc.version:
            title = lens_title(cached[1])
        elif cached:
            title = lens_title(cached[1]) + " (stale: edited since; click to recount)"
        else:
            title = "mlir-lsp: count dispatches (iree-compile, gfx942)"
        return [types.CodeLens(range=top, command=types.Command(title=title, command=DISPATCH_COMMAND, arguments=[uri]))]

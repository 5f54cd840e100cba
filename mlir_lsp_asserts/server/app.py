"""The pygls language server: its state, and the modules that hold its features.

    app.py                 this file: the server object (all state hangs on it), features set up
    early_start.py         the first answers on stdio (initialize, a document's first diagnostics),
                           before pygls is imported, then the handoff to this server
    transport.py           pygls's stdio transport, adapted (big messages, one writer at a time)
    framing.py             the stdio frames: headers read as the spec says, a bad one skipped, a bound
    lifecycle.py           initialize, settings, shutdown, child processes stopped
    sync_feature           didOpen, didChange, didSave, didClose
    publishing             diagnostics pushed or pulled, the checker's and other sources'
    code_actions_feature   quick fixes, fix all, strip all / assume all, codeAction/resolve
    navigation_feature     hover, definition, references, symbols, folding
    tokens_feature         semantic tokens
    parser_feature         the real IREE parser's diagnostics, in the background
    dispatch_feature       dispatch counts (code lens, request, command)
    dispatch_graph_feature mlirLsp.showDispatchGraph: the dispatch graph in Model Explorer
    workspace_feature      files that are not open: watched on disk, checked, published
    bytecode_feature       mlirLsp/bytecodeToText
    disk_files_feature     files the client never syncs (VS Code: above 50 MB), checked and fixed on disk
    guards                 what the server refuses (paths outside the workspace, programs)

Documents are kept by `incremental.live_text.LiveText` (in pieces, checked piece by piece),
not by pygls's workspace, whose per-change rebuild of the whole text costs 300 ms on 50 MB.
"""

from __future__ import annotations

import logging
import threading

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from .. import __version__
from . import (
    bytecode_feature,
    code_actions_feature,
    disk_files_feature,
    dispatch_feature,
    dispatch_graph_feature,
    lifecycle,
    navigation_feature,
    publishing,
    sync_feature,
    tokens_feature,
    workspace_feature,
)
from .disk_files_state import DiskFiles
from .dispatch_graph_state import GraphViewerState
from .dispatch_state import DispatchState
from .open_documents import OpenDocument, Snapshot, Stamp
from .options import ServerOptions
from .parser_feature import ParserDiagnostics
from .transport import Handoff, MlirLspProtocol, run_stdio, undecodable
from .workspace_feature import WorkspaceWatch

log = logging.getLogger(__name__)


class MlirLspServer(LanguageServer):
    def start_io(self, stdin=None, stdout=None, handoff: Handoff | None = None) -> int:
        """pygls's stdio loop, adapted (transport.py); returns the exit status (`run_stdio`).
        `handoff`: what the early start (early_start.py) read and answered before this."""
        self._stop_event = threading.Event()  # pygls's own field: its shutdown sets it
        return run_stdio(self, self._stop_event, stdin, stdout, handoff)

    def __init__(self):
        super().__init__("mlir-lsp", __version__, protocol_cls=MlirLspProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        # All the server's state hangs here; feature modules keep none of their own.
        self.options = ServerOptions()
        self.documents: dict[str, OpenDocument] = {}
        self.parser_diagnostics = ParserDiagnostics()
        self.dispatch = DispatchState()
        self.dispatch_graph = GraphViewerState()  # the one Model Explorer viewer (dispatch_graph_feature)
        self.watch = WorkspaceWatch()
        self.disk_files = DiskFiles()  # files the client never syncs, checked from disk
        self.event_loop = None
        self.pulled: set[str] = set()  # documents whose diagnostics the client pulls
        self.settings_pushed = 0  # didChangeConfiguration that brought settings (lifecycle.pull_configuration)
        self.lock = threading.RLock()  # documents are edited on the loop, read by background work
        # Diagnostics of other sources than the checker, per document version (publishing.py)
        self.diagnostic_sources = (
            lambda doc: self.parser_diagnostics.for_version(doc.uri, doc.stamp),
            lambda doc: dispatch_feature.count_diagnostics(self, doc.uri, doc.stamp),
            lambda doc: undecodable(self, doc),  # a text sent with bytes that are not UTF-8 (transport.py)
        )

    @property
    def settings(self):
        """The rule settings (select, ignore, severity, fix mode, profiles)."""
        return self.options.rules

    def in_loop(self, fn, *args) -> None:
        """Run `fn(*args)` on the server's event loop: the one way background threads (compiles,
        the parser child, the workspace watcher) talk to the client. Before `initialize` there is
        no loop and it runs at once."""
        if self.event_loop is not None:
            self.event_loop.call_soon_threadsafe(fn, *args)
        else:
            fn(*args)

    # -- documents ---------------------------------------------------------------------------
    def document(self, uri: str) -> OpenDocument | None:
        return self.documents.get(uri)

    def snapshot(self, uri: str) -> Snapshot | None:
        """An immutable (uri, version, text) of an open document, safe to use from any thread."""
        with self.lock:
            doc = self.documents.get(uri)
            return doc.snapshot() if doc is not None else None

    def snapshot_parts(self, uri: str) -> tuple[Stamp, list[tuple[str, int, int]]] | None:
        """(stamp, the text as a list of pieces): a consistent view without joining them."""
        with self.lock:
            doc = self.documents.get(uri)
            return (doc.stamp, doc.parts()) if doc is not None else None

    # -- diagnostics (publishing.py) ---------------------------------------------------------
    def diagnostics(self, uri: str) -> tuple[int | None, list[types.Diagnostic]]:
        """The document's version and all its diagnostics, as LSP objects (pull requests)."""
        return publishing.all_diagnostics(self, uri)

    def publish(self, uri: str, refresh_pull: bool = False) -> None:
        """Push the document's diagnostics (or, to a client that pulls them, a refresh)."""
        publishing.publish(self, uri, refresh_pull)

    def warn(self, message: str) -> None:
        self.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"mlir-lsp: {message}"))


server = MlirLspServer()
for feature in (lifecycle, sync_feature, publishing, code_actions_feature, navigation_feature, tokens_feature,
                dispatch_feature, dispatch_graph_feature, bytecode_feature, disk_files_feature,
                workspace_feature):
    feature.setup(server)


def run_server(tcp: str | None = None, handoff: Handoff | None = None) -> int:
    """Serve until the client is done; the exit status: 1 for an `exit` without `shutdown`.
    On stdio, `handoff` is what the early start (early_start.py) read and answered first."""
    lifecycle.stop_on_signals(server)
    try:
        if tcp:
            host, _, port = tcp.rpartition(":")
            server.start_tcp(host or "127.0.0.1", int(port))
            return 0
        return server.start_io(handoff=handoff)  # returns at `exit`, or when the client closes our stdin
    finally:
        lifecycle.stop_background(server)

"""The pygls language server: lifecycle, documents, diagnostics; features live in their modules.

    app.py                 this file: the server, open documents, publishing, settings
    code_actions_feature   quick fixes, fix all, strip all / assume all, codeAction/resolve
    navigation_feature     hover, definition, references, symbols, folding
    tokens_feature         semantic tokens
    parser_feature         the real IREE parser's diagnostics, in the background
    dispatch_feature       dispatch counts (code lens, request, command)
    workspace_feature      files that are not open: watched on disk, checked, published

Documents are kept by `incremental.live_text.LiveText` (in pieces, checked piece by piece),
not by pygls's workspace, whose per-change rebuild of the whole text costs 300 ms on 50 MB.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import json
import logging
import os
import sys
import threading

from lsprotocol import types
from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from .. import __version__
from . import (
    code_actions_feature,
    dispatch_feature,
    guards,
    navigation_feature,
    tokens_feature,
    workspace_feature,
)
from .convert import diagnostic_json, plain_diagnostic
from .dispatch_state import DispatchState
from .held_resources import lift
from .open_documents import OpenDocument, Snapshot
from .options import SECTION, ServerOptions, read_options
from .parser_feature import ParserDiagnostics
from .workspace_feature import WorkspaceWatch

log = logging.getLogger(__name__)
# A publish lists at most this many findings, then one summary (like other linters' caps).
MAX_PUBLISHED = 2000


class MlirLspProtocol(LanguageServerProtocol):
    """pygls's protocol, but open documents are ours: its workspace keeps no copy of them."""

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args):
        """pygls's, cancelling the requests still running over a copy of their table: a
        cancelled request's callback removes it from the table (and a finishing thread may
        too), which made pygls's own loop fail the shutdown ("dictionary changed size during
        iteration") when requests were queued behind a compile."""
        if (handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield handler, args, None
        current = self.msg_id
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current and not future.done():
                future.cancel()
        self._shutdown = True
        return None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None

    def send_notification_json(self, method: str, params_json: str) -> None:
        """Send a notification whose params are already JSON text (see `MlirLspServer.publish`)."""
        if self.writer is None:
            return
        body = f'{{"jsonrpc": "2.0", "method": "{method}", "params": {params_json}}}'
        data = f"Content-Length: {len(body)}\r\nContent-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n{body}"
        res = self.writer.write(data.encode(self.CHARSET))
        if inspect.isawaitable(res):
            asyncio.ensure_future(res)


class LockedStdoutWriter(StdoutWriter):
    """pygls's stdout writer, one message at a time: answers of threaded requests are written
    from their worker threads, and two large ones written at once interleaved on the pipe (the
    client read "Invalid control character" 128 KB into a message)."""

    def __init__(self, stdout):
        super().__init__(stdout)
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self._lock:
            super().write(data)


class TextStdinReader(StdinAsyncReader):
    """Gives pygls each message body as text, decoded in the reading thread with the bytes let go
    at once: `json.loads` of bytes decodes to a temporary string of its own, so a 50 MB didOpen
    would otherwise be held three times (bytes, that string, the parsed text) at its peak. A
    document's resource section is lifted out of the body first (`held_resources.lift`)."""

    def readexactly(self, n: int):
        def read() -> str:
            body = lift(self.stdin.read(n))
            try:
                return body.decode("utf-8")  # the fast path; surrogatepass only where needed
            except UnicodeDecodeError:
                return body.decode("utf-8", "surrogatepass")
        return self.loop.run_in_executor(self.executor, read)


class MlirLspServer(LanguageServer):
    def start_io(self, stdin=None, stdout=None):
        """pygls's stdio loop, with message bodies read as text (`TextStdinReader`)."""
        self._stop_event = threading.Event()
        self.protocol.set_writer(LockedStdoutWriter(stdout or sys.stdout.buffer))
        reader = TextStdinReader(stdin or sys.stdin.buffer, self.thread_pool)
        try:
            asyncio.run(run_async(stop_event=self._stop_event, reader=reader, protocol=self.protocol,
                                  logger=log, error_handler=self.report_server_error))
        except BrokenPipeError:
            log.error("the client's connection is gone; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def __init__(self):
        super().__init__("mlir-lsp", __version__, protocol_cls=MlirLspProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        # All the server's state hangs here; feature modules keep none of their own.
        self.options = ServerOptions()
        self.documents: dict[str, OpenDocument] = {}
        self.parser_diagnostics = ParserDiagnostics()
        self.dispatch = DispatchState()
        self.watch = WorkspaceWatch()
        self.event_loop = None
        self.pulled: set[str] = set()  # documents whose diagnostics the client pulls
        self.lock = threading.RLock()  # documents are edited on the loop, read by background work

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

    def snapshot_parts(self, uri: str) -> tuple[int | None, list[str]] | None:
        """(version, the text as a list of pieces): a consistent view without joining them."""
        with self.lock:
            doc = self.documents.get(uri)
            return (doc.version, doc.parts()) if doc is not None else None

    # -- diagnostics ---------------------------------------------------------------------------
    def diagnostics(self, uri: str) -> tuple[int | None, list[types.Diagnostic]]:
        """The document's version and all its diagnostics, as LSP objects (pull requests)."""
        doc = self.documents.get(uri)
        if doc is None:
            return None, []
        params = json.loads(self._publish_json(doc))
        conv = self.protocol._converter
        return doc.version, [conv.structure(d, types.Diagnostic) for d in params["diagnostics"]]

    def _other_diagnostics(self, doc: OpenDocument) -> list[types.Diagnostic]:
        return (self.parser_diagnostics.for_version(doc.uri, doc.version)
                + dispatch_feature.count_diagnostics(self, doc.uri, doc.version))

    def _publish_json(self, doc: OpenDocument) -> str:
        """The params of a publish as JSON text. Each piece keeps its findings' JSON for the line
        it starts at, so an edit re-renders only the pieces it changed or moved."""
        live = doc.live
        conv = self.protocol._converter
        parts = [json.dumps(conv.unstructure(plain_diagnostic(doc.error)))] if doc.error else []
        if problem := doc.tail_problem():
            parts.append(json.dumps(conv.unstructure(plain_diagnostic(problem[1], types.DiagnosticSeverity.Error,
                                                                      line=problem[0]))))
        shown = 0
        measured = dispatch_feature.measurement(self.dispatch, doc.uri, doc.version)
        # A rendering holds for its first line and the measurement it shows (none, or one what-if).
        lower = self.settings.measured_severity
        tag = None if measured is None else (measured.serial, lower)
        def render(findings, line0: int) -> str:
            if measured is not None:
                findings = measured.annotate(findings, line0, lower)
            return ", ".join(json.dumps(diagnostic_json(doc.uri, f, line0)) for f in findings)

        for rendered, count, line0 in live.rendered_findings(render, tag):
            parts.append(rendered)
            shown += count
            if shown >= MAX_PUBLISHED and live.finding_count() > shown:
                parts.append(json.dumps(conv.unstructure(plain_diagnostic(
                    f"mlir-lsp: {live.finding_count() - shown} more findings not shown "
                    "(run `mlir-lsp --check --statistics` for all of them)",
                    types.DiagnosticSeverity.Information, line=line0))))
                break
        parts.extend(json.dumps(conv.unstructure(d)) for d in self._other_diagnostics(doc))
        version = "null" if doc.version is None else str(int(doc.version))
        return f'{{"uri": {json.dumps(doc.uri)}, "version": {version}, "diagnostics": [{", ".join(x for x in parts if x)}]}}'

    def publish(self, uri: str, refresh_pull: bool = False) -> None:
        """Push diagnostics, unless the client pulls them for this document (then pushing would
        show every finding twice): clients that pull get a refresh request instead."""
        if uri not in self.documents:
            return
        if uri in self.pulled:
            caps = self.client_capabilities
            ws = caps.workspace if caps else None
            if refresh_pull and ws and ws.diagnostics and ws.diagnostics.refresh_support:
                self.workspace_diagnostic_refresh(None)
            return
        self.protocol.send_notification_json(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, self._publish_json(self.documents[uri]))

    def warn(self, message: str) -> None:
        self.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"mlir-lsp: {message}"))


server = MlirLspServer()


# -- settings ---------------------------------------------------------------------------------
def apply_options(ls: MlirLspServer, options) -> bool:
    """Apply the `mlirLsp` settings (from initializationOptions or workspace/configuration).
    A bad value gets a message and keeps what it was; returns whether anything was applied."""
    new = read_options(options, ls.options, ls.warn, lambda v: guards.compiler_path_problem(ls, v))
    if new is None:
        return False
    old, ls.options = ls.options, new
    if new.dispatch.compiler_path != old.dispatch.compiler_path:
        ls.dispatch.counter = None
    if not new.workspace.watch:
        workspace_feature.stop(ls)
    ls.parser_diagnostics.enabled = new.parser_diagnostics
    if new.rules != old.rules:
        with ls.lock:
            for uri, doc in ls.documents.items():
                ls.documents[uri] = doc.with_settings(new.rules)
    return True


async def pull_configuration(ls: MlirLspServer) -> None:
    """Ask the client for the `mlirLsp` section (workspace/configuration), when it can answer."""
    caps = ls.client_capabilities
    if not (caps and caps.workspace and caps.workspace.configuration):
        return
    try:
        got = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)]))
    except Exception as e:  # noqa: BLE001 - a client that cannot answer keeps what we have
        log.info("workspace/configuration failed: %s", e)
        return
    if got and isinstance(got[0], dict) and got[0]:
        apply_options(ls, got[0])
        republish(ls)


@server.feature(types.INITIALIZE)
def initialize(ls: MlirLspServer, params: types.InitializeParams):
    ls.event_loop = asyncio.get_event_loop()  # background threads publish through it
    apply_options(ls, params.initialization_options)
    if params.process_id:
        _exit_with_client(params.process_id)


@server.feature(types.INITIALIZED)
async def initialized(ls: MlirLspServer, params: types.InitializedParams):
    threading.Thread(target=_warm_up, name="mlir-lsp-warm-up", daemon=True).start()
    await pull_configuration(ls)
    workspace_feature.start(ls)


WARM_UP_TEXT = """func.func @f(%t: tensor<4xi64>, %w: tensor<77xf16>) -> tensor<4xf16> {
  %c77 = arith.constant 77 : index
  %c0 = arith.constant 0 : i64
  %e = tensor.empty() : tensor<4xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%t : tensor<4xi64>) outs(%e : tensor<4xf16>) {
  ^bb0(%in: i64, %out: f16):
    %i = arith.index_cast %in : i64 to index
    %lt = arith.cmpi slt, %i, %c77 : index
    cf.assert %lt, "index must be smaller than dim size"
    %ge = arith.cmpi sge, %in, %c0 : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %w[%i] : tensor<77xf16>
    linalg.yield %x : f16
  } -> tensor<4xf16>
  return %r : tensor<4xf16>
}
"""


def _warm_up() -> None:
    """Check and fix a small gather once, in the background, so that the first real code action
    does not pay for building the op grammar's parser and compiling the fixes' patterns."""
    try:
        from ..check import check_text

        check_text(WARM_UP_TEXT)
    except Exception:  # noqa: BLE001 - a warm-up that fails only leaves the first request slower
        log.debug("warm-up failed", exc_info=True)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: MlirLspServer, params: types.DidChangeConfigurationParams):
    # Push-style clients send the settings; pull-style ones (VS Code) send null: ask them.
    if not apply_options(ls, params.settings):
        await pull_configuration(ls)
    republish(ls)


def republish(ls: MlirLspServer) -> None:
    """New settings: push to the documents whose diagnostics are pushed, and ask clients that
    pull to pull again (one refresh for all their documents)."""
    for uri in list(ls.documents):
        if uri not in ls.pulled:
            ls.publish(uri)
    if ls.pulled:
        ls.publish(next(iter(ls.pulled)), refresh_pull=True)


def _exit_with_client(pid: int) -> None:
    """Exit when the editor's process is gone (it may die without closing our stdin)."""
    def watch():
        import time

        while True:
            time.sleep(3)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                log.warning("client process %d is gone; exiting", pid)
                stop_background(server)
                os._exit(0)
            except PermissionError:
                pass
    threading.Thread(target=watch, name="client-watch", daemon=True).start()


def stop_background(ls: MlirLspServer) -> None:
    """Kill every child we started (compiles, real-parser runs) and stop the watcher: no
    process outlives the server, whichever way it ends."""
    for uri in set(ls.dispatch.running) | set(ls.dispatch.timers):
        ls.dispatch.cancel(uri)
    for uri in list(ls.parser_diagnostics.children) + list(ls.parser_diagnostics.timers):
        ls.parser_diagnostics.forget(uri)
    workspace_feature.stop(ls)


@server.feature(types.SHUTDOWN)
def shutdown(ls: MlirLspServer, params):
    stop_background(ls)


# -- document sync ------------------------------------------------------------------------------
def _settle(doc: OpenDocument, rebuilds_before: int) -> None:
    """After a large document was read in whole: collect the read's garbage, then move what is
    left out of the collector's way (gc.freeze), so later collections do not walk it and no
    keystroke pays a 100 ms full collection. Unfrozen first, so old documents can be freed."""
    if doc.live.in_pieces and doc.live.rebuilds != rebuilds_before:
        gc.unfreeze()
        gc.collect()
        gc.freeze()


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: MlirLspServer, params: types.DidOpenTextDocumentParams):
    td = params.text_document
    with ls.lock:
        ls.documents[td.uri] = doc = OpenDocument(td.uri, td.version, td.text, ls.settings)
    _settle(doc, 0)
    workspace_feature.opened(ls, td.uri)
    ls.publish(td.uri)
    dispatch_feature.schedule(ls, td.uri, "open")
    ls.parser_diagnostics.schedule(ls, td.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: MlirLspServer, params: types.DidChangeTextDocumentParams):
    uri = params.text_document.uri
    doc = ls.documents.get(uri)
    if doc is None:
        log.warning("didChange for a document that is not open: %s", uri)
        return
    before = doc.live.rebuilds
    shifts = []
    for ch in params.content_changes:
        rng = getattr(ch, "range", None)
        if rng is None:
            shifts = None
            break
        shifts.append((rng.start.line, rng.end.line, ch.text.count("\n")))
    with ls.lock:
        doc.change(params.content_changes, params.text_document.version)
    if shifts is not None:  # the real parser's last findings follow the lines they are on
        ls.parser_diagnostics.shift(uri, shifts, params.text_document.version)
    _settle(doc, before)
    ls.publish(uri)
    dispatch_feature.schedule(ls, uri, "change")
    ls.parser_diagnostics.schedule(ls, uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: MlirLspServer, params: types.DidSaveTextDocumentParams):
    if params.text_document.uri in ls.documents:
        dispatch_feature.schedule(ls, params.text_document.uri, "save")


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: MlirLspServer, params: types.DidCloseTextDocumentParams):
    uri = params.text_document.uri
    with ls.lock:
        ls.documents.pop(uri, None)
    ls.pulled.discard(uri)
    ls.dispatch.forget(uri)
    ls.parser_diagnostics.forget(uri)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
    workspace_feature.closed(ls, uri)


@server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC,
                types.DiagnosticOptions(inter_file_dependencies=False, workspace_diagnostics=False))
def pull_diagnostics(ls: MlirLspServer, params: types.DocumentDiagnosticParams):
    uri = params.text_document.uri
    if uri not in ls.documents:
        return types.RelatedFullDocumentDiagnosticReport(items=[])
    if uri not in ls.pulled:  # from now on this client pulls: clear what was pushed
        ls.pulled.add(uri)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
    return types.RelatedFullDocumentDiagnosticReport(items=ls.diagnostics(uri)[1])


@server.feature("mlirLsp/bytecodeToText")
def bytecode_to_text(ls: MlirLspServer, params):
    """Textual form of a `.mlirbc` file (like mlir-lsp-server's bytecode conversion)."""
    from pathlib import Path

    from ..source import SourceError, read_source
    from .open_documents import uri_path

    uri = params.uri if hasattr(params, "uri") else params["uri"]
    path = uri_path(uri)
    if path is None:
        return {"error": f"not a file URI: {uri}"}
    refused = workspace_feature.outside_workspace(ls, path)
    if refused:
        return {"error": refused}
    try:
        src = read_source(path)
    except (OSError, SourceError) as e:
        return {"error": f"{Path(path).name}: {getattr(e, 'strerror', None) or e}"}
    return {"text": src.text, "isBytecode": src.is_bytecode}


code_actions_feature.setup(server)
navigation_feature.setup(server)
tokens_feature.setup(server)
dispatch_feature.setup(server)


def run_server(tcp: str | None = None) -> int:
    try:
        if tcp:
            host, _, port = tcp.rpartition(":")
            server.start_tcp(host or "127.0.0.1", int(port))
        else:
            server.start_io()  # returns when the client closes our stdin, with or without `exit`
    finally:
        stop_background(server)
    return 0

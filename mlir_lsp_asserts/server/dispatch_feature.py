"""Dispatch-count previews in the editor: the `mlirLsp/dispatchCount` request, a command, a
code lens at the top of the document with the count, the what-if count and the delta (and, with
attribution, one per function and one on each op whose dispatch exists only because of asserts;
with a baseline (`dispatch.baseline`), how each function's count differs from it and one on
each op whose dispatch is new, with the cause),
`mlirLsp/dispatchIR` / `mlirLsp.showDispatchIR` (the dispatch-creation output, for a virtual
document), and the compiler's own errors as diagnostics (source `iree-compile`)."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, NamedTuple

from lsprotocol import types

from . import guards, workspace_feature
from .arguments import command_arguments
from .dispatch_state import Answer, DispatchState
from .dispatch_views import OLDER_SYNTAX, attribution_lenses, lens_title
from .dispatch_views import count_diagnostics as count_diagnostics
from .dispatch_views import hover_lines as hover_lines
from .dispatch_views import saved_dispatches as saved_dispatches
from .open_documents import Stamp
from .progress import Progress
from .protocol import Server

if TYPE_CHECKING:  # the counter is imported by the first count, not when the server starts (issue 37)
    from ..dispatch.count import DispatchCounter
    from ..dispatch.measured_cost import Measurement
    from ..dispatch.preview import Preview
    from ..dispatch.request import CountRequest
    from ..dispatch.results import BaselineComparison
    from ..findings import Finding

DISPATCH_REQUEST = "mlirLsp/dispatchCount"
DISPATCH_COMMAND = "mlirLsp.dispatchCount"
# Sent when a count of an open document is stored (the counts the server schedules on open, save
# and idle too): `{"uri": ..., <the mlirLsp/dispatchCount answer>}`. A client shows it (the VS Code
# status bar) instead of scheduling counts of its own.
COUNTED_NOTIFICATION = "mlirLsp/dispatchCounted"
DISPATCH_IR_REQUEST = "mlirLsp/dispatchIR"
DISPATCH_IR_COMMAND = "mlirLsp.showDispatchIR"
DISPATCH_GRAPH_COMMAND = "mlirLsp.showDispatchGraph"  # dispatch_graph_feature.py
GRAPH_LENS = "show dispatch graph"


class OpenText(NamedTuple):
    version: int | None
    text: str
    path: str
    opened: int = 0  # the document's opening (0: a file checked from disk, whose version is its mtime)

    @property
    def stamp(self) -> Stamp:
        return (self.opened, self.version)


def open_text(ls: Server, uri: str) -> OpenText | None:
    """(version, text, file path) of an open document: the one place that reads documents. A
    file the client never synced but had checked from disk (disk_files_feature) is read there."""
    snap = ls.snapshot(uri)
    if snap is None:
        got = ls.disk_files.text(uri)
        return None if got is None else OpenText(*got)
    return OpenText(snap.version, snap.source, snap.path or uri, snap.opened)


def count_request_of(ls: Server) -> CountRequest:
    """The count request of the server's settings: `dispatch.profile` and `dispatch.flags` (which
    the rule settings carry, with their `profiles`), the compiler, the timeout, the what-if. An
    unknown profile raises ValueError, which the count answers with, as the CLI exits with it.
    (`dispatch.baseline` is compared after the count, found from the workspace: `baseline_result`.)"""
    from ..dispatch.request import count_request

    opts = ls.options.dispatch
    return count_request(ls.settings, compiler=opts.compiler_path, timeout=opts.timeout, what_if=opts.what_if)


def dispatch_flags(ls: Server) -> list[str]:
    """The flags a count compiles with (the request's, without finding the compiler)."""
    return ls.settings.dispatch_flags()


def compute(ls: Server, uri: str | None, interactive: bool = True) -> dict:
    """The `mlirLsp/dispatchCount` answer (JSON) for the document as it is: counted now, or the
    count of the same version already running."""
    if refused := guards.refuse_path(ls, uri):
        return {"error": refused}
    got = open_text(ls, uri) if uri else None
    if uri is None or got is None:
        return {"error": f"document not open: {uri}"}
    answer = count_document(ls, uri, got, interactive)
    return {"error": "cancelled: the document changed"} if answer is None else answer.as_json()


def count_document(ls: Server, uri: str, got: OpenText, interactive: bool) -> Answer | None:
    """The count of this text of the document (None: cancelled, the document changed). Results
    are kept under the text's stamp: a document closed and reopened at the same version with
    another text never shares or gets the old text's count."""
    stamp = got.stamp
    state = ls.dispatch
    with state.lock:
        running = state.inflight.get(uri)
        if running is None or running[0] != stamp:
            state.inflight[uri] = mine = (stamp, threading.Event())
            running = None
    if running is not None:  # the same text is being counted (on open or save): share its answer
        running[1].wait()
        with state.lock:
            r = state.results.get(uri)
        return r[1] if r and r[0] == stamp else None
    try:
        return _count(ls, uri, got, interactive)
    finally:
        with state.lock:
            if state.inflight.get(uri) is mine:
                del state.inflight[uri]
        mine[1].set()


def _count(ls: Server, uri: str, got: OpenText, interactive: bool) -> Answer | None:
    from ..dispatch.compiler import CompilerError
    from ..dispatch.measured_cost import Measurement
    from ..dispatch.preview import preview

    version, text, path = got.version, got.text, got.path
    state, opts = ls.dispatch, ls.options.dispatch
    progress = Progress(ls, "dispatch", f"iree-compile: counting dispatches ({opts.profile})")
    own: DispatchCounter | None = None
    with state.lock:
        before = state.results.get(uri)
    had_diagnostics = bool(before and before[1].has_diagnostics)
    try:
        req = count_request_of(ls)
        own = state.counter_for(opts, req.compiler)
        if not state.start(uri, own, lambda: _current(ls, uri, got)):
            return None  # edited while the compiler was being found: the old text is not compiled
        progress.begin()
        pv = preview(own, path, text, req.profile, list(req.flags), what_if=req.what_if, attribution=opts.attribution)
    except (CompilerError, ValueError) as e:
        if str(e) == "cancelled":
            return None
        return _failed(ls, uri, got, e, own, had_diagnostics, interactive)
    finally:
        progress.end()
        state.release(own)
        if own is not None and state.running.get(uri) is own:
            state.running.pop(uri, None)
    answer = Answer(version, pv)
    if opts.baseline:
        answer.baseline = baseline_result(ls, path, text, pv)
    lenses = attribution_lenses(text, pv, answer.baseline)
    measured = Measurement.of(pv, req.extra_flags)
    with state.lock:
        if not _keeps(ls, uri, got):
            return answer  # its document was closed meanwhile, or a later text's count ended first
        state.results[uri] = (got.stamp, answer)
        state.lenses[uri] = (got.stamp, lenses)
        if measured is not None:
            state.measured[uri] = (got.stamp, measured)
        else:
            had_diagnostics |= state.measured.pop(uri, None) is not None
    _announce(ls, uri, answer)
    if pv.assert_sources or had_diagnostics or measured is not None:
        _publish(ls, uri)  # MLA004 shown, the measured notes, or earlier compile errors cleared
    return answer


def _current(ls: Server, uri: str, got: OpenText) -> bool:
    """Whether `got` is still the document's text (a file checked from disk: that it is still
    not open)."""
    doc = ls.document(uri)
    return doc.stamp == got.stamp if doc is not None else got.opened == 0


def _keeps(ls: Server, uri: str, got: OpenText) -> bool:
    """Whether the count of `got` is kept as the document's (asked with `ls.dispatch.lock` held):
    not when its opening was closed, nor over a later version's count."""
    return _still_open(ls, uri, got) and not ls.dispatch.has_later(uri, got.stamp)


def _still_open(ls: Server, uri: str, got: OpenText) -> bool:
    """Whether `got` is of the document's current opening (a file checked from disk: that it is
    still not open). Asked with `ls.dispatch.lock` held, as the store that follows: a close pops
    the document first and then forgets its previews under that lock, so a count of a closed
    document that finishes after a reopen never takes the reopened one's place."""
    doc = ls.document(uri)
    return got.opened == (doc.opened if doc is not None else 0)


def _failed(ls: Server, uri: str, got: OpenText, e: Exception, own: DispatchCounter | None,
            had_diagnostics: bool, interactive: bool) -> Answer:
    """A count that failed: its answer kept for this text, the compiler's errors published."""
    from ..dispatch.compiler import CompilerError, other_release_message, other_release_syntax

    state = ls.dispatch
    errors = e.diagnostics if isinstance(e, CompilerError) else []
    answer = Answer(got.version, error=str(e), compile_errors=errors)
    syntax = other_release_syntax(errors)
    if syntax is not None and own is not None:  # not an error of the file: this compiler reads another release's syntax
        answer.unsupported_syntax = True
        answer.error = f"n/a ({OLDER_SYNTAX}): {other_release_message(own.compiler.version, syntax)}"
    with state.lock:
        if not _keeps(ls, uri, got):
            return answer
        state.results[uri] = (got.stamp, answer)
        state.lenses.pop(uri, None)
        had_diagnostics |= state.measured.pop(uri, None) is not None
    if interactive:
        kind = types.MessageType.Info if syntax is not None else types.MessageType.Error
        ls.in_loop(ls.window_show_message, types.ShowMessageParams(kind, f"mlir-lsp: dispatch count: {answer.error}"))
    _announce(ls, uri, answer)
    if errors or had_diagnostics:
        _publish(ls, uri)
    return answer


def baseline_result(ls: Server, path: str, text: str, pv: Preview) -> BaselineComparison:
    """The preview against `dispatch.baseline` (the file, its count and the difference, the new
    dispatches with their causes, the baseline's dispatches in the document's lines; or an
    `error`)."""
    from ..dispatch.baselines import BaselineError, baseline_key, load_baseline
    from ..dispatch.diff import compare_with_baseline
    from ..dispatch.results import BaselineComparison

    opts = ls.options.dispatch
    folders = workspace_feature.roots(ls)
    file = opts.baseline or ""
    if not os.path.isabs(file):
        file = os.path.join(folders[0] if folders else os.path.dirname(os.path.abspath(path)), file)
    try:
        baseline = load_baseline(file, regular_only=True)  # a setting a cloned repository may write
    except BaselineError as e:
        return BaselineComparison(file, error=str(e))
    key = baseline_key(baseline, path, [*folders, os.path.dirname(file)])
    if key is None:
        return BaselineComparison(file, error=f"{os.path.basename(file)} has no count for this file")
    return compare_with_baseline(pv, text.split("\n"), baseline, key, file)


def measurement(state: DispatchState, uri: str, stamp: Stamp) -> Measurement | None:
    """What the last what-if measured, when it compiled this text of the document."""
    with state.lock:
        m = state.measured.get(uri)
    return m[1] if m and m[0] == stamp else None


def measured_findings(ls: Server, uri: str, stamp: Stamp, findings: list[Finding],
                      line0: int = 0) -> list[Finding]:
    """`findings` (of a piece starting at `line0`) with the measured notes of this text, and
    MLA001 at information severity where nothing is saved when `measuredSeverity` is on."""
    m = measurement(ls.dispatch, uri, stamp)
    return findings if m is None else m.annotate(findings, line0, lower=ls.settings.measured_severity)


def _publish(ls: Server, uri: str) -> None:
    """Diagnostics again from a worker thread (clients that pull get a refresh request)."""
    ls.in_loop(ls.publish, uri, True)


def _announce(ls: Server, uri: str, answer: Answer) -> None:
    """A stored count: the code lenses refreshed, the client told (COUNTED_NOTIFICATION)."""
    _refresh_lenses(ls)
    ls.in_loop(ls.protocol.notify, COUNTED_NOTIFICATION, {"uri": uri, **answer.as_json()})


def _refresh_lenses(ls: Server) -> None:
    caps = ls.client_capabilities
    ws = caps.workspace if caps else None
    if ws and ws.code_lens and ws.code_lens.refresh_support:
        ls.in_loop(ls.workspace_code_lens_refresh, None)




def schedule(ls: Server, uri: str, reason: str) -> None:
    """After an edit (reason "change") or a save: cancel what is stale, start what is due. A save
    while this very text is being counted changes nothing: the running count goes on (a minute's
    compile of a model is not started again on every Ctrl+S), and it announces its result."""
    state, opts = ls.dispatch, ls.options.dispatch
    doc = ls.document(uri)
    if reason == "save" and doc is not None and state.counting(uri, doc.stamp):
        return
    state.cancel(uri)
    if not opts.enabled or opts.trigger == "manual":
        return
    if reason == "change" and opts.trigger != "idle":
        return
    if doc is None or doc.size > opts.auto_max_mb * 1024 * 1024:
        return
    delay = opts.idle_ms / 1000 if reason == "change" else 0.0
    t = threading.Timer(delay, compute, args=(ls, uri, False))
    t.daemon = True
    state.timers[uri] = t
    t.start()


def _request_uri(params: Any) -> str | None:
    """The document URI of a request's params or a command's arguments."""
    return command_arguments(params).get("uri")


def _serving(handler):
    def serve(ls, params):  # a command's arguments arrive as one list; no annotation on `ls`: pygls reads them
        return handler(ls, _request_uri(params))

    return serve


def setup(server: Server) -> None:
    @server.feature(DISPATCH_REQUEST)
    @server.thread()
    def count_request(ls, params):
        # The client shows the result (a status bar): a failure is in the answer only, not also
        # in a message box. The command (code lens, palette) shows one.
        return compute(ls, _request_uri(params), interactive=False)

    for name, is_command, handler in ((DISPATCH_COMMAND, True, compute),
                                      (DISPATCH_IR_REQUEST, False, dispatch_ir),
                                      (DISPATCH_IR_COMMAND, True, dispatch_ir)):
        register = server.command if is_command else server.feature
        register(name)(server.thread()(_serving(handler)))

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls, params: types.CodeLensParams):
        uri = params.text_document.uri
        doc = ls.document(uri)  # its version only: no copy of the text per lens request
        if doc is None:
            return []
        stamp = doc.stamp
        top = types.Range(types.Position(0, 0), types.Position(0, 0))
        state = ls.dispatch
        with state.lock:
            cached = state.results.get(uri)
            extra = state.lenses.get(uri)
        if cached and cached[0] == stamp:
            title = lens_title(cached[1])
        elif cached and cached[0][0] == stamp[0]:  # this opening, an older version (not a closed one's)
            title = lens_title(cached[1]) + " (stale: edited since; click to recount)"
        else:
            title = f"mlir-lsp: count dispatches (iree-compile, {ls.options.dispatch.profile})"
        out = [types.CodeLens(range=top, command=types.Command(title=title, command=DISPATCH_COMMAND, arguments=[uri]))]
        if cached and cached[0][0] == stamp[0] and cached[1].preview is not None:  # a count of this opening
            out.append(types.CodeLens(range=top, command=types.Command(
                title=GRAPH_LENS, command=DISPATCH_GRAPH_COMMAND, arguments=[{"uri": uri}])))
        if extra and extra[0] == stamp:
            for line, text in extra[1]:
                rng = types.Range(types.Position(line, 0), types.Position(line, 0))
                out.append(types.CodeLens(range=rng, command=types.Command(
                    title=text, command=DISPATCH_IR_COMMAND, arguments=[uri])))
        return out


def dispatch_ir(ls: Server, uri: str | None) -> dict:
    """`{"text": the --compile-to=dispatch-creation output, "path": its file in the cache or null}`
    for the document as it is now (the preview's compile when cached; else compiled now). On
    failure `{"text": "", "path": null, "error": message}`."""
    if refused := guards.refuse_path(ls, uri):
        return {"text": "", "path": None, "error": refused}
    got = open_text(ls, uri) if uri else None
    if got is None:
        return {"text": "", "path": None, "error": f"document not open: {uri}"}
    from ..dispatch.compiler import CompilerError

    opts = ls.options.dispatch
    counter = None
    try:
        req = count_request_of(ls)
        counter = ls.dispatch.counter_for(opts, req.compiler)  # registered: a stopping server kills its compile
        rep = counter.prepare_flags(list(req.flags))
        ir, path = counter.dispatch_ir(got.text, rep.flags, attribution=opts.attribution)
    except (CompilerError, ValueError) as e:
        return {"text": "", "path": None, "error": str(e)}
    finally:
        ls.dispatch.release(counter)
    return {"text": ir, "path": path}

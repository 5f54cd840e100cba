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
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from lsprotocol import types

from ..dispatch.attribution import by_source_line
from ..dispatch.baselines import BaselineError, baseline_key, load_baseline
from ..dispatch.compiler import (
    CompilerError,
    find_compiler,
    other_release_message,
    other_release_syntax,
)
from ..dispatch.count import DispatchCounter
from ..dispatch.diff import causes_text, compare_with_baseline
from ..dispatch.flags import profile_flags
from ..dispatch.measured_cost import Measurement
from ..dispatch.preview import Preview, preview
from ..dispatch.results import BaselineComparison, Dispatch
from ..findings import Finding
from ..rules import doc_url
from ..rules import mla004_torch_op_lowers_to_assert as mla004
from ..syntax.tokens import symbol_after
from . import guards, workspace_feature
from .options import DispatchOptions
from .progress import Progress

if TYPE_CHECKING:
    from .app import MlirLspServer

DISPATCH_REQUEST = "mlirLsp/dispatchCount"
DISPATCH_COMMAND = "mlirLsp.dispatchCount"
DISPATCH_IR_REQUEST = "mlirLsp/dispatchIR"
DISPATCH_IR_COMMAND = "mlirLsp.showDispatchIR"
OLDER_SYNTAX = "older IREE syntax"  # what the status bar and lens say when the compiler cannot read a file


@dataclass
class Answer:
    """The last dispatch count of one version of a document, as the server keeps it: a preview
    (with its comparison to the baseline), or why there is none. JSON only in `as_json`."""

    version: int | None
    preview: Preview | None = None
    baseline: BaselineComparison | None = None
    error: str | None = None
    compile_errors: list[dict] = field(default_factory=list)
    unsupported_syntax: bool = False  # the compiler cannot read this release's syntax

    @property
    def has_diagnostics(self) -> bool:
        """Whether it puts diagnostics on the document (compile errors, MLA004)."""
        return bool(self.compile_errors or (self.preview and self.preview.assert_sources))

    def as_json(self) -> dict:
        if self.preview is None:
            out: dict = {"error": self.error, "version": self.version, "compile_errors": self.compile_errors}
            if self.unsupported_syntax:
                out["unsupported_syntax"] = True
            return out
        out = self.preview.as_json()
        out["version"] = self.version
        if self.baseline is not None:
            out["baseline"] = self.baseline.as_json()
        return out


class DispatchState:
    """The previews of the open documents (the server's `ls.dispatch`); their settings are
    `ls.options.dispatch`."""

    def __init__(self):
        self.counter: DispatchCounter | None = None
        self.results: dict[str, tuple[int | None, Answer]] = {}  # uri -> (version, its last count)
        self.running: dict[str, DispatchCounter] = {}
        self.lock = threading.Lock()
        self.lenses: dict[str, tuple[int | None, list[tuple[int, str]]]] = {}  # uri -> (version, lenses)
        self.timers: dict[str, threading.Timer] = {}
        # uri -> (version, done): a count in progress, shared by requests for the same version
        self.inflight: dict[str, tuple[int | None, threading.Event]] = {}
        # uri -> (version, what the last what-if measured), for the findings of that version only
        self.measured: dict[str, tuple[int | None, Measurement]] = {}

    def cancel(self, uri: str) -> None:
        """A new edit: the pending timer is dropped and the running compile killed at once."""
        t = self.timers.pop(uri, None)
        if t:
            t.cancel()
        running = self.running.pop(uri, None)
        if running is not None:
            running.cancel_all()

    def forget(self, uri: str) -> None:
        """A closed document: its previews go (reopened, the same version may hold another text)."""
        self.cancel(uri)
        with self.lock:
            for table in (self.results, self.lenses, self.measured):
                table.pop(uri, None)

    def counter_for(self, opts: DispatchOptions) -> DispatchCounter:
        """A counter of its own for one compile (own processes, cancelled per document), sharing
        the cache of the one counter made for the configured compiler."""
        if self.counter is None:
            self.counter = DispatchCounter(find_compiler(opts.compiler_path), timeout=opts.timeout)
        own = self.counter.sibling()
        own.timeout = opts.timeout
        return own


class OpenText(NamedTuple):
    version: int | None
    text: str
    path: str


def open_text(ls: MlirLspServer, uri: str) -> OpenText | None:
    """(version, text, file path) of an open document: the one place that reads documents."""
    snap = ls.snapshot(uri)
    return None if snap is None else OpenText(snap.version, snap.source, snap.path or uri)


def _flags(ls: MlirLspServer) -> list[str]:
    opts = ls.options.dispatch
    return profile_flags(opts.profile, dict(ls.settings.profiles)) + list(opts.extra_flags)


def compute(ls: MlirLspServer, uri: str | None, interactive: bool = True) -> dict:
    """The `mlirLsp/dispatchCount` answer (JSON) for the document as it is: counted now, or the
    count of the same version already running."""
    if refused := guards.refuse_path(ls, uri):
        return {"error": refused}
    got = open_text(ls, uri) if uri else None
    if uri is None or got is None:
        return {"error": f"document not open: {uri}"}
    answer = count_document(ls, uri, got, interactive)
    return {"error": "cancelled: the document changed"} if answer is None else answer.as_json()


def count_document(ls: MlirLspServer, uri: str, got: OpenText, interactive: bool) -> Answer | None:
    """The count of this version of the document (None: cancelled, the document changed)."""
    version = got.version
    state = ls.dispatch
    with state.lock:
        running = state.inflight.get(uri)
        if running is None or running[0] != version:
            state.inflight[uri] = mine = (version, threading.Event())
            running = None
    if running is not None:  # the same version is being counted (on open or save): share its answer
        running[1].wait()
        with state.lock:
            r = state.results.get(uri)
        return r[1] if r and r[0] == version else None
    try:
        return _count(ls, uri, got, interactive)
    finally:
        with state.lock:
            if state.inflight.get(uri) is mine:
                del state.inflight[uri]
        mine[1].set()


def _count(ls: MlirLspServer, uri: str, got: OpenText, interactive: bool) -> Answer | None:
    version, text, path = got
    state, opts = ls.dispatch, ls.options.dispatch
    token = f"mlir-lsp-dispatch-{uuid.uuid4().hex}"
    progress = Progress(ls, token, f"iree-compile: counting dispatches ({opts.profile})")
    own: DispatchCounter | None = None
    with state.lock:
        before = state.results.get(uri)
    had_diagnostics = bool(before and before[1].has_diagnostics)
    try:
        own = state.counter_for(opts)
        state.running[uri] = own
        flags = _flags(ls)
        progress.begin()
        pv = preview(own, path, text, opts.profile, flags, what_if=opts.what_if, attribution=opts.attribution)
    except (CompilerError, ValueError) as e:
        if str(e) == "cancelled":
            return None
        return _failed(ls, uri, version, e, own, had_diagnostics, interactive)
    finally:
        progress.end()
        if own is not None and state.running.get(uri) is own:
            state.running.pop(uri, None)
    answer = Answer(version, pv)
    if opts.baseline:
        answer.baseline = baseline_result(ls, path, text, pv)
    lenses = attribution_lenses(text, pv, answer.baseline)
    measured = Measurement.of(pv, opts.extra_flags)
    with state.lock:
        state.results[uri] = (version, answer)
        state.lenses[uri] = (version, lenses)
        if measured is not None:
            state.measured[uri] = (version, measured)
        else:
            had_diagnostics |= state.measured.pop(uri, None) is not None
    _refresh_lenses(ls)
    if pv.assert_sources or had_diagnostics or measured is not None:
        _publish(ls, uri)  # MLA004 shown, the measured notes, or earlier compile errors cleared
    return answer


def _failed(ls: MlirLspServer, uri: str, version: int | None, e: Exception, own: DispatchCounter | None,
            had_diagnostics: bool, interactive: bool) -> Answer:
    """A count that failed: its answer kept for this version, the compiler's errors published."""
    state = ls.dispatch
    errors = e.diagnostics if isinstance(e, CompilerError) else []
    answer = Answer(version, error=str(e), compile_errors=errors)
    syntax = other_release_syntax(errors)
    if syntax is not None and own is not None:  # not an error of the file: this compiler reads another release's syntax
        answer.unsupported_syntax = True
        answer.error = f"n/a ({OLDER_SYNTAX}): {other_release_message(own.compiler.version, syntax)}"
    with state.lock:
        state.results[uri] = (version, answer)
        state.lenses.pop(uri, None)
        had_diagnostics |= state.measured.pop(uri, None) is not None
    if interactive:
        kind = types.MessageType.Info if syntax is not None else types.MessageType.Error
        ls.in_loop(ls.window_show_message, types.ShowMessageParams(kind, f"mlir-lsp: dispatch count: {answer.error}"))
    _refresh_lenses(ls)
    if errors or had_diagnostics:
        _publish(ls, uri)
    return answer


def baseline_result(ls: MlirLspServer, path: str, text: str, pv: Preview) -> BaselineComparison:
    """The preview against `dispatch.baseline` (the file, its count and the difference, the new
    dispatches with their causes, the baseline's dispatches in the document's lines; or an
    `error`)."""
    opts = ls.options.dispatch
    folders = workspace_feature.roots(ls)
    file = opts.baseline or ""
    if not os.path.isabs(file):
        file = os.path.join(folders[0] if folders else os.path.dirname(os.path.abspath(path)), file)
    try:
        baseline = load_baseline(file)
    except BaselineError as e:
        return BaselineComparison(file, error=str(e))
    key = baseline_key(baseline, path, [*folders, os.path.dirname(file)])
    if key is None:
        return BaselineComparison(file, error=f"{os.path.basename(file)} has no count for this file")
    return compare_with_baseline(pv, text.split("\n"), baseline, key, file)


def measurement(state: DispatchState, uri: str, version: int | None) -> Measurement | None:
    """What the last what-if measured, when it compiled this version of the document."""
    with state.lock:
        m = state.measured.get(uri)
    return m[1] if m and m[0] == version else None


def measured_findings(ls: MlirLspServer, uri: str, version: int | None, findings: list[Finding],
                      line0: int = 0) -> list[Finding]:
    """`findings` (of a piece starting at `line0`) with the measured notes of this version, and
    MLA001 at information severity where nothing is saved when `measuredSeverity` is on."""
    m = measurement(ls.dispatch, uri, version)
    return findings if m is None else m.annotate(findings, line0, lower=ls.settings.measured_severity)


def _functions(text: str) -> list[tuple[int, int, str]]:
    """(first line, last line, symbol name) of each top-level op with a body (1-based lines)."""
    from ..syntax.parsed_text import parse

    parsed = parse(text)
    lines = parsed.lines
    funcs = []
    for _chunk, op in parsed.units():
        if op.regions or op.lazy_regions:
            name = symbol_after(text, op.name_start, min(op.end, op.name_start + 2000))
            if name:
                funcs.append((lines.line_of(op.start) + 1, lines.line_of(max(op.start, op.end - 1)) + 1, name))
    return funcs


def _inside(dispatches: list[Dispatch], first: int, last: int) -> list[Dispatch]:
    return [d for d in dispatches if d.location and first <= d.location.line <= last]


def attribution_lenses(text: str, pv: Preview, baseline: BaselineComparison | None = None) -> list[tuple[int, str]]:
    """(0-based line, title) of the lenses attribution gives: per source function, the dispatches
    whose root op lies in it (and how that differs from the baseline's dispatches); on each op
    whose dispatch exists only because of asserts, its name; on each op whose dispatch the
    baseline has not, its name and cause."""
    attr = pv.attribution
    if not attr:
        return []
    before = baseline.before if baseline is not None else None
    out = []
    for first, last, name in _functions(text):
        mine = _inside(attr.dispatches, first, last)
        if mine:
            hoisted = sum(1 for d in mine if d.function.startswith("util.initializer"))
            title = f"@{name}: {len(mine)} dispatch{'es' if len(mine) != 1 else ''}"
            if hoisted:
                title += f" ({hoisted} hoisted into initializers)"
            if before is not None:
                was = len(_inside(before, first, last))
                if was != len(mine):
                    title += f" ({len(mine) - was:+d} vs baseline)"
            out.append((first - 1, title))
    for d in (pv.what_if.only_because_of_asserts if pv.what_if else None) or []:
        if d.location:
            out.append((d.location.line - 1,
                        f"dispatch {d.name} exists only because of cf.assert: gone with the asserts removed"))
    for e in (baseline.new if baseline is not None else None) or []:
        if e.location:
            out.append((e.location.line - 1, f"new vs baseline: dispatch {e.name}: {causes_text(e)}"))
    return out


def _publish(ls: MlirLspServer, uri: str) -> None:
    """Diagnostics again from a worker thread (clients that pull get a refresh request)."""
    ls.in_loop(ls.publish, uri, True)


def _refresh_lenses(ls: MlirLspServer) -> None:
    caps = ls.client_capabilities
    ws = caps.workspace if caps else None
    if ws and ws.code_lens and ws.code_lens.refresh_support:
        ls.in_loop(ls.workspace_code_lens_refresh, None)


def schedule(ls: MlirLspServer, uri: str, reason: str) -> None:
    """After an edit (reason "change") or a save: cancel what is stale, start what is due."""
    state, opts = ls.dispatch, ls.options.dispatch
    state.cancel(uri)
    if not opts.enabled or opts.trigger == "manual":
        return
    if reason == "change" and opts.trigger != "idle":
        return
    doc = ls.document(uri)
    if doc is None or doc.size > opts.auto_max_mb * 1024 * 1024:
        return
    delay = opts.idle_ms / 1000 if reason == "change" else 0.0
    t = threading.Timer(delay, compute, args=(ls, uri, False))
    t.daemon = True
    state.timers[uri] = t
    t.start()


def count_diagnostics(ls: MlirLspServer, uri: str, version: int | None) -> list[types.Diagnostic]:
    """The diagnostics of the last dispatch count, for the version it compiled: the errors of a
    failed compile (source `iree-compile`), or MLA004 on the torch ops whose lowering put
    asserts into linalg regions."""
    with ls.dispatch.lock:
        r = ls.dispatch.results.get(uri)
    if not r or r[0] != version:
        return []
    answer = r[1]
    if answer.unsupported_syntax:
        return [syntax_diagnostic(answer)]
    out = compile_error_diagnostics(uri, answer.compile_errors)
    if not ls.settings.enabled("MLA004") or answer.preview is None:
        return out
    for src in answer.preview.assert_sources:
        line, col = src.line - 1, src.column - 1
        out.append(types.Diagnostic(
            range=types.Range(types.Position(line, col), types.Position(line, col + len(src.op))),
            message=mla004.message(src),
            severity=types.DiagnosticSeverity.Information, code="MLA004", source="mlir-lsp",
            code_description=types.CodeDescription(
                href=doc_url("MLA004", ls.settings.docs_base_url))))
    return out


torch_diagnostics = count_diagnostics  # the name server/app.py still calls


def syntax_diagnostic(answer: Answer) -> types.Diagnostic:
    """One note, at information severity, that the compiler cannot read the file's syntax (as the
    parser diagnostics say it), instead of the compiler's error."""
    e = other_release_syntax(answer.compile_errors) or {"line": 1, "column": 1}
    line, col = max((e["line"] or 1) - 1, 0), max((e["column"] or 1) - 1, 0)
    return types.Diagnostic(range=types.Range(types.Position(line, col), types.Position(line, col + 1)),
                            message=f"dispatch count {answer.error}; it is probably another IREE release's",
                            severity=types.DiagnosticSeverity.Information, source="iree-compile")


def compile_error_diagnostics(uri: str, errors: list[dict]) -> list[types.Diagnostic]:
    """The compiler's diagnostics at their lines (those at no line of this file go on line 1)."""
    sev = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
           "remark": types.DiagnosticSeverity.Information}
    out = []
    for e in errors[:100]:
        line, col = max((e["line"] or 1) - 1, 0), max((e["column"] or 1) - 1, 0)
        rng = types.Range(types.Position(line, col), types.Position(line, col + 1))
        related = [types.DiagnosticRelatedInformation(
            types.Location(uri, types.Range(types.Position(n["line"] - 1, max(n["column"] - 1, 0)),
                                            types.Position(n["line"] - 1, max(n["column"] - 1, 0) + 1))),
            n["message"]) for n in e.get("notes", []) if n["line"]]
        message = e["message"] + "".join(f"\nnote: {n['message']}" for n in e.get("notes", []) if not n["line"])
        out.append(types.Diagnostic(range=rng, message=message, severity=sev.get(e["severity"], types.DiagnosticSeverity.Error),
                                    source="iree-compile", related_information=related or None))
    return out


def hover_lines(state: DispatchState, uri: str, version: int | None, line: int) -> list[str]:
    """Markdown lines for a hover on the op at 0-based `line` (e.g. a cf.assert): the dispatches
    it ends up in, and those of them that exist only because of asserts (last preview, with
    attribution). For the server's hover: `parts.extend(dispatch_feature.hover_lines(...))`."""
    pv = _preview(state, uri, version)
    if pv is None or not pv.attribution:
        return []
    names = by_source_line(pv.attribution).get(line + 1, [])
    if not names:
        return []
    only = {d.name for d in (pv.what_if.only_because_of_asserts if pv.what_if else None) or []}
    out = [f"- ends up in dispatch{'es' if len(names) > 1 else ''} " + ", ".join(f"`{n}`" for n in names[:8])
           + (" ..." if len(names) > 8 else "")]
    extra = [n for n in names if n in only]
    if extra:
        out.append("- " + ", ".join(f"`{n}`" for n in extra) + " exist" + ("s" if len(extra) == 1 else "")
                   + " only because of asserts (gone with them removed)")
    return out


def _preview(state: DispatchState, uri: str, version: int | None) -> Preview | None:
    """The preview of the last count, when it compiled this version."""
    with state.lock:
        r = state.results.get(uri)
    return r[1].preview if r and r[0] == version else None


def saved_dispatches(state: DispatchState, uri: str, version: int | None) -> int | None:
    pv = _preview(state, uri, version)
    return pv.what_if.saved if pv is not None and pv.what_if else None


def lens_title(answer: Answer) -> str:
    if answer.unsupported_syntax:
        return f"mlir-lsp: dispatches: n/a ({OLDER_SYNTAX})"
    pv = answer.preview
    if pv is None:
        return f"mlir-lsp: dispatch count failed: {(answer.error or '')[:120]}"
    title = f"{pv.flow_dispatches} dispatches ({pv.profile})"
    w = pv.what_if
    if w:
        title += f", {w.flow_dispatches} with the asserts removed ({w.flow_dispatches - pv.flow_dispatches:+d})"
    b = answer.baseline
    if b and b.error is not None:
        title += f"; baseline: {b.error[:100]}"
    elif b:
        title += f"; {b.delta:+d} vs baseline" if b.delta else "; same as baseline"
    return title


def _request_uri(params: Any) -> str | None:
    """The document URI of a request's params (`{"uri": ...}`) or a command's arguments
    (`[uri]` or `[{"uri": ...}]`)."""
    if isinstance(params, (list, tuple)):
        params = params[0] if params else None
    if isinstance(params, str) or params is None:
        return params
    return params.uri if hasattr(params, "uri") else params.get("uri")


def _serving(handler):
    def serve(ls: MlirLspServer, params: Any):  # a command's arguments arrive as one list
        return handler(ls, _request_uri(params))

    return serve


def setup(server: MlirLspServer) -> None:
    @server.feature(DISPATCH_REQUEST)
    @server.thread()
    def count_request(ls: MlirLspServer, params: Any):
        # The client shows the result (a status bar): a failure is in the answer only, not also
        # in a message box. The command (code lens, palette) shows one.
        return compute(ls, _request_uri(params), interactive=False)

    for name, is_command, handler in ((DISPATCH_COMMAND, True, compute),
                                      (DISPATCH_IR_REQUEST, False, dispatch_ir),
                                      (DISPATCH_IR_COMMAND, True, dispatch_ir)):
        register = server.command if is_command else server.feature
        register(name)(server.thread()(_serving(handler)))

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls: MlirLspServer, params: types.CodeLensParams):
        uri = params.text_document.uri
        doc = ls.document(uri)  # its version only: no copy of the text per lens request
        if doc is None:
            return []
        version = doc.version
        top = types.Range(types.Position(0, 0), types.Position(0, 0))
        state = ls.dispatch
        with state.lock:
            cached = state.results.get(uri)
            extra = state.lenses.get(uri)
        if cached and cached[0] == version:
            title = lens_title(cached[1])
        elif cached:
            title = lens_title(cached[1]) + " (stale: edited since; click to recount)"
        else:
            title = f"mlir-lsp: count dispatches (iree-compile, {ls.options.dispatch.profile})"
        out = [types.CodeLens(range=top, command=types.Command(title=title, command=DISPATCH_COMMAND, arguments=[uri]))]
        if extra and extra[0] == version:
            for line, text in extra[1]:
                rng = types.Range(types.Position(line, 0), types.Position(line, 0))
                out.append(types.CodeLens(range=rng, command=types.Command(
                    title=text, command=DISPATCH_IR_COMMAND, arguments=[uri])))
        return out


def dispatch_ir(ls: MlirLspServer, uri: str | None) -> dict:
    """`{"text": the --compile-to=dispatch-creation output, "path": its file in the cache or null}`
    for the document as it is now (the preview's compile when cached; else compiled now). On
    failure `{"text": "", "path": null, "error": message}`."""
    if refused := guards.refuse_path(ls, uri):
        return {"text": "", "path": None, "error": refused}
    got = open_text(ls, uri) if uri else None
    if got is None:
        return {"text": "", "path": None, "error": f"document not open: {uri}"}
    opts = ls.options.dispatch
    try:
        counter = ls.dispatch.counter_for(opts)
        rep = counter.prepare_flags(_flags(ls))
        ir, path = counter.dispatch_ir(got.text, rep.flags, attribution=opts.attribution)
    except (CompilerError, ValueError) as e:
        return {"text": "", "path": None, "error": str(e)}
    return {"text": ir, "path": path}

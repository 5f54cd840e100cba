"""Dispatch-count previews in the editor: the `mlirLsp/dispatchCount` request, a command, a
code lens at the top of the document with the count, the what-if count and the delta (and, with
attribution, one per function and one on each op whose dispatch exists only because of asserts;
with a baseline (`dispatch.baseline`), how each function's count differs from it and one on
each op whose dispatch is new, with the cause),
`mlirLsp/dispatchIR` / `mlirLsp.showDispatchIR` (the dispatch-creation output, for a virtual
document), and the compiler's own errors as diagnostics (source `iree-compile`)."""

from __future__ import annotations

import os
import re
import threading
import uuid
from typing import NamedTuple

from lsprotocol import types

from ..dispatch.baselines import BaselineError, load_baseline
from ..dispatch.compiler import (
    CompilerError,
    find_compiler,
    other_release_message,
    other_release_syntax,
)
from ..dispatch.count import DispatchCounter, preview
from ..dispatch.diff import Side, against_baseline, baseline_key, cause_text
from ..dispatch.flags import profile_flags
from ..dispatch.measured_cost import Measurement
from ..rules import doc_url
from ..rules import mla004_torch_op_lowers_to_assert as mla004
from . import guards, workspace_feature
from .options import DispatchOptions
from .progress import Progress

DISPATCH_REQUEST = "mlirLsp/dispatchCount"
DISPATCH_COMMAND = "mlirLsp.dispatchCount"
DISPATCH_IR_REQUEST = "mlirLsp/dispatchIR"
DISPATCH_IR_COMMAND = "mlirLsp.showDispatchIR"
OLDER_SYNTAX = "older IREE syntax"  # what the status bar and lens say when the compiler cannot read a file
_SYMBOL = re.compile(r'@([\w$.\-]+|"[^"]*")')


class DispatchState:
    """The previews of the open documents (the server's `ls.dispatch`); their settings are
    `ls.options.dispatch`."""

    def __init__(self):
        self.counter: DispatchCounter | None = None
        self.results: dict[str, tuple[int | None, dict]] = {}  # uri -> (version, preview json)
        self.running: dict[str, DispatchCounter] = {}
        self.lock = threading.Lock()
        self.lenses: dict[str, tuple[int | None, list[tuple[int, str]]]] = {}  # uri -> (version, lenses)
        self.timers: dict[str, threading.Timer] = {}
        # uri -> (version, done): a count in progress, shared by requests for the same version
        self.inflight: dict[str, tuple[object, threading.Event]] = {}
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


def open_text(ls, uri: str) -> OpenText | None:
    """(version, text, file path) of an open document: the one place that reads documents."""
    snap = ls.snapshot(uri)
    return None if snap is None else OpenText(snap.version, snap.source, snap.path or uri)


def _flags(ls) -> list[str]:
    opts = ls.options.dispatch
    return profile_flags(opts.profile, dict(ls.settings.profiles)) + list(opts.extra_flags)


def compute(ls, uri: str, interactive: bool = True) -> dict:
    if refused := guards.refuse_path(ls, uri):
        return {"error": refused}
    got = open_text(ls, uri) if uri else None
    if got is None:
        return {"error": f"document not open: {uri}"}
    version, text, path = got
    state = ls.dispatch
    with state.lock:
        running = state.inflight.get(uri)
        if running is None or running[0] != version:
            state.inflight[uri] = mine = (version, threading.Event())
        else:
            mine = None
    if mine is None:  # the same version is being counted (on open or save): share its answer
        running[1].wait()
        with state.lock:
            r = state.results.get(uri)
        return r[1] if r and r[0] == version else {"error": "cancelled: the document changed"}
    try:
        return _compute(ls, uri, version, text, path, interactive)
    finally:
        with state.lock:
            if state.inflight.get(uri) is mine:
                del state.inflight[uri]
        mine[1].set()


def _compute(ls, uri: str, version, text: str, path, interactive: bool) -> dict:
    state, opts = ls.dispatch, ls.options.dispatch
    token = f"mlir-lsp-dispatch-{uuid.uuid4().hex}"
    progress = Progress(ls, token, f"iree-compile: counting dispatches ({opts.profile})")
    own: DispatchCounter | None = None
    with state.lock:
        before = state.results.get(uri)
    had_diagnostics = bool(before and (before[1].get("compile_errors") or before[1].get("assert_sources")))
    try:
        own = state.counter_for(opts)
        state.running[uri] = own
        flags = _flags(ls)
        progress.begin()
        pv = preview(own, path, text, opts.profile, flags, what_if=opts.what_if, attribution=opts.attribution)
    except (CompilerError, ValueError) as e:
        if str(e) == "cancelled":
            return {"error": "cancelled: the document changed"}
        result = {"error": str(e), "version": version, "compile_errors": getattr(e, "diagnostics", [])}
        syntax = other_release_syntax(result["compile_errors"])
        if syntax is not None:  # not an error of the file: this compiler reads another release's syntax
            result["unsupported_syntax"] = True
            result["error"] = f"n/a ({OLDER_SYNTAX}): {other_release_message(own.compiler.version, syntax)}"
        with state.lock:
            state.results[uri] = (version, result)
            state.lenses.pop(uri, None)
            had_diagnostics |= state.measured.pop(uri, None) is not None
        if interactive:
            kind = types.MessageType.Info if syntax is not None else types.MessageType.Error
            ls.in_loop(ls.window_show_message, types.ShowMessageParams(kind, f"mlir-lsp: dispatch count: {result['error']}"))
        _refresh_lenses(ls)
        if result["compile_errors"] or had_diagnostics:
            _publish(ls, uri)
        return result
    finally:
        progress.end()
        if own is not None and state.running.get(uri) is own:
            state.running.pop(uri, None)
    result = pv.as_json()
    result["version"] = version
    before = None
    if opts.baseline:
        result["baseline"], before = baseline_result(ls, path, text, result)
    lenses = attribution_lenses(text, result, before)
    measured = Measurement.of(result, opts.extra_flags)
    with state.lock:
        state.results[uri] = (version, result)
        state.lenses[uri] = (version, lenses)
        if measured is not None:
            state.measured[uri] = (version, measured)
        else:
            had_diagnostics |= state.measured.pop(uri, None) is not None
    _refresh_lenses(ls)
    if result.get("assert_sources") or had_diagnostics or measured is not None:
        _publish(ls, uri)  # MLA004 shown, the measured notes, or earlier compile errors cleared
    return result


def baseline_result(ls, path: str, text: str, result: dict) -> tuple[dict, list[dict] | None]:
    """(`result["baseline"]`: the file, its count and the difference, the new dispatches with
    their causes; or an `error`), and the baseline's dispatches in the document's lines."""
    opts = ls.options.dispatch
    folders = workspace_feature.roots(ls)
    file = opts.baseline
    if not os.path.isabs(file):
        file = os.path.join(folders[0] if folders else os.path.dirname(os.path.abspath(path)), file)
    try:
        baseline = load_baseline(file)
    except BaselineError as e:
        return {"file": file, "error": str(e)}, None
    key = baseline_key(baseline, path, [*folders, os.path.dirname(file)])
    if key is None:
        return {"file": file, "error": f"{os.path.basename(file)} has no count for this file"}, None
    attr = result.get("attribution") or {}
    cur = Side("current", path, result["flow_dispatches"], result["per_function"], attr.get("dispatches") or [],
               text.split("\n"), result["compiler_version"], result["profile"])
    got = against_baseline(cur, baseline, key, "the baseline", explain=bool(attr))  # no attribution: counts only
    if got is None:
        return {"file": file, "error": f"{os.path.basename(file)} has no count for profile {result['profile']!r}"}, None
    d, before = got
    return {"file": file, "key": key, "flow_dispatches": d["against"]["flow_dispatches"], "delta": d["delta"],
            "new": d["new"], "gone": d["gone"]}, before


def measurement(state: DispatchState, uri: str, version) -> Measurement | None:
    """What the last what-if measured, when it compiled this version of the document."""
    with state.lock:
        m = state.measured.get(uri)
    return m[1] if m and m[0] == version else None


def measured_findings(ls, uri: str, version, findings: list, line0: int = 0) -> list:
    """`findings` (of a piece starting at `line0`) with the measured notes of this version, and
    MLA001 at information severity where nothing is saved when `measuredSeverity` is on."""
    m = measurement(ls.dispatch, uri, version)
    return findings if m is None else m.annotate(findings, line0, lower=ls.settings.measured_severity)


def attribution_lenses(text: str, result: dict, before: list[dict] | None = None) -> list[tuple[int, str]]:
    """(0-based line, title) of the lenses attribution gives: per source function, the dispatches
    whose root op lies in it (and how that differs from the baseline's `before`); on each op
    whose dispatch exists only because of asserts, its name; on each op whose dispatch the
    baseline has not, its name and cause."""
    attr = result.get("attribution")
    if not attr:
        return []
    from ..syntax.parsed_text import parse

    parsed = parse(text)
    lines = parsed.lines
    funcs = []
    for _chunk, op in parsed.units():
        if op.regions or op.lazy_regions:
            m = _SYMBOL.search(text, op.name_start, min(op.end, op.name_start + 2000))
            if m:
                funcs.append((lines.line_of(op.start) + 1, lines.line_of(max(op.start, op.end - 1)) + 1, m.group(1)))
    out = []
    for first, last, name in funcs:
        mine = [d for d in attr["dispatches"] if d["location"] and first <= d["location"]["line"] <= last]
        if mine:
            hoisted = sum(1 for d in mine if d["function"].startswith("util.initializer"))
            title = f"@{name}: {len(mine)} dispatch{'es' if len(mine) != 1 else ''}"
            if hoisted:
                title += f" ({hoisted} hoisted into initializers)"
            if before is not None:
                was = sum(1 for d in before if d["location"] and first <= d["location"]["line"] <= last)
                if was != len(mine):
                    title += f" ({len(mine) - was:+d} vs baseline)"
            out.append((first - 1, title))
    for d in (result.get("what_if") or {}).get("only_because_of_asserts") or []:
        if d["location"]:
            out.append((d["location"]["line"] - 1,
                        f"dispatch {d['name']} exists only because of cf.assert: gone with the asserts removed"))
    for e in (result.get("baseline") or {}).get("new") or []:
        if e["location"]:
            why = "; ".join(cause_text(c) for c in e["causes"]) or "no cause visible"
            out.append((e["location"]["line"] - 1, f"new vs baseline: dispatch {e['name']}: {why}"))
    return out


def _publish(ls, uri: str) -> None:
    """Diagnostics again from a worker thread (clients that pull get a refresh request)."""
    ls.in_loop(ls.publish, uri, True)


def _refresh_lenses(ls) -> None:
    caps = ls.client_capabilities
    ws = caps.workspace if caps else None
    if ws and ws.code_lens and ws.code_lens.refresh_support:
        ls.in_loop(ls.workspace_code_lens_refresh, None)


def schedule(ls, uri: str, reason: str) -> None:
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


def torch_diagnostics(ls, uri: str, version) -> list[types.Diagnostic]:
    """MLA004 on the torch ops whose lowering put asserts into linalg regions, and the errors of
    a failed compile (source `iree-compile`), for the version the last preview compiled."""
    with ls.dispatch.lock:
        r = ls.dispatch.results.get(uri)
    if not r or r[0] != version:
        return []
    if r[1].get("unsupported_syntax"):
        return [syntax_diagnostic(r[1])]
    out = compile_error_diagnostics(uri, r[1].get("compile_errors") or [])
    if not ls.settings.enabled("MLA004"):
        return out
    for src in r[1].get("assert_sources", []):
        line, col = src["line"] - 1, src["column"] - 1
        out.append(types.Diagnostic(
            range=types.Range(types.Position(line, col), types.Position(line, col + len(src["op"]))),
            message=mla004.message(src),
            severity=types.DiagnosticSeverity.Information, code="MLA004", source="mlir-lsp",
            code_description=types.CodeDescription(
                href=doc_url("MLA004", ls.settings.docs_base_url))))
    return out


def syntax_diagnostic(result: dict) -> types.Diagnostic:
    """One note, at information severity, that the compiler cannot read the file's syntax (as the
    parser diagnostics say it), instead of the compiler's error."""
    e = other_release_syntax(result["compile_errors"]) or {"line": 1, "column": 1}
    line, col = max((e["line"] or 1) - 1, 0), max((e["column"] or 1) - 1, 0)
    return types.Diagnostic(range=types.Range(types.Position(line, col), types.Position(line, col + 1)),
                            message=f"dispatch count {result['error']}; it is probably another IREE release's",
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


def hover_lines(state: DispatchState, uri: str, version, line: int) -> list[str]:
    """Markdown lines for a hover on the op at 0-based `line` (e.g. a cf.assert): the dispatches
    it ends up in, and those of them that exist only because of asserts (last preview, with
    attribution). For the server's hover: `parts.extend(dispatch_feature.hover_lines(...))`."""
    with state.lock:
        r = state.results.get(uri)
    if not r or r[0] != version or not r[1].get("attribution"):
        return []
    from ..dispatch.attribution import by_source_line

    names = by_source_line(r[1]["attribution"]).get(line + 1, [])
    if not names:
        return []
    only = {d["name"] for d in (r[1].get("what_if") or {}).get("only_because_of_asserts") or []}
    out = [f"- ends up in dispatch{'es' if len(names) > 1 else ''} " + ", ".join(f"`{n}`" for n in names[:8])
           + (" ..." if len(names) > 8 else "")]
    extra = [n for n in names if n in only]
    if extra:
        out.append("- " + ", ".join(f"`{n}`" for n in extra) + " exist" + ("s" if len(extra) == 1 else "")
                   + " only because of asserts (gone with them removed)")
    return out


def saved_dispatches(state: DispatchState, uri: str, version) -> int | None:
    with state.lock:
        r = state.results.get(uri)
    if r and r[0] == version and r[1].get("what_if"):
        return r[1]["what_if"]["saved"]
    return None


def lens_title(result: dict) -> str:
    if result.get("unsupported_syntax"):
        return f"mlir-lsp: dispatches: n/a ({OLDER_SYNTAX})"
    if "error" in result:
        return f"mlir-lsp: dispatch count failed: {result['error'][:120]}"
    title = f"{result['flow_dispatches']} dispatches ({result['profile']})"
    w = result.get("what_if")
    if w:
        title += f", {w['flow_dispatches']} with the asserts removed ({w['flow_dispatches'] - result['flow_dispatches']:+d})"
    b = result.get("baseline")
    if b and "error" in b:
        title += f"; baseline: {b['error'][:100]}"
    elif b:
        title += f"; {b['delta']:+d} vs baseline" if b["delta"] else "; same as baseline"
    return title


def _request_uri(params) -> str | None:
    """The document URI of a request's params (`{"uri": ...}`) or a command's arguments
    (`[uri]` or `[{"uri": ...}]`)."""
    if isinstance(params, (list, tuple)):
        params = params[0] if params else None
    if isinstance(params, str) or params is None:
        return params
    return params.uri if hasattr(params, "uri") else params.get("uri")


def _serving(handler):
    def serve(ls, params):  # a command's arguments arrive as one list
        return handler(ls, _request_uri(params))

    return serve


def setup(server) -> None:
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


def dispatch_ir(ls, uri: str | None) -> dict:
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

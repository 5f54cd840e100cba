"""Dispatch-count previews in the editor: the `mlirLsp/dispatchCount` request, a command, and
a code lens at the top of the document with the count, the what-if count and the delta."""

from __future__ import annotations

import threading
import uuid

from lsprotocol import types

from ..dispatch.compiler import CompilerError, find_compiler
from ..dispatch.count import DispatchCounter, preview
from ..dispatch.flags import profile_flags, split_flags
from . import guards

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
        self.enabled = True
        self.trigger = "save"  # "save", "idle" (after idle_ms of no typing) or "manual"
        self.idle_ms = 1500
        self.timers: dict[str, threading.Timer] = {}

    def configure(self, opts: dict) -> list[str]:
        """Apply the `dispatch` settings; returns messages about bad values (defaults kept)."""
        problems = []
        d = opts.get("dispatch", {}) if isinstance(opts, dict) else {}
        if not isinstance(d, dict):
            return ["dispatch settings must be an object"]
        if "enabled" in d:
            self.enabled = bool(d["enabled"])
        if d.get("trigger") in ("save", "idle", "manual"):
            self.trigger = d["trigger"]
        elif "trigger" in d:
            problems.append(f"dispatch.trigger must be save, idle or manual, not {d['trigger']!r}")
        for key, attr, typ in (("idleMs", "idle_ms", int), ("timeout", "timeout", float)):
            if key in d:
                try:
                    setattr(self, attr, typ(d[key]))
                except (TypeError, ValueError):
                    problems.append(f"dispatch.{key} must be a number")
        if isinstance(d.get("profile"), str):
            self.profile = d["profile"]
        if "flags" in d:
            try:
                self.extra_flags = split_flags(d["flags"])
            except ValueError as e:
                problems.append(f"dispatch.flags: {e}")
        if d.get("whatIf") in ("strip", "assume"):
            self.what_if = d["whatIf"]
        if "compilerPath" in d and d["compilerPath"] != self.compiler_path:
            # Only a compiler binary is ever run, as an argument list; never a shell.
            self.compiler_path = str(d["compilerPath"]) if d["compilerPath"] else None
            self.counter = None
        return problems

    def cancel(self, uri: str) -> None:
        """A new edit: the pending timer is dropped and the running compile killed at once."""
        t = self.timers.pop(uri, None)
        if t:
            t.cancel()
        running = self.running.pop(uri, None)
        if running is not None:
            running.cancel_all()

    def get_counter(self) -> DispatchCounter:
        if self.counter is None:
            self.counter = DispatchCounter(find_compiler(self.compiler_path), timeout=self.timeout)
        return self.counter


def compute(ls, state: DispatchState, uri: str, interactive: bool = True) -> dict:
    if refused := guards.refuse_path(ls, uri):
        return {"error": refused}
    doc = ls.snapshot(uri)
    if doc is None:
        return {"error": f"document not open: {uri}"}
    version, text = doc.version, doc.source
    token = f"mlir-lsp-dispatch-{uuid.uuid4().hex}"
    progress = _Progress(ls, token, f"iree-compile: counting dispatches ({state.profile})")
    own: DispatchCounter | None = None
    try:
        own = state.get_counter().sibling()  # shared cache, own processes (cancelled per document)
        own.timeout = state.timeout
        state.running[uri] = own
        flags = profile_flags(state.profile, dict(ls.settings.profiles)) + state.extra_flags
        progress.begin()
        pv = preview(own, doc.path, text, state.profile, flags, what_if=state.what_if)
    except (CompilerError, ValueError) as e:
        if str(e) == "cancelled":
            return {"error": "cancelled: the document changed"}
        result = {"error": str(e)}
        with state.lock:
            state.results[uri] = (version, result)
        if interactive:
            _in_loop(ls, ls.window_show_message,
                     types.ShowMessageParams(types.MessageType.Error, f"mlir-lsp: dispatch count: {e}"))
        _refresh_lenses(ls)
        return result
    finally:
        progress.end()
        if own is not None and state.running.get(uri) is own:
            state.running.pop(uri, None)
    result = pv.as_json()
    result["version"] = version
    with state.lock:
        state.results[uri] = (version, result)
    _refresh_lenses(ls)
    if result.get("assert_sources"):
        _in_loop(ls, ls.publish, uri)
    return result


def _in_loop(ls, fn, *args) -> None:
    loop = getattr(ls, "event_loop", None)
    if loop is not None:
        loop.call_soon_threadsafe(fn, *args)
    else:
        fn(*args)


def _refresh_lenses(ls) -> None:
    caps = ls.client_capabilities
    ws = caps.workspace if caps else None
    if ws and ws.code_lens and ws.code_lens.refresh_support:
        _in_loop(ls, ls.workspace_code_lens_refresh, None)


class _Progress:
    """$/progress around a compile; gives up quietly if the client refuses."""

    def __init__(self, ls, token: str, title: str):
        self.ls, self.token, self.title, self.started = ls, token, title, False

    def begin(self):
        caps = self.ls.client_capabilities
        if not (caps and caps.window and caps.window.work_done_progress):
            return
        try:
            self.ls.work_done_progress.create(self.token).result(timeout=5)
            self.ls.work_done_progress.begin(self.token, types.WorkDoneProgressBegin(title=self.title, cancellable=False))
            self.started = True
        except Exception:  # noqa: BLE001 - a client that refuses progress
            self.started = False

    def end(self):
        if self.started:
            try:
                self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message="done"))
            except Exception:  # noqa: BLE001
                pass


def schedule(ls, state: DispatchState, uri: str, reason: str) -> None:
    """After an edit (reason "change") or a save: cancel what is stale, start what is due."""
    state.cancel(uri)
    if not state.enabled or state.trigger == "manual":
        return
    if reason == "change" and state.trigger != "idle":
        return
    delay = state.idle_ms / 1000 if reason == "change" else 0.0
    t = threading.Timer(delay, compute, args=(ls, state, uri, False))
    t.daemon = True
    state.timers[uri] = t
    t.start()


def torch_diagnostics(ls, state: DispatchState, uri: str, version) -> list[types.Diagnostic]:
    """MLA004 on the torch ops whose lowering put asserts into linalg regions (last preview)."""
    with state.lock:
        r = state.results.get(uri)
    if not r or r[0] != version or not ls.settings.enabled("MLA004"):
        return []
    out = []
    for src in r[1].get("assert_sources", []):
        line, col = src["line"] - 1, src["column"] - 1
        out.append(types.Diagnostic(
            range=types.Range(types.Position(line, col), types.Position(line, col + len(src["op"]))),
            message=(f"`{src['op']}` lowers to {src['asserts']} cf.assert in linalg regions, which block CSE and "
                     f"fusion and can cost dispatches: " + "; ".join(f'"{m}"' for m in src["messages"])),
            severity=types.DiagnosticSeverity.Information, code="MLA004", source="mlir-lsp",
            code_description=types.CodeDescription(
                href="https://github.com/mlir-lsp/mlir-lsp/blob/main/docs/rules/MLA004.md")))
    return out


def saved_dispatches(state: DispatchState, uri: str, version) -> int | None:
    with state.lock:
        r = state.results.get(uri)
    if r and r[0] == version and r[1].get("what_if"):
        return r[1]["what_if"]["saved"]
    return None


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
        doc = ls.document(uri)
        if doc is None:
            return []
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

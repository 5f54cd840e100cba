"""Parser and verifier diagnostics from IREE's real parser (iree.compiler.ir, source `iree-opt`),
computed in the background after a pause in typing, with IREE's dialects registered.

When the parser rejects a dialect or type it does not know (old or new IREE syntax such as
`!flow.dispatch.tensor`), that is said once, not on every line.
"""

from __future__ import annotations

import re
import threading

from lsprotocol import types

DEBOUNCE_SECONDS = 0.5
MAX_CHARS = 64 * 1024 * 1024
LOC = re.compile(r'loc\("[^"]*":(\d+):(\d+)\)')
UNKNOWN = re.compile(r"unknown .* type|unregistered dialect|Dialect `[^']*' not found|unknown attribute|"
                     r"custom op '[^']*' is unknown|does not have a registered|unknown .* attribute", re.I)


def real_diagnostics(text: str) -> list[types.Diagnostic]:
    from iree.compiler import ir

    ctx = ir.Context()
    try:
        ir.Module.parse(text, ctx)
        return []
    except ir.MLIRError as e:
        infos = list(getattr(e, "error_diagnostics", []) or [])
        out = []
        for d in infos:
            m = LOC.search(str(d.location))
            line, col = (int(m.group(1)) - 1, int(m.group(2)) - 1) if m else (0, 0)
            msg = d.message
            if UNKNOWN.search(msg):
                msg = (f"IREE's parser rejects this file: {msg}. It is probably another IREE release's syntax; "
                       "parser and verifier checks are skipped for it (mlir-lsp's own rules still run)")
                sev = types.DiagnosticSeverity.Information
            else:
                sev = types.DiagnosticSeverity.Error
            out.append(types.Diagnostic(
                range=types.Range(types.Position(line, col), types.Position(line, col + 1)),
                message=msg, severity=sev, source="iree-opt"))
        if not out:
            first = str(e).strip().splitlines()
            out.append(types.Diagnostic(types.Range(types.Position(0, 0), types.Position(0, 0)),
                                        first[-1] if first else "parse error", types.DiagnosticSeverity.Error,
                                        source="iree-opt"))
        return out[:1] if any(d.severity == types.DiagnosticSeverity.Information for d in out) else out
    except Exception as e:  # noqa: BLE001 - any binding failure: say it, keep serving
        return [types.Diagnostic(types.Range(types.Position(0, 0), types.Position(0, 0)),
                                 f"IREE parser unavailable: {type(e).__name__}", types.DiagnosticSeverity.Hint,
                                 source="iree-opt")]


class ParserDiagnostics:
    def __init__(self):
        self.timers: dict[str, threading.Timer] = {}
        self.results: dict[str, tuple[int | None, list[types.Diagnostic]]] = {}
        self.lock = threading.Lock()
        self.enabled = True

    def schedule(self, ls, uri: str) -> None:
        if not self.enabled:
            return
        with self.lock:
            old = self.timers.pop(uri, None)
            if old:
                old.cancel()
            t = threading.Timer(DEBOUNCE_SECONDS, self._run, args=(ls, uri))
            t.daemon = True
            self.timers[uri] = t
            t.start()

    def _run(self, ls, uri: str) -> None:
        doc = ls.workspace.text_documents.get(uri)
        if doc is None:
            return
        version, text = doc.version, doc.source
        if len(text) > MAX_CHARS:
            return
        diags = real_diagnostics(text)
        current = ls.workspace.text_documents.get(uri)
        if current is None or current.version != version:
            return  # edited meanwhile: a newer run is scheduled
        with self.lock:
            self.results[uri] = (version, diags)
        ls.publish_threadsafe(uri)

    def for_version(self, uri: str, version: int | None) -> list[types.Diagnostic]:
        with self.lock:
            r = self.results.get(uri)
        return r[1] if r and r[0] == version else []

    def forget(self, uri: str) -> None:
        with self.lock:
            t = self.timers.pop(uri, None)
            if t:
                t.cancel()
            self.results.pop(uri, None)

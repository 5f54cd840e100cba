"""Parser and verifier diagnostics from IREE's real parser (iree.compiler.ir, source `iree-opt`),
computed in the background after a pause in typing, with IREE's dialects registered.

When the parser rejects a dialect or type it does not know (old or new IREE syntax such as
`!flow.dispatch.tensor`), that is said once, not on every line.
"""

from __future__ import annotations

import re
import subprocess
import threading
from typing import TYPE_CHECKING

from lsprotocol import types

from ..processes import death_signal, signal_name
from .debouncer import Debouncer
from .protocol import Server

if TYPE_CHECKING:
    from .open_documents import Stamp

DEBOUNCE_SECONDS = 0.5
# The parse runs through `iree.compiler.ir` (the parser and verifier of iree-base-compiler), not iree-opt.
PARSER_SOURCE = "iree"
MAX_CHARS = 64 * 1024 * 1024
# The parse always runs in a child process, killed when a newer edit arrives: the bindings'
# parse holds the GIL (a 50 MB parse would freeze the server for seconds), and some of MLIR's
# parse error paths corrupt the heap of the process they run in (docs/reliability.md, "The native
# abort"): a text being typed fails to parse all the time, and must not take the server with it.
WORKER_TIMEOUT = 300
LOC = re.compile(r'loc\("[^"]*":(\d+):(\d+)\)')


def real_diagnostics(text: str) -> list[types.Diagnostic]:
    from iree.compiler import ir

    from ..dispatch.compiler import OTHER_RELEASE_SYNTAX  # the child's imports, not the server's (issue 37)
    from ..fixes.verify import parse_context

    try:
        ir.Module.parse(text, parse_context())
        return []
    except ir.MLIRError as e:
        infos = list(getattr(e, "error_diagnostics", []) or [])
        out = []
        for d in infos:
            m = LOC.search(str(d.location))
            line, col = (int(m.group(1)) - 1, int(m.group(2)) - 1) if m else (0, 0)
            msg = d.message
            if OTHER_RELEASE_SYNTAX.search(msg):
                msg = (f"IREE's parser rejects this file: {msg}. It is probably another IREE release's syntax; "
                       "parser and verifier checks are skipped for it (mlir-lsp's own rules still run)")
                sev = types.DiagnosticSeverity.Information
            else:
                sev = types.DiagnosticSeverity.Error
            out.append(types.Diagnostic(
                range=types.Range(types.Position(line, col), types.Position(line, col + 1)),
                message=msg, severity=sev, source=PARSER_SOURCE))
        if not out:
            first = str(e).strip().splitlines()
            out.append(types.Diagnostic(types.Range(types.Position(0, 0), types.Position(0, 0)),
                                        first[-1] if first else "parse error", types.DiagnosticSeverity.Error,
                                        source=PARSER_SOURCE))
        return out[:1] if any(d.severity == types.DiagnosticSeverity.Information for d in out) else out
    except Exception as e:  # noqa: BLE001 - any binding failure: say it, keep serving
        return [types.Diagnostic(types.Range(types.Position(0, 0), types.Position(0, 0)),
                                 f"IREE parser unavailable: {type(e).__name__}", types.DiagnosticSeverity.Hint,
                                 source=PARSER_SOURCE)]


class ParserDiagnostics:
    def __init__(self):
        self.pending = Debouncer("mlir-lsp parse")  # the parses due after a pause in typing
        self.results: dict[str, tuple[Stamp, list[types.Diagnostic]]] = {}  # uri -> (stamp, diagnostics)
        self.lock = threading.Lock()
        self.enabled = True
        self.children: dict[str, subprocess.Popen[bytes]] = {}  # uri -> running child parse
        # uri -> the serial of its latest `schedule`: a child of an earlier one is killed at once
        self.serials: dict[str, int] = {}
        self.serial = 0
        self.stopped = False

    def stop(self) -> None:
        """The server is ending: timers dropped, children killed, none started again. Takes no
        lock: the SIGTERM handler runs on the loop's thread, which may hold `self.lock`."""
        self.stopped = True
        self.pending.stop()
        for proc in list(self.children.values()):
            if proc.poll() is None:
                proc.kill()

    def schedule(self, ls: Server, uri: str) -> None:
        """A new version of `uri`: the last one's parse (pending or running) is dropped, killed at
        once, and a parse of this one is due after DEBOUNCE_SECONDS."""
        with self.lock:
            self._replace(uri)
            if not self.enabled or self.stopped:
                return
            self.pending.schedule(uri, DEBOUNCE_SECONDS, self._run, ls, uri, self.serials[uri])

    def _run(self, ls: Server, uri: str, serial: int) -> None:
        got = ls.snapshot_parts(uri)
        if got is None:
            return
        stamp, parts = got
        size = sum(e - s for _t, s, e in parts)
        if size > MAX_CHARS:
            return
        diags = self._in_child(uri, serial, parts)
        if diags is None:
            return  # killed by a newer edit (or output that does not read as JSON)
        current = ls.document(uri)
        if current is None or current.stamp != stamp:
            return  # edited (or closed and reopened) meanwhile: a newer run is scheduled
        with self.lock:
            self.results[uri] = (stamp, diags)
        ls.in_loop(ls.publish, uri, True)

    def _in_child(self, uri: str, serial: int, parts: list[tuple[str, int, int]]) -> list[types.Diagnostic] | None:
        """The real parser in a child, fed the document's pieces one by one (no joined copy of
        a 50 MB text in the server); killed by a newer edit or after WORKER_TIMEOUT. The child is
        registered as soon as it exists, unless a newer `schedule` (`serial`) came while it
        started: then it is killed there, so no child outlives the version it was started for."""
        import json
        import sys

        proc = subprocess.Popen([sys.executable, "-m", "mlir_lsp_asserts.server.parser_feature"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                start_new_session=True, preexec_fn=death_signal())  # this thread waits for it
        stdin, stdout = proc.stdin, proc.stdout
        assert stdin is not None and stdout is not None  # both PIPE
        with self.lock:
            if self.serials.get(uri) == serial:
                self._kill_child(uri)  # never overwritten alive (the `schedule` of `serial` killed it already)
                self.children[uri] = proc
            else:  # outrun: the next version came while this child started
                proc.kill()
        if self.stopped:  # after the registration: a `stop` racing with us cannot miss this child
            proc.kill()
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            proc.kill()

        timer = threading.Timer(WORKER_TIMEOUT, expire)
        timer.daemon = True
        timer.start()
        try:
            try:
                for text, s, e in parts:
                    stdin.write(text[s:e].encode("utf-8", "surrogatepass"))
                stdin.close()
            except OSError:
                pass  # it died while reading (killed by a newer edit, or crashed): its status says
            out = stdout.read()
            proc.wait()
        finally:
            timer.cancel()
            with self.lock:
                ours = self.children.get(uri) is proc  # else a newer edit killed it
                if ours:
                    del self.children[uri]
        if not ours:
            return None
        if proc.returncode != 0:
            if expired.is_set():
                why = f"did not finish in {WORKER_TIMEOUT} s"
            elif proc.returncode < 0:
                why = f"crashed ({signal_name(-proc.returncode)})"
            else:
                why = f"failed (exit {proc.returncode})"
            return [types.Diagnostic(types.Range(types.Position(0, 0), types.Position(0, 0)),
                                     f"IREE's parser {why} on this text; parser and verifier checks are "
                                     "skipped for this version (mlir-lsp's own rules still run)",
                                     types.DiagnosticSeverity.Information, source=PARSER_SOURCE)]
        try:
            return [types.Diagnostic(types.Range(types.Position(d["line"], d["col"]),
                                                 types.Position(d["line"], d["col"] + 1)),
                                     d["message"], types.DiagnosticSeverity(d["severity"]), source=PARSER_SOURCE)
                    for d in json.loads(out)]
        except (ValueError, KeyError, TypeError):
            return None

    def _replace(self, uri: str) -> None:
        """(with `lock` held) `uri`'s pending parse dropped, its child killed, a new serial."""
        self.pending.cancel(uri)
        self._kill_child(uri)
        self.serial += 1
        self.serials[uri] = self.serial

    def _kill_child(self, uri: str) -> None:
        proc = self.children.pop(uri, None)
        if proc is not None and proc.poll() is None:
            proc.kill()

    def shift(self, uri: str, changes: list[tuple[int, int, int]], stamp: Stamp) -> None:
        """Carry the last result over an edit to `version` instead of dropping it until the next
        parse: `changes` are (first line, last line, new line count) of each range replaced, `stamp`
        the document's after the edit.
        Diagnostics below a change move with their lines; those on lines it replaced stay, kept
        within its new lines (the next parse, half a second later, says what is true there)."""
        with self.lock:
            r = self.results.get(uri)
            if r is None or not r[1]:
                return
            diags = r[1]
            for first, last, new_lines in changes:
                delta = new_lines - (last - first)
                if delta == 0:
                    continue
                moved = []
                for d in diags:
                    line = d.range.start.line
                    if line > last:
                        line += delta
                    elif line > first + new_lines:
                        line = first + new_lines
                    if line != d.range.start.line:
                        d = types.Diagnostic(types.Range(types.Position(line, d.range.start.character),
                                                         types.Position(line, d.range.end.character)),
                                             d.message, d.severity, source=d.source)
                    moved.append(d)
                diags = moved
            self.results[uri] = (stamp, diags)

    def for_version(self, uri: str, stamp: Stamp) -> list[types.Diagnostic]:
        with self.lock:
            r = self.results.get(uri)
        return r[1] if r and r[0] == stamp else []

    def forget(self, uri: str) -> None:
        with self.lock:
            self._replace(uri)
            self.serials.pop(uri, None)
            self.results.pop(uri, None)


def _worker() -> int:
    """Child mode: MLIR text on stdin, the real parser's diagnostics as JSON on stdout."""
    import json
    import sys

    text = sys.stdin.buffer.read().decode("utf-8", "surrogatepass")
    json.dump([{"line": d.range.start.line, "col": d.range.start.character, "message": d.message,
                "severity": int(d.severity or types.DiagnosticSeverity.Error)}  # always set there
               for d in real_diagnostics(text)], sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(_worker())

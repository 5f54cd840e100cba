"""The language server starts with what it needs to answer `initialize` and publish a small
document's diagnostics, and no more (issue 37): the dispatch counter, the compiler, the op grammar
(lark), the fixes' verify worker and the workspace watcher are imported when something asks for
them. The real server (`mlir-lsp --stdio`) runs in a fresh interpreter under a probe, which
needs no change in the package: an audit hook notes which thread first imported each module and
an atexit hook writes that, with `sorted(sys.modules)`, to a file when the server exits.

The client sets `dispatch.trigger` to `manual`, so that no count is asked (by default a count
starts when a document opens, in its own thread, and imports the counter then).
The warm-up (server/lifecycle.py `_warm_up`: a check of a small gather once the client has been
quiet for 0.5 s, so that the first code action is quick) is allowed what it loads: it runs in its
own thread after the first diagnostics, and the probe tells its imports apart by the thread."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from conftest import REPRO

# Not needed to answer `initialize` and publish diagnostics of a document opened without a
# workspace folder (with one, the workspace watcher imports watchdog in its own thread).
NOT_AT_START = ("mlir_lsp_asserts.dispatch", "mlir_lsp_asserts.cli.dispatch", "mlir_lsp_asserts.fixes.verify",
                "mlir_lsp_asserts.graph_viewer", "mlir_lsp_asserts.bytecode", "lark", "watchdog", "iree",
                "concurrent.futures.process", "multiprocessing", "tomllib")
WARM_UP_THREAD = "mlir-lsp-warm-up"

_PROBE = textwrap.dedent("""
    import atexit, json, sys, threading
    out = sys.argv.pop(1)
    first_by = {}  # module -> the thread that imported it first
    def hook(event, args):
        if event == "import" and args[0] not in first_by:
            first_by[args[0]] = threading.current_thread().name
    sys.addaudithook(hook)
    def dump():
        with open(out, "w", encoding="utf-8") as f:
            json.dump({"modules": sorted(sys.modules), "first_by": first_by}, f)
    atexit.register(dump)
    from mlir_lsp_asserts.cli.main import main
    sys.exit(main())
""")


class Pipe:
    """A raw JSON-RPC client over the server's stdin and stdout."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.next_id = 0

    def send(self, method: str, params, request: bool = False) -> int | None:
        msg: dict = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            msg["id"] = self.next_id
        self.write(msg)
        return msg.get("id")

    def write(self, msg: dict) -> None:
        body = json.dumps(msg).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def read(self) -> dict:
        assert self.proc.stdout is not None
        length = None
        while (header := self.proc.stdout.readline()) not in (b"\r\n", b""):
            name, _, value = header.decode().partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        assert length is not None, "the server closed its output"
        return json.loads(self.proc.stdout.read(length))

    def until(self, wanted) -> dict:
        while not wanted(msg := self.read()):
            if "id" in msg and "method" in msg:  # a request of the server's (configuration ...): no answer wanted
                self.write({"jsonrpc": "2.0", "id": msg["id"], "result": None})
        return msg


def offenders(modules, banned: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == b or m.startswith(b + ".") for b in banned))


def serve(folder, dispatch: dict, count: bool = False) -> tuple[set[str], dict | None]:
    """The real server, run under the probe with the `dispatch` settings: initialize, open the
    example (its four MLA001 published), ask its count if `count`, shut down, exit. Returns the
    modules it had loaded at its exit (those of the warm-up's thread left out) and the count's
    answer."""
    doc = folder / "model.mlir"
    doc.write_text(REPRO.read_text(encoding="utf-8"), encoding="utf-8")
    report = folder / "modules.json"
    proc = subprocess.Popen([sys.executable, "-c", _PROBE, str(report), "--stdio"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=folder)
    counted = None
    try:
        c = Pipe(proc)
        init = c.send("initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": {},
                                     "initializationOptions": {"mlirLsp": {"dispatch": dispatch}}}, request=True)
        answer = c.until(lambda m: m.get("id") == init and "method" not in m)
        assert answer["result"]["serverInfo"]["name"] == "mlir-lsp"
        c.send("initialized", {})
        uri = doc.as_uri()
        c.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "mlir", "version": 1,
                                                         "text": doc.read_text(encoding="utf-8")}})
        published = c.until(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == uri and m["params"]["diagnostics"])
        assert [d["code"] for d in published["params"]["diagnostics"]] == ["MLA001"] * 4
        if count:
            asked = c.send("mlirLsp/dispatchCount", {"uri": uri}, request=True)
            counted = c.until(lambda m: m.get("id") == asked and "method" not in m)["result"]
        bye = c.send("shutdown", None, request=True)
        c.until(lambda m: m.get("id") == bye and "method" not in m)
        c.send("exit", None)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    assert "Traceback" not in stderr, stderr[-3000:]
    got = json.loads(report.read_text(encoding="utf-8"))
    modules = {m for m in got["modules"] if got["first_by"].get(m) != WARM_UP_THREAD}
    assert "mlir_lsp_asserts.server.app" in modules and "pygls" in modules  # the probe saw the server
    return modules, counted


def test_the_server_answers_and_publishes_without_the_counter_the_grammar_or_the_watcher(tmp_path):
    modules, _ = serve(tmp_path, {"trigger": "manual"})
    assert offenders(modules, NOT_AT_START) == []


def test_the_first_count_asked_for_imports_the_counter(tmp_path):
    """The count's imports, moved into the functions that count, still run when a count is asked."""
    modules, counted = serve(tmp_path, {"trigger": "manual"}, count=True)
    assert counted is not None and counted["flow_dispatches"] == 4, counted  # the example's, as the CLI counts
    assert {"mlir_lsp_asserts.dispatch.count", "mlir_lsp_asserts.dispatch.compiler"} <= modules

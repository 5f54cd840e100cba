"""Bad frames between real requests, over a real stdio pipe to the real server: shared by
tests/test_reliability_frames.py (a few hundred frames) and `make soak` (section `frames`).

Every frame is well delimited (its Content-Length is its body's length: a length that lies cannot
be recovered from by any reader); its body is anything: hand-written bad bodies (not UTF-8, not
JSON, not an object, not a message, params of the wrong type), random bytes, and real messages
with their bytes mutated. Between batches a real request is sent and must be answered; the
server must still be running at the end and leave on `exit` with status 0."""

from __future__ import annotations

import json
import os
import queue
import random
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from reliability_lsp import REPRO
from test_reliability_stdio import read_frames

# Requests that answer without a compile, sent as the real ones (ids "real-N").
REAL_METHODS = ("textDocument/documentSymbol", "textDocument/foldingRange", "textDocument/semanticTokens/full",
                "textDocument/diagnostic")
# A mutated message must not turn into one of these: they end or steer the session by design.
STEERING = {"exit", "shutdown", "$/cancelRequest", "initialize"}


def hand_written(uri: str) -> list[tuple[bytes, str | None]]:
    """(body, id of the request that must get a JSON-RPC error, or None)."""
    req = {"jsonrpc": "2.0", "method": "textDocument/documentSymbol"}
    out: list[tuple[bytes, str | None]] = [
        (b"\xff\xfe\x00garbage", None),
        (b'{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": "'
         + uri.replace("a.mlir", "latin1.mlir").encode() + b'", "languageId": "mlir", "version": 1, '
         b'"text": "// caf\xe9\\nfunc.func @f() { return }\\n"}}}', None),
        (b"{not json}", None), (b"[]", None), (b"null", None), (b'"text"', None), (b"42", None), (b"{}", None),
        (b"[" * 100_000 + b"]" * 100_000, None),  # deeper than json's recursion
        (b'{"jsonrpc": "2.0"}', None),
        (b'{"jsonrpc": "2.0", "id": "junk-r", "result": 1}', None),  # an answer to nothing
        (b'{"jsonrpc": "2.0", "id": "junk-e", "error": {"code": 1, "message": "x"}}', None),
        (b'{"jsonrpc": "2.0", "method": "textDocument/didChange", "params": 5}', None),
        (b'{"jsonrpc": "2.0", "method": "nothing/known", "params": {}}', None),
    ]
    for i, extra in enumerate(({"params": "nope"}, {"params": {"textDocument": 5}}, {"params": None},
                               {"method": 7}, {"jsonrpc": "1.0"}, {"jsonrpc": None}, {"method": "no/such"})):
        msg = dict(req, id=f"junk-{i}", **extra)
        if msg.get("jsonrpc") is None:
            del msg["jsonrpc"]
        out.append((json.dumps(msg).encode(), f"junk-{i}"))
    return out


def real_bodies(uri: str) -> list[bytes]:
    """Real messages of a session, the seeds of the mutated frames."""
    td = {"uri": uri}
    msgs = [
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": dict(
            td, uri=uri.replace("a.mlir", "m.mlir"), languageId="mlir", version=1, text="func.func @g() {\n}\n")}},
        {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": dict(td, version=9),
            "contentChanges": [{"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 3}},
                                "text": "// é"}]}},
        {"jsonrpc": "2.0", "id": 7, "method": "textDocument/hover", "params": {
            "textDocument": td, "position": {"line": 3, "character": 5}}},
        {"jsonrpc": "2.0", "id": 8, "method": "textDocument/codeAction", "params": {"textDocument": td,
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 9, "character": 0}},
            "context": {"diagnostics": []}}},
        {"jsonrpc": "2.0", "id": 9, "method": "textDocument/completion", "params": {
            "textDocument": td, "position": {"line": 2, "character": 1}}},
        {"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration", "params": {"settings": {"mlirLsp": {}}}},
    ]
    return [json.dumps(m, ensure_ascii=False).encode() for m in msgs]


def mutated(rnd: random.Random, body: bytes) -> bytes:
    data = bytearray(body)
    for _ in range(rnd.randint(1, 4)):
        i = rnd.randint(0, max(0, len(data) - 1))
        kind = rnd.randrange(5)
        if kind == 0 and data:
            data[i] ^= 1 << rnd.randint(0, 7)
        elif kind == 1:
            del data[i:i + rnd.randint(1, 8)]
        elif kind == 2:
            data[i:i] = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 4)))
        elif kind == 3:
            data = data[:i]
        else:
            data[i:i] = data[i:i + rnd.randint(1, 40)]
    return bytes(data)


def _steers(body: bytes) -> bool:
    """A mutated body that reads as a message steering the session, or with a real request's id."""
    try:
        msg = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(msg, dict) and (msg.get("method") in STEERING or str(msg.get("id", "")).startswith("real-"))


def junk(rnd: random.Random, uri: str) -> bytes:
    if rnd.random() < 0.3:
        return bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 300)))
    while _steers(body := mutated(rnd, rnd.choice(real_bodies(uri)))):
        pass
    return body


@dataclass
class Figures:
    bad_frames: int = 0
    real_requests: int = 0
    answered: int = 0
    junk_errors: dict = field(default_factory=dict)  # id -> error code, for the hand-written requests
    exit_status: int | None = None
    alive_before_exit: bool = False
    latin1_diagnostics: list = field(default_factory=list)  # of the hand-written Latin-1 didOpen


def session(work: Path, frames: int, seed: int, every: int = 15, timeout: float = 120) -> Figures:
    """`frames` bad frames (the hand-written ones first), a real request after every `every`."""
    env = dict(os.environ, XDG_CACHE_HOME=str(work / "cache"), TMPDIR=str(work))
    env.pop("CI", None)
    rnd = random.Random(seed)
    uri = (work / "a.mlir").as_uri()
    with open(work / "server.log", "wb") as log:
        server = subprocess.Popen([sys.executable, "-m", "mlir_lsp_asserts", "--stdio"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=log, env=env)
    assert server.stdin is not None and server.stdout is not None
    got: queue.Queue = queue.Queue()
    threading.Thread(target=read_frames, args=(server.stdout, got), daemon=True).start()
    fig = Figures()
    seen: dict = {}

    def send(body: bytes) -> None:
        server.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)  # type: ignore[union-attr]
        server.stdin.flush()  # type: ignore[union-attr]

    def wait_for(key) -> dict:
        while key not in seen:
            kind, item = got.get(timeout=timeout)
            assert kind == "message", f"the server's output ended or tore: {kind} {item}"
            msg = item[1]
            if "method" in msg and "id" in msg:  # a request of the server's: answered with nothing
                send(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": None}).encode())
            elif "id" in msg:
                seen[msg["id"]] = msg
            elif msg.get("method") == "textDocument/publishDiagnostics":
                seen[("publish", msg["params"]["uri"])] = msg["params"]
        return seen[key]

    try:
        send(json.dumps({"jsonrpc": "2.0", "id": "real-init", "method": "initialize", "params": {
            "processId": None, "rootUri": None, "capabilities": {},
            "initializationOptions": {"mlirLsp": {"dispatch": {"trigger": "manual"}}}}}).encode())
        wait_for("real-init")
        send(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}).encode())
        send(json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "mlir", "version": 1, "text": REPRO.read_text()}}}).encode())
        wait_for(("publish", uri))
        written = hand_written(uri)
        expect_error = [rid for _body, rid in written[:frames] if rid]
        while fig.bad_frames < frames:
            body = written[fig.bad_frames][0] if fig.bad_frames < len(written) else junk(rnd, uri)
            send(body)
            fig.bad_frames += 1
            if fig.bad_frames % every == 0 or fig.bad_frames == frames:
                rid = f"real-{fig.real_requests}"
                method = REAL_METHODS[fig.real_requests % len(REAL_METHODS)]
                send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                                 "params": {"textDocument": {"uri": uri}}}).encode())
                fig.real_requests += 1
                if "result" in wait_for(rid):
                    fig.answered += 1
        for rid in expect_error:
            fig.junk_errors[rid] = wait_for(rid).get("error", {}).get("code")
        latin1 = uri.replace("a.mlir", "latin1.mlir")
        fig.latin1_diagnostics = wait_for(("publish", latin1))["diagnostics"] if frames >= 2 else []
        fig.alive_before_exit = server.poll() is None
        send(json.dumps({"jsonrpc": "2.0", "id": "real-shutdown", "method": "shutdown"}).encode())
        wait_for("real-shutdown")
        send(json.dumps({"jsonrpc": "2.0", "method": "exit"}).encode())
        fig.exit_status = server.wait(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        if fig.exit_status is None:
            fig.exit_status = server.returncode
    return fig

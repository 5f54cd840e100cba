"""Issue 40, defects 1-3: the server's stdio stream, byte for byte, as a plain client writes it.

1. `exit` without `shutdown` ends the server with status 1 (the LSP spec), with it 0.
2. A request after `shutdown` gets error -32600 (InvalidRequest), not silence.
3. Header lines as the spec and HTTP allow them (names in any case, optional blanks around the
   value, bare `\\n` line ends) are read; a header that does not read is skipped and the stream
   found again at the next `Content-Length`; a length above `framing.MAX_BODY_BYTES` is refused
   with a logged error and its body discarded in chunks. After each, every well-formed request
   is answered.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from reliability_lsp import REPRO
from test_reliability_stdio import read_frames

ANSWER_SECONDS = 60


class Stdio:
    """The real server on a pipe, written to as bytes; its frames read by a plain reader."""

    def __init__(self, tmp: Path):
        env = dict(os.environ, XDG_CACHE_HOME=str(tmp / "cache"), TMPDIR=str(tmp))
        env.pop("CI", None)
        self.log = tmp / "server.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "mlir_lsp_asserts", "--stdio"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=log, env=env)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.frames: queue.Queue = queue.Queue()
        self.seen: dict = {}
        threading.Thread(target=read_frames, args=(self.proc.stdout, self.frames), daemon=True).start()
        self.uri = (tmp / "a.mlir").as_uri()

    def raw(self, data: bytes) -> None:
        self.stdin.write(data)
        self.stdin.flush()

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def answer(self, rid, timeout: float = ANSWER_SECONDS) -> dict:
        """The server's answer to request `rid` (requests of the server's own are answered null)."""
        while rid not in self.seen:
            kind, item = self.frames.get(timeout=timeout)
            assert kind == "message", f"the server's output ended or tore: {kind} {item}"
            msg = item[1]
            if "method" in msg and "id" in msg:
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            elif "id" in msg:
                self.seen[msg["id"]] = msg
        return self.seen.pop(rid)

    def start(self) -> None:
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "processId": None, "rootUri": None, "capabilities": {},
            "initializationOptions": {"mlirLsp": {"dispatch": {"trigger": "manual"}, "parserDiagnostics": False}}}})
        assert "result" in self.answer("init")
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        self.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": self.uri, "languageId": "mlir", "version": 1, "text": REPRO.read_text()}}})

    def symbols(self, rid) -> bytes:
        """A documentSymbol request's body (the open document's functions: an answer that is not empty)."""
        return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "textDocument/documentSymbol",
                           "params": {"textDocument": {"uri": self.uri}}}).encode()

    def answered(self, rid) -> bool:
        return bool(self.answer(rid).get("result"))

    def close(self) -> int:
        if self.proc.poll() is None:
            try:
                self.stdin.close()
                return self.proc.wait(timeout=60)
            finally:
                if self.proc.poll() is None:
                    self.proc.kill()
                    self.proc.wait()
        return self.proc.returncode

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture
def server(tmp_path):
    s = Stdio(tmp_path)
    try:
        s.start()
        yield s
    finally:
        s.close()


def test_exit_without_shutdown_exits_1(server):
    server.raw(b"Content-Length: %d\r\n\r\n" % len(body := server.symbols("before")) + body)
    assert server.answered("before")
    server.send({"jsonrpc": "2.0", "method": "exit"})
    assert server.proc.wait(timeout=60) == 1


def test_exit_after_shutdown_exits_0(server):
    server.send({"jsonrpc": "2.0", "id": "down", "method": "shutdown"})
    assert "result" in server.answer("down")
    server.send({"jsonrpc": "2.0", "method": "exit"})
    assert server.proc.wait(timeout=60) == 0


def test_a_request_after_shutdown_gets_invalid_request(server):
    server.send({"jsonrpc": "2.0", "id": "down", "method": "shutdown"})
    assert "result" in server.answer("down")
    server.raw(b"Content-Length: %d\r\n\r\n" % len(body := server.symbols("late")) + body)
    late = server.answer("late")
    assert late.get("error", {}).get("code") == -32600, late
    server.send({"jsonrpc": "2.0", "method": "exit"})
    assert server.proc.wait(timeout=60) == 0


# Header blocks in forms the spec (header names as HTTP's: any case; optional blanks around the
# value) and common clients allow; %d is the body's length. Each request is answered.
READABLE = {
    "lower-case name": b"content-length: %d\r\n\r\n",
    "upper-case name": b"CONTENT-LENGTH: %d\r\n\r\n",
    "no space after the colon": b"Content-Length:%d\r\n\r\n",
    "two spaces after the colon": b"Content-Length:  %d\r\n\r\n",
    "a trailing space": b"Content-Length: %d \r\n\r\n",
    "a tab around the value": b"Content-Length:\t%d\t\r\n\r\n",
    "bare newlines": b"Content-Length: %d\n\n",
    "bare newline, then CRLF": b"Content-Length: %d\n\r\n",
    "content-type first, in lower case": b"content-type: application/vscode-jsonrpc; charset=utf-8\r\n"
                                         b"content-length: %d\r\n\r\n",
    "an unknown header": b"X-Whatever: 1\r\nContent-Length: %d\r\n\r\n",
    "a bad line before the length": b"this is no header\r\nContent-Length: %d\r\n\r\n",
}


def test_header_lines_in_every_readable_form_are_answered(server):
    for n, (name, header) in enumerate(READABLE.items()):
        body = server.symbols(f"form-{n}")
        server.raw(header % len(body) + body)
        assert server.answered(f"form-{n}"), name
        server.raw(b"Content-Length: %d\r\n\r\n" % len(body := server.symbols(f"after-{n}")) + body)
        assert server.answered(f"after-{n}"), f"after {name}"


# Headers that do not read, each followed by its body: that request cannot be answered (its
# length is unknown), every well-formed one after it is.
UNREADABLE = {
    "a length that is no number": lambda body: b"Content-Length: twelve\r\n\r\n" + body,
    "a negative length": lambda body: b"Content-Length: -5\r\n\r\n" + body,
    "no blank line after the headers": lambda body: b"Content-Length: %d\r\n" % len(body) + body,
    "no Content-Length at all": lambda body: b"Content-Type: application/json\r\n\r\n" + body,
    "a body with no header": lambda body: body,
    "a long line of junk": lambda body: b"x" * 300_000 + b"\r\n\r\n" + body,
    "a NUL in the name": lambda body: b"Content-\0Length: %d\r\n\r\n" % len(body) + body,
    # `int` refuses more than 4,300 digits (ValueError): this ended the server with a traceback
    "a length of 5,000 digits": lambda body: b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n" + body,
    "junk, then a length of 5,000 digits": lambda body: b"junk!! Content-Length: " + b"9" * 5000 + b"\r\n\r\n"
                                                        + body,
}


def test_after_each_unreadable_header_the_next_request_is_answered(server):
    for n, (name, frame) in enumerate(UNREADABLE.items()):
        server.raw(frame(server.symbols(f"lost-{n}")))
        server.raw(b"Content-Length: %d\r\n\r\n" % len(body := server.symbols(f"after-{n}")) + body)
        assert server.answered(f"after-{n}"), f"after {name}"
    assert server.proc.poll() is None
    assert "Traceback" not in server.stderr()


def test_a_length_past_any_memory_is_refused_not_allocated(server):
    """`Content-Length: 99999999999999` ended the server with MemoryError (`read(n)` allocates n
    up front). It is refused with a logged error; its 'body' (here the rest of the stream) is
    discarded as it comes; the server leaves quietly when the client closes the pipe."""
    server.raw(b"Content-Length: 99999999999999\r\n\r\n" + server.symbols("huge"))
    server.raw(b"Content-Length: %d\r\n\r\n" % len(body := server.symbols("swallowed")) + body)
    assert server.close() == 0
    log = server.stderr()
    assert "refused a message of 99999999999999 bytes" in log, log[-2000:]
    assert "MemoryError" not in log and "Traceback" not in log


@pytest.mark.slow
def test_a_body_just_above_the_bound_is_discarded_and_the_next_request_answered(server):
    """A real frame of MAX_BODY_BYTES + 1 bytes, written through the pipe: refused, its body read
    and dropped in chunks (the server's memory stays small), and the request after it answered."""
    from mlir_lsp_asserts.server.framing import MAX_BODY_BYTES

    size = MAX_BODY_BYTES + 1
    block = b" " * (1 << 20)
    server.raw(b"Content-Length: %d\r\n\r\n" % size)
    left = size
    while left:
        server.stdin.write(block[:min(left, len(block))])
        left -= min(left, len(block))
    server.raw(b"Content-Length: %d\r\n\r\n" % len(body := server.symbols("after-huge")) + body)
    assert server.answered("after-huge")
    assert f"refused a message of {size} bytes" in server.stderr()
    rss_kb = int(next(line.split()[1] for line in Path(f"/proc/{server.proc.pid}/status").read_text().splitlines()
                      if line.startswith("VmHWM:")))
    assert rss_kb < 1024 * 1024, f"the server's peak memory reached {rss_kb} kB reading a refused body"


def test_a_body_above_one_read_is_read_in_chunks_and_its_section_still_lifted():
    """A didOpen above `framing.DIRECT_BYTES` (an export with 70 MB of weights inline) is read in
    chunks as it arrives, not allocated at its announced length; its resource section is lifted
    from those bytes as from a body read at once, and the document gets its text back whole."""
    import io

    from mlir_lsp_asserts.server.framing import DIRECT_BYTES, FrameReader
    from mlir_lsp_asserts.server.held_resources import lift
    from mlir_lsp_asserts.server.open_documents import OpenDocument

    hexed = "0x04000000" + "ab" * (35 << 20)
    section = '\n{-#\n  dialect_resources: {\n    builtin: {\n      w: "' + hexed + '"\n    }\n  }\n#-}\n'
    text = REPRO.read_text() + section
    body = json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": "file:///m.mlir", "languageId": "mlir", "version": 1, "text": text}}}).encode()
    assert len(body) > DIRECT_BYTES
    frames = b"Content-Length: %d\r\n\r\n" % len(body) + body + b"Content-Length: 2\n\n{}"
    stream = io.BufferedReader(io.BytesIO(frames))
    got = FrameReader(stream).frame()
    assert got == body
    lifted = lift(got)
    assert len(lifted) < 200_000
    received = json.loads(bytes(lifted))["params"]["textDocument"]["text"]
    opened = OpenDocument("file:///m.mlir", 1, received, None)
    assert opened.tail is not None and opened.tail.escaped and opened.tail.closed
    assert opened.snapshot().source == text
    assert FrameReader(stream).frame() == b"{}"  # the next frame follows, found where the body ended

"""The server's stdout, read byte for byte: answers written at once from worker threads arrive
whole. Twenty `mlirLsp/dispatchCount` requests for one document share one count of the SDXL
prompt encoder (a compile, or the encoder group's cached answer: `encoder_cache`), so their twenty
answers (each with the attribution of 1,660 dispatches, far above a pipe's 64 KB) are written at
the same moment. Written without one lock around each message, they interleaved on the pipe
("Invalid control character" 128 KB into a message); the client here is a plain reader of
Content-Length frames, so a torn frame fails the test instead of hanging it. With the cache filled
first, the test caught a writer without its lock in two runs of two (torn after 15 answers)."""

from __future__ import annotations

import fcntl
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import ENCODER_GROUP
from reliability_lsp import ENCODER

ANSWERS = 20
F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frames(stream, out: queue.Queue) -> None:
    """Each frame's parsed body onto `out`; ('torn', why) on the first frame that does not read,
    ('eof', None) at the end."""
    try:
        while True:
            length = None
            while (line := stream.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
                elif name.strip().lower() != b"content-type":
                    raise ValueError(f"not a header line: {line[:80]!r}")
            if line == b"":
                out.put(("eof", None))
                return
            if length is None:
                raise ValueError("a frame without Content-Length")
            body = stream.read(length)
            out.put(("message", (len(body), json.loads(body))))
    except ValueError as e:  # json.JSONDecodeError included
        out.put(("torn", str(e)[:200]))


@pytest.mark.slow
@ENCODER_GROUP
def test_twenty_large_answers_written_at_once_arrive_whole(tmp_path, encoder_cache):
    env = dict(os.environ, XDG_CACHE_HOME=str(encoder_cache), TMPDIR=str(tmp_path))
    env.pop("CI", None)
    server = subprocess.Popen([sys.executable, "-m", "mlir_lsp_asserts", "--stdio"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert server.stdin is not None and server.stdout is not None
    frames: queue.Queue = queue.Queue()
    threading.Thread(target=read_frames, args=(server.stdout, frames), daemon=True).start()
    uri = (tmp_path / "encoder.mlir").as_uri()
    try:
        send = server.stdin
        send.write(frame({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "processId": None, "rootUri": None, "capabilities": {},
            "initializationOptions": {"mlirLsp": {"dispatch": {"trigger": "manual"}}}}}))
        send.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        send.write(frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "mlir", "version": 1, "text": ENCODER.read_text()}}}))
        for i in range(1, ANSWERS + 1):
            send.write(frame({"jsonrpc": "2.0", "id": i, "method": "mlirLsp/dispatchCount", "params": {"uri": uri}}))
        send.flush()
        answers: dict[int, tuple[int, dict]] = {}
        while len(answers) < ANSWERS:
            kind, got = frames.get(timeout=900)
            assert kind == "message", f"after {len(answers)} whole answers: {kind}: {got}"
            size, msg = got
            if msg.get("id") in range(1, ANSWERS + 1) and "method" not in msg:
                answers[msg["id"]] = (size, msg)
        counts = {i: msg.get("result", {}).get("flow_dispatches") for i, (_size, msg) in answers.items()}
        assert set(counts.values()) == {1660}, counts
        assert min(size for size, _msg in answers.values()) > 256 * 1024  # each far above a pipe's buffer
        send.write(frame({"jsonrpc": "2.0", "id": 99, "method": "shutdown"}))
        send.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        send.flush()
        assert server.wait(timeout=60) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_a_pipe_on_stdin_gets_a_wider_buffer_for_large_opens(tmp_path):
    """A 490 MB didOpen through a 64 KB pipe is ~7,500 reads, each waiting for the interpreter;
    the server widens its stdin pipe to 1 MiB (as far as the system allows) before it reads."""
    limit = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), TMPDIR=str(tmp_path))
    server = subprocess.Popen([sys.executable, "-m", "mlir_lsp_asserts", "--stdio"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert server.stdin is not None and server.stdout is not None
    frames: queue.Queue = queue.Queue()
    threading.Thread(target=read_frames, args=(server.stdout, frames), daemon=True).start()
    try:
        server.stdin.write(frame({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "processId": None, "rootUri": None, "capabilities": {}}}))
        server.stdin.flush()
        kind, (_size, msg) = frames.get(timeout=60)
        assert kind == "message" and msg.get("id") == 0, msg
        assert fcntl.fcntl(server.stdin.fileno(), F_GETPIPE_SZ) == min(1 << 20, limit)
        server.stdin.write(frame({"jsonrpc": "2.0", "id": 1, "method": "shutdown"}))
        server.stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        server.stdin.flush()
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


@pytest.mark.parametrize("writer", ["pygls", "early"])
def test_a_large_message_interrupted_by_signals_arrives_whole(writer):
    """Under PYTHONUNBUFFERED (CI sets it) the server's stdout is the raw pipe, whose write of a
    large message returns short when a signal with a handler arrives midway: the rest was lost
    and the client read garbage. Here the message is written to a pipe read slowly while the
    writing thread gets a signal every few milliseconds; every byte must arrive, in order."""
    import signal
    import time

    from mlir_lsp_asserts.server.early_start import EarlyStart
    from mlir_lsp_asserts.server.transport import LockedStdoutWriter

    data = bytes(range(256)) * (4 << 12)  # 4 MiB, 64 pipe-fulls
    r, w = os.pipe()
    raw = os.fdopen(w, "wb", buffering=0)  # what sys.stdout.buffer is under `python -u`
    got = bytearray()

    def read_slowly():
        with os.fdopen(r, "rb", buffering=0) as f:
            while chunk := f.read(1 << 16):
                got.extend(chunk)
                time.sleep(0.0005)

    main, stop = threading.get_ident(), threading.Event()

    def interrupt():
        while not stop.is_set():
            signal.pthread_kill(main, signal.SIGUSR1)
            time.sleep(0.002)

    old = signal.signal(signal.SIGUSR1, lambda *_: None)
    reader, signals = threading.Thread(target=read_slowly), threading.Thread(target=interrupt)
    reader.start()
    signals.start()
    try:
        if writer == "pygls":
            LockedStdoutWriter(raw).write(data)
        else:
            with open(os.devnull, "rb") as nothing:
                EarlyStart(nothing, raw, lambda: None)._write(data.decode("latin-1"))
    finally:
        stop.set()
        signals.join()
        raw.close()
        reader.join()
        signal.signal(signal.SIGUSR1, old)
    if writer == "early":  # a header, then the text as UTF-8
        header, _, got = bytes(got).partition(b"\r\n\r\n")
        data = data.decode("latin-1").encode("utf-8")
        assert header.startswith(b"Content-Length: %d" % len(data))
    assert len(got) == len(data) and bytes(got) == data

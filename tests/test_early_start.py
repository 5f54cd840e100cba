"""The early start (server/early_start.py): `mlir-lsp --stdio` answers `initialize` and publishes
a document's first diagnostics before pygls is imported, then hands over to the pygls server.

What is checked here against the real pygls server (the server as it ran before the early start:
`app.run_server` on stdio), for the same messages:
- the answer to `initialize`, for the params of real clients (the ones pytest-lsp records: VS
  Code 1.65, Neovim 0.6 to 0.11, Emacs 29; ours of Neovim 0.11.4 and Emacs 28 with eglot;
  pytest-lsp's own; a bare client): identical;
- the first publish of documents (the example, the fixtures, corpus files), without settings,
  with initializationOptions, with a pushed `workspace/didChangeConfiguration`, with the
  folder's config file: identical;
- over the whole path (`mlir-lsp --stdio`): one response per request id, one publish of a
  document opened once (the pygls server's own first publish, the same text, is dropped), and
  the pygls server afterwards holds the document; frames that are not messages, unknown methods,
  requests after `shutdown`, `exit` without `shutdown` and a closed stdin, all sent during the
  early start, are answered and end the server as before; a pygls that cannot be imported
  ends the server with one line and status 2.
The early start itself, run in a fresh interpreter on a stream, must load none of pygls,
lsprotocol, cattrs, attrs or the dispatch code.
"""

from __future__ import annotations

import io
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import pytest_lsp

from conftest import CORPUS, DATA, FIXTURES, REPO, REPRO
from mlir_lsp_asserts import __version__
from mlir_lsp_asserts.server.early_start import EarlyStart

# The pygls server as it ran before the early start (no early answers, no handoff).
PYGLS_SERVER = [sys.executable, "-c", "import sys; from mlir_lsp_asserts.server.app import run_server; "
                "sys.exit(run_server())"]
MLIR_LSP = [sys.executable, "-m", "mlir_lsp_asserts", "--stdio"]
CLIENTS = Path(pytest_lsp.__file__).parent / "clients"  # initialize params recorded from real clients
RECORDED = DATA / "initialize"  # and those of the Neovim and the Emacs eglot that run here (README.md there)
# Nothing in the background that publishes again (the real parser) or compiles (a count on open).
QUIET = {"parserDiagnostics": False, "dispatch": {"trigger": "manual"}}
DOCUMENTS = [
    REPRO,
    FIXTURES / "seed" / "sdxl_clip_extra_dispatches.mlir",
    FIXTURES / "models" / "clip_l.input.mlir",
    FIXTURES / "models" / "sdxl_prompt_encoder.input.mlir",  # 2.4 MB
    CORPUS / "files" / "llvm" / "torch-mlir" / "test" / "Dialect" / "TorchConversion"
    / "verify-linalg-on-tensors-backend-contract.mlir",
    CORPUS / "files" / "llvm" / "torch-mlir" / "test" / "Dialect" / "TMTensor" / "invalid.mlir",
    CORPUS / "files" / "llvm" / "torch-mlir" / "test" / "Conversion" / "TorchToLinalg" / "sparse.mlir",
    CORPUS / "files" / "tensorflow" / "mlir" / "test" / "Transforms" / "canonicalize.mlir",
]
# No module of these may be loaded by the early start (its own imports, an answer, a publish).
NOT_EARLY = ("pygls", "lsprotocol", "cattrs", "attrs", "attr", "mlir_lsp_asserts.dispatch",
             "mlir_lsp_asserts.server.app", "mlir_lsp_asserts.server.transport",
             "mlir_lsp_asserts.server.publishing", "mlir_lsp_asserts.server.convert", "lark", "iree")


def frame(msg: dict) -> bytes:
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def request(rid, method: str, params=None) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def notification(method: str, params=None) -> dict:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def did_open(path: Path) -> dict:
    return notification("textDocument/didOpen", {"textDocument": {
        "uri": path.as_uri(), "languageId": "mlir", "version": 1, "text": path.read_text(encoding="utf-8")}})


def early_answers(messages: list[dict]) -> list[dict]:
    """What the early start alone writes for these messages (no pygls: its import is a no-op here)."""
    out = io.BytesIO()
    EarlyStart(io.BytesIO(b"".join(frame(m) for m in messages)), out, lambda: lambda *_a, **_k: 0).run()
    return parse_frames(out.getvalue())


def parse_frames(data: bytes) -> list[dict]:
    msgs = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        length = next(int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length"))
        msgs.append(json.loads(rest[:length]))
        data = rest[length:]
    return msgs


class Session:
    """A server over stdio, its messages collected by a thread (requests of the server's answered
    with null), so that a wait has a timeout."""

    def __init__(self, argv: list[str], cwd: Path, env: dict | None = None):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     cwd=cwd, env=env)
        self.messages: queue.Queue = queue.Queue()
        self.seen: list[dict] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while (line := out.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length"):
                    length = int(line.split(b":")[1])
            if length is None:
                self.messages.put(None)
                return
            msg = json.loads(out.read(length))
            if "id" in msg and "method" in msg:
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            self.messages.put(msg)

    def send(self, *msgs: dict) -> None:
        assert self.proc.stdin is not None
        with self.lock:
            self.proc.stdin.write(b"".join(frame(m) for m in msgs))
            self.proc.stdin.flush()

    def until(self, wanted, timeout: float = 120) -> dict:
        while True:
            msg = self.messages.get(timeout=timeout)
            assert msg is not None, f"the server ended: {self.stderr()}"
            self.seen.append(msg)
            if wanted(msg):
                return msg

    def response(self, rid) -> dict:
        return self.until(lambda m: m.get("id") == rid and "method" not in m)

    def close(self) -> int:
        bye = 999_999
        self.send(request(bye, "shutdown"), notification("exit"))
        self.response(bye)
        code = self.proc.wait(timeout=60)
        while (msg := self.messages.get(timeout=10)) is not None:
            self.seen.append(msg)
        return code

    def stderr(self) -> str:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        return self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""


def env_for(tmp_path: Path) -> dict:
    return dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), TMPDIR=str(tmp_path))


# -- initialize -----------------------------------------------------------------------------------
def recorded_clients() -> dict[str, dict]:
    """Initialize params of real clients (pytest-lsp's records, ours of Neovim 0.11.4 and Emacs 28
    with eglot), pytest-lsp's own and a bare client's."""
    params = {p.stem: dict(json.loads(p.read_text(encoding="utf-8")), processId=None, rootUri=None)
              for p in sorted(CLIENTS.glob("*.json"))}
    params.update({p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(RECORDED.glob("*.json"))})
    from lsprotocol import types
    from pygls.protocol import default_converter

    ours = types.InitializeParams(capabilities=pytest_lsp.client_capabilities("visual-studio-code"), process_id=1)
    params["pytest-lsp"] = default_converter().unstructure(ours)  # what pytest-lsp's own client sends
    params["bare"] = {"processId": None, "rootUri": None, "capabilities": {}}
    return params


def test_recorded_clients_differ_where_the_answer_depends_on_them():
    """The clients cover both rules that read the params: every position encoding, willSave given or not."""
    clients = recorded_clients()
    encodings = {json.dumps(p["capabilities"].get("general", {}).get("positionEncodings")) for p in clients.values()}
    assert {'["utf-32", "utf-8", "utf-16"]', '["utf-8", "utf-16", "utf-32"]', '["utf-16"]', "null"} <= encodings
    assert {"visual_studio_code_v1.65.2", "neovim_v0.11.0", "emacs_v29.1", "neovim_v0.11.4",
            "emacs_v28.2_eglot"} <= set(clients)


@pytest.mark.slow
def test_the_early_answer_to_initialize_is_the_pygls_servers(tmp_path):
    clients = recorded_clients()
    session = Session(PYGLS_SERVER, tmp_path, env_for(tmp_path))
    try:
        for i, params in enumerate(clients.values(), 1):  # pygls answers each initialize from its own params
            session.send(request(i, "initialize", params))
        real = {name: session.response(i) for i, name in enumerate(clients, 1)}
        assert session.close() == 0
    finally:
        session.stderr()
    for i, (name, params) in enumerate(clients.items(), 1):
        early = early_answers([request(i, "initialize", params)])
        assert early == [real[name]], name
    assert real["emacs_v29.1"]["result"]["capabilities"]["positionEncoding"] == "utf-32"
    assert real["bare"]["result"]["serverInfo"] == {"name": "mlir-lsp", "version": __version__}


def test_params_in_doubt_are_left_to_pygls():
    """An initialize whose params do not read as the protocol says gets no early answer (pygls
    gives its own, or its error), and nothing is published early after it."""
    for params in (None, {"capabilities": []}, {"processId": "12", "capabilities": {}},
                   {"capabilities": {"general": {"positionEncodings": "utf-8"}}}):
        assert early_answers([request(1, "initialize", params), did_open(REPRO)]) == [], params


def test_no_early_answer_after_shutdown_or_exit_and_no_publish_the_server_would_refuse():
    """An `initialize` after `exit` or `shutdown` was answered early (the pygls server answers
    nothing, or -32600); a didOpen whose version is outside the protocol's 32-bit integer was
    published early, though lsprotocol refuses it and the server never held the document."""
    init = request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                     "initializationOptions": {"mlirLsp": QUIET}})
    assert early_answers([notification("exit"), init, did_open(REPRO)]) == []
    assert early_answers([request(2, "shutdown"), init, did_open(REPRO)]) == []
    for version, published in ((2**31 - 1, True), (2**31, False), (-(2**31) - 1, False)):
        opened = did_open(REPRO)
        opened["params"]["textDocument"]["version"] = version
        got = early_answers([init, opened])
        assert [m.get("id") for m in got if "id" in m] == [1], version  # initialize answered
        assert any(m.get("method") == "textDocument/publishDiagnostics" for m in got) is published, version


# -- the first publish ----------------------------------------------------------------------------
SETTINGS = {
    "none": ({"mlirLsp": QUIET}, None, None),
    "initializationOptions": ({"mlirLsp": dict(QUIET, ignore=["MLA003"], severity={"MLA001": "hint"},
                                               dispatch={"trigger": "manual", "profile": "cpu-host",
                                                         "flags": "--iree-opt-level=O2"})}, None, None),
    "pushed configuration": ({"mlirLsp": QUIET}, {"mlirLsp": dict(QUIET, select=["MLA001"],
                                                                  severity={"MLA001": "warning"})}, None),
    "config file": ({"mlirLsp": dict(QUIET, severity={"MLA001": "error"})}, None,
                    'severity = { MLA001 = "information" }\nignore = ["MLA002"]\n'),
}


@pytest.mark.slow
@pytest.mark.parametrize("settings", SETTINGS)
def test_the_early_first_publish_is_the_pygls_servers(tmp_path, settings):
    init_options, pushed, config = SETTINGS[settings]
    folder = tmp_path / "work"
    folder.mkdir()
    docs = []
    for i, src in enumerate(DOCUMENTS):
        docs.append(folder / f"{i}_{src.name}")
        shutil.copyfile(src, docs[-1])
    if config is not None:
        (folder / "mlir-lsp.toml").write_text(config, encoding="utf-8")
    messages = [request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                          "initializationOptions": init_options}),
                notification("initialized", {})]
    if pushed is not None:
        messages.append(notification("workspace/didChangeConfiguration", {"settings": pushed}))
    messages += [did_open(d) for d in docs]
    uris = {d.as_uri() for d in docs}

    early = {m["params"]["uri"]: m["params"] for m in early_answers(messages)
             if m.get("method") == "textDocument/publishDiagnostics"}
    assert set(early) == uris  # the early start published each document itself

    session = Session(PYGLS_SERVER, tmp_path, env_for(tmp_path))
    real: dict[str, dict] = {}
    try:
        session.send(*messages)
        while set(real) != uris:
            m = session.until(lambda m: m.get("method") == "textDocument/publishDiagnostics")
            real.setdefault(m["params"]["uri"], m["params"])
        assert session.close() == 0
    finally:
        session.stderr()
    for d in docs:
        assert early[d.as_uri()] == real[d.as_uri()], d.name
    shown = [x.get("code") for p in real.values() for x in p["diagnostics"]]
    assert shown.count("MLA001") >= 4  # the findings are there to compare (the example's four at least)
    if settings != "none":  # the settings change what is shown: the comparison saw them applied
        if config is not None:
            (folder / "mlir-lsp.toml").unlink()
        plain = [request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                           "initializationOptions": {"mlirLsp": QUIET}})] + [did_open(d) for d in docs]
        assert {m["params"]["uri"]: m["params"] for m in early_answers(plain) if "method" in m} != early


# -- the whole path: mlir-lsp --stdio -------------------------------------------------------------
@pytest.mark.slow
def test_one_response_per_request_and_one_publish_then_the_server_holds_the_document(tmp_path):
    doc = tmp_path / "example.mlir"
    shutil.copyfile(REPRO, doc)
    uri = doc.as_uri()
    session = Session(MLIR_LSP, tmp_path, env_for(tmp_path))
    try:
        session.send(request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                               "initializationOptions": {"mlirLsp": QUIET}}),
                     notification("initialized", {}), did_open(doc))
        published = session.until(lambda m: m.get("method") == "textDocument/publishDiagnostics")
        assert [d["code"] for d in published["params"]["diagnostics"]] == ["MLA001"] * 4
        session.send(request(2, "textDocument/documentSymbol", {"textDocument": {"uri": uri}}))
        symbols = session.response(2)["result"]  # answered by the pygls server: it has the document
        assert [s["name"] for s in symbols] and all("range" in s or "location" in s for s in symbols)
        assert session.close() == 0
    finally:
        stderr = session.stderr()
    assert "Traceback" not in stderr, stderr
    responses = [m["id"] for m in session.seen if "id" in m and "method" not in m]
    assert sorted(responses) == [1, 2, 999_999]  # one answer each: pygls's own to initialize is not sent
    publishes = [m for m in session.seen if m.get("method") == "textDocument/publishDiagnostics"]
    assert len(publishes) == 1  # the pygls server's first publish was the same text: dropped


@pytest.mark.slow
def test_an_initialize_lsprotocol_refuses_in_part_still_gives_a_working_server(tmp_path):
    """Params that read where the early start looks but not deeper (`clientInfo` without a name,
    a `trace` of no known value, a capability of the wrong type) were answered early, pygls's
    error was not sent, and the server stayed uninitialized: an "Error in server" message, then a
    second publish of the document with the settings lost. The server now reads the params
    without the parts that do not read, and says which in one log line."""
    doc = tmp_path / "example.mlir"
    shutil.copyfile(REPRO, doc)
    params = {"processId": None, "rootUri": None, "clientInfo": {}, "trace": "bogus",
              "capabilities": {"textDocument": {"hover": 5}},
              "initializationOptions": {"mlirLsp": dict(QUIET, severity={"MLA001": "hint"})}}
    session = Session(MLIR_LSP, tmp_path, env_for(tmp_path))
    try:
        session.send(request(1, "initialize", params), notification("initialized", {}), did_open(doc))
        published = session.until(lambda m: m.get("method") == "textDocument/publishDiagnostics")
        assert [(d["code"], d["severity"]) for d in published["params"]["diagnostics"]] == [("MLA001", 4)] * 4
        session.send(request(2, "textDocument/documentSymbol", {"textDocument": {"uri": doc.as_uri()}}))
        assert session.response(2)["result"]  # the initialized server holds the document
        assert session.close() == 0
    finally:
        stderr = session.stderr()
    assert "Traceback" not in stderr, stderr
    assert [m["id"] for m in session.seen if "id" in m and "method" not in m] == [1, 2, 999_999]
    assert len([m for m in session.seen if m.get("method") == "textDocument/publishDiagnostics"]) == 1
    assert not [m for m in session.seen if m.get("method") == "window/showMessage"], session.seen
    said = [line for line in stderr.splitlines() if "goes on without" in line]
    assert len(said) == 1 and all(part in said[0] for part in ("client_info.name", "trace", "text_document.hover"))


@pytest.mark.slow
def test_a_document_opened_during_the_early_start_gets_the_real_parsers_run(tmp_path):
    """The pygls server handles the kept didOpen itself: the real parser's run is scheduled for a
    document published early (its error comes in a later publish, source `iree`)."""
    doc = tmp_path / "bad.mlir"
    doc.write_text("func.func @f() -> i32 {\n  %0 = arith.constant 1 : i64\n  return %0 : i64\n}\n", encoding="utf-8")
    session = Session(MLIR_LSP, tmp_path, env_for(tmp_path))
    try:
        manual = {"mlirLsp": {"dispatch": {"trigger": "manual"}}}
        session.send(request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                               "initializationOptions": manual}),
                     notification("initialized", {}), did_open(doc))
        first = session.until(lambda m: m.get("method") == "textDocument/publishDiagnostics")
        assert not any(d.get("source") == "iree" for d in first["params"]["diagnostics"])
        parsed = session.until(lambda m: m.get("method") == "textDocument/publishDiagnostics" and any(
            d.get("source") == "iree" for d in m["params"]["diagnostics"]))
        (error,) = [d for d in parsed["params"]["diagnostics"] if d.get("source") == "iree"]
        assert error["range"]["start"]["line"] == 2 and "doesn't match function result type" in error["message"]
        assert session.close() == 0
    finally:
        session.stderr()


@pytest.mark.slow
def test_messages_sent_during_the_early_start_are_answered_as_before(tmp_path):
    """Everything sent right after the spawn reaches the server during the early start (its import
    takes far longer): a body that is not JSON is skipped, an unknown method gets -32601, a
    request after shutdown -32600, `exit` after `shutdown` ends with 0."""
    session = Session(MLIR_LSP, tmp_path, env_for(tmp_path))
    try:
        session.proc.stdin.write(b"Content-Length: 9\r\n\r\nnot json!")  # type: ignore[union-attr]
        session.send(request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {}}),
                     notification("initialized", {}), request(2, "no/such/method", {}),
                     request(3, "shutdown"), request(4, "textDocument/hover", {
                         "textDocument": {"uri": "file:///x.mlir"}, "position": {"line": 0, "character": 0}}),
                     notification("exit"))
        assert session.proc.wait(timeout=120) == 0
    finally:
        stderr = session.stderr()
    while (msg := session.messages.get(timeout=10)) is not None:
        session.seen.append(msg)
    answers = {m["id"]: m for m in session.seen if "id" in m and "method" not in m}
    assert sorted(answers) == [1, 2, 3, 4], answers
    assert answers[1]["result"]["serverInfo"]["name"] == "mlir-lsp"
    assert answers[2]["error"]["code"] == -32601 and answers[4]["error"]["code"] == -32600
    assert "result" in answers[3] and "Traceback" not in stderr


@pytest.mark.slow
@pytest.mark.parametrize("ending, code", [("exit without shutdown", 1), ("stdin closed", 0)])
def test_the_server_ends_as_before_when_the_client_ends_during_the_early_start(tmp_path, ending, code):
    session = Session(MLIR_LSP, tmp_path, env_for(tmp_path))
    try:
        session.send(request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {}}))
        if ending == "stdin closed":
            session.proc.stdin.close()  # type: ignore[union-attr]
        else:
            session.send(notification("exit"))
        assert session.proc.wait(timeout=120) == code
    finally:
        stderr = session.stderr()
    assert "Traceback" not in stderr and "Fatal Python error" not in stderr, stderr


def test_a_pygls_that_cannot_be_imported_ends_the_server_with_one_line(tmp_path):
    broken = tmp_path / "broken" / "pygls"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text('raise ImportError("this pygls is broken")\n', encoding="utf-8")
    env = dict(env_for(tmp_path), PYTHONPATH=os.pathsep.join([str(tmp_path / "broken"), str(REPO)]))
    session = Session(MLIR_LSP, tmp_path, env)
    try:
        session.send(request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {}}))
        assert session.response(1)["result"]["serverInfo"]["name"] == "mlir-lsp"  # the early answer
        assert session.proc.wait(timeout=60) == 2
    finally:
        stderr = session.stderr()
    assert stderr.strip().splitlines() == [
        "mlir-lsp: error: the language server cannot start: ImportError: this pygls is broken "
        "(reinstall mlir-lsp with its dependencies)"], stderr


# -- what the early start loads -------------------------------------------------------------------
_ALONE = """
import io, json, sys
from mlir_lsp_asserts.server.early_start import EarlyStart
frames = sys.stdin.buffer.read()
out = io.BytesIO()
EarlyStart(io.BytesIO(frames), out, lambda: lambda *_a, **_k: 0).run()
json.dump({"modules": sorted(sys.modules), "out": out.getvalue().decode()}, sys.stdout)
"""


def test_the_early_start_loads_no_pygls_lsprotocol_attrs_or_dispatch_code():
    messages = [request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {}}),
                notification("initialized", {}), did_open(REPRO)]
    p = subprocess.run([sys.executable, "-c", _ALONE], input=b"".join(frame(m) for m in messages),
                       capture_output=True, check=True)
    got = json.loads(p.stdout)
    answers = parse_frames(got["out"].encode())
    assert answers[0]["id"] == 1 and [d["code"] for d in answers[1]["params"]["diagnostics"]] == ["MLA001"] * 4
    loaded = sorted(m for m in got["modules"] if any(m == b or m.startswith(b + ".") for b in NOT_EARLY))
    assert loaded == []


def test_a_big_frame_is_not_held_by_the_early_reader_while_it_waits():
    """The early reader hands each frame on and keeps no reference while it waits for the next:
    it held the last one (a 47 MB didOpen stayed in memory beside the text the server made of
    it, until the client's next message: the model-shaped file's peak went from 3.1x to 4.2x)."""
    import time
    import tracemalloc

    text = "// " + "x" * (20 << 20)  # above EARLY_MAX_BYTES: kept for the pygls server, unread here
    data = frame(notification("textDocument/didOpen", {"textDocument": {
        "uri": "file:///big.mlir", "languageId": "mlir", "version": 1, "text": text}}))
    del text
    r, w = os.pipe()
    tracemalloc.start()
    try:
        writer = threading.Thread(target=os.write, args=(w, data), daemon=True)
        writer.start()  # the pipe stays open after it: the reader then waits for a next frame
        stdin = os.fdopen(r, "rb")  # kept open (and referenced) until the end
        early = EarlyStart(stdin, io.BytesIO(), lambda: lambda *_a, **_k: 0)
        early.run()
        kept = early.handoff.frames.frame()
        assert kept is not None and len(kept) > 20 << 20
        del kept, data
        writer.join(10)
        deadline = time.monotonic() + 5
        while tracemalloc.get_traced_memory()[0] > 8 << 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert tracemalloc.get_traced_memory()[0] < 8 << 20, "the 20 MB frame is still held"
    finally:
        tracemalloc.stop()
        os.close(w)

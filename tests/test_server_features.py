"""The real server over stdio on the real prompt encoder (2.4 MB, kept in pieces): navigation,
incremental edits, configuration pulled from the client, files watched on disk, bad input."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities, make_test_lsp_client

from conftest import MODELS, REPRO
from test_server_lsp import open_doc, wait_publish

ENCODER = MODELS / "sdxl_prompt_encoder.input.mlir"
ENCODER_TEXT = ENCODER.read_text()
ENCODER_LINES = ENCODER_TEXT.split("\n")
SERVER = [sys.executable, "-m", "mlir_lsp_asserts"]


def line_of(needle: str, start: int = 0) -> int:
    return next(i for i in range(start, len(ENCODER_LINES)) if needle in ENCODER_LINES[i])


@pytest_lsp.fixture(params=["visual-studio-code", "neovim"], config=ClientServerConfig(server_command=SERVER))
async def client(request, lsp_client: LanguageClient):
    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _refresh(params):  # VS Code re-asks for code lenses on this request
        return None

    await lsp_client.initialize_session(types.InitializeParams(capabilities=client_capabilities(request.param)))
    yield
    await lsp_client.shutdown_session()


def pos(line: int, needle: str, offset: int = 1) -> types.Position:
    return types.Position(line, ENCODER_LINES[line].index(needle) + offset)


@pytest.mark.asyncio(loop_scope="function")
async def test_navigation_on_the_prompt_encoder(client: LanguageClient):
    uri = ENCODER.as_uri()
    diags = await open_doc(client, uri, ENCODER_TEXT)
    assert len([d for d in diags if d.code == "MLA001"]) == 16
    doc = types.TextDocumentIdentifier(uri)

    # %4540 is defined again in the next gather's region: references stay in their own region.
    first = line_of("%4540 = arith.index_cast")
    refs = await client.text_document_references_async(types.ReferenceParams(
        text_document=doc, position=pos(first, "%4540"), context=types.ReferenceContext(include_declaration=True)))
    lines = sorted(r.range.start.line for r in refs)
    assert lines == [first, first + 2, first + 6]
    loc = await client.text_document_definition_async(types.DefinitionParams(doc, pos(first + 6, "%4540")))
    assert loc.range.start.line == first
    # a block argument
    loc = await client.text_document_definition_async(types.DefinitionParams(doc, pos(first, "%in")))
    assert loc.range.start.line == first - 1

    # a symbol: definition in another top-level op, hover with its type, references across pieces
    load = line_of("util.global.load @__auto.text_encoder_model_1.text_model.embeddings.token_embedding.weight")
    at = pos(load, "@__auto", 3)
    loc = await client.text_document_definition_async(types.DefinitionParams(doc, at))
    assert loc.range.start.line == 1
    hover = await client.text_document_hover_async(types.HoverParams(doc, at))
    assert "util.global" in hover.contents.value and "tensor<49408x768xf16>" in hover.contents.value
    refs = await client.text_document_references_async(types.ReferenceParams(
        text_document=doc, position=at, context=types.ReferenceContext(include_declaration=False)))
    expected = sum(1 for ln in ENCODER_LINES[2:]
                   if "@__auto.text_encoder_model_1.text_model.embeddings.token_embedding.weight " in ln)
    assert len(refs) == expected >= 1

    # hover on an assert names the rule and the assume range; on a value gives its definition
    assert_line = line_of("cf.assert %4542", first)
    hover = await client.text_document_hover_async(types.HoverParams(doc, pos(assert_line, "cf.assert")))
    assert "MLA001" in hover.contents.value and "umin = 0, umax = 49407" in hover.contents.value
    hover = await client.text_document_hover_async(types.HoverParams(doc, pos(assert_line, "%4542")))
    assert f"defined at line {first + 3}" in hover.contents.value and "arith.cmpi" in hover.contents.value

    symbols = await client.text_document_document_symbol_async(types.DocumentSymbolParams(doc))
    names = [s.name for s in symbols]
    assert "main$async" in names and "main" in names and len(symbols) == 697
    folds = await client.text_document_folding_range_async(types.FoldingRangeParams(doc))
    assert any(f.start_line == line_of("util.func public @main$async") for f in folds)

    toks = await client.text_document_semantic_tokens_range_async(types.SemanticTokensRangeParams(
        doc, types.Range(types.Position(assert_line, 0), types.Position(assert_line, 200))))
    # first token: `cf` (namespace, type 0) on the assert's line, absolute
    assert list(toks.data[:2]) == [assert_line, ENCODER_LINES[assert_line].index("cf.assert")] and toks.data[3] == 0


@pytest.mark.asyncio(loop_scope="function")
async def test_incremental_edits_on_the_prompt_encoder(client: LanguageClient):
    uri = ENCODER.as_uri()
    await open_doc(client, uri, ENCODER_TEXT)
    line = line_of("cf.assert %4542")
    for version, (rng, text, count) in enumerate([
        (((line, 0), (line, 0)), "// ", 15),          # comment an assert out
        (((line, 0), (line, 3)), "", 16),             # and in again
        (((2, 0), (2, 0)), "\n\n", 16),               # lines added above: findings move down
    ], start=2):
        (sl, sc), (el, ec) = rng
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [types.TextDocumentContentChangePartial(range=types.Range(types.Position(sl, sc), types.Position(el, ec)),
                                                    text=text)]))
        diags = await wait_publish(client, uri, version)
        assert len([d for d in diags if d.code == "MLA001"]) == count
    assert min(d.range.start.line for d in diags if d.code == "MLA001") == line + 2


@pytest.mark.asyncio(loop_scope="function")
async def test_bad_input_through_the_protocol(client: LanguageClient):
    uri = "file:///tmp/bad-input.mlir"
    text = REPRO.read_text()
    await open_doc(client, uri, text)
    # a change far outside the document is clamped to its end
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [types.TextDocumentContentChangePartial(range=types.Range(types.Position(9999, 5), types.Position(99999, 0)),
                                                text="// appended\n")]))
    diags = await wait_publish(client, uri, 2)
    assert len([d for d in diags if d.code == "MLA001"]) == 4
    # the document becomes binary garbage: one clear diagnostic
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=3),
        [types.TextDocumentContentChangeWholeDocument(text="ML\x00\x01\x02\x03garbage\x00" * 50)]))
    diags = await wait_publish(client, uri, 3)
    assert len(diags) == 1 and "bytecode" in diags[0].message.lower()
    # requests about a document that is not open get empty answers
    other = types.TextDocumentIdentifier("file:///tmp/never-opened.mlir")
    assert await client.text_document_hover_async(types.HoverParams(other, types.Position(0, 0))) is None
    assert not await client.text_document_document_symbol_async(types.DocumentSymbolParams(other))
    assert not await client.text_document_code_action_async(types.CodeActionParams(
        other, types.Range(types.Position(0, 0), types.Position(0, 0)), types.CodeActionContext(diagnostics=[])))
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=other.uri, version=2),
        [types.TextDocumentContentChangeWholeDocument(text="x")]))
    # ... and the server still serves the other documents
    uri2 = "file:///tmp/still-served.mlir"
    diags = await open_doc(client, uri2, text)
    assert len([d for d in diags if d.code == "MLA001"]) == 4


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="function")
async def test_a_200_mb_document_gets_a_message_not_a_hang(client: LanguageClient):
    uri = "file:///tmp/huge.mlir"
    line = "// " + "x" * 1020 + "\n"
    text = line * (200 * 1024)
    t = time.monotonic()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="mlir", version=1, text=text)))
    diags = await wait_publish(client, uri, 1)
    assert len(diags) == 1 and "above the live limit" in diags[0].message and "mlir-lsp --check" in diags[0].message
    assert time.monotonic() - t < 60
    hover = await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri),
                                                                     types.Position(0, 0)))
    assert hover is None


# -- configuration and files on disk (one client each: their own initialize) ----------------
@pytest.mark.asyncio(loop_scope="function")
async def test_settings_pulled_with_workspace_configuration_and_bad_values(tmp_path):
    client = make_test_lsp_client()
    client.set_configuration({"ignore": ["MLA001"], "severity": {"MLA003": "loud"}}, section="mlirLsp")
    await client.start_io(*SERVER)
    messages = client.messages

    caps = client_capabilities("visual-studio-code")
    await client.initialize_session(types.InitializeParams(capabilities=caps, root_uri=tmp_path.as_uri()))
    try:
        for _ in range(50):
            if messages:
                break
            await asyncio.sleep(0.1)
        # a bad value: said, and that setting's default kept; the good one beside it holds
        assert any("MLA003" in m.message and "loud" in m.message for m in messages), messages
        uri = (tmp_path / "r.mlir").as_uri()
        diags = await open_doc(client, uri, REPRO.read_text())
        assert [d.code for d in diags] == []  # ignore = MLA001 held (a bad severity reset it before)
        client.set_configuration({"ignore": []}, section="mlirLsp")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        # The settings pulled: the open document's diagnostics are published again, with MLA001.
        while [d.code for d in await asyncio.wait_for(wait_publish(client, uri, 1), 60)] != ["MLA001"] * 4:
            pass
    finally:
        await client.shutdown_session()
        await client.stop()


@pytest.mark.asyncio(loop_scope="function")
async def test_initialization_options_survive_a_configuration_change_with_no_section_of_ours(tmp_path):
    """Eglot sends `workspace/didChangeConfiguration` with `{}` right after connecting (and with
    other servers' sections when a project configures those): the settings from
    initializationOptions stay."""
    client = make_test_lsp_client()
    await client.start_io(*SERVER)
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("emacs"), root_uri=tmp_path.as_uri(),
        initialization_options={"mlirLsp": {"severity": {"MLA001": "error"}}}))
    try:
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={}))
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"pylsp": {"plugins": {}}}))
        diags = await open_doc(client, (tmp_path / "r.mlir").as_uri(), REPRO.read_text())
        assert [d.severity for d in diags if d.code == "MLA001"] == [types.DiagnosticSeverity.Error] * 4
        # a section of ours still applies
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"mlirLsp": {"ignore": ["MLA001"]}}))
        uri = (tmp_path / "r.mlir").as_uri()
        while [d.code for d in await asyncio.wait_for(wait_publish(client, uri, 1), 30)]:
            pass  # a publish already on its way (the parser's) may still carry the findings
    finally:
        await client.shutdown_session()
        await client.stop()


@pytest.mark.asyncio(loop_scope="function")
async def test_files_not_open_are_checked_on_disk_and_cleared(tmp_path):
    (tmp_path / "gen").mkdir()
    existing = tmp_path / "gen" / "old.mlir"
    existing.write_text(REPRO.read_text())
    client = make_test_lsp_client()
    await client.start_io(*SERVER)
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=tmp_path.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=tmp_path.as_uri(), name="ws")]))

    async def published(uri: str, pred, timeout: float = 20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if uri in client.diagnostics and pred(client.diagnostics[uri]):
                return client.diagnostics[uri]
            await asyncio.sleep(0.05)
        raise AssertionError(f"no matching publish for {uri}: {client.diagnostics.get(uri)}")

    try:
        old_uri = existing.resolve().as_uri()
        await published(old_uri, lambda d: len(d) == 4)  # found by the start-up scan
        new = tmp_path / "gen" / "new.mlir"
        new.write_text(REPRO.read_text().replace("cf.assert %8", "// cf.assert %8"))  # an export script writes
        await published(new.resolve().as_uri(), lambda d: len(d) == 2)
        new.write_text("func.func @f() {\n  return\n}\n")  # regenerated without asserts
        await published(new.resolve().as_uri(), lambda d: len(d) == 0)
        existing.unlink()
        await published(old_uri, lambda d: len(d) == 0)
    finally:
        await client.shutdown_session()
        await client.stop()


def test_server_exits_when_the_client_process_is_gone():
    editor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    server = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        body = ('{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": ' + str(editor.pid)
                + ', "rootUri": null, "capabilities": {}}}').encode()
        server.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        server.stdin.flush()
        server.stdout.readline()  # the answer's header: it is running
        editor.kill()
        editor.wait()
        server.wait(timeout=15)  # stdin is still open: only the watch on the pid ends it
        assert server.returncode == 0
    finally:
        for p in (editor, server):
            if p.poll() is None:
                p.kill()
                p.wait()
        server.stdin.close()


def _descendants(pid: int) -> set[int]:
    kids: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            kids.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            pass
    out, todo = set(), [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.add(k)
            todo.append(k)
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_no_compile_outlives_a_server_whose_client_vanishes(tmp_path):
    """The client dies without `shutdown`/`exit` while a dispatch count compiles the prompt
    encoder in the background: the server exits and takes its compile with it."""
    import json

    server = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})  # no cached count

    def send(msg):
        body = json.dumps(msg).encode()
        server.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        server.stdin.flush()

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None,
                                                                          "capabilities": {}}})
        send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": ENCODER.as_uri(), "languageId": "mlir", "version": 1, "text": ENCODER_TEXT}}})
        deadline = time.monotonic() + 60
        compiles: set[int] = set()
        while time.monotonic() < deadline and len(compiles) < 2:  # the venv's launcher and the binary
            compiles = {p for p in _descendants(server.pid)
                        if "iree-compile" in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")}
            time.sleep(0.2)
        assert compiles, "the dispatch count did not start"
        assert all(_alive(p) for p in compiles)
        server.stdin.close()  # the editor is gone: no shutdown, no exit
        server.wait(timeout=10)  # at once, not after the compile (~6 s and more) ends
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and any(_alive(p) for p in compiles):
            time.sleep(0.2)
        assert not [p for p in compiles if _alive(p)], "a compile outlived the server"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


@pytest.mark.asyncio(loop_scope="function")
async def test_a_crash_of_the_real_parser_is_said_and_the_server_lives(client: LanguageClient):
    """The real parser runs in a child (its heap breaks down after many parses): killed by a
    signal, it gives one information diagnostic and the server keeps serving."""
    import signal

    uri = ENCODER.as_uri()
    await open_doc(client, uri, ENCODER_TEXT)
    def ppid(pid: int) -> int:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])

    child = None
    deadline = time.monotonic() + 30
    while child is None and time.monotonic() < deadline:
        for stat in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                # this test's server's child (a server of an earlier test may still be parsing)
                if b"mlir_lsp_asserts.server.parser_feature" in stat.read_bytes() and \
                        ppid(ppid(int(stat.parent.name))) == os.getpid():
                    child = int(stat.parent.name)
            except (OSError, ValueError, IndexError):
                pass
        await asyncio.sleep(0.01)
    assert child, "no parser child started"
    os.kill(child, signal.SIGSEGV)
    diags = await asyncio.wait_for(wait_publish(client, uri, 1, source="iree"), 60)
    (note,) = [d for d in diags if d.source == "iree"]
    assert "IREE's parser crashed (SIGSEGV)" in note.message
    assert note.severity == types.DiagnosticSeverity.Information
    assert len([d for d in diags if d.code == "MLA001"]) == 16
    assert await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(types.TextDocumentIdentifier(uri)))

"""Exports with their weights inline: a `{-# dialect_resources #-}` section of hex after the IR.

The section is opaque: the CLI and the server read the IR part only, `--fix` copies the section
byte for byte, and a server that receives the whole text from its client (Neovim, Emacs, Helix)
checks it as fast as the IR alone. The files here are the repro with its parameter, plus a 10 MB
one, inlined by bench/inline_weights.py (the benchmark's generator)."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from conftest import BIN, REPO, SHARED, run_cli

sys.path.insert(0, str(REPO / "bench"))
import inline_weights  # noqa: E402

REPRO = SHARED / "fixtures" / "repro" / "hoisted_gather.mlir"
BIG_PARAM = 'util.global private @big = #flow.parameter.named<"model"::"big"> : tensor<2500000xf32>\n'
ASSERT_LINES = [18, 20, 29, 31]  # 1-based, as in the repro (the inlined form keeps every line)


def _source(tmp_path, big: bool):
    text = REPRO.read_text()
    if big:  # the extra global goes after the comments, so the repro's lines move by one
        at = text.index("util.global")
        text = text[:at] + BIG_PARAM + text[at:]
    src = tmp_path / "exported.mlir"
    src.write_text(text)
    return src


@pytest.fixture
def inline_export(tmp_path):
    """The repro with its weights inline (118 KB of hex)."""
    out = tmp_path / "inline.mlir"
    inline_weights.make(str(_source(tmp_path, big=False)), str(out))
    return out


@pytest.fixture
def big_inline_export(tmp_path):
    """The same with a 10 MB weight more (20 MB of hex): what a client's didOpen message of a
    real export looks like, above the size from which the server lifts the section out."""
    out = tmp_path / "big_inline.mlir"
    inline_weights.make(str(_source(tmp_path, big=True)), str(out))
    return out


def _section(path) -> bytes:
    data = path.read_bytes()
    return data[data.index(b"\n{-#") + 1:]


def test_inline_export_is_checked_on_its_ir_lines(inline_export):
    res = run_cli("--check", inline_export)
    assert res.returncode == 1
    found = res.concise()
    assert [int(m["line"]) for m in found] == ASSERT_LINES
    assert {m["code"] for m in found} == {"MLA001"}


def test_the_resource_section_is_never_decoded(inline_export):
    """Bytes that are not UTF-8 inside a blob do not stop the check: the section is not read."""
    data = inline_export.read_bytes()
    at = data.index(b'"0x04000000') + 20
    inline_export.write_bytes(data[:at] + b"\xff\xfe" + data[at + 2:])
    res = run_cli("--check", inline_export)
    assert res.returncode == 1 and len(res.concise()) == 4, res.stderr


def test_truncated_export_says_its_resources_are_not_closed(inline_export):
    data = inline_export.read_bytes()
    inline_export.write_bytes(data[: len(data) - 5000])  # cut inside the blob
    res = run_cli("--check", "--output-format", "concise", inline_export)
    assert res.returncode == 1
    errors = [m for m in res.concise() if m["code"] == "MLS001"]
    section_line = data[: data.index(b"\n{-#") + 1].count(b"\n") + 1
    assert len(errors) == 1 and int(errors[0]["line"]) == section_line
    assert "never closed" in errors[0]["msg"]
    assert len([m for m in res.concise() if m["code"] == "MLA001"]) == 4


@pytest.mark.parametrize("mode", ["strip", "assume"])
def test_fix_copies_the_resources_byte_for_byte(inline_export, mode):
    before = _section(inline_export)
    inline_export.chmod(0o640)
    res = run_cli("--check", "--fix", "--fix-mode", mode, inline_export)
    assert res.returncode == 0, res.stdout + res.stderr
    after = inline_export.read_bytes()
    assert hashlib.sha256(_section(inline_export)).digest() == hashlib.sha256(before).digest()
    ir = after[: after.index(b"\n{-#")]
    assert b"cf.assert %" not in ir
    assert (b"= util.assume.int" in ir) == (mode == "assume")
    assert inline_export.stat().st_mode & 0o777 == 0o640
    parsed = subprocess.run([BIN / "iree-opt", inline_export, "-o", "/dev/null"], capture_output=True, text=True)
    assert parsed.returncode == 0, parsed.stderr
    assert [p.name for p in inline_export.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_diff_shows_only_the_ir(inline_export):
    res = run_cli("--check", "--diff", inline_export)
    assert res.returncode == 1
    assert "cf.assert" in res.stdout and "0x04000000" not in res.stdout


# -- the server, with a client that sends whole texts ----------------------------------------
@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "mlir_lsp_asserts"]))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(capabilities=client_capabilities("neovim")))
    yield
    await lsp_client.shutdown_session()


async def _publish(client: LanguageClient, uri: str, version: int) -> list[types.Diagnostic]:
    while True:
        params = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if params.uri == uri and params.version == version:
            return [d for d in params.diagnostics if d.source == "mlir-lsp"]


@pytest.mark.asyncio
async def test_server_checks_an_export_sent_whole(client: LanguageClient, big_inline_export):
    text = big_inline_export.read_text()
    assert len(text) > 20_000_000
    uri = big_inline_export.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="mlir", version=1, text=text)))
    diags = await _publish(client, uri, 1)
    lines = [a + 1 for a in ASSERT_LINES]  # the big global's line comes first
    assert sorted(d.range.start.line + 1 for d in diags) == lines
    assert all(d.code == "MLA001" for d in diags)

    # a quick fix next to an assert, and an edit there
    at = types.Position(lines[0] - 1, 6)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri), types.Range(at, at), types.CodeActionContext(diagnostics=diags[:1])))
    assert any("util.assume.int" in a.title for a in actions)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [types.TextDocumentContentChangePartial(
            types.Range(types.Position(lines[0] - 1, 0), types.Position(lines[0] - 1, 0)), "// ")]))
    assert len(await _publish(client, uri, 2)) == 3

    # hover on a line of the weights: an answer, not an error
    section_line = text[: text.index("\n{-#") + 1].count("\n")
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(section_line + 3, 10)))
    assert hover is None or "0x" not in str(hover.contents)[:200]

    # an edit inside the weights (rare): the document is read again, the findings stay
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=3),
        [types.TextDocumentContentChangePartial(types.Range(types.Position(section_line + 3, 0),
                                                            types.Position(section_line + 3, 0)), " ")]))
    assert len(await _publish(client, uri, 3)) == 3


@pytest.mark.asyncio
async def test_server_reports_a_truncated_export(client: LanguageClient, big_inline_export):
    text = big_inline_export.read_text()[:-100_000]
    uri = big_inline_export.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="mlir", version=1, text=text)))
    diags = await _publish(client, uri, 1)
    section_line = text[: text.index("\n{-#") + 1].count("\n")
    assert [d.range.start.line for d in diags if "never closed" in d.message] == [section_line]
    assert len([d for d in diags if d.code == "MLA001"]) == 4


def test_a_large_document_message_has_its_section_lifted_before_json(big_inline_export):
    """The server's message reader takes the section out of the raw didOpen bytes; the document
    gets it back whole (here: the same text), and JSON never parses the 20 MB of hex."""
    import json

    from mlir_lsp_asserts.server.held_resources import lift
    from mlir_lsp_asserts.server.open_documents import OpenDocument

    text = big_inline_export.read_text()
    for key_order in ("method-first", "method-last"):
        doc = {"textDocument": {"uri": "file:///m.mlir", "languageId": "mlir", "version": 1, "text": text}}
        msg = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": doc}
        if key_order == "method-last":
            msg = {"jsonrpc": "2.0", "params": doc, "method": "textDocument/didOpen"}
        body = json.dumps(msg).encode()
        lifted = lift(body)
        assert len(lifted) < 200_000 < len(body)
        received = json.loads(lifted)["params"]["textDocument"]["text"]
        opened = OpenDocument("file:///m.mlir", 1, received, None)
        assert opened.tail is not None and opened.tail.escaped and opened.tail.closed
        assert opened.snapshot().source == text
        assert opened.live.finding_count() == 4
    other = json.dumps({"jsonrpc": "2.0", "id": 3, "result": {"text": text}}).encode()
    assert lift(other) is other  # not a document's text: left alone


@pytest.mark.asyncio(loop_scope="function")
async def test_workspace_scan_checks_an_export_above_the_size_cap_and_leaves_no_process(tmp_path, big_inline_export):
    """A closed export of 20 MB whose IR is 120 KB: `workspace.maxFileMegabytes` (here 1) counts
    the IR, so the scan (in its own child process) publishes its findings; after shutdown no
    process of the server is left."""
    import asyncio
    import time

    from pytest_lsp import make_test_lsp_client

    folder = big_inline_export.parent
    client = make_test_lsp_client()
    await client.start_io(sys.executable, "-m", "mlir_lsp_asserts")
    server_pid = client._server.pid
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=folder.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name="ws")],
        initialization_options={"mlirLsp": {"workspace": {"maxFileMegabytes": 1}}}))
    uri = big_inline_export.resolve().as_uri()
    try:
        deadline = time.monotonic() + 60
        while not client.diagnostics.get(uri) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert sorted(d.range.start.line + 1 for d in client.diagnostics.get(uri, ())) == [a + 1 for a in ASSERT_LINES]
        children = _children(server_pid)
        assert children, "the scan's checks run in a child process of the server"
    finally:
        await client.shutdown_session()
        await client.stop()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in children) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert not [p for p in children if _alive(p)]


def _children(pid: int) -> list[int]:
    from pathlib import Path

    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        kids = (task / "children").read_text().split()
        out.extend(int(k) for k in kids)
    return out


def _alive(pid: int) -> bool:
    from pathlib import Path

    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"
    except OSError:
        return False

"""The server over stdio (pytest-lsp) beside this venv's IREE release: the findings, a quick fix
whose result this release's parser accepts, and this release's parser diagnostics."""

from __future__ import annotations

import re
import sys

import pytest
import pytest_lsp
from compat_helpers import parse_error
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from conftest import REPRO, write

pytestmark = pytest.mark.compat


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "mlir_lsp_asserts"]))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(capabilities=client_capabilities("neovim")))
    yield
    await lsp_client.shutdown_session()


async def publish(client: LanguageClient, uri: str, want) -> list[types.Diagnostic]:
    """The diagnostics of the first publish for `uri` that `want` accepts."""
    while True:
        params = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if params.uri == uri and want(params.diagnostics):
            return params.diagnostics


def apply(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.split("\n")
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln) + 1)
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        a = starts[e.range.start.line] + e.range.start.character
        b = starts[e.range.end.line] + e.range.end.character
        text = text[:a] + e.new_text + text[b:]
    return text


@pytest.mark.asyncio(loop_scope="function")
async def test_findings_and_assume_quick_fix(client: LanguageClient, tmp_path):
    uri = (tmp_path / "repro.mlir").as_uri()
    text = REPRO.read_text()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="mlir", version=1, text=text)))
    diags = await publish(client, uri, lambda ds: any(d.source == "mlir-lsp" for d in ds))
    mla = [d for d in diags if d.code == "MLA001"]
    assert [d.range.start.line for d in mla] == [17, 19, 28, 30]
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri), range=mla[0].range,
        context=types.CodeActionContext(diagnostics=[mla[0]])))
    assume = next(a for a in actions if a.is_preferred)
    assert "util.assume.int <umin = 0, umax = 76>" in assume.title
    if assume.edit is None:  # the client's capabilities let the server resolve it lazily
        assume = await client.code_action_resolve_async(assume)
    assert assume.edit is not None and assume.edit.document_changes
    fixed = apply(text, assume.edit.document_changes[0].edits)
    assert len(re.findall(r"= util\.assume\.int ", fixed)) == 1
    assert parse_error(write(tmp_path, "fixed.mlir", fixed)) is None  # this release's parser takes it


@pytest.mark.asyncio(loop_scope="function")
async def test_this_releases_parser_diagnostics(client: LanguageClient, tmp_path):
    uri = (tmp_path / "bad.mlir").as_uri()
    text = "func.func @f(%a: i32) -> i64 {\n  return %a : i32\n}\n"
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="mlir", version=1, text=text)))
    diags = await publish(client, uri, lambda ds: any(d.source == "iree" for d in ds))
    (err,) = [d for d in diags if d.source == "iree"]
    assert err.severity == types.DiagnosticSeverity.Error and err.range.start.line == 1
    assert "return" in err.message or "type" in err.message

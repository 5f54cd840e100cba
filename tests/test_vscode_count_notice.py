"""The counts the server schedules (on open and save) reach the client as `mlirLsp/dispatchCounted`:
the VS Code status bar shows them instead of scheduling counts of its own (issue 29, defect 8)."""

from __future__ import annotations

import asyncio
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.test_dispatch_count import REPRO

COUNTED = "mlirLsp/dispatchCounted"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "mlir_lsp_asserts"]))
async def client(lsp_client: LanguageClient):
    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _refresh(params):
        pass

    params = types.InitializeParams(capabilities=client_capabilities("visual-studio-code"))
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


async def _counted(client: LanguageClient, uri: str):
    while True:  # (bounded by the caller's wait_for: no answer fails the test)
        p = await client.wait_for_notification(COUNTED)
        if p.uri == uri:
            return p


@pytest.mark.asyncio(loop_scope="function")
async def test_counts_the_server_schedules_are_announced(client: LanguageClient, tmp_path):
    path = tmp_path / "repro.mlir"
    path.write_text(REPRO.read_text())
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="mlir", version=3, text=path.read_text())))
    opened = await asyncio.wait_for(_counted(client, uri), 120)  # counted on open (trigger "save")
    assert opened.version == 3 and opened.flow_dispatches == 4 and opened.what_if.flow_dispatches == 3
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
    saved = await asyncio.wait_for(_counted(client, uri), 120)  # and again on save, nobody asking
    assert saved.version == 3 and saved.flow_dispatches == 4

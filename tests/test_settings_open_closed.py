"""One order of settings for every file the server checks (issue 29, defect 2): a file's
findings are the same open in the editor and closed (the workspace scan, the watcher after
close, `mlirLsp/checkFromDisk`). The order: the file's config file (`mlir-lsp.toml`, or
`pyproject.toml` `[tool.mlir-lsp]`, found as `mlir-lsp --check` finds it) when it has one,
else the editor's settings (`mlirLsp.*`), else the defaults."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types

from reliability_lsp import REPRO, forget_published, lsp_server, open_and_wait, published_again

HOST_ASSERT = '\nfunc.func @host(%ok: i1) {\n  cf.assert %ok, "checked on the host"\n  return\n}\n'
TEXT = REPRO.read_text() + HOST_ASSERT  # four MLA001 and one MLA003


async def scanned(lsp, uri: str):
    """The diagnostics the workspace scan published for `uri` (perhaps before we asked)."""
    while not lsp.diagnostics.get(uri):
        await asyncio.wait_for(lsp.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 120)
    return lsp.diagnostics[uri]


def codes(diags) -> list[str]:
    return sorted(str(d.code) for d in diags if d.source == "mlir-lsp")


@pytest.mark.asyncio(loop_scope="function")
async def test_editor_ignore_holds_for_open_and_closed_files(tmp_path):
    ws = tmp_path / "ws"
    (ws / "configured").mkdir(parents=True)
    plain, configured = ws / "plain.mlir", ws / "configured" / "c.mlir"
    plain.write_text(TEXT)
    configured.write_text(TEXT)
    # A config file wins over the editor: this folder reports every rule, as the CLI would.
    (ws / "configured" / "mlir-lsp.toml").write_text('select = ["ALL"]\n')
    options = {"mlirLsp": {"ignore": ["MLA003"]}}
    expected = {plain.as_uri(): ["MLA001"] * 4, configured.as_uri(): ["MLA001"] * 4 + ["MLA003"]}
    async with lsp_server(tmp_path, folders=[ws], options=options) as lsp:
        for uri, want in expected.items():  # the workspace scan publishes the closed files
            assert codes(await scanned(lsp, uri)) == want, ("closed (scan)", uri)
        for uri, want in expected.items():
            assert codes(await open_and_wait(lsp, uri, TEXT)) == want, ("open", uri)
            forget_published(lsp, uri)
            lsp.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
            assert codes(await published_again(lsp, uri)) == want, ("closed again (watcher)", uri)
            forget_published(lsp, uri)
            res = await lsp.protocol.send_request_async("mlirLsp/checkFromDisk", {"uri": uri, "force": True})
            assert codes(await published_again(lsp, uri)) == want, ("checkFromDisk", uri, res)

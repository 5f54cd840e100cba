"""The workspace watcher's life (issue 29, defect 9): turned off and on again with
`mlirLsp.workspace.watch`, it scans and watches again, over stdio."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types

from reliability_lsp import REPRO, forget_published, lsp_server, published_again

HOST_ASSERT = '\nfunc.func @host(%ok: i1) {\n  cf.assert %ok, "checked on the host"\n  return\n}\n'


def watch(on: bool) -> types.DidChangeConfigurationParams:
    return types.DidChangeConfigurationParams(settings={"mlirLsp": {"workspace": {"watch": on}}})


@pytest.mark.asyncio(loop_scope="function")
async def test_watch_turned_off_and_on_again_watches_again(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    f = ws / "f.mlir"
    f.write_text(REPRO.read_text())
    uri = f.as_uri()
    async with lsp_server(tmp_path, folders=[ws], client="neovim") as lsp:  # neovim: settings pushed
        while not lsp.diagnostics.get(uri):  # the first scan
            await asyncio.wait_for(lsp.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 90)
        lsp.workspace_did_change_configuration(watch(False))
        forget_published(lsp, uri)
        lsp.workspace_did_change_configuration(watch(True))
        assert len(await published_again(lsp, uri)) == 4  # scanned again
        forget_published(lsp, uri)
        f.write_text(REPRO.read_text() + HOST_ASSERT)  # and watched: a write is checked
        assert sorted(str(d.code) for d in await published_again(lsp, uri)) == ["MLA001"] * 4 + ["MLA003"]


def scan_begins(lsp) -> int:
    """How many workspace scans the client was shown as `$/progress` (their begin reports)."""
    return sum(1 for values in lsp.progress_reports.values() for v in values
               if isinstance(v, types.WorkDoneProgressBegin) and v.title.startswith("mlir-lsp: checking"))


@pytest.mark.asyncio(loop_scope="function")
async def test_every_scan_shows_its_progress(tmp_path):
    """A second scan (watch turned off and on) shows its progress too: its token was a constant
    per process, which pygls kept registered after the first scan's end and refused to create again."""
    ws = tmp_path / "ws"
    ws.mkdir()
    f = ws / "f.mlir"
    f.write_text(REPRO.read_text())
    uri = f.as_uri()
    async with lsp_server(tmp_path, folders=[ws], client="neovim") as lsp:
        while not lsp.diagnostics.get(uri):
            await asyncio.wait_for(lsp.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 90)
        lsp.workspace_did_change_configuration(watch(False))
        forget_published(lsp, uri)
        lsp.workspace_did_change_configuration(watch(True))
        await published_again(lsp, uri)  # the scan's begin is sent before its first publish, from the same thread
        assert scan_begins(lsp) == 2, lsp.progress_reports

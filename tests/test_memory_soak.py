"""The server's memory through many edits and saves with dispatch counts on (issue 29, defect 7):
after 500 edit-and-save cycles of the repro it stays within 20% of its memory after 50.

Each cycle is an edit (a new text: a new count, a new cache entry), a save (the count it
schedules), and the count asked for and waited on: no two cycles coalesce in the debounce, so
every cycle compiles once and caches its answer. The repro compiles in well under a second."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types

from reliability_lsp import REPRO, lsp_server, open_and_wait

CYCLES, EARLY = 500, 50


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


async def cycle(lsp, uri: str, version: int) -> None:
    line0 = types.Range(types.Position(0, 0), types.Position(0, 200))
    lsp.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        [types.TextDocumentContentChangePartial(range=line0, text=f"// cycle {version}")]))
    lsp.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
    count = await asyncio.wait_for(lsp.protocol.send_request_async("mlirLsp/dispatchCount", {"uri": uri}), 300)
    answer = count if isinstance(count, dict) else count._asdict()
    assert answer.get("flow_dispatches") == 4, (version, answer)  # the repro's four dispatches with its asserts


@pytest.mark.slow
@pytest.mark.e2e  # a soak: 500 real compiles
@pytest.mark.asyncio(loop_scope="function")
async def test_memory_after_500_edit_and_save_cycles_with_counts(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    f = ws / "repro.mlir"
    text = REPRO.read_text()
    assert len(text.split("\n", 1)[0]) < 200
    f.write_text(text)
    uri = f.as_uri()
    options = {"mlirLsp": {"dispatch": {"trigger": "save"}, "workspace": {"watch": False}}}
    async with lsp_server(tmp_path, folders=[ws], options=options) as lsp:
        pid = lsp._server.pid
        await open_and_wait(lsp, uri, text)
        for version in range(2, EARLY + 2):
            await cycle(lsp, uri, version)
        early = rss_kib(pid)
        for version in range(EARLY + 2, CYCLES + 2):
            await cycle(lsp, uri, version)
        late = rss_kib(pid)
    print(f"server RSS after {EARLY} cycles {early / 1024:.1f} MiB, after {CYCLES} {late / 1024:.1f} MiB")
    assert late <= early * 1.2, (early, late)

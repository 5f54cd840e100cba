"""Files a client never syncs (VS Code: above 50 MB), over stdio: `mlirLsp/checkFromDisk`,
`mlirLsp/fixOnDisk`, `mlirLsp/diskFileClosed` (mlir_lsp_asserts/server/disk_files_feature.py).
The server cares about no size here, so a small file stands for a big one."""

from __future__ import annotations

import asyncio
import shutil
import sys

import pytest
from lsprotocol import types

from reliability_lsp import REPO, REPRO, lsp_server, open_and_wait

sys.path.insert(0, str(REPO / "bench"))
from inline_weights import make  # noqa: E402

NO_SCAN = {"mlirLsp": {"workspace": {"watch": False}}}  # only these requests publish


def _get(res, name):
    return res[name] if isinstance(res, dict) else getattr(res, name)


async def published(lsp, uri: str, timeout: float = 60):
    """The diagnostics of the next publish for `uri`."""
    while True:
        p = await asyncio.wait_for(lsp.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), timeout)
        if p.uri == uri:
            return p.diagnostics


@pytest.mark.asyncio(loop_scope="function")
async def test_check_and_fix_a_file_on_disk(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    original = tmp_path / "original.mlir"  # the repro exported with its weight inline
    make(str(REPRO), str(original))
    big = ws / "big model.mlir"  # a space: the URI is percent-encoded both ways
    shutil.copyfile(original, big)
    uri = big.as_uri()
    async with lsp_server(tmp_path, folders=[ws], options=NO_SCAN) as lsp:
        waiting = asyncio.ensure_future(published(lsp, uri))
        res = await lsp.protocol.send_request_async("mlirLsp/checkFromDisk", {"uri": uri})
        assert (_get(res, "findings"), _get(res, "fixable"), _get(res, "error")) == (4, 4, None), res
        assert _get(res, "uri") == uri and _get(res, "megabytes") == round(big.stat().st_size / 2**20, 1)
        diags = await waiting
        assert [d.code for d in diags] == ["MLA001"] * 4
        assert [d.range.start.line for d in diags] == [17, 19, 28, 30]
        assert all(d.source == "mlir-lsp" for d in diags)

        # Unchanged on disk: the same answer, not checked (nor published) again.
        again = await lsp.protocol.send_request_async("mlirLsp/checkFromDisk", {"uri": uri})
        assert _get(again, "findings") == 4

        # A file with a dispatch count on request, its text (weights too) read from disk: the
        # weight inline is a constant, so const-eval folds both gathers (4 with it a parameter).
        count = await lsp.protocol.send_request_async("mlirLsp/dispatchCount", {"uri": uri})
        assert _get(count, "flow_dispatches") == 2, count

        # The fix, as `--check --fix --fix-mode assume`: written on disk, what is left published.
        waiting = asyncio.ensure_future(published(lsp, uri))
        fixed = await lsp.protocol.send_request_async("mlirLsp/fixOnDisk", {"uri": uri, "mode": "assume"})
        assert (_get(fixed, "fixed"), _get(fixed, "remaining"), _get(fixed, "error")) == (4, 0, None), fixed
        assert list(await waiting) == []
        text = big.read_text()
        assert "util.assume.int" in text and "cf.assert %" not in text
        resources = original.read_text()[original.read_text().index("{-#"):]
        assert text.endswith(resources)  # the weights copied through
        res = await lsp.protocol.send_request_async("mlirLsp/checkFromDisk", {"uri": uri})
        assert _get(res, "findings") == 0
        nothing = await lsp.protocol.send_request_async("mlirLsp/fixOnDisk", {"uri": uri, "mode": "strip"})
        assert (_get(nothing, "fixed"), _get(nothing, "remaining"), _get(nothing, "error")) == (0, 0, None)

        # Changed on disk (by someone else): checked again.
        shutil.copyfile(original, big)
        waiting = asyncio.ensure_future(published(lsp, uri))
        res = await lsp.protocol.send_request_async("mlirLsp/checkFromDisk", {"uri": uri})
        assert _get(res, "findings") == 4 and len(await waiting) == 4

        # Closed in the editor: its findings go.
        waiting = asyncio.ensure_future(published(lsp, uri))
        lsp.protocol.notify("mlirLsp/diskFileClosed", {"uri": uri})
        assert list(await waiting) == []

        # Deleted: an error, and the findings cleared.
        await lsp.protocol.send_request_async("mlirLsp/checkFromDisk", {"uri": uri})
        big.unlink()
        waiting = asyncio.ensure_future(published(lsp, uri))
        res = await lsp.protocol.send_request_async("mlirLsp/checkFromDisk", {"uri": uri})
        assert "no such file" in _get(res, "error")
        assert list(await waiting) == []


@pytest.mark.asyncio(loop_scope="function")
async def test_disk_requests_refuse_what_they_must(tmp_path):
    """(Paths outside the workspace: tests/test_reliability_security.py.)"""
    ws = tmp_path / "ws"
    ws.mkdir()
    doc = ws / "a.mlir"
    shutil.copyfile(REPRO, doc)
    async with lsp_server(tmp_path, folders=[ws], options=NO_SCAN) as lsp:
        res = await lsp.protocol.send_request_async("mlirLsp/fixOnDisk", {"uri": doc.as_uri(), "mode": "delete"})
        assert "mode must be one of strip, assume" in _get(res, "error")
        res = await lsp.protocol.send_request_async("mlirLsp/checkFromDisk", {"uri": "untitled:Untitled-1"})
        assert "not a file URI" in _get(res, "error")
        # A document the client has open keeps its own diagnostics and is not written behind its back.
        await open_and_wait(lsp, doc.as_uri(), doc.read_text())
        for method in ("mlirLsp/checkFromDisk", "mlirLsp/fixOnDisk"):
            res = await lsp.protocol.send_request_async(method, {"uri": doc.as_uri(), "mode": "strip"})
            assert "open in the editor" in _get(res, "error"), (method, res)
        assert doc.read_text() == REPRO.read_text()


@pytest.mark.asyncio(loop_scope="function")
async def test_disk_check_reads_the_config_file_as_the_cli_does(tmp_path):
    ws = tmp_path / "ws"
    (ws / "configured").mkdir(parents=True)
    (ws / "broken").mkdir()
    configured, broken = ws / "configured" / "c.mlir", ws / "broken" / "b.mlir"
    shutil.copyfile(REPRO, configured)
    shutil.copyfile(REPRO, broken)
    (ws / "configured" / "mlir-lsp.toml").write_text('severity = {MLA001 = "error"}\n')
    (ws / "broken" / "mlir-lsp.toml").write_text('colour = "red"\n')
    async with lsp_server(tmp_path, folders=[ws], options=NO_SCAN) as lsp:
        waiting = asyncio.ensure_future(published(lsp, configured.as_uri()))
        await lsp.protocol.send_request_async("mlirLsp/checkFromDisk", {"uri": configured.as_uri()})
        assert {d.severity for d in await waiting} == {types.DiagnosticSeverity.Error}
        # A broken config file: the answer's error, and one diagnostic that says it.
        waiting = asyncio.ensure_future(published(lsp, broken.as_uri()))
        res = await lsp.protocol.send_request_async("mlirLsp/checkFromDisk", {"uri": broken.as_uri()})
        assert "unknown setting(s) colour" in _get(res, "error")
        diags = await waiting
        assert len(diags) == 1 and "colour" in diags[0].message and diags[0].range.start.line == 0

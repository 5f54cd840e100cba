"""The server's diagnostics carry what the dispatch preview measured (real iree-compile, over
real LSP): once the what-if for a document's version is done, each MLA001 message names its
dispatch and what removing the asserts saves; an edit drops the notes until the next preview; with
`measuredSeverity` the findings of a file whose what-if saves nothing are information."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types

from conftest import REPRO
from reliability_lsp import lsp_server, open_and_wait

W, INFO = types.DiagnosticSeverity.Warning, types.DiagnosticSeverity.Information


async def _published(lsp, uri: str, pred, timeout: float = 120):
    async def wait():
        while True:
            p = await lsp.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
            if p.uri == uri and pred(p):
                return p
    return await asyncio.wait_for(wait(), timeout)


def _mla001(p) -> list[types.Diagnostic]:
    return [d for d in p.diagnostics if d.code == "MLA001"]


def _measured(p) -> bool:
    return any("; measured with " in d.message for d in _mla001(p))


@pytest.mark.asyncio(loop_scope="function")
async def test_notes_follow_the_preview_of_the_version_they_measured(tmp_path):
    async with lsp_server(tmp_path) as lsp:
        path = tmp_path / "repro.mlir"
        path.write_text(REPRO.read_text())
        uri = path.as_uri()
        first = await open_and_wait(lsp, uri, path.read_text())
        plain = {d.range.start.line: d.message for d in first if d.code == "MLA001"}
        assert sorted(plain) == [17, 19, 28, 30] and not any("measured" in m for m in plain.values())

        p = await _published(lsp, uri, _measured)  # the preview started on open has finished
        got = {d.range.start.line: d for d in _mla001(p)}
        assert p.version == 1 and sorted(got) == sorted(plain)
        assert got[28].message == (plain[28] + "; measured with profile default: in dispatch "
                                   "_initializer_1_dispatch_0, which exists only because of asserts; "
                                   "removing the asserts in this file saves 1 dispatch (4 -> 3)")
        assert "in dispatch _initializer_0_dispatch_0, which stays with the asserts removed" in got[17].message
        assert {d.severity for d in got.values()} == {W}
        # The quick fixes name the diagnostic as shown, note included.
        actions = await lsp.text_document_code_action_async(types.CodeActionParams(
            types.TextDocumentIdentifier(uri), got[28].range, types.CodeActionContext(diagnostics=[got[28]])))
        quick = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
        assert len(quick) == 2 and all(a.diagnostics[0].message == got[28].message for a in quick)

        # An edit: the publish for version 2 comes without the notes of version 1's preview.
        end = types.Position(len(path.read_text().split("\n")) - 1, 0)
        lsp.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [types.TextDocumentContentChangePartial(range=types.Range(end, end), text="// edited\n")]))
        p = await _published(lsp, uri, lambda p: p.version == 2)
        assert len(_mla001(p)) == 4 and not _measured(p)
        # Saved: the preview runs again for version 2, and the notes are back.
        lsp.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
        p = await _published(lsp, uri, lambda p: p.version == 2 and _measured(p))
        assert all(d.message.endswith("saves 1 dispatch (4 -> 3)") for d in _mla001(p))


@pytest.mark.asyncio(loop_scope="function")
async def test_measured_severity_lowers_findings_that_cost_nothing(tmp_path):
    # The repro with one gather: nothing for the asserts to keep apart, so they cost nothing (at
    # O3 the flags alone would say so: tests/test_strip_assertions.py).
    options = {"mlirLsp": {"measuredSeverity": True}}
    lines = REPRO.read_text().split("\n")
    single = "\n".join(lines[:23] + lines[34:]).replace("arith.mulf %r3", "arith.mulf %r1")
    async with lsp_server(tmp_path, options=options) as lsp:
        uri = (tmp_path / "single.mlir").as_uri()
        first = await open_and_wait(lsp, uri, single)
        assert {d.severity for d in first if d.code == "MLA001"} == {W}  # not measured yet
        p = await _published(lsp, uri, _measured)
        assert len(_mla001(p)) == 2 and {d.severity for d in _mla001(p)} == {INFO}
        for d in _mla001(p):
            assert "; measured with profile default: " in d.message
            assert d.message.endswith("removing the asserts in this file saves 0 dispatches (3 -> 3)")
        hover = await lsp.text_document_hover_async(types.HoverParams(
            types.TextDocumentIdentifier(uri), types.Position(17, 6)))
        assert "**MLA001 assert-in-linalg-region** (information)" in hover.contents.value
        assert "removing this file's asserts saves 0 dispatches" in hover.contents.value

        # The setting off: warnings again, with the notes kept.
        lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"mlirLsp": {**options["mlirLsp"], "measuredSeverity": False}}))
        p = await _published(lsp, uri, lambda p: _measured(p) and {d.severity for d in _mla001(p)} == {W}, 30)
        assert len(_mla001(p)) == 2

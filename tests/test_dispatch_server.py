"""The server's dispatch features with the real iree-compile: attribution lenses and their
refresh when a count finishes, `mlirLsp/dispatchIR` / `mlirLsp.showDispatchIR`, compiler errors
as diagnostics."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from conftest import SEED
from tests.reliability_lsp import lsp_server, open_and_wait
from tests.test_dispatch_count import REPRO


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "mlir_lsp_asserts"]))
async def client(lsp_client: LanguageClient, tmp_path_factory):
    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _refresh(params):
        pass

    params = types.InitializeParams(capabilities=client_capabilities("visual-studio-code"))
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


def _open(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="mlir", version=version, text=text)))


async def _publish(client: LanguageClient, uri: str, pred):
    while True:
        p = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if p.uri == uri and pred(p):
            return p


async def _lens_titles(client: LanguageClient, uri: str) -> set[tuple[int, str]]:
    """(0-based line, title) of the document's code lenses."""
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(types.TextDocumentIdentifier(uri)))
    return {(lens.range.start.line, lens.command.title) for lens in lenses}


@pytest.mark.asyncio(loop_scope="function")
async def test_attribution_lenses_and_dispatch_ir(client: LanguageClient, tmp_path):
    path = tmp_path / "repro.mlir"
    path.write_text(REPRO.read_text())
    uri = path.as_uri()
    _open(client, uri, path.read_text())
    result = await client.protocol.send_request_async("mlirLsp/dispatchCount", {"uri": uri})
    assert result.flow_dispatches == 4 and result.what_if.flow_dispatches == 3
    (extra,) = result.what_if.only_because_of_asserts
    assert extra.name == "_initializer_1_dispatch_0" and extra.location.line == 24
    assert len(result.attribution.dispatches) == 4

    titles = await _lens_titles(client, uri)
    assert (0, "4 dispatches (default), 3 with the asserts removed (-1)") in titles
    assert (5, "@main: 4 dispatches (2 hoisted into initializers)") in titles
    assert (23, "dispatch _initializer_1_dispatch_0 exists only because of cf.assert: gone with the asserts "
                "removed") in titles

    ir = await client.protocol.send_request_async("mlirLsp/dispatchIR", {"uri": uri})
    assert ir.text.count("flow.dispatch.workgroups(") == 4 and "loc(" in ir.text
    assert Path(ir.path).read_text() == ir.text
    same = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="mlirLsp.showDispatchIR", arguments=[uri]))
    assert same["text"] == ir.text and same["path"] == ir.path
    missing = await client.protocol.send_request_async("mlirLsp/dispatchIR", {"uri": "file:///nope.mlir"})
    assert missing.path is None and missing.text == "" and "not open" in missing.error


@pytest.mark.asyncio(loop_scope="function")
async def test_compile_errors_are_diagnostics_until_a_compile_succeeds(client: LanguageClient, tmp_path):
    uri = (tmp_path / "broken.mlir").as_uri()
    bad = "func.func @f() {\n  %0 = arith.constant 1 : i32\n  return %0 : i32\n}\n"
    _open(client, uri, bad)  # the open starts a compile; its failure is published
    p = await _publish(client, uri, lambda p: any(d.source == "iree-compile" for d in p.diagnostics))
    (d,) = [d for d in p.diagnostics if d.source == "iree-compile"]
    assert p.version == 1 and d.severity == types.DiagnosticSeverity.Error
    assert (d.range.start.line, d.range.start.character) == (2, 2)
    assert "'func.return' op has 1 operands" in d.message
    res = await client.protocol.send_request_async("mlirLsp/dispatchCount", {"uri": uri})
    assert "iree-compile failed (exit 1) at line 3" in res.error and res.compile_errors[0].line == 3

    good = "func.func @f() -> i32 {\n  %0 = arith.constant 1 : i32\n  return %0 : i32\n}\n"
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [types.TextDocumentContentChangeWholeDocument(text=good)]))
    res = await client.protocol.send_request_async("mlirLsp/dispatchCount", {"uri": uri})
    assert res.flow_dispatches == 0 and res.version == 2
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(types.TextDocumentIdentifier(uri)))
    assert not [d for d in report.items if d.source == "iree-compile"]


@pytest.mark.asyncio(loop_scope="function")
async def test_a_file_in_an_older_iree_syntax_gets_one_note_not_a_failure(client: LanguageClient, tmp_path):
    """The seed (another IREE release's `!flow.dispatch.tensor`): the compile cannot read it. The
    preview says so once, at information severity, and the lens says n/a; no error diagnostic."""
    uri = (tmp_path / SEED.name).as_uri()
    _open(client, uri, SEED.read_text())
    p = await _publish(client, uri, lambda p: any(d.source == "iree-compile" for d in p.diagnostics))
    (d,) = [d for d in p.diagnostics if d.source == "iree-compile"]
    assert d.severity == types.DiagnosticSeverity.Information
    assert "cannot read this file's IREE syntax" in d.message and "dispatch.tensor" in d.message
    assert d.range.start.line == 12
    res = await client.protocol.send_request_async("mlirLsp/dispatchCount", {"uri": uri})
    assert res.unsupported_syntax is True and res.error.startswith("n/a (older IREE syntax)")
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(uri)))
    assert lenses[0].command.title == "mlir-lsp: dispatches: n/a (older IREE syntax)"


@pytest.mark.asyncio(loop_scope="function")
@pytest.mark.parametrize("client_name, refresh_support", [("visual-studio-code", True), ("neovim", False)])
async def test_code_lenses_refreshed_when_a_count_finishes(tmp_path, client_name, refresh_support):
    """The top code lens offers the count; run from it, the count ends with a
    workspace/codeLens/refresh request, so that a client like VS Code asks for the lenses again
    and shows the count. A client that does not declare refreshSupport (Neovim) gets none."""
    options = {"mlirLsp": {"dispatch": {"trigger": "manual"}}}
    async with lsp_server(tmp_path, client=client_name, options=options) as lsp:
        caps = lsp.capabilities.workspace.code_lens
        assert bool(caps and caps.refresh_support) == refresh_support
        refreshes = []
        asked = asyncio.Event()

        @lsp.feature(types.WORKSPACE_CODE_LENS_REFRESH)
        def _refresh(params):
            refreshes.append(params)
            asked.set()

        uri = (tmp_path / "repro.mlir").as_uri()
        await open_and_wait(lsp, uri, REPRO.read_text())

        async def top_lens() -> types.Command:
            lenses = await lsp.text_document_code_lens_async(types.CodeLensParams(types.TextDocumentIdentifier(uri)))
            return next(lens.command for lens in lenses if lens.range.start.line == 0)

        ask = await top_lens()
        assert ask.title == "mlir-lsp: count dispatches (iree-compile, default)" and not refreshes
        result = await asyncio.wait_for(lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command=ask.command, arguments=ask.arguments)), 120)
        assert result["flow_dispatches"] == 4
        if refresh_support:
            await asyncio.wait_for(asked.wait(), 60)
        # Asked after the count (as VS Code does on the refresh): the lens has the count. The
        # answer also comes after any refresh the count sent, so none came for Neovim's caps.
        assert (await top_lens()).title == "4 dispatches (default), 3 with the asserts removed (-1)"
        assert refreshes == ([None] if refresh_support else [])


@pytest.mark.asyncio(loop_scope="function")
async def test_lenses_against_a_baseline(client: LanguageClient, tmp_path):
    """Setting dispatch.baseline: the lenses say how the count differs from the baseline and
    mark the op whose dispatch is new, with its cause."""
    import subprocess

    from tests.test_dispatch_diff import fixed_copy

    path = tmp_path / "repro.mlir"
    fixed_copy(REPRO, path, tmp_path)
    made = subprocess.run([sys.executable, "-m", "mlir_lsp_asserts", "--dispatch-count", "--update-baseline",
                           "--baseline", "b.json", "repro.mlir"], cwd=tmp_path, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    path.write_text(REPRO.read_text())  # the asserts are back: one dispatch more than the baseline
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"mlirLsp": {"dispatch": {"baseline": str(tmp_path / "b.json"), "trigger": "manual"}}}))
    uri = path.as_uri()
    _open(client, uri, path.read_text())
    result = await client.protocol.send_request_async("mlirLsp/dispatchCount", {"uri": uri})
    assert result.baseline.delta == 1 and result.baseline.flow_dispatches == 3 and result.baseline.key == "repro.mlir"
    assert [e.name for e in result.baseline.new] == ["_initializer_1_dispatch_0"]
    titles = await _lens_titles(client, uri)
    assert (0, "4 dispatches (default), 3 with the asserts removed (-1); +1 vs baseline") in titles
    assert (5, "@main: 4 dispatches (2 hoisted into initializers) (+1 vs baseline)") in titles
    assert (23, "new vs baseline: dispatch _initializer_1_dispatch_0: holds cf.assert (MLA001 at lines 29, 31); "
                "hoisted initializer") in titles

    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"mlirLsp": {"dispatch": {"baseline": str(tmp_path / "missing.json"), "trigger": "manual"}}}))
    result = await client.protocol.send_request_async("mlirLsp/dispatchCount", {"uri": uri})
    assert "baseline file not found" in result.baseline.error
    titles = await _lens_titles(client, uri)
    (top,) = [title for line, title in titles if line == 0 and title != "show dispatch graph"]
    assert "; baseline: " in top and "missing.json: baseline file not found" in top
    assert not any(title.startswith("new vs baseline") for _line, title in titles)

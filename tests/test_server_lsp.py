"""The real server over stdio (pytest-lsp), with VS Code's and Neovim's client capabilities."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from conftest import SHARED

SEED = SHARED / "fixtures" / "seed" / "sdxl_clip_extra_dispatches.mlir"


@pytest_lsp.fixture(
    params=["visual-studio-code", "neovim"],
    config=ClientServerConfig(server_command=[sys.executable, "-m", "mlir_lsp_asserts"]),
)
async def client(request, lsp_client: LanguageClient):
    refreshes = []

    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _refresh(params):  # VS Code re-asks for code lenses on this request
        refreshes.append(params)

    params = types.InitializeParams(capabilities=client_capabilities(request.param))
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


def apply(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.split("\n")
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln) + 1)

    def off(p: types.Position) -> int:
        return starts[p.line] + p.character

    for e in sorted(edits, key=lambda e: off(e.range.start), reverse=True):
        text = text[: off(e.range.start)] + e.new_text + text[off(e.range.end):]
    return text


async def wait_publish(client: LanguageClient, uri: str, version: int, source: str = "mlir-lsp"):
    """Diagnostics of the first publish for `uri` at `version` (the server's own findings, or
    with source="iree" the one that adds the real parser's diagnostics)."""
    while True:
        params = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if params.uri != uri or params.version != version:
            continue
        if source == "iree" and not any(d.source == "iree" for d in params.diagnostics):
            continue
        return [d for d in params.diagnostics if d.source == "mlir-lsp"] if source == "mlir-lsp" else params.diagnostics


async def resolved(client: LanguageClient, action: types.CodeAction) -> types.CodeAction:
    """The action with its edit: VS Code's capabilities resolve it (the list carries none),
    Neovim's get it in the list."""
    caps = client.capabilities.text_document.code_action
    lazy = bool(caps.resolve_support and "edit" in caps.resolve_support.properties)
    assert (action.edit is None) == lazy
    return await client.code_action_resolve_async(action) if lazy else action


async def open_doc(client: LanguageClient, uri: str, text: str, version: int = 1):
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="mlir", version=version, text=text)))
    return await wait_publish(client, uri, version)


@pytest.mark.asyncio(loop_scope="function")
async def test_seed_diagnostics_and_assume_quick_fix(client: LanguageClient):
    uri = "file:///tmp/seed.mlir"
    text = SEED.read_text()
    diags = await open_doc(client, uri, text)
    mla = [d for d in diags if d.code == "MLA001"]
    assert [d.range.start.line for d in mla] == [23, 25, 54, 56]
    assert all(d.range.start.character == 8 for d in mla)
    assert all(d.severity == types.DiagnosticSeverity.Warning for d in mla)
    assert "index must be smaller than dim size" in mla[0].message
    assert mla[0].related_information[0].message == "enclosing `linalg.generic`"

    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri), range=mla[0].range,
        context=types.CodeActionContext(diagnostics=[mla[0]])))
    titles = [a.title for a in actions]
    assert "mlir-lsp (MLA001): rewrite to util.assume.int <umin = 0, umax = 76>" in titles
    assume = next(a for a in actions if "util.assume.int <umin" in a.title)
    assert assume.is_preferred
    # the others carry no isPreferred at all: Eglot takes `false` for set and offers the first
    assert [a.title for a in actions if a.is_preferred is not None] == [assume.title]
    edits = (await resolved(client, assume)).edit.document_changes[0].edits
    new_text = apply(text, edits)
    assert "%assumed_5 = util.assume.int %5<umin = 0, umax = 76> : index" in new_text
    assert "tensor.extract %1[%assumed_5, %6]" in new_text

    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(range=e.range, text=e.new_text)
                         for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                                         reverse=True)]))
    diags = await wait_publish(client, uri, 2)
    assert [d.range.start.line for d in diags if d.code == "MLA001"] == [49, 51]


@pytest.mark.asyncio(loop_scope="function")
async def test_incremental_edit_adds_and_removes_an_assert(client: LanguageClient):
    uri = "file:///tmp/edit.mlir"
    text = ("func.func @f(%a: index) -> index {\n"
            "  %c = arith.constant 3 : index\n"
            "  return %a : index\n}\n")
    diags = await open_doc(client, uri, text)
    assert list(diags) == []
    insert = '  %k = arith.cmpi ult, %a, %c : index\n  cf.assert %k, "small"\n'
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(2, 0), types.Position(2, 0)), text=insert)]))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    diags = client.diagnostics[uri]
    assert [(d.code, d.range.start.line) for d in diags] == [("MLA003", 3)]
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(2, 0), types.Position(4, 0)), text="")]))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[uri]) == []


@pytest.mark.asyncio(loop_scope="function")
async def test_fix_all_hover_and_definition(client: LanguageClient):
    uri = "file:///tmp/repro.mlir"
    text = (SHARED / "fixtures" / "repro" / "hoisted_gather.mlir").read_text()
    await open_doc(client, uri, text)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri),
        range=types.Range(types.Position(0, 0), types.Position(0, 0)),
        context=types.CodeActionContext(diagnostics=[], only=["source.fixAll.mlir-lsp"])))
    assert [a.kind for a in actions] == ["source.fixAll.mlir-lsp"]
    fixed = apply(text, (await resolved(client, actions[0])).edit.document_changes[0].edits)
    assert "cf.assert %" not in fixed and "arith.cmpi" not in fixed

    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(17, 6)))
    assert "MLA001" in hover.contents.value and "umin = 0, umax = 76" in hover.contents.value

    loc = await client.text_document_definition_async(types.DefinitionParams(
        types.TextDocumentIdentifier(uri), types.Position(27, 25)))  # %5 in the 2nd cmpi
    assert loc.range.start.line == 25


@pytest.mark.asyncio(loop_scope="function")
async def test_dispatch_count_request_and_code_lens(client: LanguageClient):
    uri = (SHARED / "fixtures" / "repro" / "hoisted_gather.mlir").as_uri()
    await open_doc(client, uri, (SHARED / "fixtures" / "repro" / "hoisted_gather.mlir").read_text())
    result = await client.protocol.send_request_async("mlirLsp/dispatchCount", {"uri": uri})
    assert result.flow_dispatches == 4
    assert result.what_if.flow_dispatches == 3
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(types.TextDocumentIdentifier(uri)))
    assert lenses[0].command.title == "4 dispatches (default), 3 with the asserts removed (-1)"


@pytest.mark.asyncio(loop_scope="function")
async def test_real_parser_diagnostics_and_old_syntax_said_once(client: LanguageClient):
    uri = "file:///tmp/bad.mlir"
    text = "func.func @f() -> i32 {\n  %0 = arith.constant 1 : i64\n  return %0 : i64\n}\n"
    await open_doc(client, uri, text)
    diags = await wait_publish(client, uri, 1, source="iree")
    (d,) = [d for d in diags if d.source == "iree"]
    assert d.severity == types.DiagnosticSeverity.Error and d.range.start.line == 2
    assert "doesn't match function result type" in d.message

    # An edit above it: the publish for the new version (before the next parse) already has the
    # parser's error where its line went, not dropped and not at the old line.
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(version=2, uri=uri),
        [types.TextDocumentContentChangePartial(types.Range(types.Position(1, 0), types.Position(1, 0)),
                                                "  // one\n  // two\n")]))
    while True:  # the first publish for version 2: the edit's own, not the next parse's
        params = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if params.uri == uri and params.version == 2:
            break
    assert [d.range.start.line for d in params.diagnostics if d.source == "iree"] == [4]

    seed = "file:///tmp/seed2.mlir"
    await open_doc(client, seed, SEED.read_text())
    diags = await wait_publish(client, seed, 1, source="iree")
    parser = [d for d in diags if d.source == "iree"]
    assert len(parser) == 1 and "another IREE release" in parser[0].message
    assert len([d for d in diags if d.code == "MLA001"]) == 4


@pytest.mark.asyncio(loop_scope="function")
async def test_semantic_tokens_pull_diagnostics_and_bytecode(client: LanguageClient, tmp_path):
    import subprocess

    path = SHARED / "fixtures" / "repro" / "hoisted_gather.mlir"
    uri = path.as_uri()
    await open_doc(client, uri, path.read_text())
    toks = await client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(types.TextDocumentIdentifier(uri)))
    data = toks.data
    assert len(data) % 5 == 0 and len(data) > 100
    # decode: the first token of line 18 (0-based 17) is `cf` (namespace) then `assert` (function)
    line = char = 0
    found = []
    for i in range(0, len(data), 5):
        line += data[i]
        char = data[i + 1] if data[i] else char + data[i + 1]
        found.append((line, char, data[i + 2], data[i + 3]))
    assert (17, 4, 2, 0) in found and (17, 7, 6, 1) in found
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(types.TextDocumentIdentifier(uri)))
    assert [d.code for d in report.items if d.source == "mlir-lsp"] == ["MLA001"] * 4
    bc = tmp_path / "r.mlirbc"
    subprocess.run([str(Path(sys.executable).parent / "iree-opt"), str(path), "--emit-bytecode", "-o", str(bc)],
                   check=True)
    res = await client.protocol.send_request_async("mlirLsp/bytecodeToText", {"uri": bc.as_uri()})
    assert res.isBytecode and "cf.assert" in res.text


@pytest.mark.asyncio(loop_scope="function")
async def test_dispatch_count_on_save_shows_in_lens_and_hover(client: LanguageClient, tmp_path):
    import asyncio

    path = tmp_path / "repro.mlir"
    path.write_text((SHARED / "fixtures" / "repro" / "hoisted_gather.mlir").read_text())
    uri = path.as_uri()
    await open_doc(client, uri, path.read_text())
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
    title = ""
    for _ in range(100):  # the compile runs in the background; the lens shows it when done
        lenses = await client.text_document_code_lens_async(types.CodeLensParams(types.TextDocumentIdentifier(uri)))
        title = lenses[0].command.title
        if "dispatches" in title and "count dispatches" not in title:
            break
        await asyncio.sleep(0.1)
    assert title == "4 dispatches (default), 3 with the asserts removed (-1)"
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(17, 6)))
    assert "saves 1 dispatch " in hover.contents.value
    # the second gather's assert: its dispatch is the hoisted initializer that exists only because of asserts
    second = next(i for i, ln in enumerate(path.read_text().split("\n")) if "cf.assert" in ln and i > 20)
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(second, 6)))
    assert "exists only because of asserts" in hover.contents.value, hover.contents.value

"""Issue 29, defect 3: a ranged `didChange` that inserts a large resource section.

The server's reader lifts the section out of any document message of 8 MB or more; a ranged
change must get it back as a whole-text one does: the server's copy is the client's text, the
counts compile it, and nothing stays held."""

from __future__ import annotations

import json

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

# the export with a 10 MB weight, and a client that sends ranged edits: test_weights_inline's
from test_weights_inline import ASSERT_LINES as REPRO_ASSERT_LINES
from test_weights_inline import _publish, big_inline_export, client  # noqa: F401 (fixtures)

ASSERT_LINES = [a + 1 for a in REPRO_ASSERT_LINES]  # the big global's line comes first


def _split(text: str) -> tuple[str, str]:
    """(the IR part without its last line end; that line end and the resource section: what a
    paste at the end of the IR inserts)."""
    at = text.index("\n{-#")
    return text[:at], text[at:]


def _insert_at_end(ir: str, section: str) -> types.TextDocumentContentChangePartial:
    end = types.Position(ir.count("\n"), len(ir) - ir.rfind("\n") - 1)
    return types.TextDocumentContentChangePartial(types.Range(end, end), section)


def test_a_ranged_change_gets_its_lifted_section_back_and_holds_nothing(big_inline_export):  # noqa: F811
    """In the process: the message's bytes lifted as the reader does, the change applied; the
    document is the client's text and the held table is empty again."""
    from mlir_lsp_asserts.server.held_resources import HELD, lift
    from mlir_lsp_asserts.server.open_documents import OpenDocument

    text = big_inline_export.read_text()
    ir, section = _split(text)
    assert len(section) > 10_000_000
    doc = OpenDocument("file:///m.mlir", 1, ir, None)
    assert doc.tail is None and doc.live.finding_count() == 4
    change = _insert_at_end(ir, section)
    msg = {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": "file:///m.mlir", "version": 2},
        "contentChanges": [{"range": {"start": {"line": change.range.start.line,
                                                "character": change.range.start.character},
                                      "end": {"line": change.range.end.line, "character": change.range.end.character}},
                            "text": section}]}}
    body = json.dumps(msg).encode()
    lifted = lift(body)
    assert len(lifted) < 1000 < len(body)  # the reader did lift it
    received = json.loads(lifted)["params"]["contentChanges"][0]
    doc.change([_insert_at_end(ir, received["text"])], 2)
    assert len(HELD.items) == 0, "the lifted section is still held"
    assert doc.snapshot().source == text
    assert doc.tail is not None and doc.tail.closed
    assert doc.live.finding_count() == 4


@pytest.mark.asyncio
async def test_server_takes_a_section_inserted_by_a_ranged_change(
        client: LanguageClient, big_inline_export):  # noqa: F811 (the fixtures imported above)
    """A client that sends ranged edits pastes a 20 MB resource section at the end of an open
    IR: the findings stay on their lines, an edit below the IR lands where the client put it, and
    the dispatch count compiles the client's text (with a marker line in its place the compile
    failed)."""
    text = big_inline_export.read_text()
    ir, section = _split(text)
    uri = big_inline_export.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="mlir", version=1, text=ir)))
    assert sorted(d.range.start.line + 1 for d in await _publish(client, uri, 1)) == ASSERT_LINES
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=2), [_insert_at_end(ir, section)]))
    assert sorted(d.range.start.line + 1 for d in await _publish(client, uri, 2)) == ASSERT_LINES

    # an edit in the IR, then the count of the whole text
    first = types.Position(ASSERT_LINES[0] - 1, 0)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=3),
        [types.TextDocumentContentChangePartial(types.Range(first, first), "// ")]))
    assert len(await _publish(client, uri, 3)) == 3
    result = await client.protocol.send_request_async("mlirLsp/dispatchCount", {"uri": uri})
    assert getattr(result, "error", None) is None, result.error

    # the same text sent whole (the path the server always took right) counts the same
    lines = text.splitlines(keepends=True)
    lines[ASSERT_LINES[0] - 1] = "// " + lines[ASSERT_LINES[0] - 1]
    whole = big_inline_export.with_name("whole.mlir")
    whole.write_text("".join(lines))
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=whole.as_uri(), language_id="mlir", version=1, text="".join(lines))))
    assert len(await _publish(client, whole.as_uri(), 1)) == 3
    reference = await client.protocol.send_request_async("mlirLsp/dispatchCount", {"uri": whole.as_uri()})
    assert getattr(reference, "error", None) is None, reference.error
    assert (result.flow_dispatches, result.function_dispatches) == (reference.flow_dispatches,
                                                                    reference.function_dispatches)

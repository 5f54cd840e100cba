"""Issue 37: a document of many small functions (one piece each) edited in one function. The
server keeps indexes of the pieces' first lines and of the pieces that hold findings instead of
walking every piece per edit (incremental/piece_index.py); whatever the edit, what it publishes
is what a whole check of the client's text finds, on the lines the client sees."""

from __future__ import annotations

import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from mlir_lsp_asserts.checker import check_text
from mlir_lsp_asserts.incremental import piece_index
from mlir_lsp_asserts.incremental.live_text import LiveText

BINARY = """  func.func @add_{i}(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xf32>) -> tensor<4x8xf32> {{
    %0 = tensor.empty() : tensor<4x8xf32>
    %1 = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}} ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%0 : tensor<4x8xf32>) {{
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %2 = arith.addf %in, %in_0 : f32
      linalg.yield %2 : f32
    }} -> tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }}
"""  # noqa: E501
GATHER = """  func.func @lookup_{i}(%ids: tensor<8xi64>, %w: tensor<77x8xf32>) -> tensor<8x8xf32> {{
    %c77 = arith.constant 77 : index
    %0 = tensor.empty() : tensor<8x8xf32>
    %1 = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}} ins(%ids : tensor<8xi64>) outs(%0 : tensor<8x8xf32>) {{
    ^bb0(%in: i64, %out: f32):
      %2 = arith.index_cast %in : i64 to index
      %3 = linalg.index 1 : index
      %4 = arith.cmpi slt, %2, %c77 : index
      cf.assert %4, "index must be smaller than dim size"
      %6 = tensor.extract %w[%2, %3] : tensor<77x8xf32>
      linalg.yield %6 : f32
    }} -> tensor<8x8xf32>
    return %1 : tensor<8x8xf32>
  }}
"""  # noqa: E501
FUNCTIONS = 1200  # ~1 MB: kept in pieces, one a function, in several blocks of the line index
GATHER_EVERY = 40
Pos = tuple[int, int]
ADDED = '      %t = arith.constant true\n      cf.assert %t, "added"\n'


def many_functions() -> str:
    parts = ["module @many {\n"]
    parts += [(GATHER if i % GATHER_EVERY == 7 else BINARY).format(i=i) for i in range(FUNCTIONS)]
    return "".join(parts) + "}\n"


def whole(text: str) -> list[tuple[str, int, int, int, int]]:
    return sorted((f.code, f.span.start_pos.line, f.span.start_pos.character, f.span.end_pos.line,
                   f.span.end_pos.character) for f in check_text(text, with_fixes=False).findings)


def lines_of(text: str, needle: str) -> list[int]:
    return [n for n, line in enumerate(text.split("\n")) if needle in line]


def line_start(text: str, line: int) -> int:
    return sum(len(x) + 1 for x in text.split("\n")[:line])


class Editor:
    """The client's copy of the text, edited as ranged changes are."""

    def __init__(self, text: str):
        self.text = text

    def change(self, start: tuple[int, int], end: tuple[int, int], new: str) -> tuple[Pos, Pos, str]:
        a = line_start(self.text, start[0]) + start[1]
        b = line_start(self.text, end[0]) + end[1]
        self.text = self.text[:a] + new + self.text[b:]
        return start, end, new


def edits(ed: Editor):
    """Edits in single functions of the document: each (start, end, new text), applied to `ed`."""
    add = lines_of(ed.text, "arith.addf")[3] + 1
    yield ed.change((add, 0), (add, 0), ADDED)  # an assert added near the top: 2 lines
    asserts = lines_of(ed.text, "cf.assert %4")
    yield ed.change((asserts[-5], 0), (asserts[-5], 0), "// ")  # one removed far below, no line moved
    middle = lines_of(ed.text, "tensor.empty")[700]
    yield ed.change((middle, 0), (middle + 1, 0), "")  # a line deleted in the middle (%0 undefined)
    yield ed.change((add, 0), (add + 2, 0), "")  # the added assert deleted again
    end = ed.text.count("\n") - 1  # the module's closing line
    yield ed.change((end, 0), (end, 0), GATHER.format(i=99999))  # a function typed at the end
    first = lines_of(ed.text, "func.func")[1]
    yield ed.change((first, 0), (first, 0), GATHER.format(i=99998) + "\n\n")  # and one near the top


def test_findings_follow_every_edit_across_blocks(monkeypatch):
    """In the process, with blocks of 4 pieces (split and merged by the edits): after each edit
    the document's findings are a whole check's, and every line maps to the piece holding it."""
    monkeypatch.setattr(piece_index, "BLOCK", 4)
    ed = Editor(many_functions())
    doc = LiveText(ed.text)
    assert len(doc.pieces) > FUNCTIONS
    before = whole(ed.text)
    assert len(before) == FUNCTIONS // GATHER_EVERY
    for start, end, new in edits(ed):
        doc.apply_change((start, end), new)
        assert doc.text == ed.text
        got = sorted((f.code, l0 + f.span.start_pos.line, f.span.start_pos.character, l0 + f.span.end_pos.line,
                      f.span.end_pos.character) for _i, l0, f in doc.findings())
        assert got == whole(ed.text)
        assert doc.finding_count() == len(got)
        for line in (0, start[0], start[0] + 3, ed.text.count("\n")):
            i = doc.piece_at_line(line)
            first = sum(p.newlines for p in doc.pieces[:i])
            assert first <= line < first + max(1, doc.pieces[i].newlines) or line == ed.text.count("\n")
    # the outlines a whole read leaves for later (finish_reading) were given before the first edit
    assert [(s.symbol, s.range[0][0]) for s in doc.symbols() if s.full_name == "func.func"] == [
        (line.split("@")[1].split("(")[0], n) for n, line in enumerate(ed.text.split("\n")) if "func.func @" in line]


# -- the server over stdio ---------------------------------------------------------------------
@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "mlir_lsp_asserts"]))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        initialization_options={"dispatch": {"enabled": False}, "parser": {"enabled": False}}))
    yield
    await lsp_client.shutdown_session()


async def published(client: LanguageClient, uri: str, version: int) -> list[tuple[str, int, int, int, int]]:
    while True:
        params = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if params.uri == uri and params.version == version:
            return sorted((str(d.code), d.range.start.line, d.range.start.character, d.range.end.line,
                           d.range.end.character) for d in params.diagnostics if d.source == "mlir-lsp")


@pytest.mark.asyncio
async def test_an_edit_in_one_function_publishes_the_right_findings(client: LanguageClient, tmp_path):
    """An assert added in one function, one removed in another, lines deleted and functions
    typed: each publish has the new finding, lacks the removed one, and keeps every other on the
    line it moved to (what a whole check of the client's text says)."""
    ed = Editor(many_functions())
    uri = (tmp_path / "many.mlir").as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="mlir", version=1, text=ed.text)))
    first = await published(client, uri, 1)
    assert first == whole(ed.text) and len(first) == FUNCTIONS // GATHER_EVERY
    asserts = lines_of(ed.text, "cf.assert")
    assert [f[1] for f in first] == asserts
    steps = edits(ed)
    version = 1
    for start, end, new in steps:
        version += 1
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [types.TextDocumentContentChangePartial(
                types.Range(types.Position(*start), types.Position(*end)), new)]))
        got = await published(client, uri, version)
        assert got == whole(ed.text), f"after edit {version - 1}"
        if version == 2:  # the added assert is found, the others below it moved down two lines
            added = lines_of(ed.text, '"added"')[0]
            assert [f[1] for f in got] == sorted([added, *(a if a < added else a + 2 for a in asserts)])
        if version == 3:  # one removed, the others kept where they were
            assert len(got) == len(first)
            assert sum(1 for line in ed.text.split("\n") if line.startswith("// ")) == 1

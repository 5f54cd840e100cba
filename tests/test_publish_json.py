"""The diagnostics a publish sends after edits (server/diagnostics_json.py): each piece of the
document keeps its findings' JSON, and an edit above them only moves their line numbers in that
text (`moved`). After any edit the publish must list what a fresh open of the new text lists, at
the same places, and its frame must say its exact length."""

from __future__ import annotations

import json

import pytest
from lsprotocol import types

from conftest import REPRO
from mlir_lsp_asserts.server.diagnostics_json import notification_frame, publish_params_json
from mlir_lsp_asserts.server.open_documents import OpenDocument

URI = "file:///m.mlir"


def _change(line: int, character: int, end_line: int, end_character: int, text: str):
    return types.TextDocumentContentChangePartial(
        types.Range(types.Position(line, character), types.Position(end_line, end_character)), text)


def _diagnostics(doc: OpenDocument) -> list[dict]:
    return json.loads(publish_params_json(doc))["diagnostics"]


def _apply(text: str, line: int, character: int, end_line: int, end_character: int, new: str) -> str:
    lines = text.split("\n")
    start = sum(len(x) + 1 for x in lines[:line]) + character
    end = sum(len(x) + 1 for x in lines[:end_line]) + end_character
    return text[:start] + new + text[end:]


COPIES = 64


def _many_functions() -> str:
    """The repro's global and function 64 times over (names changed): 150 KB, which the server
    keeps in pieces (live_text.PIECES_MIN_CHARS), so an edit in the first function leaves the
    others whole, only moved."""
    text = "".join(ln for ln in REPRO.read_text(encoding="utf-8").splitlines(keepends=True)
                   if not ln.startswith("//"))  # its heading names cf.assert: a document like that stays whole
    return "".join(text.replace("@w1", f"@w{i}").replace("@main", f"@main{i}") for i in range(COPIES))


# (where, what): lines added at the top, in the first function, lines taken away, an assert
# commented out (the first function's findings change, the others' only move), many lines on top
EDITS = [((0, 0, 0, 0), "// one\n// two\n// three\n"), ((8, 0, 8, 0), "\n\n"), ((1, 0, 3, 0), ""),
         ((13, 0, 13, 0), "// "), ((0, 0, 0, 0), "\n" * 40)]


@pytest.mark.parametrize("edit", EDITS, ids=["three-lines-on-top", "two-in-the-middle", "two-taken-away",
                                             "an-assert-commented-out", "forty-on-top"])
def test_a_publish_after_an_edit_lists_what_a_fresh_open_lists(edit):
    (line, char, end_line, end_char), new = edit
    text = _many_functions()
    doc = OpenDocument(URI, 1, text, None)
    before = _diagnostics(doc)  # renders each piece's findings: the next publish reuses them
    assert len(before) == 4 * COPIES and len(doc.live.pieces) > 1
    doc.change([_change(line, char, end_line, end_char, new)], 2)
    after = _diagnostics(doc)
    fresh = _diagnostics(OpenDocument(URI, 2, _apply(text, line, char, end_line, end_char, new), None))
    assert after == fresh
    assert [d["range"] for d in after] != [d["range"] for d in before] or new == ""


def test_a_frame_says_its_length_in_bytes():
    doc = OpenDocument(URI, 1, REPRO.read_text(encoding="utf-8").replace("dim size", "dim size \u00e9\u6a21"), None)
    frame = notification_frame("textDocument/publishDiagnostics", publish_params_json(doc))
    header, _, body = frame.partition(b"\r\n\r\n")
    assert header.startswith(b"Content-Length: ") and int(header.split(b"\r\n")[0][16:]) == len(body)
    message = json.loads(body)
    assert message["method"] == "textDocument/publishDiagnostics" and len(message["params"]["diagnostics"]) == 4
    assert any("\u00e9\u6a21" in d["message"] for d in message["params"]["diagnostics"])

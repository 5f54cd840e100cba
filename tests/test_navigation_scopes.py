"""Navigation knows every way MLIR binds a name (issue 39): function arguments, loop variables and
other header definitions, result lists over several lines, comments that are not code, names
bound again in nested regions, nested symbols and block labels. The real server over stdio, on
small files that `mlir-opt-22` accepts (tests/data/navigation)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import DATA
from navigation_diff import OURS, Client

FILES = DATA / "navigation"


@pytest.fixture(scope="module")
def server():
    c = Client(OURS)
    yield c
    c.close()


class Doc:
    def __init__(self, server: Client, name: str):
        self.server, self.path = server, FILES / name if "/" not in name else Path(name)
        self.text = self.path.read_text()
        self.lines = self.text.split("\n")
        self.uri = self.path.resolve().as_uri()
        server.notify("textDocument/didOpen", {"textDocument": {
            "uri": self.uri, "languageId": "mlir", "version": 1, "text": self.text}})

    def at(self, line: int, needle: str, nth: int = 0) -> tuple[int, int]:
        """(line, column) of the nth `needle` on line `line`, for a name: its sigil."""
        col = -1
        for _ in range(nth + 1):
            col = self.lines[line].index(needle, col + 1)
        return line, col

    def _ask(self, method: str, pos: tuple[int, int], **extra):
        return self.server.request(method, {"textDocument": {"uri": self.uri},
                                            "position": {"line": pos[0], "character": pos[1] + 1}, **extra})

    def definition(self, pos) -> tuple[int, int] | None:
        r = self._ask("textDocument/definition", pos)
        r = r[0] if isinstance(r, list) and r else r
        return (r["range"]["start"]["line"], r["range"]["start"]["character"]) if r else None

    def references(self, pos) -> list[tuple[int, int]]:
        r = self._ask("textDocument/references", pos, context={"includeDeclaration": True})
        return sorted((x["range"]["start"]["line"], x["range"]["start"]["character"]) for x in r or [])

    def hover(self, pos) -> str:
        r = self._ask("textDocument/hover", pos)
        return json.dumps(r["contents"]) if r else ""

    def symbols(self):
        def walk(items, depth=0):
            for s in items:
                yield depth, s["name"]
                yield from walk(s.get("children") or [], depth + 1)
        return list(walk(self.server.request("textDocument/documentSymbol", {"textDocument": {"uri": self.uri}})))


def test_function_arguments_have_definition_references_and_hover(server):
    d = Doc(server, "loops.mlir")
    m = d.at(0, "%m")
    assert d.definition(m) == m
    assert d.references(m) == [m, d.at(5, "%m"), d.at(10, "%m"), d.at(13, "%m"), d.at(14, "%m")]
    hover = d.hover(m)
    assert "memref<8x8xf32>" in hover and "argument #1" in hover


def test_loop_variables_and_header_definitions(server):
    d = Doc(server, "loops.mlir")
    i, acc = d.at(4, "%i"), d.at(4, "%acc")
    assert d.definition(i) == i and d.definition(acc) == acc
    assert d.references(i) == [i, d.at(5, "%i"), d.at(5, "%i", 1)]
    assert d.definition(d.at(6, "%acc")) == acc
    assert "f32" in d.hover(acc)
    # parenthesised loop variables: scf.parallel, affine.parallel, scf.forall and shared_outs
    p, q = d.at(9, "%p"), d.at(9, "%q")
    assert d.definition(d.at(10, "%p")) == p and d.definition(d.at(10, "%q")) == q
    assert d.references(q) == [q, d.at(10, "%q")]
    u, w = d.at(12, "%u"), d.at(12, "%w")
    assert d.definition(d.at(14, "%w")) == w
    assert d.references(u) == [u, d.at(13, "%u"), d.at(13, "%u", 1), d.at(14, "%u")]
    k, o = d.at(16, "%k"), d.at(16, "%o")
    assert d.definition(d.at(17, "%k")) == k and d.definition(d.at(17, "%o")) == o
    assert d.hover(k) and d.hover(o)


def test_a_result_list_over_several_lines(server):
    d = Doc(server, "loops.mlir")
    a0, a1 = d.at(19, "%a0"), d.at(20, "%a1")
    assert d.definition(a0) == a0 and d.definition(a1) == a1
    assert d.references(a1) == [a1]
    assert "scf.for" in d.hover(a1)
    # the loop's own iter_args named like values outside it are the loop's
    assert d.definition(d.at(22, "%x")) == d.at(21, "%x")


def test_a_repeated_operand_gives_every_occurrence(server):
    d = Doc(server, "loops.mlir")
    assert d.references(d.at(13, "%u", 1)) == [d.at(12, "%u"), d.at(13, "%u"), d.at(13, "%u", 1),
                                                 d.at(14, "%u")]


def test_comments_are_not_code(server):
    d = Doc(server, "scopes.mlir")
    assert d.references(d.at(2, "@mlp")) == [d.at(2, "@mlp")]
    bb2 = d.at(16, "^bb2")
    assert d.references(bb2) == [d.at(13, "^bb2"), bb2]
    init = d.at(2, "%init")
    assert d.references(init) == [init, d.at(5, "%init"), d.at(12, "%init")]


def test_a_name_bound_again_in_a_nested_region_is_another_value(server):
    d = Doc(server, "scopes.mlir")
    outer, inner = d.at(5, "%acc"), d.at(5, "%acc", 1)
    assert d.definition(d.at(6, "%acc")) == inner
    assert d.references(inner) == [inner, d.at(6, "%acc"), d.at(6, "%acc", 1)]
    assert d.definition(d.at(12, "%acc")) == outer
    assert d.references(outer) == [outer, d.at(12, "%acc")]
    # %t of the scf.if's region comes before the function's own %t: two values
    t = d.at(12, "%t")
    assert d.references(t) == [t, d.at(13, "%t")]
    assert d.references(d.at(10, "%t")) == [d.at(10, "%t")]


def test_nested_symbols(server):
    d = Doc(server, "nested_symbols.mlir")
    kernel1 = d.at(2, "@kernel1")
    assert d.definition(d.at(8, "@kernel1")) == kernel1
    assert d.definition(d.at(8, "@kernels")) == d.at(1, "@kernels")
    assert d.references(kernel1) == [kernel1, d.at(8, "@kernel1")]
    m = d.at(0, "@m")
    assert d.definition(m) == m
    assert "builtin.module" in d.hover(m)
    assert d.symbols() == [(0, "m"), (1, "kernels"), (2, "kernel1"), (1, "main")]


def test_hover_on_block_labels(server):
    d = Doc(server, "scopes.mlir")
    hover = d.hover(d.at(14, "^bb1"))
    assert "%x: f32" in hover and "^bb2" in hover  # its argument and its predecessor
    hover = d.hover(d.at(13, "^bb2"))
    assert "%y: f32" in hover and "Block #0" in hover


def test_comments_are_not_code_in_a_document_kept_in_pieces(server, tmp_path):
    """Over 128 KB the document is kept in pieces, one per top-level op, and a symbol's references
    are looked for in every piece: never in a comment."""
    body = "".join(f"  // calls @callee\n  func.func @f{n}(%a: i32) -> i32 {{\n    %r = func.call @callee(%a) : "
                   f"(i32) -> i32\n    return %r : i32\n  }}\n" for n in range(1500))
    path = tmp_path / "pieces.mlir"
    path.write_text("module {\n  func.func private @callee(i32) -> i32\n" + body + "}\n")
    assert path.stat().st_size > 128 * 1024
    d = Doc(server, str(path))
    refs = d.references(d.at(1, "@callee"))
    assert len(refs) == 1501
    assert not [r for r in refs if "//" in d.lines[r[0]]]


def test_document_symbols_of_a_document_kept_in_pieces_list_nested_symbols(server, tmp_path):
    body = "".join(f"  func.func @f{n}(%a: i32) -> i32 {{\n    return %a : i32\n  }}\n" for n in range(3000))
    kernels = "  gpu.module @kernels {\n    gpu.func @kernel1() kernel {\n      gpu.return\n    }\n  }\n"
    path = tmp_path / "pieces_symbols.mlir"
    path.write_text("module attributes {gpu.container_module} {\n" + kernels + body + "}\n")
    assert path.stat().st_size > 128 * 1024
    symbols = Doc(server, str(path)).symbols()
    assert symbols[:3] == [(0, "kernels"), (1, "kernel1"), (0, "f0")]

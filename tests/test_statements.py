"""Big blocks read statement by statement (syntax/statements.py) must read every statement
exactly as the full forward read does, and a check that reads only the statements holding
asserts must give the same findings and fixes as one that reads everything."""

from __future__ import annotations

import json

import pytest

from conftest import CORPUS, MODELS, REPRO, SEED
from mlir_lsp_asserts.checker import check_text
from mlir_lsp_asserts.fixes import fix_text
from mlir_lsp_asserts.syntax import statements
from mlir_lsp_asserts.syntax.op_tree import Op
from mlir_lsp_asserts.syntax.parsed_text import parse
from mlir_lsp_asserts.syntax.statements import BlockStatements


def _shape(o: Op):
    return (o.name, o.start, o.end, [[[_shape(c) for c in b.ops] for b in r.blocks] for r in o.regions])


def _accepted_corpus_files():
    ok: dict[tuple[str, str], list[bool]] = {}
    for line in (CORPUS / "ground_truth.jsonl").read_text().splitlines():
        d = json.loads(line)
        ok.setdefault((d["repo"], d["path"]), []).append(d["ok"])
    return [CORPUS / "files" / r / p for (r, p), oks in sorted(ok.items()) if all(oks)]


def _statement_mismatches(text: str) -> tuple[int, list[str]]:
    """Read every statement of every top-level op's one-block region both ways; compare."""
    full, lazy = parse(text, lazy=False), parse(text)
    by_start = {u.start: u for _c, u in lazy.units()}
    n, bad = 0, []
    for _c, u in full.units():
        lu = by_start[u.start]
        for (s, close), pairs, region in zip(lu.lazy_regions, lu.lazy_children, u.regions, strict=False):
            if len(region.blocks) != 1:
                continue
            hi = close - 1 if text[close - 1] == "}" else close
            pairs = statements.region_children(text, (s, close), pairs)  # recorded by the reader when large
            bs = BlockStatements(text, s + 1, hi, Op(lu.name, 0, 0, 0, [], lu.generic, lu.parent), pairs)
            for op in region.blocks[0].ops:
                n += 1
                got = bs.statement_at(op.start)
                # found from its first and from its last character alike
                if [_shape(g) for g in got] != [_shape(op)] or bs.statement_at(max(op.start, op.end - 1)) is not got:
                    bad.append(f"line {text.count(chr(10), 0, op.start) + 1}: {op.name}")
    return n, bad


def test_statements_read_alone_equal_the_full_read_on_the_corpus():
    files = [f for f in _accepted_corpus_files() if f.exists()]
    assert len(files) > 50
    total = 0
    for path in files:
        n, bad = _statement_mismatches(path.read_text(errors="replace"))
        assert not bad, (path, bad[:5])
        total += n
    assert total > 5000


@pytest.mark.parametrize("path", [MODELS / "sdxl_prompt_encoder.input.mlir", MODELS / "clip_l.torch.mlir", REPRO],
                         ids=lambda p: p.name)
def test_statements_read_alone_equal_the_full_read_on_exported_models(path):
    n, bad = _statement_mismatches(path.read_text())
    assert not bad, bad[:5]
    assert n > 10


def _findings(text: str):
    r = check_text(text)
    return [(f.code, f.span.start, f.span.end, f.message, f.assume_unavailable,
             [(x.title, x.mode, x.edits) for x in f.fixes]) for f in r.findings if f.code != "MLS001"]


@pytest.mark.parametrize("path", [MODELS / "sdxl_prompt_encoder.input.mlir", REPRO, SEED], ids=lambda p: p.name)
def test_reading_only_the_asserts_statements_gives_the_same_findings_and_fixes(path, monkeypatch):
    text = path.read_text()
    monkeypatch.setattr(statements, "BIG_BLOCK_CHARS", 10**12)
    full = _findings(text)
    fixed = [fix_text(check_text(text), mode=m).text for m in ("strip", "assume")]
    monkeypatch.setattr(statements, "BIG_BLOCK_CHARS", 0)
    assert _findings(text) == full and full
    assert [fix_text(check_text(text), mode=m).text for m in ("strip", "assume")] == fixed


def test_the_line_rule_on_continuations_labels_and_nested_regions():
    text = """func.func @f(%a: i32, %b: i1) {
  %0 = arith.addi %a,
         %a : i32
  // a comment between statements
  %1 = "test.op"(%0) ({
  ^bb0(%x: i32):
    "test.yield"(%x) : (i32) -> ()
  }) : (i32) -> i32
  cf.cond_br %b, ^bb1, ^bb2
^bb1:
  %2 = scf.if %b -> (i32) {
    scf.yield %a : i32
  } else {
    scf.yield %1 : i32
  }
  cf.assert %b, "m"
  cf.br ^bb2
^bb2:
  return
}
"""
    full = parse(text, lazy=False)
    func = full.units()[0][1]
    lazy = parse(text).units()[0][1]
    (s, close) = lazy.lazy_regions[0]
    pairs = statements.region_children(text, (s, close), lazy.lazy_children[0])
    bs = BlockStatements(text, s + 1, close - 1, Op("func.func", 0, 0, 0, []), pairs)
    want = [op for b in func.regions[0].blocks for op in b.ops]
    for op in want:
        for probe in range(op.start, op.end):
            assert [_shape(g) for g in bs.statement_at(probe)] == [_shape(op)], (op.name, probe)
    assert bs.has_labels()


def test_a_line_that_starts_with_a_comma_goes_on_with_the_op_before_it():
    """MLIR is free-form: `cf.assert %0` then `, "msg"` on the next line is one op (as the real
    parser reads it), not a stray `,` reported as MLS001 "expected an operation"."""
    from mlir_lsp_asserts.fixes.verify import real_parse_error

    text = """func.func @f(%a: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %0 = arith.cmpi slt, %a
      , %c0 : i64
  cf.assert %0
     , "negative"
  return %a : i64
}
"""
    assert real_parse_error(text) is None
    result = check_text(text)
    assert [(f.code, f.span.start_pos.line) for f in result.findings] == [("MLA003", 4)]  # 0-based: line 5
    full = parse(text, lazy=False)
    ops = [op.name for op in full.units()[0][1].regions[0].blocks[0].ops]
    assert ops == ["arith.constant", "arith.cmpi", "cf.assert", "return"]
    assert _statement_mismatches(text) == (4, [])

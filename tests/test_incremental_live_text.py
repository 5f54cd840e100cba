"""The editor's document model: a document kept in pieces and checked piece by piece must report
exactly what a whole check of its text reports, after any sequence of edits."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CORPUS, MODELS, REPRO, SEED
from mlir_lsp_asserts.checker import check_text
from mlir_lsp_asserts.incremental.live_text import LiveText, segment
from mlir_lsp_asserts.syntax.lines import LineIndex


def whole(text: str):
    return [(f.code, f.span.start_pos.line, f.span.start_pos.character, f.span.end_pos.line,
             f.span.end_pos.character, f.message) for f in check_text(text, with_fixes=False).findings]


def pieces(doc: LiveText):
    return [(f.code, l0 + f.span.start_pos.line, f.span.start_pos.character, l0 + f.span.end_pos.line,
             f.span.end_pos.character, f.message) for _i, l0, f in doc.findings()]


def assert_consistent(doc: LiveText, text: str) -> None:
    assert doc.text == text
    assert all(p.text.endswith("\n") for p in doc.pieces[:-1]), "every piece but the last ends a line"
    assert doc.line_count == text.count("\n") + 1


@pytest.mark.parametrize("path", [SEED, REPRO, MODELS / "sdxl_prompt_encoder.input.mlir"], ids=lambda p: p.name)
def test_pieces_report_what_a_whole_check_reports(path):
    text = path.read_text()
    doc = LiveText(text, min_piece_chars=0)
    assert_consistent(doc, text)
    assert pieces(doc) == whole(text)


def test_corpus_files_in_pieces_match_a_whole_check():
    files = sorted(CORPUS.rglob("*.mlir"))[:400]
    assert files
    for path in files:
        text = path.read_text(errors="replace")
        doc = LiveText(text, min_piece_chars=0)
        assert_consistent(doc, text)
        if not any(f[0] == "MLS001" for f in pieces(doc)):
            assert pieces(doc) == whole(text), path


FUNC = """func.func @f{n}(%t: tensor<8xi64>, %w: tensor<77x8xf16>) -> tensor<8x8xf16> {{
  %c77 = arith.constant 77 : index
  %e = tensor.empty() : tensor<8x8xf16>
  %r = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}} ins(%t : tensor<8xi64>) outs(%e : tensor<8x8xf16>) {{
  ^bb0(%in: i64, %out: f16):
    %5 = arith.index_cast %in : i64 to index
    %6 = linalg.index 1 : index
    %7 = arith.cmpi slt, %5, %c77 : index
    cf.assert %7, "index must be smaller than dim size"
    %x = tensor.extract %w[%5, %6] : tensor<77x8xf16>
    linalg.yield %x : f16
  }} -> tensor<8x8xf16>
  return %r : tensor<8x8xf16>
}}
"""
BASE = ("#map = affine_map<(d0) -> (d0)>\nmodule {\n"
        + "util.global private @g = 0 : i32\n"
        + "".join(FUNC.format(n=n) for n in range(6)) + "}\n")
SNIPPETS = ["// ", "\n", "}", "{", "  cf.assert %7, \"again\"\n", FUNC.format(n=99), "// -----\n", "module {\n",
            "%", "\"", "x", ""]


# Edits of whole lines with balanced text: the kind that leaves the text valid, so the exact
# comparison below runs on about half of the states (byte-level edits mostly break it).
WHOLE_LINES = ["// ", "\n", "  cf.assert %7, \"again\"\n", FUNC.format(n=99), "// note\n", ""]


def _pos(lines: LineIndex, off: int) -> tuple[int, int]:
    return lines.position(off)


def _edit(doc: LiveText, text: str, where: float, length: int, new: str, line_aligned: bool) -> str:
    """Replace a span of `text` (whole lines, or `length` characters at `where`) by `new`, in the
    document too; returns the new text, checked to be the document's."""
    lines = LineIndex(text)
    if line_aligned:
        line = int(where * (lines.line_count - 1))
        start = lines.starts[line]
        end = lines.starts[min(line + length % 3, lines.line_count - 1)]
    else:
        start = int(where * len(text))
        end = min(len(text), start + length)
    doc.apply_change((_pos(lines, start), _pos(lines, end)), new)
    text = text[:start] + new + text[end:]
    assert_consistent(doc, text)
    return text


def _check_edits(edits, line_aligned: bool) -> int:
    text = BASE
    doc = LiveText(text, min_piece_chars=0)
    exact = 0
    for where, length, new in edits:
        text = _edit(doc, text, where, length, new, line_aligned)
        ours, truth = pieces(doc), whole(text)
        # While the text is broken, pieces keep the error inside the edited function (like a
        # tolerant editor), where a whole read may see it elsewhere: exact when both read clean.
        if not any(f[0] == "MLS001" for f in ours + truth):
            assert ours == truth
            exact += 1
    return exact


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.floats(0, 1), st.integers(0, 120), st.sampled_from(SNIPPETS)), min_size=1, max_size=8))
def test_random_edits_keep_text_and_findings_exact(edits):
    _check_edits(edits, line_aligned=False)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.floats(0, 1), st.integers(0, 2), st.sampled_from(WHOLE_LINES)), min_size=1, max_size=8))
def test_line_edits_keep_findings_exact(edits):
    _check_edits(edits, line_aligned=True)


def test_an_edit_inside_a_function_rechecks_only_that_function():
    doc = LiveText(BASE, min_piece_chars=0)
    n = len(doc.pieces)
    line = next(i for i, ln in enumerate(BASE.split("\n")) if "cf.assert" in ln)
    assert len(list(doc.findings())) == 6
    touched = doc.apply_change(((line, 0), (line, 0)), "// ")
    assert len(touched) == 1 and len(doc.pieces) == n and doc.rebuilds == 1
    assert len(list(doc.findings())) == 5
    doc.apply_change(((line, 0), (line, 3)), "")
    assert len(list(doc.findings())) == 6 and doc.rebuilds == 1


def test_editing_the_module_header_reads_everything_again():
    doc = LiveText(BASE, min_piece_chars=0)
    doc.apply_change(((1, 0), (1, 0)), "// header\n")
    assert doc.rebuilds == 2
    assert pieces(doc) == whole(doc.text)


def test_out_of_range_positions_are_clamped():
    doc = LiveText(BASE, min_piece_chars=0)
    doc.apply_change(((10_000, 5), (20_000, 0)), "// end\n")
    assert doc.text == BASE + "// end\n"
    doc.apply_change(((3, 10_000), (3, 10_000)), "")
    assert doc.text == BASE + "// end\n"


def test_segments_start_at_line_starts_and_cover_the_text():
    parts = segment(BASE)
    assert parts[0][0] == 0 and parts[-1][1] == len(BASE)
    assert all(a[1] == b[0] for a, b in pairwise(parts))
    assert sum(sa for _s, _e, sa in parts) == 7  # the global and six functions
    assert all(s == 0 or BASE[s - 1] == "\n" for s, _e, _sa in parts)


# -- model-shaped documents: one function holding every op (a torch export) ----------------------
def _model_text(statements_wanted: int = 400) -> str:
    """The prompt encoder's one function cut after ~`statements_wanted` body lines (at a statement),
    with a return: real exported IR, small enough for many edit sequences."""
    lines = (MODELS / "sdxl_prompt_encoder.input.mlir").read_text().split("\n")
    hdr = next(i for i, ln in enumerate(lines) if "util.func public @main$async(" in ln)
    k = hdr + 1 + statements_wanted
    while not lines[k].startswith("    %"):
        k += 1
    return ("module {\n" + lines[hdr] + "\n" + "\n".join(lines[hdr + 1:k])
            + "\n    util.return %arg0, %arg0 : !hal.buffer_view, !hal.buffer_view\n  }\n}\n")


MODEL = _model_text()
GENERIC = ("    %z = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = [\"parallel\"]} "
           "ins(%0 : tensor<1x64xi64>) outs(%0 : tensor<1x64xi64>) {\n    ^bb0(%a: i64, %o: i64):\n"
           "      %q = arith.cmpi sge, %a, %c0_i64 : i64\n      cf.assert %q, \"m\"\n      linalg.yield %a : i64\n"
           "    } -> tensor<1x64xi64>\n")
MODEL_SNIPPETS = ["// ", "\n", "{", "}", "{\n", "}\n", '"{"', '"}"', '"a { b"', "      cf.assert %4542, \"again\"\n",
                  "%", '"', "x", "", " ins(", ") ", "    %99 = arith.constant 1 : i32\n",
                  "    // mlir-lsp: ignore\n", "^bb1:\n", "->", ",\n", GENERIC]


@pytest.fixture
def small_big_blocks(monkeypatch):
    """Thresholds lowered so that a 37 KB function is a big one kept in ~300-character pieces."""
    from mlir_lsp_asserts.incremental import pieces
    from mlir_lsp_asserts.syntax import statements

    monkeypatch.setattr(statements, "BIG_BLOCK_CHARS", 3000)
    monkeypatch.setattr(pieces, "BODY_PIECE_CHARS", 300)


def _kinds(doc: LiveText) -> set[str]:
    return {p.kind for p in doc.pieces}


def test_a_model_shaped_function_is_kept_in_pieces_below_function_level(small_big_blocks):
    doc = LiveText(MODEL, min_piece_chars=0)
    assert_consistent(doc, MODEL)
    kinds = [p.kind for p in doc.pieces]
    assert kinds.count("header") == 1 and kinds.count("closer") == 1 and kinds.count("body") > 50
    assert pieces(doc) == whole(MODEL) and len(pieces(doc)) == 4
    assert max(len(p.text) for p in doc.pieces if p.kind == "body") < 3000


def _model_edits(edits, line_aligned: bool) -> tuple[int, int]:
    text = MODEL
    doc = LiveText(text, min_piece_chars=0)
    exact = strict = 0
    for where, length, new in edits:
        text = _edit(doc, text, where, length, new, line_aligned)
        ours, truth = pieces(doc), whole(text)
        if "body" in _kinds(doc) or len(doc.pieces) == 1:
            # Pieces of a big function (or one piece while its braces are broken): exact, syntax
            # errors included.
            assert ours == truth
            strict += 1
        elif not any(f[0] == "MLS001" for f in ours + truth):
            assert ours == truth  # the function was split into small ones by the edits: as above
        exact += 1
    return exact, strict


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.floats(0, 1), st.integers(0, 60), st.sampled_from(MODEL_SNIPPETS)),
                min_size=1, max_size=10))
def test_random_edits_of_a_model_shaped_function_keep_findings_exact(small_big_blocks, edits):
    _model_edits(edits, line_aligned=False)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.floats(0, 1), st.integers(0, 2), st.sampled_from(MODEL_SNIPPETS)),
                min_size=1, max_size=10))
def test_line_edits_of_a_model_shaped_function_keep_findings_exact(small_big_blocks, edits):
    _model_edits(edits, line_aligned=True)


def _line_of(text: str, needle: str, after: int = 0) -> int:
    lines = text.split("\n")
    return next(i for i in range(after, len(lines)) if needle in lines[i])


def test_an_edit_in_a_big_function_rechecks_one_piece_and_reads_nothing_else(small_big_blocks):
    doc = LiveText(MODEL, min_piece_chars=0)
    n = len(doc.pieces)
    line = _line_of(MODEL, "cf.assert")
    touched = doc.apply_change(((line, 0), (line, 0)), "// ")
    assert len(touched) == 1 and doc.pieces[touched[0]].kind == "body"
    assert len(doc.pieces) == n and doc.rebuilds == 1 and len(pieces(doc)) == 3
    doc.apply_change(((line, 0), (line, 3)), "")
    plain = _line_of(MODEL, "tensor.empty", 20)
    doc.apply_change(((plain, 4), (plain, 4)), "   ")
    assert doc.rebuilds == 1 and pieces(doc) == whole(doc.text) and len(pieces(doc)) == 4


def test_editing_a_big_functions_header_reads_only_the_header(small_big_blocks):
    doc = LiveText(MODEL, min_piece_chars=0)
    line = _line_of(MODEL, "@main$async(")
    col = MODEL.split("\n")[line].index("@main$async") + len("@main$async")
    doc.apply_change(((line, col), (line, col)), "_renamed")
    assert doc.rebuilds == 1 and pieces(doc) == whole(doc.text)
    # `util.func` -> `func.func`: the rules look at the enclosing op, so findings are checked again
    doc.apply_change(((line, 2), (line, 11)), "func.func")
    assert doc.rebuilds == 1 and pieces(doc) == whole(doc.text) and len(pieces(doc)) == 4


def test_braces_broken_then_balanced_again_come_back_to_pieces(small_big_blocks):
    doc = LiveText(MODEL, min_piece_chars=0)
    line = _line_of(MODEL, "linalg.yield", 200)
    doc.apply_change(((line, 0), (line, 0)), "    } -> tensor<1xf16>\n")  # closes the generic early
    assert pieces(doc) == whole(doc.text)
    assert any(f[0] == "MLS001" for f in pieces(doc))
    doc.apply_change(((line, 0), (line + 1, 0)), "")
    assert pieces(doc) == whole(doc.text) == whole(MODEL)
    assert "body" in _kinds(doc)


def test_a_quick_fix_in_a_body_piece_is_the_whole_texts_fix(small_big_blocks):
    from mlir_lsp_asserts.fixes import apply_edits

    doc = LiveText(MODEL, min_piece_chars=0)
    i = next(k for k, p in enumerate(doc.pieces) if p.kind == "body" and not p.clean)
    result = doc.with_fixes(i)
    f = result.findings[0]
    assume = next(x for x in f.fixes if x.mode == "assume")
    assert "umax = 49407" in assume.title or "umin = 0" in assume.title
    piece = doc.pieces[i]
    fixed_piece = apply_edits(piece.text, list(assume.edits))
    base = sum(p.size for p in doc.pieces[:i])
    fixed = doc.text[:base] + fixed_piece + doc.text[base + len(piece.text):]
    # the CLI's rewrite of that one assert, but for the edits outside the piece (a constant far up
    # the function that only this assert used stays, dead), and the result parses with IREE's parser
    whole_result = check_text(MODEL)
    wf = next(w for w in whole_result.findings if w.span.start == base + f.span.start)
    wa = next(x for x in wf.fixes if x.mode == "assume")
    inside = [e for e in wa.edits if base <= e.start and e.end <= base + len(piece.text)]
    assert inside and len(inside) < len(wa.edits)
    assert apply_edits(MODEL, inside) == fixed
    from iree.compiler import ir

    source = (MODELS / "sdxl_prompt_encoder.input.mlir").read_text()
    globals_ = "".join(ln + "\n" for ln in source.split("\n") if ln.startswith("  util.global private @"))
    with ir.Context():
        ir.Module.parse(fixed.replace("module {\n", "module {\n" + globals_, 1))


@pytest.mark.parametrize("mode", ["strip", "assume"])
def test_fix_all_of_a_big_function_is_the_clis_fix(small_big_blocks, mode):
    from mlir_lsp_asserts.findings import TextEdit
    from mlir_lsp_asserts.fixes import apply_edits, fix_text

    doc = LiveText(MODEL, min_piece_chars=0)
    edits = [TextEdit(sum(p.size for p in doc.pieces[:i]) + e.start, sum(p.size for p in doc.pieces[:i]) + e.end,
                      e.new_text) for i, e in doc.fix_all(mode, False)]
    want = fix_text(check_text(MODEL), mode)
    assert want.fixed == 4 and (want.assumed == 4) == (mode == "assume")
    assert apply_edits(MODEL, edits) == want.text


def test_a_big_functions_outline_spans_from_its_header_to_its_closing_brace(small_big_blocks):
    doc = LiveText(MODEL, min_piece_chars=0)
    (i, o), = [(i, o) for i, o in doc.outline() if o.symbol == "main$async"]
    (sl, _sc), (el, ec) = doc.outline_span(i, o)
    lines = MODEL.split("\n")
    assert lines[sl].lstrip().startswith("util.func public @main$async(")
    assert lines[el].strip() == "}" and ec == lines[el].index("}") + 1 and el == len(lines) - 3


def test_typing_a_new_function_after_a_big_one_reads_neither_again(small_big_blocks):
    """Enter at the end of the big function's `}`, a new function's braces (an editor closes
    them), then its body typed key by key: the big function is not read again."""
    doc = LiveText(MODEL, min_piece_chars=0)
    text = MODEL
    line = len(MODEL.split("\n")) - 3  # the function's `  }`

    def type_at(line: int, col: int, s: str) -> None:
        nonlocal text
        doc.apply_change(((line, col), (line, col)), s)
        at = LineIndex(text).offset(line, col)
        text = text[:at] + s + text[at:]
        assert doc.text == text
        ours, truth = pieces(doc), whole(text)
        if not any(f[0] == "MLS001" for f in ours + truth):
            assert ours == truth

    type_at(line, 3, "\n  func.func @g(%c: i1) {\n\n  }")
    row, col = line + 2, 0
    for ch in '    cf.assert %c, "typed"\n    return':
        type_at(row, col, ch)
        row, col = (row + 1, 0) if ch == "\n" else (row, col + 1)
    assert pieces(doc) == whole(text) and [f[0] for f in pieces(doc)].count("MLA003") == 1
    assert "body" in _kinds(doc) and doc.rebuilds == 1


def test_pieces_merged_and_cut_again_keep_their_line_numbers(small_big_blocks):
    """Found by random edits: an edit that makes a piece continue the one before merges and
    re-cuts them with the same total of lines but a moved boundary; later findings must move."""
    doc = LiveText(MODEL, min_piece_chars=0)
    text = MODEL
    for start, end, new in [(4874, 4891, ",\n"), (2919, 2944, "->")]:
        lines = LineIndex(text)
        doc.apply_change((lines.position(start), lines.position(end)), new)
        text = text[:start] + new + text[end:]
        assert pieces(doc) == whole(text)

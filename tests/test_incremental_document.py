"""The editor's document model: a document kept in pieces and checked piece by piece must report
exactly what a whole check of its text reports, after any sequence of edits."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlir_lsp_asserts.check import check_text
from mlir_lsp_asserts.incremental.document import LiveDocument, segment
from mlir_lsp_asserts.syntax.index import LineIndex

from conftest import CORPUS, MODELS, REPRO, SEED


def whole(text: str):
    return [(f.code, f.span.start_pos.line, f.span.start_pos.character, f.span.end_pos.line,
             f.span.end_pos.character, f.message) for f in check_text(text, with_fixes=False).findings]


def pieces(doc: LiveDocument):
    return [(f.code, l0 + f.span.start_pos.line, f.span.start_pos.character, l0 + f.span.end_pos.line,
             f.span.end_pos.character, f.message) for _i, l0, f in doc.findings()]


def assert_consistent(doc: LiveDocument, text: str) -> None:
    assert doc.text == text
    assert all(p.text.endswith("\n") for p in doc.pieces[:-1]), "every piece but the last ends a line"
    assert doc.line_count == text.count("\n") + 1


@pytest.mark.parametrize("path", [SEED, REPRO, MODELS / "sdxl_prompt_encoder.input.mlir"], ids=lambda p: p.name)
def test_pieces_report_what_a_whole_check_reports(path):
    text = path.read_text()
    doc = LiveDocument(text, min_piece_chars=0)
    assert_consistent(doc, text)
    assert pieces(doc) == whole(text)


def test_corpus_files_in_pieces_match_a_whole_check():
    files = sorted(CORPUS.rglob("*.mlir"))[:400]
    assert files
    for path in files:
        text = path.read_text(errors="replace")
        doc = LiveDocument(text, min_piece_chars=0)
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


def _check_edits(edits, line_aligned: bool) -> int:
    text = BASE
    doc = LiveDocument(text, min_piece_chars=0)
    exact = 0
    for where, length, new in edits:
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
    doc = LiveDocument(BASE, min_piece_chars=0)
    n = len(doc.pieces)
    line = next(i for i, ln in enumerate(BASE.split("\n")) if "cf.assert" in ln)
    assert len(list(doc.findings())) == 6
    touched = doc.apply_change(((line, 0), (line, 0)), "// ")
    assert len(touched) == 1 and len(doc.pieces) == n and doc.rebuilds == 1
    assert len(list(doc.findings())) == 5
    doc.apply_change(((line, 0), (line, 3)), "")
    assert len(list(doc.findings())) == 6 and doc.rebuilds == 1


def test_editing_the_module_header_reads_everything_again():
    doc = LiveDocument(BASE, min_piece_chars=0)
    doc.apply_change(((1, 0), (1, 0)), "// header\n")
    assert doc.rebuilds == 2
    assert pieces(doc) == whole(doc.text)


def test_out_of_range_positions_are_clamped():
    doc = LiveDocument(BASE, min_piece_chars=0)
    doc.apply_change(((10_000, 5), (20_000, 0)), "// end\n")
    assert doc.text == BASE + "// end\n"
    doc.apply_change(((3, 10_000), (3, 10_000)), "")
    assert doc.text == BASE + "// end\n"


def test_segments_start_at_line_starts_and_cover_the_text():
    parts = segment(BASE)
    assert parts[0][0] == 0 and parts[-1][1] == len(BASE)
    assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))
    assert sum(sa for _s, _e, sa in parts) == 7  # the global and six functions
    assert all(s == 0 or BASE[s - 1] == "\n" for s, _e, _sa in parts)

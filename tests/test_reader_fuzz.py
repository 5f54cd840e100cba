"""Mutated real IR never breaks the reader or the rules (hypothesis-driven mutations).

Truncations, byte flips, brace deletions/insertions and splices of two real files: no
exception, every finding's range inside the document, and the index consistent (every op's
range inside its parent's, children in source order).
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlir_lsp_asserts.check import check_text
from mlir_lsp_asserts.syntax.document import parse

SHARED = Path(__file__).resolve().parents[2] / "shared"
SOURCES = [
    (SHARED / "fixtures" / "seed" / "sdxl_clip_extra_dispatches.mlir").read_text(),
    (SHARED / "fixtures" / "repro" / "hoisted_gather.mlir").read_text(),
    (SHARED / "fixtures" / "models" / "clip_l.input.mlir").read_text()[:40000],
]


@st.composite
def mutated(draw):
    text = draw(st.sampled_from(SOURCES))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["truncate", "flip", "delete_brace", "insert", "splice"]))
        if not text:
            break
        i = draw(st.integers(0, len(text) - 1))
        if kind == "truncate":
            text = text[:i]
        elif kind == "flip":
            text = text[:i] + draw(st.characters(codec="utf-8")) + text[i + 1:]
        elif kind == "delete_brace":
            j = text.find(draw(st.sampled_from("{}()[]\"")), i)
            if j != -1:
                text = text[:j] + text[j + 1:]
        elif kind == "insert":
            text = text[:i] + draw(st.sampled_from(['{', '}', '"', '//', '\n', '%x = ', 'cf.assert %0, "m"\n',
                                                    '^bb1:', '"cf.assert"(%0) ({', '{-#', '#map = '])) + text[i:]
        else:
            other = draw(st.sampled_from(SOURCES))
            j = draw(st.integers(0, len(other)))
            text = text[:i] + other[j:j + 2000]
    return text


def _check_index(text: str) -> None:
    parsed = parse(text)
    parsed.expand_all()
    n = len(text)
    for chunk in parsed.chunks:
        stack = [(op, None) for op in chunk.ops]
        while stack:
            op, parent = stack.pop()
            assert 0 <= op.start <= op.name_start <= n and op.start <= op.end <= n
            if parent is not None:
                assert parent.start <= op.start and op.end <= max(parent.end, op.end) <= n
                assert op.parent is parent
            prev = -1
            for r in op.regions:
                assert op.start <= r.start <= r.end <= n
                for b in r.blocks:
                    for c in b.ops:
                        assert c.start >= prev
                        prev = c.start
                        assert r.start <= c.start and c.end <= r.end
                        stack.append((c, op))
    for issue in parsed.issues:
        assert 0 <= issue.start <= issue.end <= n


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated())
def test_mutated_ir_gives_partial_index_and_diagnostics_never_an_exception(text):
    _check_index(text)
    result = check_text(text)
    lines = text.count("\n") + 1
    for f in result.findings:
        assert 0 <= f.span.start <= f.span.end <= len(text)
        assert 0 <= f.span.start_pos.line < lines and 0 <= f.span.end_pos.line < lines
        for fix in f.fixes:
            for e in fix.edits:
                assert 0 <= e.start <= e.end <= len(text)

"""The indexes a document kept in pieces keeps so that an edit walks none of them (the pieces'
first lines, the pieces that hold findings) answer what a walk over every piece answers, after
any sequence of splices, across their blocks' splits and merges."""

from __future__ import annotations

import bisect
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlir_lsp_asserts.incremental import piece_index
from mlir_lsp_asserts.incremental.piece_index import FoundPieces, LineStarts

counts_st = st.lists(st.integers(0, 5), min_size=1, max_size=60)


@st.composite
def splices(draw):
    """A starting list of (line ends, findings) per piece, and splices that keep at least one piece."""
    n = draw(st.integers(1, 60))
    start = [(draw(st.integers(0, 5)), draw(st.sampled_from((0, 0, 0, 1, 2)))) for _ in range(n)]
    steps = []
    for _ in range(draw(st.integers(1, 12))):
        a = draw(st.integers(0, n))
        b = draw(st.integers(a, n))
        new = draw(st.lists(st.tuples(st.integers(0, 5), st.sampled_from((0, 0, 1, 3))),
                            min_size=1 if b - a == n else 0, max_size=40))
        steps.append((a, b, new))
        n += len(new) - (b - a)
    return start, steps


def expected_first_lines(pieces):
    return list(itertools.accumulate((nl for nl, _f in pieces[:-1]), initial=0))


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(piece_index, "BLOCK", 4)  # many blocks, split and merged often


@settings(max_examples=300, deadline=None)
@given(splices())
def test_first_lines_and_pieces_at_lines_match_a_walk(case):
    pieces, steps = case
    lines = LineStarts([nl for nl, _f in pieces])
    found = FoundPieces()
    found.reset([f for _nl, f in pieces], [nl for nl, _f in pieces])
    for a, b, new in steps:
        first = lines[a] if a < len(pieces) else lines.total
        old = pieces[a:b]
        pieces[a:b] = new
        lines.replace(a, b, [nl for nl, _f in new])
        found.replace(a, b, first, [f for _nl, f in new], [nl for nl, _f in new],
                      sum(nl for nl, _f in new) - sum(nl for nl, _f in old))
        starts = expected_first_lines(pieces)
        assert len(lines) == len(pieces)
        assert [lines[i] for i in range(len(pieces))] == starts
        assert lines.total == sum(nl for nl, _f in pieces)
        for line in range(-1, lines.total + 2):
            assert lines.piece_at(line) == max(0, min(bisect.bisect_right(starts, max(line, 0)) - 1, len(pieces) - 1))
        with_findings = [i for i, (_nl, f) in enumerate(pieces) if f]
        assert found.indices == with_findings
        assert found.lines == [starts[i] for i in with_findings]
        assert found.counts == [pieces[i][1] for i in with_findings]
        assert found.total == sum(f for _nl, f in pieces)


@given(counts_st, st.data())
def test_a_piece_checked_again_in_place_is_found_or_dropped(counts, data):
    found = FoundPieces()
    found.reset(counts, [1] * len(counts))
    i = data.draw(st.integers(0, len(counts) - 1))
    n = data.draw(st.integers(0, 3))
    found.set(i, i, n)
    counts[i] = n
    assert found.indices == [k for k, c in enumerate(counts) if c]
    assert found.lines == found.indices  # one line each
    assert found.total == sum(counts)
    assert found.between(1, len(counts) - 2) == [k for k, c in enumerate(counts) if c and 1 <= k <= len(counts) - 2]

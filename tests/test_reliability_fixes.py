"""Fixes on mutated real IR: whatever IREE's real parser accepts, every fix offered keeps it
accepted, and no fix edits text outside the assert's op and the ops it removes.

The mutations (tests/fuzzlib.py `mutate_valid`) are the kind that keep IR valid: predicates and
constants changed, asserts duplicated, conditions given another user (their cmpi must stay),
generic form, locations, comments with braces and `// -----` lines, odd messages. Inputs the
parser rejects are skipped (counted). The real parser judges each `// -----` chunk on its own.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import fuzzlib
from fuzzlib import DrawChooser, FixViolation, RandomChooser, check_fix_edits, check_fixes, mutate, mutate_valid

FIX_SOURCES = fuzzlib.fix_sources()
READER_SOURCES = fuzzlib.reader_sources()


@st.composite
def valid_mutated(draw):
    return mutate_valid(DrawChooser(draw), FIX_SOURCES)


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(valid_mutated())
def test_every_fix_of_parsable_mutated_ir_parses_and_stays_in_its_ops(text):
    check_fixes(text)


def test_the_mutations_mostly_stay_parsable():
    """The property above is only worth something if most of its inputs reach the fixes: the
    same mutations, drawn here from a seeded generator, mostly parse and get fixes."""
    rnd = random.Random(0)
    seen = {"parsed": 0, "fixes": 0}
    inputs = 40
    for _ in range(inputs):
        figures = check_fixes(mutate_valid(RandomChooser(rnd), FIX_SOURCES))
        seen["parsed"] += figures["parsed"]
        seen["fixes"] += figures["fixes"]
    assert seen["parsed"] > inputs // 2, seen
    assert seen["fixes"] > inputs, seen


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.builds(lambda t: t, st.composite(lambda draw: mutate(DrawChooser(draw), FIX_SOURCES, rounds=1))()))
def test_byte_level_mutations_that_still_parse(text):
    check_fixes(text)  # most are rejected by the parser (skipped); those accepted must fix cleanly


def test_some_byte_level_mutations_reach_the_fixes():
    """The property above is only worth something if some of its inputs parse and get fixes
    (most byte-level mutations do not parse: 10 of these 60 do, with 47 fixes tried)."""
    rnd = random.Random(0)
    seen = {"parsed": 0, "fixes": 0}
    for _ in range(60):
        figures = check_fixes(mutate(RandomChooser(rnd), FIX_SOURCES, rounds=1))
        seen["parsed"] += figures["parsed"]
        seen["fixes"] += figures["fixes"]
    assert seen["parsed"] >= 5, seen
    assert seen["fixes"] >= seen["parsed"], seen


@pytest.mark.slow
@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.composite(lambda draw: mutate_valid(DrawChooser(draw), [fuzzlib.clip_gathers()]))())
def test_fixes_of_a_mutated_exported_model(text):
    figures = check_fixes(text)
    assume(figures["parsed"])  # an input the parser rejects is no example; none at all fails the test
    assert figures["fixes"] >= 2, figures  # its two gathers' asserts, offered their fixes


def test_the_confinement_oracle_catches_an_edit_outside_the_ops():
    from mlir_lsp_asserts.checker import check_text
    from mlir_lsp_asserts.findings import TextEdit

    text = FIX_SOURCES[0]
    result = check_text(text)
    f = result.findings[0]
    edits = list(f.fixes[0].edits)
    check_fix_edits(text, result.parsed, {f.op_start}, "as offered", edits)
    ret = text.index("return")
    for bad in (TextEdit(ret, ret + 6, ""),  # part of another op
                TextEdit(edits[0].start, edits[0].end + 8, "")):  # one op and a bit of the next
        with pytest.raises(FixViolation):
            check_fix_edits(text, result.parsed, {f.op_start}, "bad", edits + [bad])

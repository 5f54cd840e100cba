"""Mutated real IR never breaks the reader or the rules (hypothesis, targeted search).

Truncations, byte flips, brace deletions/insertions, splices of two real files, duplicated,
deleted and swapped lines (tests/fuzzlib.py): no exception, every finding's range inside the
document, and the index consistent (every op's range inside its parent's region, children in
source order). `hypothesis.target` steers the search towards inputs with many syntax issues,
many ops and many asserts, where the reader's recovery paths are. `make soak` runs the same
oracle for a million inputs with atheris (coverage-guided); the figures are in its output.
"""

from __future__ import annotations

import re
import sys

import pytest
from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st

import fuzzlib
from conftest import REPO
from fuzzlib import DrawChooser, check_reader, mutate

sys.path.insert(0, str(REPO / "bench"))
import generate  # noqa: E402  (bench/generate.py: the shapes `make bench` measures)

SOURCES = fuzzlib.reader_sources()


@st.composite
def mutated(draw):
    return mutate(DrawChooser(draw), SOURCES)


@settings(max_examples=400, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated())
def test_mutated_ir_gives_partial_index_and_diagnostics_never_an_exception(text):
    figures = check_reader(text)
    target(float(figures["issues"]), label="syntax issues")
    target(float(figures["asserts"]), label="asserts found")
    target(float(figures["ops"]), label="ops read")


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(st.sampled_from(["{", "}", "(", ")", "^bb0(", "^bb1:", '"', "%a = ", "x.y", "cf.assert %a, \"m\"",
                                 "\n", " ", "<", ">", "[", "]", "//", "// -----\n", "loc(", ":", "{-#", "#-}"]),
                max_size=60))
def test_token_soup_never_raises(tokens):
    check_reader("".join(tokens))


def test_unmatched_paren_of_a_block_label_at_the_end_of_the_text():
    # found by the fuzzer (shrunk): a label's `(` unmatched inside a region that ends the text
    for text in ("s{^2(}:", "func.func @f() {\n^bb0(%a: i32 }", "x.y {\n^bb1(}"):
        check_reader(text)


def test_the_coverage_guided_harness_of_make_soak_runs(tmp_path):
    """bench/fuzz_atheris.py (what `make soak` runs for a million inputs), for 600 inputs."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    import pytest

    pytest.importorskip("atheris")
    harness = Path(__file__).resolve().parents[1] / "bench" / "fuzz_atheris.py"
    p = subprocess.run([sys.executable, str(harness), "--stats", str(tmp_path / "s.json"), "--artifacts",
                        str(tmp_path / "art"), "-runs=600", "-max_len=65536", "-print_final_stats=1"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "stat::number_of_executed_units: 600" in p.stderr
    # The harness writes its figures on the first input and on every crash: no file means it
    # checked nothing.
    stats = json.loads((tmp_path / "s.json").read_text())
    assert stats["inputs"] > 0, stats
    assert stats["crashes"] == 0 and not list((tmp_path / "art").glob("crash-*")), stats


def test_a_deep_chain_of_short_op_names_resolves_each_name_once(monkeypatch):
    """The reader fuzz's timeout (6 Dec 2026: a 64 kB input, 29 s in check_text): ops with short
    names (`a { b { ...`) nested deep, each resolving its name through all its parents' names,
    again and again. Each op's name is now resolved once (0.26 s for that input)."""
    from mlir_lsp_asserts.checker import check_text
    from mlir_lsp_asserts.syntax.op_tree import Op

    calls = []
    resolve = Op._resolve
    monkeypatch.setattr(Op, "_resolve", lambda self, name: calls.append(name) or resolve(self, name))
    depth = 300
    text = "".join(f"x{i} {{\n" for i in range(depth)) + 'cf.assert %c, "m"\n' + "}\n" * depth
    check_text(text)
    assert depth <= len(calls) <= depth + 5  # once per short-named op (before: hundreds of thousands)


def _one_regex_matches_agree_with_the_brace_scan(text: str) -> int:
    """At every `{`: where the one-regex match (reader.BALANCED) fits, it ends where the token
    scan (`Reader._skip_braces`) ends; the number of braces it matched."""
    from mlir_lsp_asserts.syntax.reader import BALANCED, Reader

    reader, matched = Reader(text), 0
    for brace in (i for i, c in enumerate(text) if c == "{"):
        m = BALANCED.match(text, brace)
        if m is not None:
            assert m.end() == reader._skip_braces(brace), (brace, text[brace:brace + 80])
            matched += 1
    return matched


def test_the_one_regex_brace_match_agrees_with_the_brace_scan_on_real_ir():
    """The reader skips a small region with one regex (strings and comments hide braces, as in the
    scan): on every `{` of the reader's sources it ends where the scan ends."""
    assert sum(_one_regex_matches_agree_with_the_brace_scan(t) for t in SOURCES) > 1000


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(st.sampled_from(["{", "}", '"', '\\"', "\\", "//", "/", "\n", "a", " ", '"}"', '"{', "// }\n"]),
                max_size=60).map("".join))
def test_the_one_regex_brace_match_agrees_with_the_brace_scan_on_brace_soup(text):
    _one_regex_matches_agree_with_the_brace_scan(text)


def _top_level_read(text: str, plain_units: bool):
    """What a lazy read gives (each top-level op's name, extent, skipped regions and children; the
    syntax issues), with or without `Reader._read_plain_unit`'s path for plain one-line headers."""
    from mlir_lsp_asserts.syntax import reader, statements
    from mlir_lsp_asserts.syntax.parsed_text import parse

    saved = reader.Reader._read_plain_unit
    if not plain_units:
        reader.Reader._read_plain_unit = lambda self, pos, parent: None
    try:
        parsed = parse(text)
    finally:
        reader.Reader._read_plain_unit = saved
    units = []
    for _chunk, op in parsed.units():
        children = [(list(c.opens), list(c.closes)) for c in
                    (statements.region_children(text, r, c) for r, c in zip(op.lazy_regions, op.lazy_children,
                                                                            strict=True))]
        units.append((op.name, op.start, op.end, op.name_start, op.generic, list(op.lazy_regions), children))
    return units, sorted((i.start, i.end, i.message) for i in parsed.issues)


def test_plain_unit_headers_read_as_the_token_loop_reads_them_on_real_ir():
    """The one-match read of a plain top-level op gives what the token loop gives, on the reader's
    sources (real IR) and on a module of many small functions."""
    edges = [  # where the token loop must read on (the op continues) or the header is not plain
        "func.func @f() {\n  return\n}\n-> i32\nfunc.func @g() {\n  return\n}\n",
        "func.func @f() {\n  return\n}\nattributes {a}\n",
        "func.func @f() {\n  return\n}\nfoo.bar = 1\nfunc.func @g() {\n  return\n}\n"
        "  // c\nfunc.func @h() {\n  return\n}\n}\n",
        "foo.op @x {a = 1}\nfunc.func @f() {\n  return\n}\n",
        "foo.region {\n  bar.op\n} : i32\nfunc.func @f() {\n  return\n}\n",
        "func.func @f() cf.assert {\n  cf.assert %c, \"m\"\n}\n",
        "%0 = foo.unit {\n  bar.op\n}\nmodule {\n  func.func @f() {\n    %x = a.b : i32\n  }\n}\n",
        "func.func @big() {\n" + "  %0 = arith.constant 0 : i32\n" * 3000 + "}\n",
        "func.func @f() {\n  return\n}",
        "func.func @f() {\n  return\n} {\n  return\n}\n",
    ]
    texts = [*SOURCES, *edges, generate.generate_small_functions(200_000)[0]]
    assert sum(len(_top_level_read(t, True)[0]) for t in texts) > 1000
    for t in texts:
        assert _top_level_read(t, True) == _top_level_read(t, False)


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated())
def test_plain_unit_headers_read_as_the_token_loop_reads_them_on_mutated_ir(text):
    assert _top_level_read(text, True) == _top_level_read(text, False)


def _read_everything(text: str) -> tuple:
    """Every op of a full read and of a lazy read (name, extent), the syntax issues, and the child
    pairs of each top-level op's regions."""
    from mlir_lsp_asserts.syntax import statements
    from mlir_lsp_asserts.syntax.parsed_text import parse

    def ops(parsed):
        return [(o.name, o.start, o.end) for _c, u in parsed.units() for o in u.walk()]

    lazy = parse(text)
    pairs = [(list(p.opens), list(p.closes)) for _c, u in lazy.units() for r, c in
             zip(u.lazy_regions, u.lazy_children, strict=True)
             for p in [statements.region_children(text, r, c)]]
    full = parse(text, lazy=False)
    return ops(full), sorted((i.start, i.end, i.message) for i in full.issues), ops(lazy), pairs


LONG_HEX = "0x" + "5A" * 3000  # 6 KB: past reader.LONG_STRING, read with str.find


@pytest.mark.parametrize("inside", [
    f'"{LONG_HEX}"', f'"{LONG_HEX}{{}}}}"', f'"{LONG_HEX}\\"{{"', f'"{LONG_HEX}\\\\"', f'"{LONG_HEX}',
    f'"{LONG_HEX[:10]}\\n{LONG_HEX}"', f'"{LONG_HEX}\n  }}\n', f'"{LONG_HEX}" // "{{',
])
def test_long_strings_read_as_the_regex_reads_them(monkeypatch, inside):
    """A string of 4 KB or more is measured with str.find (the hex of a dense literal): the read
    (ops, issues, child pairs) is the one the regex alone gives, for closed, escaped, unterminated
    strings and strings with braces in them, in an op, a block label and a nested region."""
    from mlir_lsp_asserts.syntax import reader, reader_patterns, statements

    text = (f'func.func @f() {{\n  %0 = arith.constant dense<{inside}> : tensor<4xf32>\n'
            f'  %1 = scf.execute_region -> i32 {{\n  ^bb0(%x: i32 {{a = {inside}}}):\n'
            f'    scf.yield %x : i32\n  }}\n  "foo.bar"() ({{\n  "x.y"() {{s = {inside}}} : () -> ()\n'
            f'  }}) : () -> ()\n'
            f'  return\n}}\nfunc.func @g() {{\n  cf.assert %c, {inside}\n}}\n')
    fast = _read_everything(text)
    never = "(?P<long>(?!))|"  # the group stays, never matches: every string read by the regex alone
    token = re.compile(reader_patterns.TOKEN.pattern.replace(reader_patterns._LONG, never))
    braces = re.compile(reader_patterns.BRACES.pattern.replace(reader_patterns._LONG, never))
    for module, name, pattern in ((reader, "TOKEN", token), (reader_patterns, "TOKEN", token),
                                  (reader_patterns, "BRACES", braces), (statements, "BRACES", braces)):
        monkeypatch.setattr(module, name, pattern)
    assert fast == _read_everything(text)
    assert len(fast[0]) >= 4

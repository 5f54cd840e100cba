"""Bad input: always a clear message or diagnostics, the documented exit code, never a traceback.

Exit codes: 0 no findings, 1 findings (syntax diagnostics MLS001 count), 2 unreadable file or
internal error, with one line naming the file while the other files are still checked.
`run_cli` fails any test whose stderr holds a Python traceback.
"""

from __future__ import annotations

import json
import random
import time

import pytest

from conftest import REPRO, assert_spans_inside, run_cli, write
from mlir_lsp_asserts.checker import MAX_SYNTAX_ISSUES, check_text
from mlir_lsp_asserts.syntax.reader import Reader

HOST = """func.func @mm(%c: i1) {
  cf.assert %c, "host"
  return
}
"""


def test_empty_file(tmp_path):
    r = run_cli("--check", write(tmp_path, "empty.mlir", ""))
    assert r.returncode == 0 and r.stdout == ""
    assert "Found 0 findings in 1 file" in r.stderr


@pytest.mark.parametrize("text", ["// just a comment\n", "// -----\n// -----\n", "\n\n   \n", "module {\n}\n"])
def test_files_without_ops(tmp_path, text):
    r = run_cli("--check", write(tmp_path, "x.mlir", text))
    assert r.returncode == 0 and r.stdout == ""


def test_binary_garbage(tmp_path):
    rnd = random.Random(7)
    data = bytes(rnd.randrange(256) for _ in range(20000)) + b"\x00"
    bad = write(tmp_path, "garbage.mlir", data)
    r = run_cli("--check", bad, REPRO)
    assert r.returncode == 2
    (err,) = r.error_lines()
    assert str(bad) in err and "binary" in err
    assert len(r.concise()) == 4  # the good file was still checked


def test_invalid_utf8_names_the_place(tmp_path):
    latin1 = 'func.func @f(%c: i1) {\n  cf.assert %c, "caf\xe9"\n  return\n}\n'.encode("latin-1")
    bad = write(tmp_path, "latin1.mlir", latin1)
    r = run_cli("--check", "--output-format", "json", bad)
    assert r.returncode == 2
    assert json.loads(r.stdout) == []  # the output stays valid for machines
    (err,) = r.error_lines()
    assert str(bad) in err and "UTF-8" in err and "line 2" in err


def test_utf8_bom_and_non_ascii_positions(tmp_path):
    text = ('\ufefffunc.func @f(%c: i1) {\n  "x.y"() {s = "\U0001d11e\u00e9"} : () -> () loc("a") \n'
            '  cf.assert %c, "\U0001d11e ok"\n  return\n}\n')
    r = run_cli("--check", "--output-format", "json", write(tmp_path, "u.mlir", text))
    (d,) = json.loads(r.stdout)
    assert d["range"]["start"] == {"line": 2, "character": 2}
    # LSP characters are UTF-16 units: the clef counts 2
    assert d["range"]["end"] == {"line": 2, "character": 2 + len('cf.assert %c, "') + 2 + len(' ok"')}
    assert "\U0001d11e ok" in d["message"]


def test_one_megabyte_line_of_dense_literal(tmp_path):
    blob = '  %blob = arith.constant dense<"0x' + "0123456789ABCDEF" * 65536 + '"> : tensor<524288xi8>\n'
    text = REPRO.read_text().replace("  %c77 = arith.constant 77", blob + "  %c77 = arith.constant 77", 1)
    assert max(len(ln) for ln in text.split("\n")) > 1_000_000
    t0 = time.monotonic()
    r = run_cli("--check", write(tmp_path, "wide.mlir", text))
    assert time.monotonic() - t0 < 30
    assert r.returncode == 1
    assert [int(m["line"]) for m in r.concise()] == [19, 21, 30, 32]


def test_one_megabyte_line_of_garbage(tmp_path):
    rnd = random.Random(3)
    alphabet = "abcdefghijklmnopqrstuvwxyz%^@#!{}()[]<>=:,. \"'0123456789"
    text = "".join(rnd.choice(alphabet) for _ in range(1_000_000))
    t0 = time.monotonic()
    r = run_cli("--check", "--output-format", "json", write(tmp_path, "noise.mlir", text))
    assert time.monotonic() - t0 < 30
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert data and all(d["code"] == "MLS001" and d["severity"] == "error" for d in data)
    assert len(data) <= MAX_SYNTAX_ISSUES + 1  # capped, with a summary finding


def test_syntax_errors_are_capped_with_a_summary():
    result = check_text("}" * 5000)
    assert len(result.findings) == MAX_SYNTAX_ISSUES + 1
    assert "more syntax errors not shown" in result.findings[-1].message
    assert_spans_inside("}" * 5000, result.findings)


def test_truncated_in_the_middle_of_an_op(tmp_path, seed_text):
    third = seed_text.index('cf.assert %7, "index', seed_text.index("linalg.generic", 3000))
    cut = seed_text[:third + len('cf.assert %7, "index mu')]  # inside the string of the 3rd assert
    r = run_cli("--check", "--output-format", "json", write(tmp_path, "cut.mlir", cut))
    assert r.returncode == 1
    data = json.loads(r.stdout)
    mla = [(d["range"]["start"]["line"] + 1, d["code"]) for d in data if d["code"] != "MLS001"]
    assert mla[:2] == [(24, "MLA001"), (26, "MLA001")]  # the complete gather is still read
    # each `{` left open is reported where it is: module, initializer, dispatch, generic
    syntax = [d for d in data if d["code"] == "MLS001"]
    unclosed = {(d["range"]["start"]["line"] + 1, d["range"]["start"]["character"] + 1)
                for d in syntax if "never closed" in d["message"]}
    lines = cut.split("\n")
    assert {line for line, _ in unclosed} == {7, 40, 44, 50}
    for line, col in unclosed:
        assert lines[line - 1][col - 1] == "{"
    # and the string cut short, at its quote
    (string,) = [d for d in syntax if "never closed" not in d["message"]]
    assert "unterminated string" in string["message"]
    assert (string["range"]["start"]["line"] + 1, string["range"]["start"]["character"] + 1) == (55, 23)


def test_each_unclosed_brace_is_reported_once(seed_text):
    cut = seed_text[:seed_text.index("linalg.yield", 3000)]
    starts = [f.span.start for f in check_text(cut).findings if f.code == "MLS001"]
    assert len(starts) == len(set(starts))


def test_unbalanced_braces(tmp_path):
    extra = HOST + "}\n" + HOST
    r = run_cli("--check", "--output-format", "json", write(tmp_path, "extra.mlir", extra))
    data = json.loads(r.stdout)
    assert [(d["code"], d["range"]["start"]["line"]) for d in data] == [("MLA003", 1), ("MLS001", 4), ("MLA003", 6)]
    assert "'}'" in data[1]["message"]
    missing = HOST.replace("  return\n}\n", "  return\n") + "// -----\n" + HOST
    result = check_text(missing)
    codes = [(f.code, f.span.start_pos.line) for f in result.findings]
    assert ("MLA003", 1) in codes and ("MLA003", 5) in codes
    assert any(c == "MLS001" and line == 0 for c, line in codes)
    assert_spans_inside(missing, result.findings)


def test_deep_nesting_is_an_error_not_a_traceback(tmp_path):
    n = 1500
    text = "func.func @f(%c: i1) {\n" + "scf.if %c {\n" * n + 'cf.assert %c, "deep"\n' + "}\n" * n + "return\n}\n"
    deep = write(tmp_path, "deep.mlir", text)
    r = run_cli("--check", deep, REPRO)
    assert r.returncode in (1, 2)
    if r.returncode == 2:  # the internal-error path: one line naming the file, the others checked
        (err,) = r.error_lines()
        assert str(deep) in err
        assert [int(m["line"]) for m in r.concise()] == [18, 20, 29, 31]
    else:
        assert len(r.concise()) == 5


def test_reader_handles_deep_nesting():
    n = 1500
    text = "func.func @f(%c: i1) {\n" + "scf.if %c {\n" * n + 'cf.assert %c, "deep"\n' + "}\n" * n + "return\n}\n"
    assert [f.code for f in check_text(text).findings] == ["MLA003"]


def test_issue_at_the_end_of_the_text_stays_inside():
    for text in ("%x =", "%a, %b = ", "func.func @f() {\n  %x = arith.constant 1 : i32\n}\n%y ="):
        reader = Reader(text, lazy=False)
        reader.read()
        assert reader.issues
        for issue in reader.issues:
            assert 0 <= issue.start <= issue.end <= len(text), (text, issue)


def test_reader_never_raises_on_random_fragments(seed_text, repro_text):
    rnd = random.Random(11)
    sources = [seed_text, repro_text, HOST]
    for _ in range(300):
        src = rnd.choice(sources)
        a, b = sorted(rnd.randrange(len(src) + 1) for _ in range(2))
        frag = src[a:b]
        if rnd.random() < 0.5:  # splice two fragments
            c = rnd.randrange(len(src) + 1)
            frag = frag + src[c:c + rnd.randrange(400)]
        Reader(frag, lazy=False).read()
        result = check_text(frag)
        assert_spans_inside(frag, result.findings)


@pytest.mark.slow
def test_two_hundred_megabyte_file(tmp_path):
    src = REPRO.read_text()
    i = src.index("func.func")
    head, body = src[:i], src[i:]
    # each function carries a 64 KiB weight literal on one line, like exported models
    blob = '  %blob = arith.constant dense<"0x' + "0123456789ABCDEF" * 4096 + '"> : tensor<32768xi8>\n'
    body = body.replace("  %c77 = arith.constant 77", blob + "  %c77 = arith.constant 77", 1)
    path = tmp_path / "big.mlir"
    n = 0
    size = len(head)
    with open(path, "w", encoding="utf-8") as f:
        f.write(head)
        while size < 200_000_000:
            part = body.replace("@main", f"@main_{n}")
            f.write(part)
            size += len(part)
            n += 1
    r = run_cli("--check", "--quiet", "--statistics", "--output-format", "concise", path, timeout=900)
    assert r.returncode == 1
    stats = [ln for ln in r.stdout.splitlines() if "\tMLA001\t" in ln]
    assert len(stats) == 1 and int(stats[0].split("\t")[0]) == 4 * n
    assert r.stdout.count(": MLA001 ") == 4 * n
    assert "MLS001" not in r.stdout

"""`mlir-lsp --check --fix / --diff` as a user runs it: real files, real CLI, real parser and tools."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, REPRO, real_asserts, run_cli, write
from fixhelpers import copy_to, iree_opt, iree_opt_print, real_parse_error

DATA = Path(__file__).resolve().parent / "data"

MODES = ["strip", "assume"]


def mode_args(mode: str) -> list[str]:
    return ["--fix-mode", "assume"] if mode == "assume" else []


def fix(path, mode="strip", *extra):
    return run_cli("--check", "--fix", *mode_args(mode), *extra, path)


def code_lines(text: str) -> str:
    """The text without `//` comment lines (the fixtures' comments mention cf.assert)."""
    return "\n".join(ln for ln in text.split("\n") if not ln.lstrip().startswith("//"))


HOST = ('func.func @f(%a: index, %b: index) {\n'
        '  %0 = arith.cmpi eq, %a, %b : index\n'
        '  cf.assert %0, "m"\n'
        '  return\n'
        '}\n')


def gather(cond: str, extra_args: str = "") -> str:
    """One gather-like linalg.generic whose body asserts `cond` (lines defining %ok)."""
    body = "\n".join("    " + ln for ln in cond.strip().split("\n"))
    return (
        f"func.func @f(%t: tensor<4xi64>, %w: tensor<77xf16>{extra_args}) -> tensor<4xf16> {{\n"
        "  %c77 = arith.constant 77 : index\n"
        "  %c0_i64 = arith.constant 0 : i64\n"
        "  %e = tensor.empty() : tensor<4xf16>\n"
        "  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], "
        'iterator_types = ["parallel"]} ins(%t : tensor<4xi64>) outs(%e : tensor<4xf16>) {\n'
        "  ^bb0(%in: i64, %out: f16):\n"
        "    %i = arith.index_cast %in : i64 to index\n"
        f"{body}\n"
        '    cf.assert %ok, "index out of range"\n'
        "    %x = tensor.extract %w[%i] : tensor<77xf16>\n"
        "    linalg.yield %x : f16\n"
        "  } -> tensor<4xf16>\n"
        "  return %r : tensor<4xf16>\n"
        "}\n")


# --- writing -------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_fix_writes_atomically_and_keeps_the_file_mode(tmp_path, mode):
    f = copy_to(REPRO, tmp_path, "r.mlir", mode=0o640)
    old_inode = f.stat().st_ino
    # A hard link to the old file keeps the old bytes when the write is a rename of a new file
    # (an in-place rewrite would change both names at once).
    os.link(f, tmp_path / "old-link.mlir")
    res = fix(f, mode)
    assert res.returncode == 0, res.stderr
    assert "fixed 4" in res.stderr
    assert stat.S_IMODE(f.stat().st_mode) == 0o640
    assert f.stat().st_ino != old_inode
    assert (tmp_path / "old-link.mlir").read_bytes() == REPRO.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old-link.mlir", "r.mlir"]  # no temp file left
    assert real_asserts(f.read_text()) == []
    assert real_parse_error(f.read_text()) is None


@pytest.mark.parametrize("mode", MODES)
def test_second_fix_changes_nothing(tmp_path, mode):
    f = copy_to(REPRO, tmp_path)
    assert fix(f, mode).returncode == 0
    once = f.read_bytes()
    mtime = f.stat().st_mtime_ns
    inode = f.stat().st_ino
    res = fix(f, mode)
    assert res.returncode == 0, res.stderr
    assert f.read_bytes() == once
    assert (f.stat().st_mtime_ns, f.stat().st_ino) == (mtime, inode)  # not even rewritten
    assert "fixed" not in res.stderr
    d = run_cli("--check", "--diff", *mode_args(mode), f)
    assert (d.returncode, d.stdout) == (0, "")


# --- --diff --------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_diff_prints_a_unified_diff_and_writes_nothing(tmp_path, mode):
    f = copy_to(REPRO, tmp_path)
    before = f.stat()
    d = run_cli("--check", "--diff", *mode_args(mode), f)
    assert d.returncode == 1, d.stderr
    lines = d.stdout.splitlines()
    assert lines[0] == f"--- {f}" and lines[1] == f"+++ {f}"
    assert lines[2].startswith("@@ -")
    removed = [ln[1:] for ln in lines if ln.startswith("-") and not ln.startswith("---")]
    added = [ln[1:] for ln in lines if ln.startswith("+") and not ln.startswith("+++")]
    assert sum("cf.assert" in ln for ln in removed) == 4
    assert not any("cf.assert" in ln for ln in added)
    if mode == "assume":
        assert sum("util.assume.int" in ln for ln in added) == 2
    assert f.read_bytes() == REPRO.read_bytes()
    assert f.stat().st_mtime_ns == before.st_mtime_ns
    assert sorted(p.name for p in tmp_path.iterdir()) == [f.name]


def test_diff_exits_0_and_prints_nothing_without_changes(tmp_path):
    f = write(tmp_path, "clean.mlir", "func.func @f(%a: index) -> index {\n  return %a : index\n}\n")
    d = run_cli("--check", "--diff", f)
    assert (d.returncode, d.stdout) == (0, "")
    # Only a host assert (unsafe fix): nothing would change without --unsafe-fixes ...
    h = write(tmp_path, "host.mlir", HOST)
    d = run_cli("--check", "--diff", h)
    assert (d.returncode, d.stdout) == (0, "")
    # ... and with it, there is a diff (exit 1), still nothing written.
    d = run_cli("--check", "--diff", "--unsafe-fixes", h)
    assert d.returncode == 1 and d.stdout.startswith(f"--- {h}\n+++ {h}\n")
    assert h.read_text() == HOST


@pytest.mark.parametrize("tool", ["patch", "git"])
@pytest.mark.parametrize("mode", MODES)
def test_diff_applies_with_patch_and_git_apply(tmp_path, tool, mode):
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")
    fixed = copy_to(REPRO, tmp_path, "fixed.mlir")
    assert fix(fixed, mode).returncode == 0
    work = tmp_path / "work"
    work.mkdir()
    target = copy_to(REPRO, work, "r.mlir")
    d = run_cli("--check", "--diff", *mode_args(mode), "r.mlir", cwd=work)
    assert d.returncode == 1
    argv = ["patch", "-p0"] if tool == "patch" else ["git", "apply", "-p0", "-"]
    p = subprocess.run(argv, input=d.stdout.encode(), cwd=work, capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr.decode() + p.stdout.decode()
    assert target.read_bytes() == fixed.read_bytes()
    again = run_cli("--check", "--diff", *mode_args(mode), "r.mlir", cwd=work)
    assert (again.returncode, again.stdout) == (0, "")


def test_diff_of_crlf_file_applies_with_patch(tmp_path):
    if shutil.which("patch") is None:
        pytest.skip("patch is not installed")
    crlf = REPRO.read_bytes().replace(b"\n", b"\r\n")
    fixed = write(tmp_path, "fixed.mlir", crlf)
    assert fix(fixed).returncode == 0
    work = tmp_path / "work"
    work.mkdir()
    target = write(work, "r.mlir", crlf)
    d = subprocess.run([str(BIN / "mlir-lsp"), "--check", "--diff", "r.mlir"], cwd=work, capture_output=True)
    assert d.returncode == 1
    p = subprocess.run(["patch", "-p0", "--binary"], input=d.stdout, cwd=work, capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr.decode() + p.stdout.decode()
    assert target.read_bytes() == fixed.read_bytes()


# --- stdin ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_stdin_fix_writes_the_fixed_text_to_stdout(tmp_path, mode):
    f = copy_to(REPRO, tmp_path)
    assert fix(f, mode).returncode == 0
    res = run_cli("--check", "--fix", *mode_args(mode), "-", input=REPRO.read_bytes())
    assert res.returncode == 0, res.stderr
    assert res.stdout == f.read_text()  # exactly the fixed file; the summary goes to stderr
    assert real_parse_error(res.stdout) is None


# --- applicability -------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_host_assert_needs_unsafe_fixes(tmp_path, mode):
    f = write(tmp_path, "host.mlir", HOST)
    res = fix(f, mode)
    assert res.returncode == 1
    assert [m.group("code") for m in res.concise()] == ["MLA003"]
    assert f.read_text() == HOST
    res = fix(f, mode, "--unsafe-fixes")
    assert res.returncode == 0, res.stdout + res.stderr
    # `eq` gives no interval: assume mode strips too. The cmpi goes with the assert.
    assert f.read_text() == "func.func @f(%a: index, %b: index) {\n  return\n}\n"
    assert real_parse_error(f.read_text()) is None


def test_json_marks_host_assert_fixes_unsafe(tmp_path):
    f = write(tmp_path, "host.mlir", HOST)
    (item,) = json.loads(run_cli("--check", "--output-format", "json", f).stdout)
    assert item["code"] == "MLA003"
    assert item["fixes"] and all(x["applicability"] == "unsafe" for x in item["fixes"])


# --- line endings, permissions -------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_crlf_line_endings_are_preserved(tmp_path, mode):
    lf = copy_to(REPRO, tmp_path, "lf.mlir")
    assert fix(lf, mode).returncode == 0
    crlf = write(tmp_path, "crlf.mlir", REPRO.read_bytes().replace(b"\n", b"\r\n"))
    res = fix(crlf, mode)
    assert res.returncode == 0, res.stderr
    data = crlf.read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n") > 0
    assert data == lf.read_bytes().replace(b"\n", b"\r\n")


def test_read_only_file_is_reported_with_exit_2_and_left_unchanged(tmp_path):
    f = copy_to(REPRO, tmp_path, mode=0o444)
    res = fix(f)
    assert res.returncode == 2
    errs = res.error_lines()
    assert len(errs) == 1 and str(f) in errs[0] and "read-only" in errs[0]
    assert f.read_bytes() == REPRO.read_bytes()
    assert stat.S_IMODE(f.stat().st_mode) == 0o444
    assert sorted(p.name for p in tmp_path.iterdir()) == [f.name]


# --- assume falls back to strip ------------------------------------------------------------------

FALLBACKS = {
    "ne": ("%ok = arith.cmpi ne, %i, %c77 : index", "", "`ne`"),
    "dynamic-bound": ("%ok = arith.cmpi ult, %i, %n : index", ", %n: index", "not a constant"),
    "signed-bound-alone": ("%ok = arith.cmpi slt, %i, %c77 : index", "", "signed bound alone"),
    "not-a-comparison": ("%ok = arith.trunci %in : i64 to i1", "", "not an arith.cmpi comparison"),
}


@pytest.mark.parametrize("case", sorted(FALLBACKS))
def test_assume_mode_falls_back_to_strip_and_json_says_why(tmp_path, case):
    cond, args, why = FALLBACKS[case]
    src = gather(cond, args)
    assert real_parse_error(src) is None  # the test input itself is valid IR
    f = write(tmp_path, "a.mlir", src)
    (item,) = json.loads(run_cli("--check", "--output-format", "json", "--fix-mode", "assume", f).stdout)
    assert [x["mode"] for x in item["fixes"]] == ["strip"]
    assert why in item["assume_unavailable"], item["assume_unavailable"]
    strip = write(tmp_path, "s.mlir", src)
    assert fix(strip, "strip").returncode == 0
    res = fix(f, "assume")
    assert res.returncode == 0, res.stdout + res.stderr
    assert f.read_bytes() == strip.read_bytes()  # exactly the strip result
    out = f.read_text()
    assert "cf.assert" not in out and "util.assume.int" not in out
    assert "%x = tensor.extract %w[%i] : tensor<77xf16>" in out
    assert real_parse_error(out) is None


def test_assume_offered_for_the_sound_case_of_the_same_template(tmp_path):
    """Control for the fallbacks: `ult` against a constant does give the assume rewrite."""
    f = write(tmp_path, "a.mlir", gather("%ok = arith.cmpi ult, %i, %c77 : index"))
    (item,) = json.loads(run_cli("--check", "--output-format", "json", f).stdout)
    assert {x["mode"] for x in item["fixes"]} == {"strip", "assume"}
    assert not item.get("assume_unavailable")
    assert fix(f, "assume").returncode == 0
    out = f.read_text()
    assert "    %i_assumed = util.assume.int %i<umin = 0, umax = 76> : index\n" in out
    assert "    %x = tensor.extract %w[%i_assumed] : tensor<77xf16>\n" in out
    assert "tensor.extract %w[%i]" not in out
    assert real_parse_error(out) is None


def test_fallback_is_per_assert(tmp_path):
    """One gather with a sound pair and an unrelated `ne` assert: assume for the pair, strip for `ne`."""
    src = gather("%c5 = arith.constant 5 : index\n"
                 "%lo = arith.cmpi sge, %in, %c0_i64 : i64\n"
                 'cf.assert %lo, "negative"\n'
                 "%ok = arith.cmpi slt, %i, %c77 : index\n"
                 "%d = linalg.index 0 : index\n"
                 "%nz = arith.cmpi ne, %d, %c5 : index\n"
                 'cf.assert %nz, "not five"')
    assert real_parse_error(src) is None
    f = write(tmp_path, "a.mlir", src)
    items = json.loads(run_cli("--check", "--output-format", "json", "--fix-mode", "assume", f).stdout)
    by_msg = {it["assert_message"]: it for it in items}
    assert [x["mode"] for x in by_msg["not five"]["fixes"]] == ["strip"]
    assert "`ne`" in by_msg["not five"]["assume_unavailable"]
    assert by_msg["index out of range"]["fixes"][0]["mode"] == "assume"
    res = fix(f, "assume")
    assert res.returncode == 0, res.stdout + res.stderr
    out = f.read_text()
    assert "cf.assert" not in out
    assert out.count("= util.assume.int") == 1
    assert "util.assume.int %i<umin = 0, umax = 76> : index" in out
    assert real_parse_error(out) is None


def test_assume_fix_of_a_value_checked_again_in_a_nested_region(tmp_path):
    """The body checks %i, then an `scf.if` inside it checks %i again before using it: two
    assume groups whose rewrites meet at that use. The fix writes parsable IR (no traceback),
    the use takes the nearer fact, and both facts about %i are there."""
    src = gather("%lo = arith.cmpi sge, %in, %c0_i64 : i64\n"
                 'cf.assert %lo, "negative"\n'
                 "%ok = arith.cmpi slt, %i, %c77 : index", extra_args=", %b: i1")
    src = src.replace(
        "    %x = tensor.extract %w[%i] : tensor<77xf16>\n",
        "    %x = scf.if %b -> (f16) {\n"
        "      %lo2 = arith.cmpi sge, %in, %c0_i64 : i64\n"
        '      cf.assert %lo2, "negative"\n'
        "      %ok2 = arith.cmpi slt, %i, %c77 : index\n"
        '      cf.assert %ok2, "index out of range"\n'
        "      %y = tensor.extract %w[%i] : tensor<77xf16>\n"
        "      scf.yield %y : f16\n"
        "    } else {\n"
        "      scf.yield %out : f16\n"
        "    }\n")
    assert real_parse_error(src) is None
    f = write(tmp_path, "a.mlir", src)
    res = fix(f, "assume")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    out = f.read_text()
    assert "cf.assert" not in out
    assert out.count("= util.assume.int %i<umin = 0, umax = 76> : index") == 2
    assert "      %y = tensor.extract %w[%i_assumed_1] : tensor<77xf16>\n" in out
    assert real_parse_error(out) is None


def test_fix_of_a_broken_assert_that_swallowed_the_code_after_it(tmp_path):
    """A half-typed generic `"cf.assert"(%0) ({` makes the reader see an assert whose region
    holds the rest of the body, asserts included. --fix must not crash, and must not delete
    the real code that the broken assert seems to hold: it fixes the asserts inside it."""
    src = gather("%ok = arith.cmpi ult, %i, %c77 : index").replace(
        "    %i = arith.index_cast", '    "cf.assert"(%ok) ({\n    %i = arith.index_cast')
    f = write(tmp_path, "a.mlir", src)
    res = fix(f)
    assert "Traceback" not in res.stderr, res.stderr
    assert res.returncode in (0, 1), res.stdout + res.stderr
    out = f.read_text()
    assert "%x = tensor.extract %w[%i] : tensor<77xf16>" in out
    assert "linalg.yield %x : f16" in out
    assert 'cf.assert %ok, "index out of range"' not in out


def test_no_fix_is_offered_for_text_with_a_nul_character():
    """MLIR reads a NUL as a space; our reader does not, and may see two statements as one (the
    fixes soak's find: the strip fix then deleted a constant still in use). Such text gets its
    findings but no fix, and says why."""
    from mlir_lsp_asserts.checker import check_text
    from mlir_lsp_asserts.fixes import fix_text

    text = (DATA / "nul_in_a_dispatch_region.mlir").read_text()
    assert real_parse_error(text) is None  # the real parser accepts it
    result = check_text(text)
    asserts = [f for f in result.findings if f.code.startswith("MLA")]
    assert sorted(f.code for f in asserts) == ["MLA001", "MLA002"]
    assert all(f.fixes == [] and "NUL" in (f.assume_unavailable or "") for f in asserts)
    assert fix_text(result, "strip", unsafe=True).fixed == 0


def test_a_function_with_a_statement_that_goes_on_at_the_next_line_gets_no_fix(tmp_path):
    """MLIR is free-form: `%lo = arith.cmpi sge` then `, %in, %c0_i64 : i64` on the next line is one
    op (the fixes soak's find). The reader then ended the op at the line end: deleting it left
    the second line behind, and a use on that line was missed, so another assert's fix deleted
    `%c0_i64`, still used there. The reader now reads such an op whole (tests/test_statements.py),
    but a function with a line that starts with `,` `:` `=` still gets no fix, and says why: the
    fixes' own scans for uses and statement ends go by lines."""
    src = gather("%lo = arith.cmpi sge\n, %in, %c0_i64 : i64\n"
                 'cf.assert %lo, "negative"\n'
                 "%ok = arith.cmpi ult, %i, %c77 : index")
    assert real_parse_error(src) is None
    f = write(tmp_path, "a.mlir", src)
    items = [it for it in json.loads(run_cli("--check", "--output-format", "json", f).stdout)
             if it["code"].startswith("MLA")]
    assert len(items) == 2 and all(it["fixes"] == [] and "goes on" in it["assume_unavailable"] for it in items)
    for mode in MODES:
        res = fix(f, mode)
        assert res.returncode == 1, res.stdout + res.stderr  # the findings remain
        assert f.read_text() == src


# --- bytecode ------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_mlirbc_fix_writes_bytecode_back(tmp_path, mode):
    bc = tmp_path / "r.mlirbc"
    p = subprocess.run([str(BIN / "iree-opt"), str(REPRO), "--emit-bytecode", "-o", str(bc)], capture_output=True)
    assert p.returncode == 0, p.stderr
    assert bc.read_bytes().startswith(b"ML\xefR")
    res = fix(bc, mode)
    assert res.returncode == 0, res.stdout + res.stderr
    data = bc.read_bytes()
    assert data.startswith(b"ML\xefR")  # still bytecode, not a text dump
    assert iree_opt(bc).returncode == 0
    text = iree_opt_print(bc)
    assert "cf.assert" not in text
    assert "func.func @main" in text
    if mode == "assume":
        assert text.count("util.assume.int") == 2
    # Second run: nothing left to fix, bytes stay.
    assert fix(bc, mode).returncode == 0
    assert bc.read_bytes() == data


# --- regressions: bugs a review found in --fix on stdin and read-only files (all fixed) ----------

@pytest.mark.parametrize("src", ["clean", "host"])
def test_stdin_fix_without_changes_still_writes_the_text(src):
    text = "func.func @f(%a: index) -> index {\n  return %a : index\n}\n" if src == "clean" else HOST
    res = run_cli("--check", "--fix", "-", input=text)
    assert res.stdout == text


def test_stdin_fix_reports_remaining_findings_on_stderr():
    text = REPRO.read_text() + HOST
    res = run_cli("--check", "--fix", "-", input=text)
    assert res.returncode == 1
    assert "cf.assert %" in res.stdout and "MLA003" not in res.stdout  # the text only
    assert "MLA003" in res.stderr


def test_read_only_file_still_has_its_findings_reported(tmp_path):
    f = copy_to(REPRO, tmp_path, mode=0o444)
    res = fix(f)
    assert res.returncode == 2
    assert [m.group("code") for m in res.concise()] == ["MLA001"] * 4
    assert "Found 4 findings in 1 file" in res.stderr

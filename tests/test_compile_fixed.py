"""Compile with the fix (`mlir-lsp --compile FILE -o OUT.vmfb`, dispatch/compile_fixed.py) with the
real iree-compile: what it reports, what it writes (whole or nothing), its errors; the prompt
encoder's torch IR (slow)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path

import pytest

import mlir_lsp_asserts as mla
from conftest import ENCODER_TORCH_GROUP, MODELS, REPRO, run_cli
from mlir_lsp_asserts.dispatch.compile_fixed import FixedCompile
from mlir_lsp_asserts.dispatch.compiler import find_compiler
from mlir_lsp_asserts.iree_flags.flags import profile_flags


def test_cli_compiles_the_repro_with_the_fix_and_says_what_it_saved(tmp_path):
    out = tmp_path / "repro.vmfb"
    r = run_cli("--compile", REPRO, "-o", out, "--fix-mode", "assume", "--no-cache")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (f"{REPRO}: wrote {out}: 4 asserts rewritten to util.assume.int; "
                                "4 -> 3 dispatches (saved 1)")
    assert out.read_bytes()[:4] != b"" and out.stat().st_size > 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repro.vmfb"]


def test_cli_json_and_strip_mode_and_bytecode_input(tmp_path):
    import io

    from iree.compiler import ir

    buf = io.BytesIO()
    ir.Module.parse(REPRO.read_text(), ir.Context()).operation.write_bytecode(buf)
    bc = tmp_path / "repro.mlirbc"
    bc.write_bytes(buf.getvalue())
    r = run_cli("--compile", bc, "-o", tmp_path / "bc.vmfb", "--fix-mode", "strip", "--output-format", "json",
                "--no-cache")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert (got["fix_mode"], got["asserts_fixed"], got["assumed"]) == ("strip", 4, 0)
    assert (got["unfixed_flow_dispatches"], got["flow_dispatches"], got["saved"]) == (4, 3, 1)
    assert got["fixed_by_code"] == {"MLA001": 4} and got["host_asserts_kept"] == 0
    assert (tmp_path / "bc.vmfb").stat().st_size > 1000


def test_cli_keeps_host_asserts_and_says_when_the_fix_saves_nothing(tmp_path):
    src = tmp_path / "host.mlir"
    src.write_text("func.func @f(%a: index, %b: index) -> index {\n  %ok = arith.cmpi eq, %a, %b : index\n"
                   "  cf.assert %ok, \"mismatching contracting dimension\"\n  return %a : index\n}\n")
    r = run_cli("--compile", src, "-o", tmp_path / "host.vmfb", "--no-cache")
    assert r.returncode == 0, r.stderr
    assert "1 host assert (MLA003) kept" in r.stdout
    assert "the fix saves no dispatch here" in r.stdout
    assert "no assert to fix" in r.stderr


def test_cli_errors_are_one_line_and_leave_the_output_as_it_was(tmp_path):
    out = tmp_path / "m.vmfb"
    out.write_bytes(b"old module")
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f() {\n  %x = arith.constant 1 : i32\n  return %x : i64\n}\n")
    r = run_cli("--compile", bad, "-o", out, "--no-cache")
    assert r.returncode == 2
    assert r.error_lines()[-1].startswith(f"mlir-lsp: error: {bad}: iree-compile failed")
    assert out.read_bytes() == b"old module"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.mlir", "m.vmfb"]
    for args, msg in ((["--compile", REPRO], "--compile needs -o OUT.vmfb"),
                      (["--compile", "-o", out], "--compile needs exactly one FILE"),
                      (["--compile", tmp_path / "none.mlir", "-o", out], "none.mlir: no such file or directory"),
                      (["--compile", REPRO, "-o", tmp_path / "no" / "m.vmfb"], "no such folder"),
                      (["--compile", REPRO, "-o", out, "--profile", "gfx9999"], "unknown dispatch profile")):
        r = run_cli(*args)
        assert r.returncode == 2 and len(r.error_lines()) == 1 and msg in r.error_lines()[0], (args, r.stderr)
    assert out.read_bytes() == b"old module"


def test_a_cancelled_compile_writes_nothing(tmp_path):
    job = FixedCompile(find_compiler(), disk_cache=False)
    job.cancel()
    out = tmp_path / "m.vmfb"
    with pytest.raises(Exception, match="cancelled"):
        job.run(REPRO.read_text(), profile_flags("default"), output=str(out))
    assert list(tmp_path.iterdir()) == []


@contextlib.contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def test_the_module_gets_the_mode_a_plain_open_gives_and_an_old_module_keeps_its_own(tmp_path):
    """Issue 40, defect 8: the module was a 0600 temporary file renamed over the output."""
    out = tmp_path / "m.vmfb"
    with umask(0o022):
        r = run_cli("--compile", REPRO, "-o", out, "--no-cache")
        assert r.returncode == 0, r.stderr
        assert oct(out.stat().st_mode & 0o7777) == oct(0o644)
        out.write_bytes(b"old module")
        out.chmod(0o664)
        r = run_cli("--compile", REPRO, "-o", out, "--no-cache")
        assert r.returncode == 0, r.stderr
        assert out.read_bytes() != b"old module" and oct(out.stat().st_mode & 0o7777) == oct(0o664)
        api_out = tmp_path / "api.vmfb"
        mla.compile_fixed(REPRO, output_file=api_out, count_unfixed=False, cache=False)
        assert oct(api_out.stat().st_mode & 0o7777) == oct(0o644)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["api.vmfb", "m.vmfb"]


def test_every_output_written_through_files_gets_the_mode_open_gives(tmp_path):
    """files.write_new_or_atomic (the baselines, the results file, the cache) and write_atomic
    (--fix): a new file gets the mode a plain open() gives, an existing one keeps its own."""
    from mlir_lsp_asserts.files import write_atomic, write_new_or_atomic

    new = tmp_path / "new.json"
    with umask(0o027):
        write_new_or_atomic(new, b"{}")
        assert new.read_bytes() == b"{}" and oct(new.stat().st_mode & 0o7777) == oct(0o640)
        new.chmod(0o604)
        write_new_or_atomic(new, b"[]")
        assert new.read_bytes() == b"[]" and oct(new.stat().st_mode & 0o7777) == oct(0o604)
        write_atomic(str(new), lambda f: f.write(b"1"))
        assert new.read_bytes() == b"1" and oct(new.stat().st_mode & 0o7777) == oct(0o604)
        with pytest.raises(FileNotFoundError):  # --fix of a file removed meanwhile does not make it again
            write_atomic(str(tmp_path / "gone.mlir"), b"")
    assert [p.name for p in tmp_path.iterdir()] == ["new.json"]


def logging_compiler(tmp_path: Path) -> tuple[Path, Path]:
    """An `iree-compile` that writes each command line it gets to a log, then runs the real one."""
    real = Path(sys.executable).with_name("iree-compile")
    log = tmp_path / "compiles.log"
    wrapper = tmp_path / "bin" / "iree-compile"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, log


def test_an_output_folder_that_cannot_be_written_is_named_before_any_compile(tmp_path):
    """Issue 40, defect 9: `-o /proc/m.vmfb` (a folder nobody can write in, root included) ran the
    whole lowering and count, left a temporary folder, and blamed the input ("No such file or
    directory"). Now: one line naming the output, no compile run, no temporary folder left."""
    compiler, log = logging_compiler(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = "/proc/m.vmfb"
    r = run_cli("--compile", REPRO, "-o", out, "--compiler", compiler, "--no-cache", env={"TMPDIR": str(tmp)})
    assert r.returncode == 2
    assert r.error_lines() == [f"mlir-lsp: error: cannot write {out}: No such file or directory"], r.stderr
    compiles = [ln for ln in (log.read_text().splitlines() if log.exists() else []) if "--version" not in ln]
    assert compiles == []
    assert list(tmp.iterdir()) == []
    old = tempfile.tempdir
    tempfile.tempdir = str(tmp)
    try:
        with pytest.raises(mla.CompileError, match=r"^cannot write /proc/m\.vmfb: No such file or directory$"):
            mla.compile_fixed(REPRO, output_file=out, compiler=str(compiler), cache=False)
    finally:
        tempfile.tempdir = old
    compiles = [ln for ln in (log.read_text().splitlines() if log.exists() else []) if "--version" not in ln]
    assert compiles == []
    assert list(tmp.iterdir()) == []


@pytest.mark.slow
@ENCODER_TORCH_GROUP
def test_the_prompt_encoders_torch_ir_counts_1658_with_the_fix_where_plain_gives_1660(tmp_path,
                                                                                     encoder_torch_counted):
    """The whole path on a real export (gfx942, default flags): lowered, its 16 gather asserts
    rewritten, compiled to a .vmfb (about a minute on 2 cores). The plain count and the lowering
    come from the group's count cache (`encoder_torch_counted`: compiled once a run, with the
    other tests of the export); the fixed count and the module are compiled here."""
    src, out = MODELS / "sdxl_prompt_encoder.torch.mlir", tmp_path / "pe.vmfb"
    cache = {"XDG_CACHE_HOME": str(encoder_torch_counted)}
    r = run_cli("--compile", src, "-o", out, "--output-format", "json", env=cache, timeout=1800)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert (got["unfixed_flow_dispatches"], got["flow_dispatches"], got["saved"]) == (1660, 1658, 2)
    assert (got["asserts_fixed"], got["assumed"], got["host_asserts_kept"]) == (16, 16, 0)
    assert out.stat().st_size > 100_000

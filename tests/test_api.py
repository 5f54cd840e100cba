"""The Python API (`import mlir_lsp_asserts as mla`): check, fix, count_dispatches and compile_fixed
on every input kind but the turbine export (tests/test_runtime_export.py), with the real parser and
the real iree-compile; its errors; its import cost; mypy on a user's script."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mlir_lsp_asserts as mla
from conftest import MODELS, REPO, REPRO

KINDS = ("path", "pathlike", "text", "bytes", "bytecode", "module", "operation")


def _bytecode(text: str) -> bytes:
    import io

    from iree.compiler import ir

    buf = io.BytesIO()
    ir.Module.parse(text, ir.Context()).operation.write_bytecode(buf)
    return buf.getvalue()


def src_of(kind: str, tmp_path: Path):
    """The repro as the API's `src` of each kind."""
    text = REPRO.read_text(encoding="utf-8")
    if kind == "path":
        return str(REPRO)
    if kind == "pathlike":
        return REPRO
    if kind == "text":
        return text
    if kind == "bytes":
        return text.encode("utf-8")
    if kind == "bytecode":
        return _bytecode(text)
    from iree.compiler import ir

    module = ir.Module.parse(text, ir.Context())
    return module if kind == "module" else module.operation


@pytest.mark.parametrize("kind", KINDS)
def test_check_finds_the_four_gather_asserts_in_every_input_kind(kind, tmp_path):
    r = mla.check(src_of(kind, tmp_path))
    assert r.by_code() == {"MLA001": 4}
    assert all(f.fixable and f.line > 0 for f in r.findings)
    assert {f.assert_message for f in r.findings} == {"index must be smaller than dim size",
                                                      "index must be larger or equal to 0"}
    assert r.is_bytecode == (kind == "bytecode")


def test_check_lines_are_the_files_lines():
    r = mla.check(REPRO)
    lines = REPRO.read_text().splitlines()
    assert [lines[f.line - 1].strip()[:9] for f in r.findings] == ["cf.assert"] * 4


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", ["assume", "strip"])
def test_fix_removes_every_assert_and_the_real_parser_reads_the_result(kind, mode, tmp_path):
    r = mla.fix(src_of(kind, tmp_path), mode=mode)
    assert r.changed and r.asserts_fixed == 4 and r.fixed_by_code == {"MLA001": 4}
    assert r.remaining == () and "cf.assert %" not in r.text
    assert r.assumed == (4 if mode == "assume" else 0)
    assert ("= util.assume.int" in r.text) == (mode == "assume")
    module = r.module()
    assert "cf.assert" not in str(module) and str(module).count("util.assume.int") == (2 if mode == "assume" else 0)


def test_fix_keeps_host_asserts(tmp_path):
    text = ("func.func @f(%a: index, %b: index) {\n  %ok = arith.cmpi eq, %a, %b : index\n"
            "  cf.assert %ok, \"mismatching contracting dimension\"\n  return\n}\n")
    r = mla.fix(text)
    assert not r.changed and r.host_asserts_kept == 1
    assert [f.code for f in r.remaining] == ["MLA003"]


def test_fix_of_torch_ir_says_where_its_asserts_are():
    text = (REPRO.parent.parent / "models" / "clip_l.torch.mlir").read_text()
    r = mla.fix(text)
    assert not r.changed
    assert any("compile_fixed" in n for n in r.notes)


@pytest.mark.parametrize("kind", KINDS)
def test_count_dispatches_with_the_what_if_in_every_input_kind(kind, tmp_path):
    n = mla.count_dispatches(src_of(kind, tmp_path), what_if="assume", cache=False)
    assert (n.flow_dispatches, n.initializer_dispatches, n.function_dispatches) == (4, 2, 2)
    assert n.what_if is not None
    assert (n.what_if.flow_dispatches, n.what_if.saved, n.what_if.asserts_fixed) == (3, 1, 4)
    assert sum(n.per_function.values()) == 4 and n.per_function["@main"] == 2


@pytest.mark.parametrize("kind", KINDS)
def test_compile_fixed_builds_a_module_with_fewer_dispatches_in_every_input_kind(kind, tmp_path):
    r = mla.compile_fixed(src_of(kind, tmp_path), fix_mode="assume", cache=False)
    assert (r.unfixed_dispatches, r.fixed_dispatches, r.saved) == (4, 3, 1)
    assert r.vmfb is not None and len(r.vmfb) > 1000 and r.output is None
    assert r.asserts_fixed == 4 and r.host_asserts_kept == 0
    assert "saved 1" in r.summary()


def test_compile_fixed_writes_the_output_file(tmp_path):
    out = tmp_path / "m.vmfb"
    r = mla.compile_fixed(REPRO, fix_mode="strip", output_file=out, cache=False)
    assert r.output == str(out) and out.stat().st_size > 1000 and r.vmfb is None
    assert r.assumed == 0 and r.saved == 1


def test_errors_are_our_own_types_with_the_clis_message(tmp_path):
    missing = tmp_path / "nope.mlir"
    with pytest.raises(mla.SourceError, match=r"nope\.mlir: no such file or directory"):
        mla.check(missing)
    with pytest.raises(mla.UsageError, match="unknown dispatch profile 'gfx9999'"):
        mla.count_dispatches(REPRO, profile="gfx9999")
    with pytest.raises(mla.UsageError, match="unknown fix mode 'delete'"):
        mla.fix(REPRO, mode="delete")
    with pytest.raises(mla.UsageError, match="cannot read a int as MLIR"):
        mla.check(42)
    with pytest.raises(mla.SourceError, match="not valid UTF-8"):
        mla.check(b"func.func @f() {\xff}")
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f() {\n  %x = arith.constant 1 : i32\n  return %x : i64\n}\n")
    with pytest.raises(mla.CompileError, match=r"bad\.mlir: iree-compile failed") as e:
        mla.compile_fixed(bad, output_file=tmp_path / "bad.vmfb", cache=False)
    assert isinstance(e.value, mla.MlirLspError) and e.value.diagnostics
    assert not (tmp_path / "bad.vmfb").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.mlir"]  # no half-written module


def test_a_str_is_a_path_when_such_a_file_exists_else_text_only_when_it_looks_like_mlir(tmp_path, monkeypatch):
    """Issue 40, defect 10: a real path with `{` in it was read as MLIR text (one MLS001), and a
    missing path without `.mlir` was read as text (`fix` gave the path back as the fixed text)."""
    braces = tmp_path / "{braces}" / "model.mlir"
    braces.parent.mkdir()
    braces.write_text(REPRO.read_text())
    assert mla.check(str(braces)).by_code() == {"MLA001": 4}
    no_suffix = tmp_path / "model"  # a file that exists is a path, whatever its name
    no_suffix.write_text(REPRO.read_text())
    assert mla.fix(str(no_suffix)).asserts_fixed == 4
    monkeypatch.chdir(tmp_path)
    for missing in ("examples/hoisted_gather", "missing_model", str(tmp_path / "{braces}" / "gone.mlir"),
                    "gone (copy).mlir"):
        for call in (mla.check, mla.fix):
            with pytest.raises(mla.SourceError, match=rf"^{re.escape(missing)}: no such file or directory$"):
                call(missing)
    with pytest.raises(mla.SourceError, match=r"module \{\}: no such file or directory$"):
        mla.check(Path("module {}"))  # a Path is always a path
    # text that looks like MLIR is text, one line or many
    assert mla.check("func.func @f() { return }").findings == ()
    assert mla.check("").findings == ()
    assert mla.fix(REPRO.read_text()).asserts_fixed == 4


def test_check_lowers_torch_ir_given_as_bytes_with_its_weights(tmp_path, monkeypatch):
    """`mla.check(bytes)` of an export with its weights inline finds what `mla.check(path)` finds:
    the lowering gets the whole text (it got the IR part only: 'refers to 1 resource(s) that the
    input does not hold', no finding)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    clip = MODELS / "clip_l.torch.mlir"
    by_path = mla.check(clip)
    got = mla.check(clip.read_bytes())
    assert got.notes == (), got.notes
    assert [(f.code, f.line) for f in got.findings] == [(f.code, f.line) for f in by_path.findings] == [
        ("MLA004", 210), ("MLA004", 216)]


def test_a_path_the_system_cannot_name_is_a_source_error():
    """A str or Path holding a NUL byte names no file: SourceError naming it, as a missing path
    is, not the ValueError open() raises ("embedded null byte")."""
    for src in ("model\0.mlir", "models/x\0y", Path("a\0b.mlir")):
        for call in (mla.check, mla.fix):
            with pytest.raises(mla.SourceError, match="embedded null byte"):
                call(src)


def test_importing_the_package_loads_neither_iree_nor_the_api():
    code = ("import sys, mlir_lsp_asserts as mla; assert mla.__version__; "
            "print(sorted(m for m in sys.modules if m.startswith(('iree', 'torch', 'mlir_lsp_asserts.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_check_stays_the_function_when_the_checker_module_is_imported_first():
    """The checker module (`mlir_lsp_asserts.checker`, once `check`) is imported by the CLI and the
    server; `mla.check` stays the API's function (it was once turned into the module: "'module'
    object is not callable"), and the module is the module by any spelling, with no ModuleType
    subclass in the package's __init__ to keep them apart."""
    code = ("from mlir_lsp_asserts.checker import check_text; import mlir_lsp_asserts as mla; "
            "import mlir_lsp_asserts.api as api; assert mla.check is api.check, mla.check; "
            "import mlir_lsp_asserts.checker as m, types; assert m.check_text is check_text; "
            "assert type(mla) is types.ModuleType, type(mla); "
            "print(mla.check('func.func @f() { return }').findings)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "()", out.stderr[-2000:]


def test_all_names_resolve_and_star_import_gives_them():
    ns: dict = {}
    exec("from mlir_lsp_asserts import *", ns)
    assert {"check", "fix", "count_dispatches", "compile_fixed", "MlirLspError"} <= set(ns)
    assert "compile" not in ns  # the builtin stays
    assert all(getattr(mla, name) is not None for name in mla.__all__)
    import mlir_lsp_asserts.api as api

    assert mla.__all__ == ["__version__", *api.__all__]
    assert (REPO / "mlir_lsp_asserts" / "py.typed").is_file()


USER_SCRIPT = '''
import mlir_lsp_asserts as mla

findings = mla.check("model.mlir").findings
line: int = findings[0].line
fixed: str = mla.fix(b"...", mode="assume").text
n = mla.count_dispatches("model.mlir", profile="default", what_if="strip")
saved: int | None = n.what_if.saved if n.what_if else None
r = mla.compile_fixed("model.mlir", fix_mode="assume", output_file="m.vmfb", flags=["--iree-opt-level=O0"])
dispatches: int = r.fixed_dispatches
try:
    mla.check("x.mlir")
except mla.MlirLspError as e:
    print(str(e))
'''


def test_mypy_accepts_a_users_script_and_rejects_a_wrong_one(tmp_path):
    good = tmp_path / "user.py"
    good.write_text(USER_SCRIPT)
    wrong = tmp_path / "wrong.py"
    wrong.write_text(USER_SCRIPT + "\nbad: str = mla.count_dispatches('m.mlir').flow_dispatches\n")
    # (MYPYPATH: the editable install's import hook is not a path mypy follows; an installed
    # wheel is found through its py.typed)
    cmd = [sys.executable, "-m", "mypy", "--no-incremental", "--strict", "--follow-imports=silent"]
    env = {**os.environ, "MYPYPATH": str(REPO)}
    ok = subprocess.run([*cmd, str(good)], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert ok.returncode == 0, ok.stdout
    bad = subprocess.run([*cmd, str(wrong)], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert bad.returncode == 1 and 'incompatible types in assignment (expression has type "int"' in bad.stdout.lower()

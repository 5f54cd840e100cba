"""--fix / --diff end to end through the real CLI, judged by the real parser and compiler."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO as ROOT  # noqa: E402
from conftest import SHARED  # noqa: E402
from fixhelpers import flow_dispatch_count  # noqa: E402

FIXTURES = SHARED / "fixtures"
SEED = FIXTURES / "seed" / "sdxl_clip_extra_dispatches.mlir"
REPRO = FIXTURES / "repro" / "hoisted_gather.mlir"
ENCODER = FIXTURES / "models" / "sdxl_prompt_encoder.input.mlir"
CLIP_L = FIXTURES / "models" / "clip_l.input.mlir"
BIN = Path(sys.executable).parent
GOLDEN = Path(__file__).parent / "golden"


def cli(*args, stdin=None, cwd=ROOT):
    p = subprocess.run([sys.executable, "-m", "mlir_lsp_asserts", *map(str, args)], capture_output=True,
                       text=True, input=stdin, cwd=cwd, timeout=900)
    assert "Traceback" not in p.stderr, p.stderr
    return p


def copy(src: Path, tmp_path: Path, name: str | None = None) -> Path:
    dst = tmp_path / (name or src.name)
    shutil.copyfile(src, dst)
    return dst


def iree_opt_accepts(path: Path) -> bool:
    return subprocess.run([BIN / "iree-opt", path, "-o", os.devnull], capture_output=True).returncode == 0


def flow_dispatches(path: Path, tmp_path: Path) -> int:
    return flow_dispatch_count(path, tmp_path)  # the raw iree-compile, once per run for a text


@pytest.mark.parametrize("mode", ["strip", "assume"])
def test_seed_fix_is_what_a_person_would_write(tmp_path, mode):
    f = copy(SEED, tmp_path)
    p = cli("--check", "--fix", "--fix-mode", mode, f)
    assert p.returncode == 0, p.stderr
    assert f.read_text() == (GOLDEN / f"seed.{mode}.mlir").read_text()
    assert "cannot read this file" in p.stderr and "only the asserts and their dead condition ops" in p.stderr


def test_fix_is_idempotent_and_keeps_mode(tmp_path):
    f = copy(REPRO, tmp_path)
    os.chmod(f, 0o640)
    assert cli("--check", "--fix", "--fix-mode", "assume", f).returncode == 0
    once = f.read_bytes()
    assert stat.S_IMODE(f.stat().st_mode) == 0o640
    assert cli("--check", "--fix", "--fix-mode", "assume", f).returncode == 0
    assert f.read_bytes() == once
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("tool", ["patch", "git"])
def test_diff_applies_with_patch_and_git_apply(tmp_path, tool):
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} not installed")
    fixed = copy(REPRO, tmp_path, "fixed.mlir")
    assert cli("--check", "--fix", fixed).returncode == 0
    work = tmp_path / "w"
    work.mkdir()
    shutil.copyfile(REPRO, work / "r.mlir")
    d = cli("--check", "--diff", "r.mlir", cwd=work)
    assert d.returncode == 1 and d.stdout.startswith("--- r.mlir\n+++ r.mlir\n")
    assert (work / "r.mlir").read_bytes() == REPRO.read_bytes()  # --diff writes nothing
    argv = ["patch", "-p0"] if tool == "patch" else ["git", "apply", "-p0", "-"]
    subprocess.run(argv, input=d.stdout, text=True, cwd=work, check=True, capture_output=True)
    assert (work / "r.mlir").read_bytes() == fixed.read_bytes()
    again = cli("--check", "--diff", "r.mlir", cwd=work)
    assert again.returncode == 0 and again.stdout == ""


def test_stdin_fix_writes_fixed_text_to_stdout():
    p = cli("--check", "--fix", "-", stdin=REPRO.read_text())
    assert p.returncode == 0
    assert "cf.assert %" not in p.stdout and "func.func @main" in p.stdout


def test_host_asserts_need_unsafe_fixes(tmp_path):
    f = tmp_path / "host.mlir"
    f.write_text("func.func @f(%a: index, %b: index) {\n  %0 = arith.cmpi eq, %a, %b : index\n"
                 '  cf.assert %0, "mismatching contracting dimension"\n  return\n}\n')
    p = cli("--check", "--fix", f)
    assert p.returncode == 1 and "MLA003" in p.stdout and "cf.assert" in f.read_text()
    p = cli("--check", "--fix", "--unsafe-fixes", f)
    assert p.returncode == 0
    assert f.read_text() == "func.func @f(%a: index, %b: index) {\n  return\n}\n"


def test_crlf_line_endings_are_kept(tmp_path):
    f = tmp_path / "crlf.mlir"
    f.write_bytes(REPRO.read_bytes().replace(b"\n", b"\r\n"))
    assert cli("--check", "--fix", "--fix-mode", "assume", f).returncode == 0
    data = f.read_bytes()
    assert b"util.assume.int" in data and data.count(b"\n") == data.count(b"\r\n")


def test_read_only_file_is_reported_not_clobbered(tmp_path):
    f = copy(REPRO, tmp_path)
    os.chmod(f, 0o444)
    p = cli("--check", "--fix", f)
    assert p.returncode == 2 and "read-only" in p.stderr
    assert f.read_bytes() == REPRO.read_bytes()


def test_json_lists_fixes_and_why_assume_is_missing(tmp_path):
    f = tmp_path / "ne.mlir"
    f.write_text("func.func @f(%a: index) -> index {\n  %c = arith.constant 7 : index\n"
                 '  %k = arith.cmpi ne, %a, %c : index\n  cf.assert %k, "m"\n  return %a : index\n}\n')
    (item,) = json.loads(cli("--check", "--output-format", "json", f).stdout)
    assert [x["mode"] for x in item["fixes"]] == ["strip"]
    assert item["fixes"][0]["applicability"] == "unsafe"
    assert "ne" in item["assume_unavailable"]
    items = json.loads(cli("--check", "--output-format", "json", REPRO).stdout)
    fix = next(x for x in items[0]["fixes"] if x["mode"] == "assume")
    assert fix["title"] == "mlir-lsp (MLA001): rewrite to util.assume.int <umin = 0, umax = 76>"
    assert fix["applicability"] == "safe"
    assert set(fix["edits"][0]) == {"range", "newText"}


def test_bytecode_fix_writes_bytecode(tmp_path):
    bc = tmp_path / "r.mlirbc"
    subprocess.run([BIN / "iree-opt", REPRO, "--emit-bytecode", "-o", bc], check=True)
    p = cli("--check", "--fix", bc)
    assert p.returncode == 0, p.stderr
    assert bc.read_bytes().startswith(b"ML\xefR")
    text = subprocess.run([BIN / "iree-opt", bc], capture_output=True, text=True, check=True).stdout
    assert "cf.assert" not in text


def test_corpus_chunk_with_host_assert_still_verifies_after_each_mode(tmp_path):
    rows = [json.loads(ln) for ln in (SHARED / "corpus" / "ground_truth.jsonl").open()]
    chunks = [r for r in rows if r["ok"] and r["asserts"]]
    assert chunks
    for r in chunks:
        lines = (SHARED / "corpus" / "files" / r["repo"] / r["path"]).read_text().split("\n")
        chunk = "\n".join(lines[r["chunk_start_line"] - 1:r["chunk_end_line"]])
        for mode in ("strip", "assume"):
            f = tmp_path / f"chunk_{mode}.mlir"
            f.write_text(chunk)
            p = cli("--check", "--fix", "--unsafe-fixes", "--fix-mode", mode, f)
            assert p.returncode == 0, p.stderr
            v = subprocess.run([BIN / "iree-opt", "--allow-unregistered-dialect", "--verify-each", f, "-o", os.devnull],
                               capture_output=True, text=True)
            assert v.returncode == 0, v.stderr
            assert "cf.assert" not in f.read_text().split("// -----")[0].replace("// CHECK", "")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["strip", "assume"])
def test_fixed_fixtures_parse_and_lose_dispatches(tmp_path, mode):
    expected = {REPRO: (4, 3), ENCODER: (1660, 1658), CLIP_L: (None, None)}
    for src, (before, after) in expected.items():
        f = copy(src, tmp_path)
        p = cli("--check", "--fix", "--fix-mode", mode, f)
        assert p.returncode == 0, p.stderr
        assert iree_opt_accepts(f)
        left = cli("--check", "--select", "MLA001,MLA002", f)
        assert left.returncode == 0 and left.stdout == ""
        if before is not None:
            assert flow_dispatches(src, tmp_path) == before
            assert flow_dispatches(f, tmp_path) == after

"""MLIR bytecode (`.mlirbc`): made with the real `iree-opt --emit-bytecode`, checked through the real
parser, findings traced back to the source locations; a file it cannot read is a clear error."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import BIN, MODELS, REPRO, run_cli, write

BYTECODE_MAGIC = b"ML\xefR"


def emit_bytecode(src, out) -> None:
    iree_opt = BIN / "iree-opt"
    assert iree_opt.exists(), "iree-opt (from iree-base-compiler) is not in the venv"
    subprocess.run([str(iree_opt), str(src), "--emit-bytecode", "-o", str(out)], check=True,
                   capture_output=True, timeout=120)
    assert out.read_bytes().startswith(BYTECODE_MAGIC)


@pytest.fixture(scope="module")
def repro_bc(tmp_path_factory):
    out = tmp_path_factory.mktemp("bc") / "hoisted_gather.mlirbc"
    emit_bytecode(REPRO, out)
    return out


def test_bytecode_gives_the_four_mla001(repro_bc):
    r = run_cli("--check", repro_bc)
    assert r.returncode == 1
    ms = r.concise()
    assert [m["code"] for m in ms] == ["MLA001"] * 4
    # each finding names where the op came from in the textual source
    assert [m["msg"].rsplit("(from ", 1)[1].rstrip(")") for m in ms] == [
        f"{REPRO}:{line}:5" for line in (18, 20, 29, 31)]
    assert "index must be smaller than dim size" in ms[0]["msg"]
    assert "bytecode" in r.stderr  # a note that positions refer to the textual form


def test_bytecode_json_has_source_locations(repro_bc):
    data = json.loads(run_cli("--check", "--output-format", "json", repro_bc).stdout)
    assert [d["source_location"] for d in data] == [f"{REPRO}:{line}:5" for line in (18, 20, 29, 31)]
    assert all(d["path"] == str(repro_bc) for d in data)


def test_bytecode_on_stdin(repro_bc):
    r = run_cli("--check", "-", "--stdin-filename", "x.mlirbc", input=repro_bc.read_bytes())
    assert r.returncode == 1 and [m["path"] for m in r.concise()] == ["x.mlirbc"] * 4


def test_bytecode_found_in_directories(repro_bc, tmp_path):
    write(tmp_path, "d/a.mlirbc", repro_bc.read_bytes())
    write(tmp_path, "d/b.mlir", REPRO.read_text())
    r = run_cli("--check", "--output-format", "json", tmp_path / "d")
    paths = [d["path"] for d in json.loads(r.stdout)]
    assert paths.count(str(tmp_path / "d/a.mlirbc")) == 4 and paths.count(str(tmp_path / "d/b.mlir")) == 4


def test_model_bytecode(tmp_path):
    out = tmp_path / "clip_l.mlirbc"
    emit_bytecode(MODELS / "clip_l.input.mlir", out)
    r = run_cli("--check", "-q", out)
    assert [m["code"] for m in r.concise()] == ["MLA001"] * 4


@pytest.mark.parametrize("data", [
    BYTECODE_MAGIC + b"\x00\x01this is not bytecode at all" * 10,
    BYTECODE_MAGIC,
    BYTECODE_MAGIC + bytes(range(256)),
], ids=["garbage-after-magic", "magic-only", "bytes-after-magic"])
def test_corrupt_bytecode_is_a_clear_error(tmp_path, data):
    bad = write(tmp_path, "bad.mlirbc", data)
    r = run_cli("--check", bad, REPRO)
    assert r.returncode == 2
    (err,) = r.error_lines()
    assert str(bad) in err and "bytecode" in err
    assert len(r.concise()) == 4  # the good file was still checked


def test_truncated_bytecode_is_a_clear_error(repro_bc, tmp_path):
    data = repro_bc.read_bytes()
    for n in (20, len(data) // 2, len(data) - 1):
        bad = write(tmp_path, f"cut{n}.mlirbc", data[:n])
        r = run_cli("--check", "--quiet", bad)
        assert r.returncode == 2, n
        (err,) = r.error_lines()
        assert str(bad) in err and "cannot read MLIR bytecode" in err

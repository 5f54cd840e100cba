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


def _four_mla001_from(bc, source):
    """`--check` of a bytecode file: exit 1 and the repro's four MLA001, each naming where its op
    came from in the textual `source`."""
    r = run_cli("--check", bc)
    assert r.returncode == 1
    ms = r.concise()
    assert [m["code"] for m in ms] == ["MLA001"] * 4
    assert [m["msg"].rsplit("(from ", 1)[1].rstrip(")") for m in ms] == [
        f"{source}:{line}:5" for line in (18, 20, 29, 31)]
    return r, ms


def test_bytecode_gives_the_four_mla001(repro_bc):
    r, ms = _four_mla001_from(repro_bc, REPRO)
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


# --- exports with their weights inline (issue 19) -------------------------------------------------
# The repro with its parameter global and a second one turned into `dense_resource` weights by
# bench/inline_weights.py (as iree-turbine exports them without externalizing), plus an inline
# literal above the elision limit; the asserts stay on lines 18, 20, 29, 31.
EXTRA_GLOBALS = ('util.global private @w2 = #flow.parameter.named<"model"::"w2"> : tensor<16x4xf32>\n'
                 'util.global private @table = dense<"0x{hex}"> : tensor<70000xi8>\n')
WEIGHT_BYTES = 77 * 768 * 2 + 16 * 4 * 4


@pytest.fixture(scope="module")
def inline_bc(tmp_path_factory):
    import random
    import sys

    from conftest import REPO

    d = tmp_path_factory.mktemp("inline")
    weights = random.Random(7).randbytes(70000).hex()
    src = write(d, "exported.mlir", REPRO.read_text() + EXTRA_GLOBALS.format(hex=weights))
    text, bc = d / "inline.mlir", d / "inline.mlirbc"
    subprocess.run([sys.executable, str(REPO / "bench" / "inline_weights.py"), str(src), str(text),
                    "--bytecode", str(bc)], check=True, capture_output=True, timeout=120)
    assert "dense_resource<w_w1>" in text.read_text() and "dense_resource<w_w2>" in text.read_text()
    return text, bc


def iree_opt_text(path) -> str:
    return subprocess.run([str(BIN / "iree-opt"), str(path)], check=True, capture_output=True, text=True,
                          timeout=120).stdout


def resource_section(text: str) -> str:
    assert "{-#" in text, "no resource section: the weights are gone"
    return text[text.index("{-#"):]


def test_inline_weights_findings(inline_bc):
    text, bc = inline_bc
    _four_mla001_from(bc, text)


def test_inline_weights_text_leaves_them_out_and_says_so(inline_bc):
    from mlir_lsp_asserts.bytecode import bytecode_to_text
    from mlir_lsp_asserts.syntax.locations import blank_locations

    _text, bc = inline_bc
    shown = bytecode_to_text(str(bc))
    full = bytecode_to_text(str(bc), weights=True)
    assert '"0x' not in shown and "{-#" not in shown and len(shown) < 20_000
    assert "dense_resource<w_w1> : tensor<77x768xf16>" in shown and "dense_resource<w_w2>" in shown
    notes = shown.rstrip("\n").splitlines()[-2:]
    assert notes == [
        f"// mlir-lsp: 2 dialect resources ({WEIGHT_BYTES / 1e6:.1f} MB) not shown; the bytecode file keeps them",
        "// mlir-lsp: 1 dense literal of more than 65536 elements (0.1 MB) shown as __elided__; "
        "the bytecode file keeps them"]
    # every op keeps its line: the full print (the compiler's, its debug locations blanked) differs
    # only in the literal and the resource section
    assert "loc(" in shown and "loc(" not in full
    full_ir = full[:full.index("{-#")].rstrip("\n").splitlines()
    shown_ir = "\n".join(blank_locations(shown).rstrip("\n").splitlines()[:-2]).rstrip("\n").splitlines()
    assert len(shown_ir) == len(full_ir)  # (trailing lines: the blanked location aliases, the note's separator)
    changed = [(a, b) for a, b in zip(shown_ir, full_ir, strict=False) if a != b]
    assert len(changed) == 1 and "@table = dense_resource<__elided__>" in changed[0][0]
    assert '@table = dense<"0x' in changed[0][1]
    # the bytes read the same as the file on disk
    assert bytecode_to_text(bc.read_bytes()) == shown


@pytest.mark.parametrize("mode", ["strip", "assume"])
def test_inline_weights_fix_keeps_every_weight_byte(inline_bc, tmp_path, mode):
    import os
    import shutil

    _text, bc = inline_bc
    work = tmp_path / "w.mlirbc"
    shutil.copyfile(bc, work)
    os.chmod(work, 0o640)
    before = iree_opt_text(bc)
    assert before.count("cf.assert") == 4
    assert "w_w1:" in resource_section(before) and "w_w2:" in resource_section(before)
    r = run_cli("--check", "--fix", "--fix-mode", mode, work)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "fixed 4" in r.stderr
    assert work.read_bytes().startswith(BYTECODE_MAGIC) and os.stat(work).st_mode & 0o777 == 0o640
    after = iree_opt_text(work)  # iree-opt reads it
    assert "cf.assert" not in after
    assert after.count("util.assume.int") == (2 if mode == "assume" else 0)
    assert resource_section(after) == resource_section(before)  # every resource blob, byte for byte
    table = [ln for ln in before.splitlines() if "@table" in ln]
    assert len(table) == 1 and table[0] in after.splitlines()  # the elided literal too
    assert not [n for n in os.listdir(tmp_path) if n != "w.mlirbc"]  # no temporary file left


def test_fixed_text_that_lost_a_weight_is_an_error_and_the_file_stays(inline_bc, tmp_path):
    import shutil

    from mlir_lsp_asserts.bytecode import bytecode_to_text, write_fixed_bytecode
    from mlir_lsp_asserts.source import SourceError

    _text, bc = inline_bc
    work = tmp_path / "w.mlirbc"
    shutil.copyfile(bc, work)
    shown = bytecode_to_text(str(work))
    lost = "\n".join(ln for ln in shown.splitlines() if "@w2" not in ln)
    with pytest.raises(SourceError, match="tensor constants") as e:
        write_fixed_bytecode(str(work), lost, str(work))
    assert "\n" not in str(e.value)
    assert work.read_bytes() == bc.read_bytes()


def test_bytecode_writer_crash_is_an_error_and_the_file_stays(inline_bc, tmp_path, monkeypatch):
    import os
    import shutil
    import sys

    from mlir_lsp_asserts.bytecode import bytecode_to_text, write_fixed_bytecode
    from mlir_lsp_asserts.source import SourceError

    _text, bc = inline_bc
    work = tmp_path / "w.mlirbc"
    shutil.copyfile(bc, work)
    shown = bytecode_to_text(str(work))
    crash = write(tmp_path, "crash.sh", "#!/bin/sh\nkill -SEGV $$\n")
    os.chmod(crash, 0o755)
    monkeypatch.setattr(sys, "executable", str(crash))
    with pytest.raises(SourceError, match=r"the bytecode writer crashed \(SIGSEGV\)"):
        write_fixed_bytecode(str(work), shown.replace("cf.assert", "// cf.assert"), str(work))
    assert work.read_bytes() == bc.read_bytes()


def test_fix_of_bad_bytecode_is_a_one_line_error(tmp_path):
    bad = write(tmp_path, "bad.mlirbc", BYTECODE_MAGIC + b"\x00\x01 not bytecode" * 10)
    r = run_cli("--check", "--fix", bad)
    assert r.returncode == 2
    (err,) = r.error_lines()
    assert str(bad) in err and "cannot read MLIR bytecode" in err


def test_inline_weights_are_compiled_for_the_dispatch_count(inline_bc, tmp_path):
    """The compiler needs the weights the check's text leaves out (const-eval reads them)."""
    _text, bc = inline_bc
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    r = run_cli("--dispatch-count", "--what-if", "--output-format", "json", bc, env=env)
    assert r.returncode == 0, r.stderr
    (item,) = json.loads(r.stdout)
    assert item["flow_dispatches"] >= 1 and item["what_if"]["flow_dispatches"] >= 1
    r = run_cli("--check", "--what-if", bc, env=env)
    assert "not measured" not in r.stderr, r.stderr
    assert all("measured with profile" in m["msg"] for m in r.concise())


def test_inline_weights_bytecode_from_a_pipe(inline_bc, tmp_path):
    """A pipe (`mlir-lsp --check <(...)`) is read once: nothing is looked into or parsed from the path."""
    import os
    import threading

    _text, bc = inline_bc
    fifo = tmp_path / "pipe.mlirbc"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as f:
            f.write(bc.read_bytes())

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    r = run_cli("--check", fifo, timeout=60)
    t.join(5)
    assert [m["code"] for m in r.concise()] == ["MLA001"] * 4


def test_measured_notes_on_bytecode_name_their_dispatch(repro_bc, tmp_path):
    """`--check --what-if` of a `.mlirbc`: each note names the dispatch its assert ends up in, as on
    the text (the compile's text has the bytecode's debug locations blanked, so the attribution
    finds its lines)."""
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    r = run_cli("--check", "--what-if", "--output-format", "json", repro_bc, env=env)
    assert r.returncode == 1, r.stderr
    items = json.loads(r.stdout)
    assert [i["measured"]["dispatch"] for i in items] == ["_initializer_0_dispatch_0"] * 2 + [
        "_initializer_1_dispatch_0"] * 2
    assert [i["measured"]["only_because_of_asserts"] for i in items] == [False, False, True, True]
    assert [i["source_location"] for i in items] == [f"{REPRO}:{line}:5" for line in (18, 20, 29, 31)]
    assert "in dispatch _initializer_1_dispatch_0, which exists only because of asserts; removing the asserts in " \
           "this file saves 1 dispatch (4 -> 3)" in items[2]["message"] + "; " + items[2]["measured"]["note"]


def test_blank_locations_keeps_every_line():
    from mlir_lsp_asserts.syntax.locations import blank_locations

    text = ('#loc = loc("m.mlir":1:1)\n'
            'func.func @f(%a: i64 loc("m.mlir":2:14)) {\n'
            '  cf.assert %ok, "a loc(x) in (a message" loc(fused["m.py":3:1, callsite("f"("m.py":4:2) at #loc)])\n'
            '  util.return loc(#loc1)\n'
            '} loc(#loc)\n'
            '#loc1 = loc("m.mlir":4:3)\n')
    assert blank_locations(text) == ('\n'
                                     'func.func @f(%a: i64) {\n'
                                     '  cf.assert %ok, "a loc(x) in (a message"\n'
                                     '  util.return\n'
                                     '}\n'
                                     '\n')
    assert blank_locations("no locations here\n") == "no locations here\n"

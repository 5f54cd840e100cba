"""Dispatch attribution, compiler errors at their lines, and compiler faults (one clear message).

The real iree-compile on the small repro (< 1 s a compile); faults with tiny fake compilers.
"""

from __future__ import annotations

import stat
import sys
import time
from pathlib import Path

import pytest

from conftest import ENCODER_GROUP, ENCODER_TORCH_GROUP
from tests.test_dispatch_count import ENCODER, ENCODER_TORCH, REPRO, counts, mlir_lsp

FAKE = """#!/bin/sh
case "$1" in
  --version) echo "IREE compiler version 9.9.9fake @ 0"; exit 0;;
  --help-list-hidden) printf '  --iree-hal-target-device=<string>\\n  --iree-rocm-target=<string>\\n'; exit 0;;
esac
{body}
"""


def fake_compiler(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "bin" / "iree-compile"
    p.parent.mkdir(exist_ok=True)
    p.write_text(FAKE.format(body=body))
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return p


def test_attribution_names_source_ops_and_the_dispatch_asserts_alone_cause(tmp_path):
    item = counts(mlir_lsp("--dispatch-count", "--what-if", "--attribution", "--output-format", "json", REPRO,
                           cache=tmp_path))
    by_name = {d["name"]: d for d in item["attribution"]["dispatches"]}
    assert sorted(by_name) == ["_initializer_0_dispatch_0", "_initializer_1_dispatch_0",
                               "main_dispatch_0", "main_dispatch_1"]
    first = by_name["_initializer_0_dispatch_0"]
    assert first["function"] == "util.initializer#1"
    assert first["location"] == {"line": 13, "column": 9, "op": "linalg.generic"}
    lines = {s["line"]: s["op"] for s in first["sources"]}
    assert lines[11] == "tensor.extract_slice" and lines[18] == "cf.assert" and 24 not in lines
    assert [s["line"] for s in by_name["main_dispatch_0"]["sources"]] == [35]  # %s1 = arith.addf
    (extra,) = item["what_if"]["only_because_of_asserts"]
    assert extra["name"] == "_initializer_1_dispatch_0"
    assert extra["location"] == {"line": 24, "column": 9, "op": "linalg.generic"}  # the second gather
    assert item["what_if"]["saved"] == 1

    concise = mlir_lsp("--dispatch-count", "--what-if", "--attribution", REPRO, cache=tmp_path)
    assert "attribution: 4 of 4 dispatches traced to" in concise.stdout
    assert (f"{REPRO}:24:9: `linalg.generic` -> _initializer_1_dispatch_0 (util.initializer#2) exists only "
            "because of asserts") in concise.stdout


def test_attribution_with_assume_and_off_by_default(tmp_path):
    item = counts(mlir_lsp("--dispatch-count", "--what-if-mode", "assume", "--attribution", "--output-format",
                           "json", REPRO, cache=tmp_path))
    assert [d["name"] for d in item["what_if"]["only_because_of_asserts"]] == ["_initializer_1_dispatch_0"]
    plain = counts(mlir_lsp("--dispatch-count", "--what-if", "--output-format", "json", REPRO, cache=tmp_path))
    assert plain["attribution"] is None and plain["what_if"]["only_because_of_asserts"] is None
    assert plain["flow_dispatches"] == 4 and plain["what_if"]["flow_dispatches"] == 3


def test_compiler_errors_are_shown_at_their_source_lines(tmp_path):
    bad = tmp_path / "broken.mlir"
    bad.write_text("func.func @f() {\n  %0 = arith.constant 1 : i32\n  return %0 : i32\n}\n")
    p = mlir_lsp("--dispatch-count", bad, cache=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert (f"{bad}:3:3: error: 'func.return' op has 1 operands, but enclosing function (@f) returns 0 "
            "(iree-compile)") in p.stderr.splitlines()
    assert f"mlir-lsp: error: {bad}: iree-compile failed (exit 1) at line 3" in p.stderr
    assert p.stdout == ""


@pytest.mark.parametrize("body, expected", [
    ("kill -SEGV $$", "iree-compile crashed (SIGSEGV)"),
    ("kill -KILL $$", "iree-compile was killed (SIGKILL) by something outside mlir-lsp (out of memory?)"),
    ("echo 'LLVM ERROR: out of range' >&2; exit 3", "iree-compile failed (exit 3): LLVM ERROR: out of range"),
    ("exec sleep 30", "iree-compile took longer than the 1 s timeout and was stopped"),
], ids=["crash", "killed", "exit", "timeout"])
def test_compiler_faults_give_one_clear_message(tmp_path, body, expected):
    fake = fake_compiler(tmp_path, body)
    t0 = time.monotonic()
    p = mlir_lsp("--dispatch-count", "--compiler", fake, "--timeout", "1", REPRO, cache=tmp_path)
    assert time.monotonic() - t0 < 15
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("mlir-lsp: error:")]
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert len(errors) == 1 and expected in errors[0], p.stderr


def test_missing_compiler_is_one_clear_message(tmp_path):
    p = mlir_lsp("--dispatch-count", "--compiler", tmp_path / "nope", REPRO, cache=tmp_path)
    assert p.returncode == 2
    assert p.stderr.strip() == f"mlir-lsp: error: iree-compile not found at the configured path {tmp_path / 'nope'}"


def test_dispatch_ir_is_kept_in_the_cache_and_served_from_it(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    from mlir_lsp_asserts.dispatch.compiler import find_compiler
    from mlir_lsp_asserts.dispatch.count import DispatchCounter
    from mlir_lsp_asserts.iree_flags.flags import profile_flags

    counter = DispatchCounter(find_compiler())
    flags = counter.prepare_flags(profile_flags("default")).flags
    text = REPRO.read_text()
    ir, path = counter.dispatch_ir(text, flags)
    assert ir.count("flow.dispatch.workgroups(") == 4 and Path(path).read_text() == ir
    assert Path(path).parent == tmp_path / "mlir-lsp" / "dispatch" / "ir"
    fresh = DispatchCounter(counter.compiler)  # another process: served from the disk cache, no compile
    fresh._run = None  # would raise if called
    assert fresh.dispatch_ir(text, flags) == (ir, path)
    assert fresh.count(text, flags).flow_dispatches == 4
    nodisk = DispatchCounter(counter.compiler, disk_cache=False)
    ir2, path2 = nodisk.dispatch_ir(text, flags)
    assert path2 is None and ir2.count("flow.dispatch.workgroups(") == 4


def test_hover_lines_name_the_dispatches_of_an_op():
    from mlir_lsp_asserts.dispatch.preview import Preview
    from mlir_lsp_asserts.dispatch.results import Attribution, WhatIf
    from mlir_lsp_asserts.server.dispatch_feature import Answer, DispatchState, hover_lines

    state = DispatchState()
    attribution = {"dispatches": [
        {"name": "_initializer_0_dispatch_0", "function": "util.initializer#1", "location": None,
         "sources": [{"line": 18, "column": 5, "op": "cf.assert"}]},
        {"name": "_initializer_1_dispatch_0", "function": "util.initializer#2", "location": None,
         "sources": [{"line": 29, "column": 5, "op": "cf.assert"}]}], "source_ops": 2}
    attr = Attribution.from_json(attribution)
    what_if = WhatIf("strip", 1, None, {}, 2, 1, only_because_of_asserts=[attr.dispatches[1]])
    state.results["u"] = (3, Answer(3, Preview("u", "default", "3.13", 2, None, {}, what_if, 0.0, attribution=attr)))
    assert hover_lines(state, "u", 3, 17) == ["- ends up in dispatch `_initializer_0_dispatch_0`"]
    assert hover_lines(state, "u", 3, 28)[1] == ("- `_initializer_1_dispatch_0` exists only because of asserts "
                                                 "(gone with them removed)")
    assert hover_lines(state, "u", 4, 28) == []  # another version: nothing stale


@pytest.mark.slow
@pytest.mark.parametrize("path, lines, op", [
    pytest.param(ENCODER, [13128, 15828], "linalg.generic", marks=ENCODER_GROUP),
    pytest.param(ENCODER_TORCH, [5003, 5791], "torch.aten.embedding", marks=ENCODER_TORCH_GROUP),
], ids=["input", "torch"])
def test_prompt_encoder_extra_dispatches_are_the_hoisted_gathers(encoder_cache, path, lines, op):
    item = counts(mlir_lsp("--dispatch-count", "--what-if", "--attribution", "--output-format", "json", path,
                           cache=encoder_cache))
    assert (item["flow_dispatches"], item["what_if"]["flow_dispatches"]) == (1660, 1658)
    extra = item["what_if"]["only_because_of_asserts"]
    assert [d["location"]["line"] for d in extra] == lines
    assert all(d["location"]["op"] == op and d["function"].startswith("util.initializer") for d in extra)
    assert all(d["name"].startswith("_initializer_") for d in extra)
    assert len(item["attribution"]["dispatches"]) == 1660


def test_what_if_hit_skips_the_fixes(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    from mlir_lsp_asserts.dispatch import preview as preview_mod
    from mlir_lsp_asserts.dispatch.compiler import find_compiler
    from mlir_lsp_asserts.iree_flags.flags import profile_flags

    text = REPRO.read_text()
    first = preview_mod.preview(preview_mod.DispatchCounter(find_compiler()), str(REPRO), text, "default",
                              profile_flags("default"), what_if="strip", attribution=True).as_json()

    def no_fixes(*_a):
        raise AssertionError("the what-if of an unchanged text is cached")

    monkeypatch.setattr(preview_mod, "fixed_text", no_fixes)
    again = preview_mod.preview(preview_mod.DispatchCounter(find_compiler()), str(REPRO), text, "default",
                              profile_flags("default"), what_if="strip", attribution=True).as_json()
    assert again["seconds"] < 0.5
    assert {k: v for k, v in again.items() if k != "seconds"} == {k: v for k, v in first.items() if k != "seconds"}


def test_the_console_script_is_skipped_for_the_binary():
    from mlir_lsp_asserts.dispatch.compiler_lookup import _past_wrapper, find_compiler

    script = Path(sys.executable).with_name("iree-compile")
    real = find_compiler().path
    assert Path(real).name == "iree-compile" and Path(real).parent.name == "_mlir_libs"
    assert _past_wrapper(str(script)) == real
    assert _past_wrapper(real) == real  # a binary stays as it is


def test_a_wrapper_of_another_python_is_kept(tmp_path):
    from mlir_lsp_asserts.dispatch.compiler_lookup import _past_wrapper

    other = tmp_path / "iree-compile"
    other.write_text("#!/other/venv/bin/python\nfrom iree.compiler.tools.scripts.iree_compile.__main__ import main\n")
    assert _past_wrapper(str(other)) == str(other)


def test_a_failed_file_does_not_cancel_the_next(tmp_path):
    bad = tmp_path / "broken.mlir"
    bad.write_text("func.func @f() {\n  %0 = arith.constant 1 : i32\n  return %0 : i32\n}\n")
    p = mlir_lsp("--dispatch-count", "--what-if", bad, REPRO, cache=tmp_path)
    assert p.returncode == 2 and "cancelled" not in p.stderr
    assert f"{REPRO}: 4 dispatches, 3 with the asserts removed" in p.stdout

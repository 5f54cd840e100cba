"""Dispatch counts with the real iree-compile for gfx942 (no GPU needed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ENCODER_GROUP, ENCODER_TORCH_GROUP, SHARED  # noqa: E402
from conftest import REPO as ROOT  # noqa: E402

REPRO = SHARED / "fixtures" / "repro" / "hoisted_gather.mlir"
ENCODER = SHARED / "fixtures" / "models" / "sdxl_prompt_encoder.input.mlir"
ENCODER_TORCH = SHARED / "fixtures" / "models" / "sdxl_prompt_encoder.torch.mlir"


def mlir_lsp(*args, cache: Path, timeout=900):
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    return subprocess.run([sys.executable, "-m", "mlir_lsp_asserts", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=ROOT)


def counts(proc) -> dict:
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
    (item,) = json.loads(proc.stdout)
    return item


def test_repro_counts_and_what_if(tmp_path):
    for mode in ("strip", "assume"):
        p = mlir_lsp("--dispatch-count", "--what-if-mode", mode, "--output-format", "json", REPRO, cache=tmp_path)
        item = counts(p)
        assert item["flow_dispatches"] == 4
        assert item["what_if"]["mode"] == mode
        assert item["what_if"]["flow_dispatches"] == 3
        assert item["per_function"] == {"@main": 2, "util.initializer#1": 1, "util.initializer#2": 1}
        assert item["compiler_version"].startswith("3.13")
        assert item["stream_dispatches"] is None
    concise = mlir_lsp("--dispatch-count", "--what-if", REPRO, cache=tmp_path)
    assert "4 dispatches, 3 with the asserts removed" in concise.stdout


def test_cache_hit_is_reported_fast(tmp_path):
    first = counts(mlir_lsp("--dispatch-count", "--output-format", "json", REPRO, cache=tmp_path))
    second = counts(mlir_lsp("--dispatch-count", "--output-format", "json", REPRO, cache=tmp_path))
    assert first["flow_dispatches"] == second["flow_dispatches"] == 4
    assert second["seconds"] < first["seconds"]
    assert list((tmp_path / "mlir-lsp" / "dispatch").glob("*.json"))


def test_old_flags_are_translated_or_dropped(tmp_path):
    flags = ("--iree-hal-target-backends=rocm --iree-hip-target=gfx942 --iree-llvmgpu-enable-prefetch=true "
             "--iree-codegen-gpu-native-math-precision=true --iree-hip-waves-per-eu=2 --iree-opt-const-eval=false")
    p = mlir_lsp("--dispatch-count", "--flags", flags, "--output-format", "json", REPRO, cache=tmp_path)
    assert counts(p)["flow_dispatches"] == 4
    assert "translated --iree-hip-target=gfx942 -> --iree-rocm-target=gfx942" in p.stderr
    assert "translated --iree-hal-target-backends=rocm -> --iree-hal-target-device=hip" in p.stderr
    assert "dropped --iree-llvmgpu-enable-prefetch=true" in p.stderr
    assert "dropped --iree-codegen-gpu-native-math-precision=true" in p.stderr


def test_budget_and_baseline(tmp_path):
    over = mlir_lsp("--dispatch-count", "--max-dispatches", "3", REPRO, cache=tmp_path)
    assert over.returncode == 1 and "over the budget of 3" in over.stderr
    ok = mlir_lsp("--dispatch-count", "--max-dispatches", "5", REPRO, cache=tmp_path)
    assert ok.returncode == 0 and "under the budget" in ok.stderr
    base = tmp_path / "baseline.json"
    w = mlir_lsp("--dispatch-count", "--baseline", base, "--update-baseline", REPRO, cache=tmp_path)
    assert w.returncode == 0
    data = json.loads(base.read_text())
    assert data["counts"][str(REPRO)]["default"] == 4
    data["counts"][str(REPRO)]["default"] = 3
    base.write_text(json.dumps(data))
    worse = mlir_lsp("--dispatch-count", "--baseline", base, REPRO, cache=tmp_path)
    assert worse.returncode == 1 and "above the baseline 3" in worse.stderr


def test_compiler_faults_give_one_clear_message(tmp_path):
    missing = mlir_lsp("--dispatch-count", "--compiler", tmp_path / "nope" / "iree-compile", REPRO, cache=tmp_path)
    assert missing.returncode == 2 and "iree-compile not found" in missing.stderr and "Traceback" not in missing.stderr
    bad = tmp_path / "broken.mlir"
    bad.write_text("func.func @f() {\n  %0 = arith.constant 1 : i32\n  return %0 : i32\n}\n")
    failed = mlir_lsp("--dispatch-count", bad, cache=tmp_path)
    assert failed.returncode == 2
    assert "iree-compile failed (exit 1) at line 3" in failed.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1", "1e300"])
def test_a_timeout_that_is_no_duration_is_refused_before_any_compile(tmp_path, value):
    """`--timeout nan` stopped every compile at once ("took longer than the nan s timeout")."""
    p = mlir_lsp("--dispatch-count", "--no-cache", "--timeout", value, REPRO, cache=tmp_path)
    assert p.returncode == 2 and p.stdout == ""
    assert f"argument --timeout: must be above 0 and at most 604800 (a week), not {value}" in p.stderr


@pytest.mark.slow
def test_timeout_kills_the_compile_and_leaves_no_process(tmp_path):
    t0 = time.monotonic()
    p = mlir_lsp("--dispatch-count", "--timeout", "1", ENCODER, cache=tmp_path)
    assert time.monotonic() - t0 < 30
    assert p.returncode == 2 and "timeout" in p.stderr
    time.sleep(0.3)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(tmp_path) not in ps and not any("iree-compile" in ln and "mlir-lsp-" in ln for ln in ps.splitlines())


@pytest.mark.slow
@pytest.mark.parametrize("path", [pytest.param(ENCODER, marks=ENCODER_GROUP),
                                  pytest.param(ENCODER_TORCH, marks=ENCODER_TORCH_GROUP)], ids=["input", "torch"])
@pytest.mark.parametrize("profile, before, after", [("default", 1660, 1658), ("sdxl", 1308, 1306)])
def test_prompt_encoder_counts(encoder_cache, path, profile, before, after):
    item = counts(mlir_lsp("--dispatch-count", "--profile", profile, "--what-if", "--output-format", "json", path,
                           cache=encoder_cache))
    assert item["flow_dispatches"] == before
    assert item["what_if"]["flow_dispatches"] == after
    assert item["what_if"]["asserts_fixed"] == 16


@pytest.mark.slow
@ENCODER_GROUP
def test_baseline_of_1658_fails_unfixed_and_passes_fixed(tmp_path, encoder_cache):
    base = tmp_path / "baseline.json"
    fixed = tmp_path / "encoder.mlir"
    fixed.write_text(ENCODER.read_text())
    base.write_text(json.dumps({"version": 1, "counts": {str(ENCODER): {"default": 1658},
                                                           str(fixed): {"default": 1658}}}))
    unfixed = mlir_lsp("--dispatch-count", "--baseline", base, ENCODER, cache=encoder_cache)
    assert unfixed.returncode == 1 and "1660 dispatches" in unfixed.stderr
    assert mlir_lsp("--check", "--fix", fixed, cache=encoder_cache).returncode == 0
    ok = mlir_lsp("--dispatch-count", "--baseline", base, fixed, cache=encoder_cache)
    assert ok.returncode == 0, ok.stderr


@pytest.mark.slow
def test_torch_ops_lowering_to_asserts_are_traced_by_location(tmp_path):
    torch = SHARED / "fixtures" / "models" / "clip_l.torch.mlir"
    item = counts(mlir_lsp("--dispatch-count", "--what-if", "--output-format", "json", torch, cache=tmp_path))
    srcs = item["assert_sources"]
    assert [(s["line"], s["op"], s["asserts"]) for s in srcs] == [(210, "torch.aten.embedding", 2),
                                                                  (216, "torch.aten.embedding", 2)]
    assert item["flow_dispatches"] == item["what_if"]["flow_dispatches"] == 269  # clip_l alone: no difference
    concise = mlir_lsp("--dispatch-count", "--what-if", torch, cache=tmp_path)
    assert f"{torch}:210:10: MLA004 `torch.aten.embedding` lowers to 2 cf.assert" in concise.stdout


def test_a_file_in_another_releases_syntax_says_so(tmp_path):
    """The seed (IREE's `!flow.dispatch.tensor` of older releases): not a compile failure of the
    file but a compiler that cannot read it, and which one to use instead."""
    from conftest import SEED

    p = mlir_lsp("--dispatch-count", SEED, cache=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith(f"mlir-lsp: error: {SEED}: iree-compile 3.13")
    assert "cannot read this file's IREE syntax (unknown Flow type: dispatch.tensor at line 13)" in last
    assert "--compiler PATH" in last


def test_a_stream_count_after_the_plain_one_runs_only_the_stream_compile():
    """`--stream` (and compstat's stream counts) of a text already counted: its dispatch-creation
    compile is the plain count's, so only the `--compile-to=stream` compile runs; the figures are
    a fresh stream count's, and the plain count is still plain."""
    from mlir_lsp_asserts.dispatch.cache import CountCache
    from mlir_lsp_asserts.dispatch.compiler import find_compiler
    from mlir_lsp_asserts.dispatch.count import DispatchCounter

    text, flags = REPRO.read_text(encoding="utf-8"), ["--iree-hal-target-device=hip", "--iree-rocm-target=gfx942"]

    def counter_logging(ran: list[str]) -> DispatchCounter:
        """A counter whose compiles (real ones) are noted by their --compile-to."""
        counter = DispatchCounter(find_compiler(), cache=CountCache(disk=False))
        real = counter._run

        def run(argv, files=None):
            ran.append(next(a for a in argv if a.startswith("--compile-to=")))
            return real(argv, files)

        counter._run = run  # type: ignore[method-assign]
        return counter

    fresh_runs: list[str] = []
    alone = counter_logging(fresh_runs).count(text, flags, stream=True)
    assert fresh_runs == ["--compile-to=dispatch-creation", "--compile-to=stream"]
    runs: list[str] = []
    counter = counter_logging(runs)
    plain = counter.count(text, flags)
    after = counter.count(text, flags, stream=True)
    assert runs == ["--compile-to=dispatch-creation", "--compile-to=stream"]  # not a second dispatch-creation
    assert (after.flow_dispatches, after.per_function) == (alone.flow_dispatches, alone.per_function) == \
        (plain.flow_dispatches, plain.per_function) and plain.flow_dispatches == 4
    assert after.stream_dispatches == alone.stream_dispatches and alone.stream_dispatches is not None
    assert counter.count(text, flags).stream_dispatches is None and plain.stream_dispatches is None
    assert runs == ["--compile-to=dispatch-creation", "--compile-to=stream"]  # the plain count again: cached

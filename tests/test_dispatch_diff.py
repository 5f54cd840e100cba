"""`mlir-lsp --dispatch-diff` and baselines that explain, with the real iree-compile: which
dispatches one compile has and another has not, from which source ops, and why."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ENCODER_GROUP
from mlir_lsp_asserts.dispatch.baselines import compact, expand
from mlir_lsp_asserts.dispatch.diff import align
from mlir_lsp_asserts.dispatch.results import Dispatch, dispatches_json
from test_dispatch_count import ENCODER, REPRO, mlir_lsp

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1"}


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def fixed_copy(src: Path, dst: Path, cache: Path) -> Path:
    """`dst`: `src` with its asserts stripped by mlir-lsp's own fix (verified by the real parser)."""
    shutil.copyfile(src, dst)
    os.chmod(dst, 0o644)
    p = mlir_lsp("--check", "--fix", "-q", dst, cache=cache)
    assert p.returncode in (0, 1), p.stderr
    assert "  cf.assert " not in dst.read_text()
    return dst


def diff_json(*args, cache: Path, code: int) -> dict:
    p = mlir_lsp("--dispatch-diff", "--output-format", "json", *args, cache=cache)
    assert p.returncode == code, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    (item,) = json.loads(p.stdout)
    return item


def repro_copy(tmp_path: Path) -> Path:
    f = tmp_path / "model.mlir"
    shutil.copyfile(REPRO, f)
    os.chmod(f, 0o644)
    return f


def test_repro_against_its_fixed_self_names_the_gather_initializer_and_the_assert(tmp_path):
    f = repro_copy(tmp_path)
    fixed = fixed_copy(REPRO, tmp_path / "model.fixed.mlir", tmp_path)
    r = diff_json(f, "--against", fixed, cache=tmp_path, code=1)
    assert (r["current"]["flow_dispatches"], r["against"]["flow_dispatches"], r["delta"]) == (4, 3, 1)
    assert r["against"]["label"] == str(fixed) and r["gone"] == []
    (new,) = r["new"]
    assert new["name"] == "_initializer_1_dispatch_0" and new["function"] == "util.initializer#2"
    assert new["location"] == {"line": 24, "column": 9, "op": "linalg.generic"}  # the second gather
    assert {"line": 29, "column": 5, "op": "cf.assert"} in new["sources"]
    assert new["causes"][:2] == [{"kind": "assert", "codes": ["MLA001"], "lines": [29, 31]},
                                 {"kind": "hoisted-initializer"}]
    concise = mlir_lsp("--dispatch-diff", f, "--against", fixed, cache=tmp_path)
    assert concise.returncode == 1
    lines = concise.stdout.splitlines()
    assert lines[0].startswith(f"{f}: 4 dispatches, 3 with {fixed} (+1): 1 new, 0 gone")
    assert lines[1] == (f"{f}:24:9: new dispatch _initializer_1_dispatch_0 (linalg.generic, in util.initializer#2), "
                        f"not with {fixed}: holds cf.assert (MLA001 at lines 29, 31); hoisted initializer")
    assert f"    {f}:24:9 linalg.generic" in lines
    # the other way round: the dispatch is gone, and a count that went down exits 0
    back = diff_json(fixed, "--against", f, cache=tmp_path, code=0)
    assert back["delta"] == -1 and back["new"] == []
    assert [g["name"] for g in back["gone"]] == ["_initializer_1_dispatch_0"]
    assert back["gone"][0]["file"] == str(f) and back["gone"][0]["causes"][0]["kind"] == "assert"


def test_flag_sets_that_change_the_count(tmp_path):
    """IREE strips the asserts itself at O3: the default has one dispatch more."""
    f = repro_copy(tmp_path)
    r = diff_json(f, "--against-flags=--iree-opt-level=O3", cache=tmp_path, code=1)
    assert (r["current"]["flow_dispatches"], r["against"]["flow_dispatches"]) == (4, 3)
    assert r["against"]["label"] == "flags '--iree-opt-level=O3'"
    assert "--iree-opt-level=O3" in r["against"]["flags"] and "--iree-opt-level=O3" not in r["current"]["flags"]
    assert [n["name"] for n in r["new"]] == ["_initializer_1_dispatch_0"]
    same = diff_json(f, "--against-flags=--iree-opt-level=O0", cache=tmp_path, code=0)
    assert same["delta"] == 0 and same["new"] == same["gone"] == []
    # another profile and flags on the other side; --flags applies to this side only then
    r = diff_json(f, "--flags=--iree-opt-level=O3", "--against-profile", "cpu-host", "--against-flags", "",
                  cache=tmp_path, code=0)
    assert (r["delta"], r["new"], [g["name"] for g in r["gone"]]) == (-1, [], ["_initializer_1_dispatch_0"])
    assert r["against"]["profile"] == "cpu-host"


def test_file_against_an_older_revision_in_git(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    env = dict(os.environ, **GIT_ENV)

    def git(*a):
        subprocess.run(["git", *a], cwd=repo, env=env, check=True, capture_output=True)

    git("init", "-q")
    fixed_copy(REPRO, repo / "model.mlir", tmp_path)
    git("add", "model.mlir")
    git("commit", "-qm", "fixed")
    shutil.copyfile(REPRO, repo / "model.mlir")  # the working tree: the asserts are back
    p = mlir_lsp("--dispatch-diff", "--against-git", "HEAD", "--output-format", "github", repo / "model.mlir",
                 cache=tmp_path)
    assert p.returncode == 1, p.stderr
    path = repo / "model.mlir"
    out = p.stdout.splitlines()
    assert out[0].startswith(f"::notice title=mlir-lsp dispatch diff::{path}: 4 dispatches, 3 with git HEAD (+1)")
    assert out[1].startswith(f"::warning file={path},line=24,col=9,title=mlir-lsp _initializer_1_dispatch_0::"
                             "new dispatch _initializer_1_dispatch_0")
    assert len(out) == 2
    bad = mlir_lsp("--dispatch-diff", "--against-git", "no-such-rev", path, cache=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "git show no-such-rev:model.mlir" in bad.stderr


def test_two_compilers(tmp_path):
    """The other side's compiler by path: the same release gives the same dispatches; a
    crashing one is one clear error, exit 2."""
    f = repro_copy(tmp_path)
    real = shutil.which("iree-compile", path=str(Path(os.sys.executable).parent))
    other = tmp_path / "other" / "iree-compile"
    other.parent.mkdir()
    os.symlink(real, other)
    r = diff_json(f, "--against-compiler", other, cache=tmp_path, code=0)
    assert r["delta"] == 0 and r["new"] == r["gone"] == []
    assert r["current"]["compiler_version"] == r["against"]["compiler_version"]
    # a compiler that crashes on one file: that file's error names the side that failed (not
    # the side cancelled for it), and the next file is still compared
    crash = tmp_path / "crash" / "iree-compile"
    crash.parent.mkdir()
    crash.write_text(f"#!/bin/sh\ncase \"$*\" in *first.mlir*) echo boom >&2; kill -SEGV $$;; esac\n"
                     f"exec {real} \"$@\"\n")
    crash.chmod(0o755)
    first = tmp_path / "first.mlir"
    shutil.copyfile(f, first)
    p = mlir_lsp("--dispatch-diff", "--against-compiler", crash, first, f, cache=tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr and "cancelled" not in p.stderr
    assert f"mlir-lsp: error: {first}: the other side (iree-compile 3.13" in p.stderr
    assert "iree-compile crashed (SIGSEGV): boom" in p.stderr
    assert p.stdout.startswith(f"{f}: 4 dispatches, 4 with iree-compile 3.13")


def test_baseline_stores_attribution_and_explains_a_count_over_it(tmp_path):
    f = fixed_copy(REPRO, tmp_path / "model.mlir", tmp_path)
    base = tmp_path / "baseline.json"
    p = mlir_lsp("--dispatch-count", "--baseline", base, "--update-baseline", f, cache=tmp_path)
    assert p.returncode == 0, p.stderr
    data = json.loads(base.read_text())
    assert data["version"] == 2 and data["counts"] == {str(f): {"default": 3}}
    stored = data["attribution"][str(f)]["default"]
    assert {fn: len(rows) for fn, rows in stored["functions"].items()} == {"util.initializer#1": 1, "@main": 2}
    assert oct(base.stat().st_mode & 0o777) == oct(0o666 & ~_umask())  # a file to commit, not a 0600 temp
    assert len(base.read_text()) < 1000  # compact: one line per file and profile
    # the asserts come back (their lines move every line below them): over the baseline, and why
    shutil.copyfile(REPRO, f)
    p = mlir_lsp("--dispatch-count", "--baseline", base, f, cache=tmp_path)
    assert p.returncode == 1
    assert f"{f}: 4 dispatches with profile 'default', above the baseline 3 (+1)" in p.stderr
    assert (f"{f}:24:9: new dispatch _initializer_1_dispatch_0 (linalg.generic, in util.initializer#2), not with "
            "the baseline: holds cf.assert (MLA001 at lines 29, 31); hoisted initializer") in p.stderr
    assert "_initializer_0_dispatch_0" not in p.stderr  # the first gather moved, but it is not new
    assert p.stdout.startswith(f"{f}: 4 dispatches")
    r = diff_json(f, "--against-baseline", "--baseline", base, cache=tmp_path, code=1)
    assert [n["name"] for n in r["new"]] == ["_initializer_1_dispatch_0"] and r["gone"] == []
    # a version-1 baseline (counts only) still judges, and says how to get the explanation
    base.write_text(json.dumps({"version": 1, "counts": {str(f): {"default": 3}}}))
    p = mlir_lsp("--dispatch-count", "--baseline", base, f, cache=tmp_path)
    assert p.returncode == 1 and "stores no attribution" not in p.stderr and "above the baseline 3" in p.stderr
    p = mlir_lsp("--dispatch-diff", "--against-baseline", "--baseline", base, f, cache=tmp_path)
    assert p.returncode == 2 and "stores no attribution for" in p.stderr and "--update-baseline" in p.stderr


def test_usage_errors_are_one_line(tmp_path):
    f = repro_copy(tmp_path)
    for args, msg in ((["--dispatch-diff", f], "needs the other side"),
                      (["--dispatch-diff", f, "--against", f, "--against-git", "HEAD"], "exclude each other"),
                      (["--dispatch-diff", f, "--against-baseline"], "needs --baseline"),
                      (["--dispatch-diff", f, "--against", f, "--output-format", "sarif"], "not sarif"),
                      (["--dispatch-diff", f, "--against", tmp_path / "missing.mlir"], "missing.mlir")):
        p = mlir_lsp(*args, cache=tmp_path)
        assert p.returncode == 2 and msg in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)


def test_stored_lines_are_found_again_after_the_file_moved_them():
    lines = REPRO.read_text().split("\n")
    dispatches = [{"name": "d0", "function": "@main", "location": {"line": 35, "column": 9, "op": "arith.addf"},
                   "sources": [{"line": 35, "column": 9, "op": "arith.addf"}]},
                  {"name": "i0", "function": "util.initializer#2", "location": {"line": 24, "column": 9,
                                                                               "op": "linalg.generic"},
                   "sources": [{"line": ln, "column": 1, "op": "?"} for ln in (11, 24, 26, 33)]}]
    stored = json.loads(json.dumps(compact([Dispatch.from_json(d) for d in dispatches], lines)))
    moved = ["// a comment", "// another"] + lines
    back = dispatches_json(expand(stored, moved))
    assert back[0]["location"] == {"line": 37, "column": 9, "op": "arith.addf"}
    assert [s["line"] for s in back[1]["sources"]] == [13, 26, 28, 35]  # the second gather, not the first
    assert expand({"functions": "nonsense"}, moved) is None
    assert expand({**stored, "hashes": stored["hashes"][:-1]}, moved) is None
    assert align(lines, lines) is None
    assert align(moved, lines).current_of(24) == 26 and align(moved, lines).other_of(26) == 24
    assert align(moved, lines).other_of(1) is None  # the comment added


@pytest.mark.slow
@ENCODER_GROUP
def test_prompt_encoder_against_its_fixed_self(tmp_path, encoder_cache):
    """SDXL's CLIP prompt encoder: +2, the two hoisted position-embedding gathers."""
    f = tmp_path / "encoder.mlir"
    shutil.copyfile(ENCODER, f)
    fixed = fixed_copy(ENCODER, tmp_path / "encoder.fixed.mlir", encoder_cache)
    r = diff_json(f, "--against", fixed, cache=encoder_cache, code=1)
    assert (r["current"]["flow_dispatches"], r["against"]["flow_dispatches"], r["delta"]) == (1660, 1658, 2)
    assert r["gone"] == [] and len(r["new"]) == 2
    for new in r["new"]:
        assert new["function"].startswith("util.initializer") and new["location"]["op"] == "linalg.generic"
        assert [c["kind"] for c in new["causes"]][:2] == ["assert", "hoisted-initializer"]
        ops = {s["op"] for s in new["sources"]}
        assert {"tensor.extract", "cf.assert"} <= ops  # a gather, with its asserts


OLD_IREE = Path(__file__).resolve().parents[1] / ".venv-compat-3.3.0" / "bin" / "iree-compile"


@pytest.mark.skipif(not OLD_IREE.exists(), reason="no IREE 3.3 beside the checkout: make old-iree (.ci/run does)")
def test_two_iree_releases(tmp_path):
    """The repro with IREE 3.13 and IREE 3.3 (March 2025) from another venv: 3.3 names the HIP
    target the old way (the profile's flag is translated for it); both form 4 dispatches."""
    f = repro_copy(tmp_path)
    p = mlir_lsp("--dispatch-diff", "--output-format", "json", f, "--against-compiler", OLD_IREE,
                 "--flags=--iree-opt-const-eval=false", cache=tmp_path)  # 3.3 const-evals parameters, and fails
    assert p.returncode == 0, p.stderr
    (r,) = json.loads(p.stdout)
    assert r["current"]["compiler_version"].startswith("3.13") and r["against"]["compiler_version"].startswith("3.3.")
    assert r["against"]["label"] == f"iree-compile {r['against']['compiler_version']} ({OLD_IREE})"
    assert "--iree-hip-target=gfx942" in r["against"]["flags"] and "--iree-rocm-target=gfx942" in r["current"]["flags"]
    assert "translated --iree-rocm-target=gfx942 -> --iree-hip-target=gfx942" in r["against"]["notes"]
    assert (r["current"]["flow_dispatches"], r["against"]["flow_dispatches"], r["new"], r["gone"]) == (4, 4, [], [])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["  }", "  %0 = arith.addf %a, %b : f32", "  cf.assert %7, \"x\"", "  linalg.yield %e"])
                | st.text(alphabet="abc%= ", min_size=1, max_size=6), min_size=0, max_size=60),
       st.data())
def test_alignment_pairs_equal_lines_in_order(lines, data):
    """Pairs join equal lines, in the order of both texts; after deletions only (what a fix
    does), every line left is paired."""
    from mlir_lsp_asserts.dispatch.diff import align

    keep = data.draw(st.lists(st.booleans(), min_size=len(lines), max_size=len(lines)))
    fewer = [ln for ln, k in zip(lines, keep, strict=True) if k]
    inserted = list(fewer)
    for _ in range(data.draw(st.integers(0, 3))):
        inserted.insert(data.draw(st.integers(0, len(inserted))), data.draw(st.sampled_from(["new", "  }"])))
    for other, complete in ((fewer, True), (inserted, False)):
        al = align(lines, other)
        if al is None:
            assert lines == other
            continue
        got = [(al.current_of(o), o) for o in range(1, len(other) + 1) if al.current_of(o)]
        assert all(lines[c - 1] == other[o - 1] and al.other_of(c) == o for c, o in got)
        assert [c for c, _o in got] == sorted({c for c, _o in got})
        if complete:
            assert len(got) == len(other)


@pytest.mark.slow
@ENCODER_GROUP
def test_prompt_encoder_with_aggressive_fusion_names_the_dispatches_it_fuses(tmp_path, encoder_cache):
    """Aggressive fusion forms 180 dispatches fewer on the prompt encoder (1480): each dispatch
    only the default has is rooted at an op that aggressive fusion puts inside another
    dispatch (split); the other way round the same dispatches are merged."""
    f = tmp_path / "encoder.mlir"
    shutil.copyfile(ENCODER, f)
    fusion = "--iree-dispatch-creation-enable-aggressive-fusion=true"
    r = diff_json(f, f"--against-flags={fusion}", cache=encoder_cache, code=1)
    assert (r["current"]["flow_dispatches"], r["against"]["flow_dispatches"]) == (1660, 1480)
    assert len(r["new"]) == 180 and r["gone"] == []
    assert all(any(c["kind"] == "split" for c in e["causes"]) for e in r["new"])
    back = diff_json(f, f"--flags={fusion}", "--against-flags", "", cache=encoder_cache, code=0)  # both cached now
    assert back["delta"] == -180 and back["new"] == [] and len(back["gone"]) == 180
    assert all(any(c["kind"] == "merged" for c in e["causes"]) for e in back["gone"])

"""Golden tests for the fixes: what `--fix` writes is what a person would write by hand.

The seed fixture is the IR quoted in the IREE issue, in the syntax of IREE Nov 2024, which the
real parser of IREE 3.13 rejects; the fixes must still be offered and applied, and the CLI must
say why it applied them without the parser's check.

The golden files `tests/golden/sdxl_clip_extra_dispatches.{strip,assume}.mlir` were written from
the seed by hand (delete the two assert/cmpi pairs of each gather body and the two constants
that only fed them; in assume mode put one `util.assume.int` where the first cmpi was and let
the `tensor.extract` read it), not produced by the tool.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPRO, SEED, real_asserts, run_cli
from fixhelpers import apply_lsp_edits, copy_to, real_parse_error

GOLDEN = Path(__file__).parent / "golden"
ASSUME_LINE = "        %assumed_5 = util.assume.int %5<umin = 0, umax = 76> : index\n"


def test_seed_really_is_unreadable_for_the_real_parser():
    err = real_parse_error(SEED.read_text(encoding="utf-8"))
    assert err is not None and "dispatch.tensor" in err


@pytest.mark.parametrize("mode", ["strip", "assume"])
def test_seed_fix_equals_hand_written_golden(tmp_path, mode):
    f = copy_to(SEED, tmp_path)
    args = ["--check", "--fix"] + (["--fix-mode", "assume"] if mode == "assume" else []) + [f]
    res = run_cli(*args)
    assert res.returncode == 0, res.stdout + res.stderr
    golden = (GOLDEN / f"sdxl_clip_extra_dispatches.{mode}.mlir").read_bytes()
    assert f.read_bytes() == golden
    # All four asserts handled, nothing left to report.
    assert res.stdout == ""
    assert "fixed 4" in res.stderr
    # The output says the real parser could not check the result, why, and why it was fixed anyway.
    note = [ln for ln in res.stderr.splitlines() if str(f) in ln and "real parser" in ln]
    assert len(note) == 1, res.stderr
    assert "cannot read this file" in note[0]
    assert "unknown Flow type: dispatch.tensor" in note[0]  # the reason: old !flow.dispatch.tensor syntax
    assert "only the asserts and their dead condition ops were touched" in note[0]
    assert not res.error_lines()


def test_seed_golden_files_are_minimal_hand_edits():
    """The goldens themselves: only the lines a person would touch differ from the seed."""
    seed = SEED.read_text(encoding="utf-8").split("\n")
    strip = (GOLDEN / "sdxl_clip_extra_dispatches.strip.mlir").read_text(encoding="utf-8").split("\n")
    assume = (GOLDEN / "sdxl_clip_extra_dispatches.assume.mlir").read_text(encoding="utf-8").split("\n")
    gone = [ln for ln in seed if ln not in strip]
    assert sorted(set(gone)) == sorted({
        "      %c77 = arith.constant 77 : index",
        "      %c0_i64 = arith.constant 0 : i64",
        "        %7 = arith.cmpi slt, %5, %c77 : index",
        '        cf.assert %7, "index must be smaller than dim size"',
        "        %8 = arith.cmpi sge, %in, %c0_i64 : i64",
        '        cf.assert %8, "index must be larger or equal to 0"',
    })
    assert len(strip) == len(seed) - 12
    assert [ln for ln in seed if ln not in gone] == strip  # everything else, in order, untouched
    assert len(assume) == len(seed) - 12 + 2
    assert assume.count(ASSUME_LINE.rstrip("\n")) == 2
    assert sum("tensor.extract %1[%assumed_5, %6]" in ln for ln in assume) == 2
    assert not any("%5, %6]" in ln for ln in assume)  # the extract no longer reads the raw index


def test_seed_assume_rewire_reads_the_assumed_value(tmp_path):
    f = copy_to(SEED, tmp_path)
    assert run_cli("--check", "--fix", "--fix-mode", "assume", f).returncode == 0
    lines = f.read_text(encoding="utf-8").splitlines(keepends=True)
    at = [i for i, ln in enumerate(lines) if ln == ASSUME_LINE]
    assert len(at) == 2
    for i in at:
        assert lines[i - 1] == "        %6 = linalg.index 1 : index\n"
        assert lines[i + 1].startswith("        %extracted = tensor.extract %1[%assumed_5, %6] : tensor<77x")
    code = [ln for ln in lines if not ln.lstrip().startswith("//")]
    assert not any("cf.assert" in ln or "arith.cmpi" in ln for ln in code)


def _json(*args):
    res = run_cli("--check", "--output-format", "json", *args)
    assert res.returncode == 1, res.stderr  # findings
    return json.loads(res.stdout)


def _check_fix_shape(fix: dict) -> None:
    assert set(fix) == {"title", "mode", "applicability", "edits"}, fix.keys()
    assert isinstance(fix["title"], str) and fix["title"]
    assert fix["mode"] in ("strip", "assume")
    assert fix["applicability"] in ("safe", "unsafe")
    assert fix["edits"]
    for e in fix["edits"]:
        assert set(e) == {"range", "newText"}
        assert set(e["range"]) == {"start", "end"}
        for p in (e["range"]["start"], e["range"]["end"]):
            assert set(p) == {"line", "character"}
            assert isinstance(p["line"], int) and isinstance(p["character"], int)
        assert isinstance(e["newText"], str)


def test_json_lists_strip_and_assume_fixes_for_each_finding():
    items = _json(REPRO)
    assert len(items) == 4
    for it in items:
        assert it["code"] == "MLA001"
        for fix in it["fixes"]:
            _check_fix_shape(fix)
        assert [f["mode"] for f in it["fixes"]] == ["strip", "assume"]  # default mode first
        assert all(f["applicability"] == "safe" for f in it["fixes"])
        assume = it["fixes"][1]
        assert assume["title"].endswith("util.assume.int <umin = 0, umax = 76>")
        assert any("util.assume.int %5<umin = 0, umax = 76> : index" in e["newText"] for e in assume["edits"])
    # --fix-mode assume puts the assume fix first (the preferred one).
    items = _json("--fix-mode", "assume", REPRO)
    assert all([f["mode"] for f in it["fixes"]] == ["assume", "strip"] for it in items)


def test_json_fixes_for_the_seed_are_offered_although_it_does_not_parse():
    items = _json(SEED)
    assert len(items) == 4
    for it in items:
        for fix in it["fixes"]:
            _check_fix_shape(fix)
        assert {f["mode"] for f in it["fixes"]} == {"strip", "assume"}


@pytest.mark.parametrize("mode", ["strip", "assume"])
def test_json_edits_of_one_fix_yield_parseable_text(mode):
    """Apply the edits of each single fix on its own, as an editor's code action would."""
    text = REPRO.read_text(encoding="utf-8")
    before = len(real_asserts(text))
    assert before == 4
    items = _json(REPRO)
    tried = 0
    for it in items:
        (fix,) = [f for f in it["fixes"] if f["mode"] == mode]
        new = apply_lsp_edits(text, fix["edits"])
        assert new != text
        err = real_parse_error(new)
        assert err is None, f"{fix['title']}: {err}"
        left = len(real_asserts(new))
        # strip removes this one assert; assume replaces the whole group (both conditions of the gather).
        assert left == (3 if mode == "strip" else 2), fix["title"]
        if mode == "assume":
            assert new.count("= util.assume.int %") == 1
        tried += 1
    assert tried == 4


def test_json_edits_of_one_seed_fix_give_the_golden_region(tmp_path):
    """One assume fix on the seed touches exactly the first gather, as in the golden file."""
    text = SEED.read_text(encoding="utf-8")
    items = _json(SEED)
    (fix,) = [f for f in items[0]["fixes"] if f["mode"] == "assume"]
    new = apply_lsp_edits(text, fix["edits"])
    golden = (GOLDEN / "sdxl_clip_extra_dispatches.assume.mlir").read_text(encoding="utf-8")
    # The first initializer (up to the second util.global) matches the golden file exactly.
    cut = "  util.global private @__hoisted_tensor_64x1280xf16_256"
    assert new.split(cut)[0] == golden.split(cut)[0]
    assert new.split(cut)[1] == text.split(cut)[1]  # the second one is untouched

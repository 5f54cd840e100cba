"""Findings that carry their measured cost: `mlir-lsp --check --what-if` with the real
iree-compile. On the repro (gfx942, default flags) the asserts cost a dispatch: each MLA001
finding names its dispatch and says whether it exists only because of asserts. At
`--iree-opt-level=O3` (IREE strips the asserts itself) or with the gathers not duplicated they
cost nothing: the note says so, and `--measured-severity` makes the findings information."""

from __future__ import annotations

import json

import pytest

from conftest import ENCODER_GROUP, MODELS, REPRO, run_cli, write

EXTRA = "in dispatch _initializer_1_dispatch_0, which exists only because of asserts"
KEPT = "in dispatch _initializer_0_dispatch_0, which stays with the asserts removed"
SAVES_ONE = "removing the asserts in this file saves 1 dispatch (4 -> 3)"
O3 = "--flags=--iree-opt-level=O3"


@pytest.fixture
def cache(tmp_path):
    return {"XDG_CACHE_HOME": str(tmp_path / "cache")}


def _by_line(r) -> dict[int, str]:
    return {int(m["line"]): m["msg"] for m in r.concise()}


def single_gather(tmp_path):
    """The repro with its second gather removed: no duplicate for the asserts to keep apart."""
    lines = REPRO.read_text().split("\n")
    text = "\n".join(lines[:23] + lines[34:]).replace("arith.mulf %r3", "arith.mulf %r1")
    return write(tmp_path, "single.mlir", text)


def test_each_finding_names_its_dispatch_where_the_asserts_cost_one(cache):
    plain = _by_line(run_cli("--check", REPRO))
    assert not any("measured" in m for m in plain.values())
    r = run_cli("--check", "--what-if", REPRO, env=cache)
    assert r.returncode == 1, r.stderr
    got = _by_line(r)
    assert sorted(got) == [18, 20, 29, 31]
    for line in (29, 31):  # the second gather: its dispatch is the one the asserts add
        assert got[line] == plain[line] + f"; measured with profile default: {EXTRA}; {SAVES_ONE}"
    for line in (18, 20):
        assert got[line] == plain[line] + f"; measured with profile default: {KEPT}; {SAVES_ONE}"

    # json: the message as it was, the measurement in its own field; saved: nothing lowered
    items = json.loads(run_cli("--check", "--what-if", "--measured-severity", "--output-format", "json", REPRO,
                               env=cache).stdout)
    assert [i["severity"] for i in items] == ["warning"] * 4
    assert items[2]["message"] == json.loads(run_cli("--check", "--output-format", "json", REPRO).stdout)[2]["message"]
    m = items[2]["measured"]
    assert (m["profile"], m["flags"], m["saved"], m["free"]) == ("default", [], 1, False)
    assert (m["dispatch"], m["only_because_of_asserts"]) == ("_initializer_1_dispatch_0", True)
    assert (items[0]["measured"]["dispatch"], items[0]["measured"]["only_because_of_asserts"]) == (
        "_initializer_0_dispatch_0", False)


@pytest.mark.parametrize("case", ["O3", "single gather"])
def test_findings_that_cost_nothing_say_so_and_can_be_information(tmp_path, cache, case):
    path, extra = (REPRO, [O3]) if case == "O3" else (single_gather(tmp_path), [])
    where = "profile default with --iree-opt-level=O3" if case == "O3" else "profile default"
    counts = "(3 -> 3)"
    r = run_cli("--check", "--what-if", *extra, path, env=cache)
    assert r.returncode == 1, r.stderr
    msgs = list(_by_line(r).values())
    assert msgs, r.stdout
    for msg in msgs:
        assert f"; measured with {where}: " in msg and msg.endswith(f"saves 0 dispatches {counts}")

    def levels(*args):
        items = json.loads(run_cli("--check", *args, *extra, "--output-format", "json", path, env=cache).stdout)
        return {i["severity"] for i in items}, items

    # At O3 the flags alone say IREE strips the asserts: information before any measurement
    # (tests/test_strip_assertions.py); with the single gather only the measurement tells.
    assert levels("--what-if")[0] == ({"information"} if case == "O3" else {"warning"})
    sev, items = levels("--measured-severity")  # implies --what-if
    assert len(items) == len(msgs)
    assert sev == {"information"} and all(i["measured"]["free"] and i["measured"]["saved"] == 0 for i in items)
    full = run_cli("--check", "--measured-severity", *extra, "--output-format", "full", path, env=cache).stdout
    assert full.count("MLA001 [information]") == len(items)
    assert full.count(f"      = measured with {where}: ") == len(items)
    sarif = json.loads(run_cli("--check", "--measured-severity", *extra, "--output-format", "sarif", path,
                               env=cache).stdout)
    results = sarif["runs"][0]["results"]
    assert len(results) == len(msgs)
    assert {x["level"] for x in results} == {"note"}
    assert all(x["properties"]["measured"]["saved"] == 0 and "saves 0 dispatches" in x["message"]["text"]
               for x in results)

    # the config file's measured-severity does the same as the flag
    cfg = write(tmp_path, "mlir-lsp.toml", "measured-severity = true\n")
    items = json.loads(run_cli("--check", "--what-if", *extra, "--config", cfg, "--output-format", "json", path,
                               env=cache).stdout)
    assert {i["severity"] for i in items} == {"information"}


def test_a_file_that_does_not_compile_is_reported_unmeasured(tmp_path, cache):
    broken = write(tmp_path, "broken.mlir", REPRO.read_text().replace(
        "return %s1, %s3 : tensor<64x768xf16>, tensor<64x768xf16>", "return %s1 : tensor<64x768xf16>"))
    r = run_cli("--check", "--what-if", broken, env=cache)
    assert r.returncode == 1 and len(r.concise()) == 4
    assert not any("measured" in m["msg"] for m in r.concise())
    assert f"mlir-lsp: warning: {broken}: not measured: iree-compile failed" in r.stderr


def test_what_if_cannot_be_combined_with_fix(cache):
    r = run_cli("--check", "--what-if", "--diff", REPRO, env=cache)
    assert r.returncode == 2 and "cannot be combined with --fix or --diff" in r.stderr


def test_real_clip_l_export_costs_nothing(cache):
    """clip_l alone (a real export, 4 gather asserts): the asserts save nothing (269 both ways)."""
    items = json.loads(run_cli("--check", "--measured-severity", "--output-format", "json",
                               MODELS / "clip_l.input.mlir", env=cache, timeout=300).stdout)
    assert len(items) == 4 and {i["code"] for i in items} == {"MLA001"}
    assert {i["severity"] for i in items} == {"information"}
    assert {i["measured"]["note"].rsplit("; ", 1)[1] for i in items} == {
        "removing the asserts in this file saves 0 dispatches (269 -> 269)"}


@pytest.mark.slow
@ENCODER_GROUP
def test_real_sdxl_prompt_encoder_costs_two(encoder_cache):
    """The SDXL prompt encoder: 16 findings, each saying the asserts cost 2 (1660 -> 1658); the
    four in the second copies of the hoisted gathers name the dispatches that exist only
    because of asserts. Nothing lowered: it saves."""
    items = json.loads(run_cli("--check", "--measured-severity", "--output-format", "json",
                               MODELS / "sdxl_prompt_encoder.input.mlir",
                               env={"XDG_CACHE_HOME": str(encoder_cache)}, timeout=600).stdout)
    assert len(items) == 16 and {i["severity"] for i in items} == {"warning"}
    assert all(i["measured"]["note"].endswith("saves 2 dispatches (1660 -> 1658)") for i in items)
    extra = sorted(i["measured"]["dispatch"] for i in items if i["measured"]["only_because_of_asserts"])
    assert extra == ["_initializer_260_dispatch_0"] * 2 + ["_initializer_261_dispatch_0"] * 2


def test_stdin_is_measured_as_read_not_the_file_it_is_named_after(tmp_path, cache):
    """`- --stdin-filename NAME`: the compile is of the text on stdin (the repro: saves 1), not of
    the file NAME on disk (one gather: would save 0)."""
    named = single_gather(tmp_path)
    r = run_cli("--check", "--what-if", "--stdin-filename", named, "-", input=REPRO.read_text(), env=cache)
    got = _by_line(r)
    assert [m["path"] for m in r.concise()] == [str(named)] * 4
    assert all(msg.endswith(SAVES_ONE) for msg in got.values()) and EXTRA in got[29]

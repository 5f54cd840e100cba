"""The fixes judged by the real compiler: fixed files parse, lose their MLA001/MLA002 findings, and
cost fewer dispatches at `--compile-to=dispatch-creation` for gfx942 (FACTS.md: repro 4 -> 3,
SDXL prompt encoder 1660 -> 1658; clip_l alone has no extra dispatch).

The compile tests are slow (the prompt encoder takes 5-11 s per compile on 2 cores); the unfixed
count of each fixture is compiled once per session. The corpus chunk test is fast.
"""

from __future__ import annotations

import json

import pytest

from conftest import CORPUS, MODELS, REPRO, real_asserts, run_cli
from fixhelpers import copy_to, flow_dispatch_count, iree_opt, real_parse_error

ENCODER = MODELS / "sdxl_prompt_encoder.input.mlir"
CLIP_L = MODELS / "clip_l.input.mlir"
# fixture -> (flow.dispatch.workgroups before, after either fix)
EXPECTED = {
    REPRO: (4, 3),
    ENCODER: (1660, 1658),
    CLIP_L: (269, 269),
}
MODES = ["strip", "assume"]


@pytest.fixture(scope="session")
def unfixed_counts(tmp_path_factory):
    cache: dict = {}
    workdir = tmp_path_factory.mktemp("unfixed")

    def get(src):
        if src not in cache:
            cache[src] = flow_dispatch_count(src, workdir)
        return cache[src]

    return get


@pytest.mark.slow
def test_dispatch_counter_sees_the_known_unfixed_count_of_the_repro(unfixed_counts):
    assert unfixed_counts(REPRO) == 4


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("src", list(EXPECTED), ids=lambda p: p.stem)
def test_fixed_fixture_parses_is_clean_and_costs_fewer_dispatches(tmp_path, unfixed_counts, src, mode):
    before, after = EXPECTED[src]
    assert real_parse_error(src.read_text(encoding="utf-8")) is None  # the real parser accepts the original
    n_asserts = len(real_asserts(src.read_text(encoding="utf-8")))
    assert n_asserts > 0
    f = copy_to(src, tmp_path)
    res = run_cli("--check", "--fix", *(["--fix-mode", "assume"] if mode == "assume" else []), f, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"fixed {n_asserts}" in res.stderr
    assert "cannot read" not in res.stderr  # the real parser checked the result

    opt = iree_opt(f)
    assert opt.returncode == 0, opt.stderr[-3000:]
    text = f.read_text(encoding="utf-8")
    assert real_asserts(text) == []
    if mode == "assume":
        assert "util.assume.int" in text

    left = run_cli("--check", "--select", "MLA001,MLA002", f)
    assert (left.returncode, left.stdout) == (0, ""), left.stdout + left.stderr

    assert unfixed_counts(src) == before
    assert flow_dispatch_count(f, tmp_path) == after


def _chunks_with_parseable_asserts():
    rows = [json.loads(ln) for ln in (CORPUS / "ground_truth.jsonl").read_text(encoding="utf-8").splitlines() if ln]
    return [r for r in rows if r["ok"] and r["asserts"]]


def _chunk_text(row) -> str:
    lines = (CORPUS / "files" / row["repo"] / row["path"]).read_text(encoding="utf-8").split("\n")
    return "\n".join(lines[row["chunk_start_line"] - 1:row["chunk_end_line"]]) + "\n"


def test_corpus_has_exactly_one_parseable_chunk_with_asserts():
    chunks = _chunks_with_parseable_asserts()
    assert len(chunks) == 1
    assert chunks[0]["path"].endswith("verify-linalg-on-tensors-backend-contract.mlir")
    assert [a["in_linalg"] for a in chunks[0]["asserts"]] == [False]  # a host assert (MLA003)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("row", _chunks_with_parseable_asserts(), ids=lambda r: f"{r['path']}#{r['chunk_index']}")
def test_corpus_chunk_still_parses_and_verifies_after_fix(tmp_path, row, mode):
    text = _chunk_text(row)
    assert real_parse_error(text) is None
    assert len(real_asserts(text)) == len(row["asserts"])
    f = tmp_path / "chunk.mlir"
    f.write_text(text, encoding="utf-8")

    # Without --unsafe-fixes the host assert stays and is reported.
    res = run_cli("--check", "--fix", "--fix-mode", mode, f)
    assert res.returncode == 1
    assert [m.group("code") for m in res.concise()] == ["MLA003"] * len(row["asserts"])
    assert f.read_text(encoding="utf-8") == text

    res = run_cli("--check", "--fix", "--unsafe-fixes", "--fix-mode", mode, f)
    assert res.returncode == 0, res.stdout + res.stderr
    fixed = f.read_text(encoding="utf-8")
    assert fixed != text
    assert real_parse_error(fixed) is None  # parses and verifies (Python bindings)
    v = iree_opt(f, "--verify-each")
    assert v.returncode == 0, v.stderr
    assert real_asserts(fixed) == []
    # Only whole lines went, each an assert or its condition; everything else is there in order.
    old, new = text.split("\n"), fixed.split("\n")
    gone = [ln for ln in old if ln not in new]
    assert [ln for ln in old if ln not in gone] == new
    assert sum(ln.lstrip().startswith("cf.assert ") for ln in gone) == len(row["asserts"])
    assert all(ln.lstrip().startswith("cf.assert ") or " = arith.cmpi " in ln for ln in gone), gone

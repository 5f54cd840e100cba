"""Torch-level IR (the SDXL prompt encoder before `--compile-to=input`): its asserts appear only
in the lowering, where MLA004 traces them back to the `torch.aten.embedding` ops. `--check
--what-if` puts the what-if's measured cost on those MLA004 findings (the two hoisted copies of
the position-embedding gathers exist only because of asserts: 1660 -> 1658), and a dispatch diff
against a side without those dispatches names MLA004 at the embeddings' lines as their cause.
Real iree-compile: the encoder's torch compiles take ~45 s each here (one cache for the module)."""

from __future__ import annotations

import json

import pytest

from conftest import MODELS, run_cli

TORCH = MODELS / "sdxl_prompt_encoder.torch.mlir"
EMBEDDINGS = [713, 719, 1858, 1864, 4999, 5003, 5787, 5791]  # the eight torch.aten.embedding ops
EXTRA = {5003: "_initializer_260_dispatch_0", 5791: "_initializer_261_dispatch_0"}  # rooted at them


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return {"XDG_CACHE_HOME": str(tmp_path_factory.mktemp("cache"))}


@pytest.mark.slow
def test_check_what_if_measures_the_torch_ops(cache):
    plain = run_cli("--check", TORCH)  # no compile: a torch file has no cf.assert to flag
    assert plain.returncode == 0 and plain.stdout == ""
    r = run_cli("--check", "--what-if", "--output-format", "json", TORCH, env=cache, timeout=900)
    assert r.returncode == 1, r.stderr
    items = json.loads(r.stdout)
    by_line = {i["range"]["start"]["line"] + 1: i for i in items}
    assert sorted(by_line) == EMBEDDINGS and {i["code"] for i in items} == {"MLA004"}
    assert all(i["message"].startswith("`torch.aten.embedding` lowers to 2 cf.assert") for i in items)
    assert {i["severity"] for i in items} == {"information"}
    assert all(i["measured"]["note"].endswith("removing the asserts in this file saves 2 dispatches (1660 -> 1658)")
               for i in items)
    for line, name in EXTRA.items():  # the dispatch its asserts land in exists only because of asserts
        m = by_line[line]["measured"]
        assert (m["dispatch"], m["only_because_of_asserts"]) == (name, True)
        assert f"in dispatch {name}, which exists only because of asserts" in m["note"]
    for line in (719, 1864, 4999, 5787):  # their dispatches stay
        assert by_line[line]["measured"]["only_because_of_asserts"] is False
    concise = run_cli("--check", "--what-if", TORCH, env=cache, timeout=900).concise()
    assert [int(m["line"]) for m in concise] == EMBEDDINGS
    assert all(m["code"] == "MLA004" and "; measured with profile default: " in m["msg"] for m in concise)


@pytest.mark.slow
def test_dispatch_diff_names_the_embedding_as_the_cause(cache):
    r = run_cli("--dispatch-diff", TORCH, "--against-flags=--iree-opt-strip-assertions", "--output-format", "json",
                env=cache, timeout=900)
    assert r.returncode == 1, r.stderr
    (d,) = json.loads(r.stdout)
    assert (d["delta"], d["current"]["flow_dispatches"], d["against"]["flow_dispatches"]) == (2, 1660, 1658)
    assert d["gone"] == [] and sorted(e["name"] for e in d["new"]) == sorted(EXTRA.values())
    for e in d["new"]:
        line = e["location"]["line"]
        assert EXTRA[line] == e["name"] and e["location"]["op"] == "torch.aten.embedding"
        (cause,) = [c for c in e["causes"] if c["kind"] == "assert"]
        assert cause["codes"] == ["MLA004"] and line in cause["lines"]
        assert set(cause["lines"]) <= set(EMBEDDINGS)
    text = run_cli("--dispatch-diff", TORCH, "--against-flags=--iree-opt-strip-assertions", env=cache, timeout=900)
    assert f"{TORCH}:5003:13: new dispatch _initializer_260_dispatch_0 (torch.aten.embedding" in text.stdout
    assert "holds the cf.asserts of torch ops (MLA004 at lines 713, 5003)" in text.stdout

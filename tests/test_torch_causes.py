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
# The one dispatch each embedding's asserts land in (token embeddings: fused into the model's
# first dispatches; position embeddings: hoisted into initializers, twice for the second copies).
LANDS_IN = {713: "main$async_dispatch_0", 719: "_initializer_0_dispatch_0", 1858: "main$async_dispatch_177",
            1864: "_initializer_67_dispatch_0", 4999: "main$async_dispatch_696", 5787: "main$async_dispatch_873",
            **EXTRA}


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
    assert {line: i["measured"]["dispatches"] for line, i in by_line.items()} == {
        line: [name] for line, name in LANDS_IN.items()}
    # the two whose dispatch exists only because of asserts; the others' dispatches stay
    assert {line for line, i in by_line.items() if i["measured"]["only_because_of_asserts"]} == set(EXTRA)
    for line, name in EXTRA.items():
        assert f"in dispatch {name}, which exists only because of asserts" in by_line[line]["measured"]["note"]
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
        assert cause == {"kind": "assert", "codes": ["MLA004"], "lines": [line]}  # the embedding its asserts are of
    text = run_cli("--dispatch-diff", TORCH, "--against-flags=--iree-opt-strip-assertions", env=cache, timeout=900)
    assert (f"{TORCH}:5003:13: new dispatch _initializer_260_dispatch_0 (torch.aten.embedding, in "
            "util.initializer#261), not with flags '--iree-opt-strip-assertions': holds the cf.asserts of torch "
            "ops (MLA004 at line 5003); hoisted initializer") in text.stdout

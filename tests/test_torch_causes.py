"""Torch-level IR (the SDXL prompt encoder before `--compile-to=input`): its asserts appear only
in the lowering, where MLA004 traces them back to the `torch.aten.embedding` ops. `--check
--what-if` puts the what-if's measured cost on those MLA004 findings (the two hoisted copies of
the position-embedding gathers exist only because of asserts: 1660 -> 1658), and a dispatch diff
against a side without those dispatches names MLA004 at the embeddings' lines as their cause.
Real iree-compile: the encoder's torch compiles take ~20-45 s each here (the two tests of the export share
the count cache of ENCODER_TORCH_GROUP: its lowering and its compile with debug info are made once a run)."""

from __future__ import annotations

import json

import pytest

from conftest import ENCODER_TORCH_GROUP, MODELS, run_cli

TORCH = MODELS / "sdxl_prompt_encoder.torch.mlir"
EMBEDDINGS = [713, 719, 1858, 1864, 4999, 5003, 5787, 5791]  # the eight torch.aten.embedding ops
EXTRA = {5003: "_initializer_260_dispatch_0", 5791: "_initializer_261_dispatch_0"}  # rooted at them
# The one dispatch each embedding's asserts land in (token embeddings: fused into the model's
# first dispatches; position embeddings: hoisted into initializers, twice for the second copies).
LANDS_IN = {713: "main$async_dispatch_0", 719: "_initializer_0_dispatch_0", 1858: "main$async_dispatch_177",
            1864: "_initializer_67_dispatch_0", 4999: "main$async_dispatch_696", 5787: "main$async_dispatch_873",
            **EXTRA}


@pytest.fixture
def cache(encoder_cache):
    return {"XDG_CACHE_HOME": str(encoder_cache)}


@pytest.mark.slow
@ENCODER_TORCH_GROUP
def test_check_what_if_measures_the_torch_ops(cache):
    plain = run_cli("--check", "--no-lower", TORCH)  # text only: a torch file has no cf.assert to flag
    assert plain.returncode == 0 and plain.stdout == ""
    assert "torch IR: its asserts appear when it is lowered" in plain.stderr
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
@ENCODER_TORCH_GROUP
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


@pytest.mark.slow
def test_torch_ops_say_when_the_flags_strip_their_asserts(tmp_path):
    """clip_l's torch IR at O3: the MLA004 findings say IREE strips the lowered asserts, and the
    measurement agrees (nothing saved)."""
    clip = MODELS / "clip_l.torch.mlir"
    r = run_cli("--check", "--what-if", "--flags=--iree-opt-level=O3", "--output-format", "json", clip,
                env={"XDG_CACHE_HOME": str(tmp_path)}, timeout=600)
    assert r.returncode == 1, r.stderr
    items = json.loads(r.stdout)
    assert [i["range"]["start"]["line"] + 1 for i in items] == [210, 216]
    assert all(i["message"].endswith("; IREE strips these asserts at --iree-opt-level=O3 "
                                     "(--iree-opt-strip-assertions): they cost no dispatch with these flags")
               and i["stripped_by"] == "--iree-opt-level=O3" and i["measured"]["saved"] == 0 for i in items)


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="function")
async def test_the_server_says_it_of_the_torch_ops_too(tmp_path):
    """Over real LSP, with `dispatch.flags` at O2: the MLA004 diagnostics of the dispatch preview
    on clip_l's torch IR say IREE strips the lowered asserts."""
    import asyncio

    from lsprotocol import types

    from reliability_lsp import lsp_server, open_and_wait

    options = {"mlirLsp": {"dispatch": {"flags": ["--iree-opt-level=O2"]}}}
    async with lsp_server(tmp_path, options=options) as lsp:
        path = tmp_path / "clip_l.torch.mlir"
        path.write_text((MODELS / "clip_l.torch.mlir").read_text())
        uri = path.as_uri()
        await open_and_wait(lsp, uri, path.read_text())

        async def mla004() -> list[types.Diagnostic]:
            while True:
                p = await lsp.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
                found = [d for d in p.diagnostics if d.code == "MLA004"] if p.uri == uri else []
                if found:
                    return found
        found = await asyncio.wait_for(mla004(), 300)
        assert [d.range.start.line + 1 for d in found] == [210, 216]
        assert all(d.message.endswith("; IREE strips these asserts at --iree-opt-level=O2 "
                                      "(--iree-opt-strip-assertions): they cost no dispatch with these flags")
                   for d in found)

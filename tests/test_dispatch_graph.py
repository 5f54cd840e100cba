"""The dispatch graph for Google's Model Explorer (`dispatch/graph.py`, `graph_viewer.py`, the
adapter extension, `mlir-lsp --dispatch-graph`), with the real iree-compile, Model Explorer's own
Python loader (its graph dataclasses, strict) and its real server in Debian's headless chromium.
Screenshots go to tests/artifacts/model-explorer/."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mlir_lsp_asserts.dispatch.compiler import find_compiler
from mlir_lsp_asserts.dispatch.count import DispatchCounter
from mlir_lsp_asserts.dispatch.diff import compiled_side
from mlir_lsp_asserts.dispatch.flags import profile_flags
from mlir_lsp_asserts.dispatch.graph import graph_for_text
from mlir_lsp_asserts.graph_viewer import open_viewer
from test_dispatch_count import ENCODER, REPRO
from test_dispatch_diff import fixed_copy

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "tests" / "artifacts" / "model-explorer"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
PLAYWRIGHT_FROM = REPO / "vscode-client" / "package.json"  # playwright-core in its node_modules
DRIVER = REPO / "tests" / "model_explorer_driver.mjs"
NEW = "_initializer_1_dispatch_0"


def model_explorer_loads(data: dict):
    """The collection as Model Explorer's own dataclasses, strictly (an unknown field or a wrong
    type fails), and as its adapter response (what its server sends the web app)."""
    dacite = pytest.importorskip("dacite")
    gb = pytest.importorskip("model_explorer.graph_builder")
    from model_explorer.utils import convert_adapter_response

    coll = dacite.from_dict(gb.GraphCollection, data, config=dacite.Config(strict=True))
    sent = convert_adapter_response({"graphCollections": [coll]})
    assert sent["graphCollections"][0]["graphs"][0]["nodes"]
    return coll


def nodes_of(coll, graph: int = 0) -> dict:
    return {n.id: n for n in coll.graphs[graph].nodes}


def attrs(node) -> dict:
    return {a.key: a.value for a in node.attrs}


def build_against_fixed(src: Path, tmp_path: Path):
    counter = DispatchCounter(find_compiler(None), disk_cache=False)
    f = tmp_path / src.name
    shutil.copyfile(src, f)
    fixed = fixed_copy(src, tmp_path / f"fixed.{src.name}", tmp_path)
    side = compiled_side(counter, str(fixed), str(fixed), fixed.read_text(), profile_flags("default"), "default")
    return graph_for_text(f.read_text(), str(f), counter=counter, against=side), f


def test_repro_graph_marks_the_hoisted_gather_new_and_its_asserts(tmp_path):
    build, f = build_against_fixed(REPRO, tmp_path)
    assert build.dispatches == 4
    assert build.marked["new"] == [NEW] and build.marked["gone"] == []
    assert build.marked["only-because-of-asserts"] == [NEW]
    assert set(build.marked["holds-assert"]) == {"_initializer_0_dispatch_0", NEW}
    assert build.selection() == (build.graph_ids[0], NEW)
    out = tmp_path / "g.json"
    build.write(str(out))
    coll = model_explorer_loads(json.loads(out.read_text()))
    assert [g.id for g in coll.graphs] == build.graph_ids and len(coll.graphs) == 2
    nodes = nodes_of(coll)
    new = nodes[NEW]
    a = attrs(new)
    assert new.label == "linalg.generic" and new.namespace == "initializers"
    assert a["findings"] == "MLA001 at lines 29, 31"
    assert a["marks"] == "new, only-because-of-asserts, holds-assert"
    assert a["location"] == f"{f}:24" and "hoisted initializer" in a["cause"]
    assert f"{f.name}:29 cf.assert" in a["source lines"]
    assert new.style.backgroundColor and new.style.borderColor
    # data flow: each initializer's gather feeds the main dispatch that reads its global
    assert [(e.sourceNodeId, e.targetNodeInputId) for e in nodes["main_dispatch_1"].incomingEdges] == [(NEW, "0")]
    assert [e.sourceNodeId for e in nodes["main_dispatch_0"].incomingEdges] == ["_initializer_0_dispatch_0"]
    assert nodes["main_dispatch_0"].namespace == "main" and not nodes["main_dispatch_0"].style
    # the other side: 3 dispatches, nothing gone, the one gather feeds both main dispatches
    other = nodes_of(coll, 1)
    assert len(other) == 3
    fed = {n: [e.sourceNodeId for e in other[n].incomingEdges] for n in ("main_dispatch_0", "main_dispatch_1")}
    assert fed == {"main_dispatch_0": ["_initializer_0_dispatch_0"], "main_dispatch_1": ["_initializer_0_dispatch_0"]}
    assert coll.graphs[0].groupNodeAttributes[""]["dispatches"] == "4"
    assert coll.graphs[0].groupNodeAttributes["initializers"]["new"] == "1"


def test_graph_without_what_if_or_other_side(tmp_path):
    counter = DispatchCounter(find_compiler(None), disk_cache=False)
    build = graph_for_text(REPRO.read_text(), str(REPRO), counter=counter, what_if_mode=None)
    coll = model_explorer_loads(build.collection)
    assert len(coll.graphs) == 1 and len(coll.graphs[0].nodes) == 4
    assert build.marked["new"] == [] and build.marked["only-because-of-asserts"] == []
    assert build.selection() == (build.graph_ids[0], "_initializer_0_dispatch_0")  # holds an assert


@pytest.mark.slow
def test_prompt_encoder_graph_against_its_fixed_self(tmp_path):
    """SDXL's CLIP prompt encoder: 1660 nodes, +2 new: the two hoisted position-embedding gathers."""
    build, _f = build_against_fixed(ENCODER, tmp_path)
    assert build.dispatches == 1660 and len(build.marked["new"]) == 2 and build.marked["gone"] == []
    coll = model_explorer_loads(build.collection)
    nodes = nodes_of(coll)
    assert len(nodes) == 1660 and len(nodes_of(coll, 1)) == 1658
    for name in build.marked["new"]:
        a = attrs(nodes[name])
        assert a["function"].startswith("util.initializer") and nodes[name].label == "linalg.generic"
        assert a["findings"].startswith("MLA001 at lines") and "tensor.extract" in a["source lines"]
        assert a["marks"].startswith("new, ") and "hoisted initializer" in a["cause"]
    edges = sum(len(n.incomingEdges) for n in nodes.values())
    assert edges > 1660  # a model's dispatches feed one another
    assert any(len(n.namespace.split("/")) == 2 for n in nodes.values())  # regions of source lines


def _driver(url: str, shot: Path, expect: list[str]) -> dict:
    cfg = {"url": url, "chromium": CHROMIUM, "requireFrom": str(PLAYWRIGHT_FROM), "screenshot": str(shot),
           "expect": expect, "timeout": 120000}
    p = subprocess.run(["node", str(DRIVER), json.dumps(cfg)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def _need_browser() -> None:
    missing = [what for what, ok in (("chromium", Path(CHROMIUM).exists()), ("node", shutil.which("node")),
                                     ("playwright-core (make vscode-setup)",
                                      (PLAYWRIGHT_FROM.parent / "node_modules" / "playwright-core").exists()))
               if not ok]
    if missing:
        if os.environ.get("CI"):
            pytest.fail("missing: " + ", ".join(missing))
        pytest.skip("missing: " + ", ".join(missing))


@pytest.mark.slow
def test_model_explorer_shows_the_new_dispatch_selected(tmp_path):
    """The real Model Explorer server on localhost with the repro's graph against its fixed
    self, in headless chromium: the new dispatch selected, its attributes in the side panel."""
    pytest.importorskip("model_explorer")
    _need_browser()
    build, _f = build_against_fixed(REPRO, tmp_path)
    g = tmp_path / "repro.graph.json"
    build.write(str(g))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "repro-new-dispatch-selected.png"
    graph_id, node = build.selection() or ("", "")
    with open_viewer(g, select_node=node, graph_id=graph_id) as viewer:
        assert viewer.running()
        seen = _driver(viewer.url, shot, [f"id {NEW}", "MLA001 at lines 29, 31"])
        pid = viewer.process.pid
    assert seen["errors"] == [], seen["errors"]
    panel = seen.get("panel", "")
    assert f"id {NEW}" in panel and "namespace initializers" in panel  # the selected node's info
    assert "findings MLA001 at lines 29, 31" in panel and "marks new, only-because-of-asserts" in panel
    assert "hoisted initializer" in panel
    assert shot.exists() and shot.stat().st_size > 10_000
    with pytest.raises(ProcessLookupError):  # stopped: the server's process group is gone
        os.killpg(pid, 0)


def test_viewer_without_model_explorer_says_what_to_install():
    code = ("import sys; sys.modules['model_explorer'] = None\n"
            "from pathlib import Path\n"
            "from mlir_lsp_asserts.graph_viewer import ViewerUnavailable, open_viewer\n"
            "try:\n    open_viewer(Path(sys.argv[1]))\n"
            "except ViewerUnavailable as e:\n    print(e); sys.exit(3)\n")
    p = subprocess.run([sys.executable, "-c", code, str(REPRO)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 3, p.stderr
    assert p.stdout.strip() == "Model Explorer is not installed: pip install 'mlir-lsp[graph]'"

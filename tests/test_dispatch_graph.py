"""The dispatch graph for Google's Model Explorer (`dispatch/graph.py`, `graph_viewer.py`, the
adapter extension, `mlir-lsp --dispatch-graph`), with the real iree-compile, Model Explorer's own
Python loader (its graph dataclasses, strict) and its real server in Debian's headless chromium.
Screenshots go to tests/artifacts/model-explorer/ (ignored by git); the two the docs show are
copied to docs/images/ only when MLIR_LSP_DOC_IMAGES=1 (conftest.keep_doc_image)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import ENCODER_GROUP, keep_doc_image
from mlir_lsp_asserts.dispatch.compiler import find_compiler
from mlir_lsp_asserts.dispatch.count import DispatchCounter
from mlir_lsp_asserts.dispatch.diff import compiled_side
from mlir_lsp_asserts.dispatch.graph import graph_for_text
from mlir_lsp_asserts.graph_viewer import ViewerUnavailable, free_port, open_viewer
from mlir_lsp_asserts.iree_flags.flags import profile_flags
from mlir_lsp_asserts.model_explorer_adapter import ADAPTER_ID
from test_dispatch_count import ENCODER, REPRO, mlir_lsp
from test_dispatch_diff import fixed_copy

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "tests" / "artifacts" / "model-explorer"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
PLAYWRIGHT_FROM = REPO / "vscode-client" / "package.json"  # playwright-core in its node_modules
DRIVER = REPO / "tests" / "model_explorer_driver.mjs"
NEW = "_initializer_1_dispatch_0"
CLIP_TORCH = ENCODER.parent / "clip_l.torch.mlir"


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
    assert f"{f.name}:29 cf.assert" in a["source lines"] and a["root op"] == f"{f.name}:24:9 linalg.generic"
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


def test_graph_reuses_the_compiles_of_the_count(tmp_path):
    """Three compiles (the other side with other flags, this side, the what-if) and no more:
    the edges come from the outputs the counts keep, also without a disk cache."""
    counter = DispatchCounter(find_compiler(None), disk_cache=False)
    other = counter.sibling()
    runs: list[list[str]] = []
    for c in (counter, other):
        real = c._run
        c._run = lambda argv, files=None, real=real: runs.append(argv) or real(argv, files)  # counted, still run
    flags = profile_flags("default")
    side = compiled_side(other, "O1", str(REPRO), REPRO.read_text(), [*flags, "--iree-opt-level=O1"], "default")
    build = graph_for_text(REPRO.read_text(), str(REPRO), counter=counter, against=side, against_counter=other)
    assert len(runs) == 3 and len(build.collection["graphs"]) == 2
    assert build.comparison is not None and build.comparison.delta == 1  # O1 strips the asserts itself


def cli_graph(src: Path, tmp_path: Path, *extra: str, cache: Path | None = None):
    """`mlir-lsp --dispatch-graph COPY --against FIXED --what-if -o g.json` (FIXED: the copy
    with its asserts stripped by `mlir-lsp --check --fix`): the collection as Model Explorer
    loads it, and the copy's path. `cache`: the count cache (default: in `tmp_path`)."""
    cache = cache or tmp_path
    f = tmp_path / src.name
    shutil.copyfile(src, f)
    os.chmod(f, 0o644)
    fixed = fixed_copy(src, tmp_path / f"fixed.{src.name}", cache)
    out = tmp_path / "g.json"
    p = mlir_lsp("--dispatch-graph", f, "--against", fixed, "--what-if", "-o", out, *extra, cache=cache)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert f"mlir-lsp: wrote {out}" in p.stderr
    return model_explorer_loads(json.loads(out.read_text())), f, p.stderr


def test_cli_repro_against_fixed_writes_a_graph_model_explorer_loads(tmp_path):
    coll, f, err = cli_graph(REPRO, tmp_path)
    assert f"{f}: 4 dispatches, 2 edges between them; 3 with {tmp_path / 'fixed.hoisted_gather.mlir'} (+1); " \
           "marked: 1 new, 1 only-because-of-asserts, 2 holds-assert" in err
    new = nodes_of(coll)[NEW]
    a = attrs(new)
    assert a["marks"].startswith("new") and a["findings"] == "MLA001 at lines 29, 31"
    assert new.style.backgroundColor == "#ffcdd2"


def test_cli_usage_and_input_errors_are_one_line(tmp_path):
    for args, msg in ((["--dispatch-graph"], "--dispatch-graph takes one FILE"),
                      (["--dispatch-graph", REPRO, "--against", REPRO, "--against-git", "HEAD"],
                       "--against, --against-git and --against-baseline exclude each other"),
                      (["--dispatch-graph", tmp_path / "none.mlir"], f"{tmp_path / 'none.mlir'}: No such file"),
                      (["--dispatch-graph", REPRO, "--profile", "nope"], "unknown dispatch profile 'nope'"),
                      (["--dispatch-graph", REPRO, "-o", tmp_path / "no" / "g.json"], "cannot write")):
        p = mlir_lsp(*args, cache=tmp_path)
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        errors = [ln for ln in p.stderr.splitlines() if ln.startswith("mlir-lsp: error:")]
        assert len(errors) == 1 and msg in errors[0], p.stderr
    assert not (tmp_path / "no").exists()


def test_cli_writes_the_graph_to_stdout_without_o(tmp_path):
    p = mlir_lsp("--dispatch-graph", REPRO, cache=tmp_path)
    assert p.returncode == 0, p.stderr
    coll = model_explorer_loads(json.loads(p.stdout))
    assert len(coll.graphs) == 1 and sorted(nodes_of(coll)) == sorted(
        ["_initializer_0_dispatch_0", NEW, "main_dispatch_0", "main_dispatch_1"])


def test_cli_bytecode_input(tmp_path):
    """A `.mlirbc`: the dispatches, their edges, the asserts their compiled bodies keep."""
    bc = tmp_path / "repro.mlirbc"
    subprocess.run([str(Path(sys.executable).parent / "iree-opt"), "--emit-bytecode", str(REPRO), "-o", str(bc)],
                   check=True, capture_output=True)
    out = tmp_path / "g.json"
    p = mlir_lsp("--dispatch-graph", bc, "--what-if", "-o", out, cache=tmp_path)
    assert p.returncode == 0, p.stderr
    nodes = nodes_of(model_explorer_loads(json.loads(out.read_text())))
    assert len(nodes) == 4 and [e.sourceNodeId for e in nodes["main_dispatch_1"].incomingEdges] == [NEW]
    a = attrs(nodes[NEW])
    assert a["cf.assert in the dispatch"] == "2" and a["marks"] == "only-because-of-asserts, holds-assert"


@pytest.mark.slow
def test_cli_torch_input_marks_the_gathers_torch_lowers_to_asserts(tmp_path):
    """clip_l at the torch level: the embedding gathers' dispatches hold the asserts their
    lowering adds (MLA004 at the torch op's line, from the what-if's trace)."""
    out = tmp_path / "g.json"
    p = mlir_lsp("--dispatch-graph", CLIP_TORCH, "--what-if", "-o", out, cache=tmp_path)
    assert p.returncode == 0, p.stderr
    nodes = nodes_of(model_explorer_loads(json.loads(out.read_text())))
    assert len(nodes) == 269
    held = {n.id: attrs(n) for n in nodes.values() if "holds-assert" in attrs(n).get("marks", "")}
    assert len(held) == 2
    for a in held.values():
        assert a["findings"].startswith("MLA004 at line") and a["cf.assert in the dispatch"] == "2"
    assert [n.label for n in nodes.values() if n.id in held] == ["torch.aten.embedding", "torch.aten.add.Tensor"]


@pytest.mark.slow
@ENCODER_GROUP
def test_prompt_encoder_against_its_fixed_self(tmp_path, encoder_cache):
    """SDXL's CLIP prompt encoder: 1660 nodes, +2 new: the two hoisted position-embedding gathers."""
    coll, _f, err = cli_graph(ENCODER, tmp_path, cache=encoder_cache)
    assert "1660 dispatches" in err and "1658 with" in err and "(+2)" in err and "marked: 2 new" in err
    nodes = nodes_of(coll)
    assert len(nodes) == 1660 and len(nodes_of(coll, 1)) == 1658
    new = [n for n in nodes.values() if attrs(n).get("marks", "").startswith("new")]
    assert len(new) == 2
    for node in new:
        a = attrs(node)
        assert a["function"].startswith("util.initializer") and node.label == "linalg.generic"
        assert a["findings"].startswith("MLA001 at lines") and "tensor.extract" in a["source lines"]
        assert "only-because-of-asserts" in a["marks"] and "hoisted initializer" in a["cause"]
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


def _serving(port: int) -> list[int]:
    """Pids of the processes whose command line names `--port PORT` (a Model Explorer server)."""
    want = b"--port\x00%d\x00" % port
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if want in (d / "cmdline").read_bytes():
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def _first_line(proc: subprocess.Popen, timeout: float) -> str:
    """The first line the process prints (its URL), waiting at most `timeout` seconds."""
    got: list[str] = []
    t = threading.Thread(target=lambda: got.append(proc.stdout.readline()), daemon=True)
    t.start()
    t.join(timeout)
    return got[0].strip() if got else ""


@pytest.mark.slow
def test_open_shows_the_new_dispatch_selected_in_model_explorer(tmp_path):
    """`--dispatch-graph --open`: the real Model Explorer server on localhost with the repro's
    graph against its fixed self, in headless chromium: the new dispatch selected, its
    attributes in the side panel; Ctrl-C stops the server (no process left)."""
    pytest.importorskip("model_explorer")
    _need_browser()
    f = tmp_path / "hoisted_gather.mlir"
    shutil.copyfile(REPRO, f)
    fixed = fixed_copy(REPRO, tmp_path / "fixed.mlir", tmp_path)
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-m", "mlir_lsp_asserts", "--dispatch-graph", str(f), "--against",
                             str(fixed), "--what-if", "--open", "-o", str(tmp_path / "g.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    try:
        url = _first_line(proc, 180)
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.poll() is not None else url
        port = int(url.split(":")[2].split("/")[0])
        assert _serving(port)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "repro-new-dispatch-selected.png"
        seen = _driver(url, shot, [f"id {NEW}", "MLA001 at lines 29, 31"])
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(30)
    assert code == 0, proc.stderr.read()
    assert _serving(port) == []  # the server's process group is gone with it
    assert seen["errors"] == [], seen["errors"]
    panel = seen.get("panel", "")
    assert f"id {NEW}" in panel and "namespace initializers" in panel  # the selected node's info
    assert "findings MLA001 at lines 29, 31" in panel and "marks new, only-because-of-asserts" in panel
    assert "hoisted initializer" in panel
    assert shot.exists() and shot.stat().st_size > 10_000
    keep_doc_image(shot, "model-explorer-repro-new-dispatch.png")


@pytest.mark.slow
def test_model_explorer_opens_an_mlir_file_through_the_adapter(tmp_path):
    """`model-explorer FILE.mlir --extensions=mlir_lsp_asserts.model_explorer_adapter`: the
    file opens with our adapter (the count runs inside Model Explorer's server)."""
    pytest.importorskip("model_explorer")
    _need_browser()
    f = tmp_path / "hoisted_gather.mlir"
    shutil.copyfile(REPRO, f)
    port = free_port()
    log = tmp_path / "me.log"
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path), PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    with open(log, "w") as out:
        proc = subprocess.Popen([str(Path(sys.executable).parent / "model-explorer"), str(f),
                                 "--extensions=mlir_lsp_asserts.model_explorer_adapter", "--no_open_in_browser",
                                 "--host", "127.0.0.1", "--port", str(port)], stdout=out, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True)
    try:
        url = ""
        for _ in range(600):
            m = re.search(r"http://127\.0\.0\.1:\d+/\S*", log.read_text())
            if m or proc.poll() is not None:
                url = m.group(0) if m else ""
                break
            time.sleep(0.2)
        assert url, log.read_text()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "model-explorer-opens-mlir.png"
        seen = _driver(url, shot, ["GRAPH INFO", "what-if 3 with the asserts fixed"])
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
    assert seen["errors"] == [], seen["errors"]
    body = seen["body"]
    assert "mlir-lsp dispatch graph (hoisted_gather.mlir)" in body and "dispatches 4" in body
    assert "Error" not in body
    keep_doc_image(shot, "model-explorer-opens-mlir.png")


def test_extension_lists_first_for_mlir_and_converts_through_model_explorer(tmp_path):
    """Model Explorer's own extension loading and command path (as its server runs them)."""
    pytest.importorskip("model_explorer")
    code = f"""
import json, sys
from model_explorer.extension_manager import ExtensionManager
m = ExtensionManager(["mlir_lsp_asserts.model_explorer_adapter"])
m.load_extensions()
mlir = [e["id"] for e in m.get_extensions_metadata() if "mlir" in e.get("fileExts", [])]
got = m.run_cmd({{"extensionId": "{ADAPTER_ID}", "cmdId": "convert", "modelPath": sys.argv[1], "settings": {{}},
                 "deleteAfterConversion": False}})
print(json.dumps({{"mlir": mlir, "graphs": [[n["id"] for n in g["nodes"]]
                                           for g in got["graphCollections"][0]["graphs"]]}}))
"""
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    p = subprocess.run([sys.executable, "-c", code, str(REPRO)], capture_output=True, text=True, env=env, cwd=REPO,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["mlir"][0] == ADAPTER_ID and "builtin_mlir" in got["mlir"]
    assert got["graphs"] == [["_initializer_0_dispatch_0", NEW, "main_dispatch_0", "main_dispatch_1"]]


BLOCKED = ("import sys; sys.modules['model_explorer'] = None\n"
           "from mlir_lsp_asserts.cli.main import main\n"
           "sys.exit(main(sys.argv[1:]))\n")


def test_open_without_model_explorer_says_what_to_install_and_o_still_works(tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    p = subprocess.run([sys.executable, "-c", BLOCKED, "--dispatch-graph", str(REPRO), "--open"], capture_output=True,
                       text=True, env=env, cwd=REPO, timeout=300)
    assert p.returncode == 2 and p.stdout == "", p.stderr
    assert p.stderr.strip() == ("mlir-lsp: error: --open needs Model Explorer: pip install 'mlir-lsp[graph]' "
                                "(-o FILE.json writes the graph without it)")
    out = tmp_path / "g.json"
    p = subprocess.run([sys.executable, "-c", BLOCKED, "--dispatch-graph", str(REPRO), "-o", str(out)],
                       capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert p.returncode == 0, p.stderr
    assert len(model_explorer_loads(json.loads(out.read_text())).graphs[0].nodes) == 4


def test_viewer_without_model_explorer_says_what_to_install():
    code = ("import sys; sys.modules['model_explorer'] = None\n"
            "from pathlib import Path\n"
            "from mlir_lsp_asserts.graph_viewer import ViewerUnavailable, open_viewer\n"
            "try:\n    open_viewer(Path(sys.argv[1]))\n"
            "except ViewerUnavailable as e:\n    print(e); sys.exit(3)\n")
    p = subprocess.run([sys.executable, "-c", code, str(REPRO)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 3, p.stderr
    assert p.stdout.strip() == "Model Explorer is not installed: pip install 'mlir-lsp[graph]'"


@pytest.mark.slow
def test_viewer_on_a_graph_file_answers_and_stops(tmp_path):
    pytest.importorskip("model_explorer")
    counter = DispatchCounter(find_compiler(None), disk_cache=False)
    build = graph_for_text(REPRO.read_text(), str(REPRO), counter=counter)
    g = tmp_path / "g.json"
    build.write(str(g))
    with open_viewer(g, select_node=NEW) as viewer:
        assert viewer.running() and _serving(viewer.port)
        assert f"%22selectedNodeId%22%3A%22{NEW}%22" in viewer.url
        with urllib.request.urlopen(f"http://127.0.0.1:{viewer.port}/check_health", timeout=10) as r:
            assert r.read() == b"model_explorer_ok"
        port = viewer.port
    assert _serving(port) == []
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        with pytest.raises(ViewerUnavailable, match=f"port {busy} of 127.0.0.1 is in use"):
            open_viewer(g, port=busy)


@pytest.mark.slow
def test_viewer_goes_with_a_parent_killed_by_sigkill(tmp_path):
    """A server (or `--open`) killed with SIGKILL runs no handler: its Model Explorer, in a
    session of its own, still ends (it watches its parent) and leaves no process behind."""
    pytest.importorskip("model_explorer")
    counter = DispatchCounter(find_compiler(None), disk_cache=False)
    g = tmp_path / "g.json"
    graph_for_text(REPRO.read_text(), str(REPRO), counter=counter, what_if_mode=None).write(str(g))
    parent = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom pathlib import Path\n"
                               "from mlir_lsp_asserts.graph_viewer import open_viewer\n"
                               "print(open_viewer(Path(sys.argv[1])).port, flush=True)\ntime.sleep(600)", str(g)],
                              stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        line = _first_line(parent, 120)
        assert line.isdigit(), line
        port = int(line)
        assert _serving(port)
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 30
    while _serving(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _serving(port) == [], "Model Explorer outlived the process that started it"

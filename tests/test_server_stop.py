"""Issue 29, defects 5 and 6: a server ended with SIGTERM (an editor that ends its process
group, a closed terminal) in the middle of its background work exits within 5 s and leaves no
process of its own behind: not a real-parser child, not a compile (a count or `dispatch_ir`,
each in a session of its own), not a Model Explorer that is still starting."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

import pytest
from lsprotocol import types

from tests.reliability_lsp import ENCODER, REPRO, lsp_server, open_and_wait, processes, wait_until

EXIT_SECONDS = 5  # the bound: an editor waits about that long before it kills the server


def _descendants(pid: int) -> dict[int, str]:
    """pid -> command line of every live process below `pid`."""
    procs = processes()
    tree = {pid}
    for _ in range(6):
        tree |= {p for p, ppid, _cmd in procs if ppid in tree}
    return {p: cmd for p, _ppid, cmd in procs if p in tree and p != pid}


def _big_text() -> str:
    """30 MB of IR the real parser takes seconds over."""
    one = ("func.func @f{n}(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {{\n"
           "  %0 = arith.addf %a, %b : tensor<4xf32>\n  %1 = arith.mulf %0, %b : tensor<4xf32>\n"
           "  return %1 : tensor<4xf32>\n}}\n")
    return "".join(one.format(n=i) for i in range(150_000))


async def _start(lsp, tmp_path, what: str) -> str:
    """Open a document and start the background work `what`; returns what to wait for in a
    child's command line."""
    if what == "parser":
        uri = (tmp_path / "big.mlir").as_uri()
        lsp.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="mlir", version=1, text=_big_text())))
        return "server.parser_feature"
    src = ENCODER if what in ("count", "dispatch_ir") else REPRO
    path = tmp_path / src.name
    path.write_text(src.read_text())
    uri = path.as_uri()
    await open_and_wait(lsp, uri, path.read_text())
    if what == "count":
        asyncio.ensure_future(lsp.protocol.send_request_async("mlirLsp/dispatchCount", {"uri": uri}))
        return "iree-compile"
    if what == "dispatch_ir":
        asyncio.ensure_future(lsp.protocol.send_request_async("mlirLsp/dispatchIR", {"uri": uri}))
        return "iree-compile"
    asyncio.ensure_future(lsp.protocol.send_request_async(types.WORKSPACE_EXECUTE_COMMAND, types.ExecuteCommandParams(
        command="mlirLsp.showDispatchGraph", arguments=[{"uri": uri, "open": False}])))
    return "graph_viewer"


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="function")
@pytest.mark.parametrize("what", ["parser", "count", "dispatch_ir", "model_explorer"])
async def test_sigterm_during_background_work_leaves_no_process(tmp_path, what):
    parser_off = {"mlirLsp": {"parserDiagnostics": what == "parser"}}
    async with lsp_server(tmp_path, options=parser_off) as lsp:
        server = lsp._server
        marker = await _start(lsp, tmp_path, what)
        busy = await wait_until(lambda: [p for p, cmd in _descendants(server.pid).items()
                                         if marker in cmd and "--version" not in cmd],
                                timeout=120)
        assert busy, f"no {marker} process started: {[m.message for m in lsp.shown]}"
        tree = _descendants(server.pid)  # what the server has running at the signal
        os.kill(server.pid, signal.SIGTERM)
        code = await asyncio.wait_for(server.wait(), EXIT_SECONDS)
        assert code in (128 + signal.SIGTERM, -signal.SIGTERM)
        with contextlib.suppress(Exception):
            await lsp.stop()

    def left() -> dict[int, str]:
        return {p: cmd for p, _ppid, cmd in processes() if tree.get(p) == cmd}

    await wait_until(lambda: not left(), timeout=2)  # a killed process is gone at once; a compile runs on
    assert not left(), f"outlived the server: {left()}"


def test_stopping_takes_no_lock_its_own_thread_may_hold():
    """The SIGTERM handler runs on the loop's thread, between two bytecodes of whatever it was
    doing: that thread may hold the parser's lock (a didChange scheduling a parse). Stopping
    from there must not wait for it (with a non-reentrant lock it waited forever)."""
    import threading

    from mlir_lsp_asserts.server.app import MlirLspServer
    from mlir_lsp_asserts.server.lifecycle import stop_background

    ls = MlirLspServer()
    ls.parser_diagnostics.schedule(ls, "file:///edited.mlir")  # a parse pending, as after an edit
    done = threading.Event()

    def interrupted_while_holding_locks() -> None:
        with ls.parser_diagnostics.lock, ls.dispatch.lock:
            stop_background(ls)
        done.set()

    threading.Thread(target=interrupted_while_holding_locks, daemon=True).start()
    assert done.wait(60), "stopping waited for a lock its own thread holds"


@pytest.mark.slow
def test_a_stop_does_not_wait_for_model_explorer_to_start(tmp_path):
    """`GraphViewerState.show` starts Model Explorer (seconds, up to 90 s): a stop meanwhile
    (shutdown, SIGTERM) returns without waiting for it, and the viewer started is stopped."""
    import threading

    from mlir_lsp_asserts.graph_viewer import ViewerUnavailable
    from mlir_lsp_asserts.server.dispatch_graph_state import GraphViewerState

    state = GraphViewerState()
    graph = tmp_path / "graph.json"
    graph.write_text("[]")
    outcome: list[object] = []

    def show() -> None:
        try:
            outcome.append(state.show(graph, None, None))
        except ViewerUnavailable as e:
            outcome.append(e)

    shower = threading.Thread(target=show, daemon=True)
    shower.start()
    me = os.getpid()
    starting = [p for p, ppid, cmd in processes() if ppid == me and "graph_viewer" in cmd]
    for _ in range(1200):  # the viewer's process appears
        if starting:
            break
        shower.join(0.05)
        starting = [p for p, ppid, cmd in processes() if ppid == me and "graph_viewer" in cmd]
    assert starting, "Model Explorer did not start"
    state.stop()
    assert shower.is_alive(), "the stop waited for Model Explorer's start"
    shower.join(120)
    assert isinstance(outcome[0], ViewerUnavailable) and "shutting down" in str(outcome[0])
    assert not [p for p, _ppid, _cmd in processes() if p in starting]

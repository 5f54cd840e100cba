"""`mlirLsp.showDispatchGraph` over real stdio: the real iree-compile, the real Model Explorer
server (its page fetched over HTTP), the client asked to open it (`window/showDocument`), one
viewer per server, and no Model Explorer left once the server is gone."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import urllib.request
from pathlib import Path

import pytest
from lsprotocol import types

from tests.reliability_lsp import REPRO, lsp_server, open_and_wait, processes, wait_until

COMMAND = "mlirLsp.showDispatchGraph"
ASSERT_DISPATCH = "_initializer_1_dispatch_0"  # the repro's gather with the asserts (lines 29, 31)
INSTALL_HINT = "pip install 'mlir-lsp[graph]'"


def _viewers(server_pid: int) -> list[int]:
    """Live Model Explorer processes started by the server (its descendants)."""
    procs = processes()
    tree, found = {server_pid}, []
    for _ in range(4):  # the viewer may run under a launcher
        tree |= {pid for pid, ppid, _cmd in procs if ppid in tree}
    for pid, _ppid, cmd in procs:
        if pid in tree and pid != server_pid and ("model_explorer" in cmd or "model-explorer" in cmd):
            found.append(pid)
    return found


def _alive(pid: int) -> bool:
    return any(p == pid for p, _ppid, _cmd in processes())


async def _show(lsp, arguments: list) -> dict:
    return await asyncio.wait_for(lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command=COMMAND, arguments=arguments)), 300)


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="function")
async def test_show_dispatch_graph_serves_model_explorer_and_leaves_no_viewer(tmp_path):
    path = tmp_path / REPRO.name
    shutil.copyfile(REPRO, path)
    uri = path.as_uri()
    async with lsp_server(tmp_path) as lsp:
        shown = lsp.shown_documents  # window/showDocument, recorded (and answered) by pytest-lsp
        commands = lsp.initialize_result.capabilities.execute_command_provider.commands  # advertised
        assert COMMAND in commands, commands
        await open_and_wait(lsp, uri, path.read_text())
        count = await lsp.protocol.send_request_async("mlirLsp/dispatchCount", {"uri": uri})
        assert count.flow_dispatches == 4
        lenses = await lsp.text_document_code_lens_async(types.CodeLensParams(types.TextDocumentIdentifier(uri)))
        graph_lens = [lens for lens in lenses if lens.command.command == COMMAND]
        assert [(lens.range.start.line, lens.command.title) for lens in graph_lens] == [(0, "show dispatch graph")]

        # Line 29 (0-based 28) holds the first cf.assert of the hoisted gather: its dispatch is selected.
        got = await _show(lsp, [{"uri": uri, "line": 28}])
        assert "error" not in got, got
        assert got["dispatches"] == 4 and got["selected"] == ASSERT_DISPATCH
        assert any(ASSERT_DISPATCH in ids for ids in got["marked"].values()), got["marked"]
        with urllib.request.urlopen(got["url"], timeout=30) as page:
            assert page.status == 200
            assert "Model Explorer" in page.read().decode("utf-8", "replace")
        # The client was asked to open it in the browser.
        await wait_until(lambda: shown)
        assert [(s.uri, s.external) for s in shown] == [(got["url"], True)]

        server_pid = lsp._server.pid
        (viewer,) = _viewers(server_pid)
        # Asked again (the code lens's argument: no line): the compile is cached, the graph's own
        # first choice is selected (the dispatch that exists only because of asserts), the same
        # viewer answers; another document's graph too.
        again = await _show(lsp, [{"uri": uri, "open": False}])
        assert again["dispatches"] == 4 and again["selected"] == ASSERT_DISPATCH and again["url"] == got["url"]
        assert again["lines"][ASSERT_DISPATCH] == 23  # its root op: the linalg.generic at line 24
        other = tmp_path / "other.mlir"
        shutil.copyfile(REPRO, other)
        await open_and_wait(lsp, other.as_uri(), other.read_text())
        third = await _show(lsp, [{"uri": other.as_uri(), "open": False}])
        assert third["url"] != got["url"] and Path(third["graph"]).parent == Path(got["graph"]).parent
        with urllib.request.urlopen(third["url"], timeout=30) as page:
            assert page.status == 200
        assert _viewers(server_pid) == [viewer] and len(shown) == 1
        graph_dir = Path(got["graph"]).parent
        assert Path(got["graph"]).is_file()

        await asyncio.wait_for(lsp.shutdown_session(), 60)
    await wait_until(lambda: not _alive(viewer), timeout=30)
    assert not _alive(viewer), f"Model Explorer (pid {viewer}) outlived the server"
    assert not graph_dir.exists()


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="function")
async def test_show_dispatch_graph_errors_are_messages(tmp_path):
    """Without Model Explorer installed (its import blocked), and for a document that is not
    open: an error message with the install hint (or the reason), and the answer's error; no
    traceback, no viewer."""
    path = tmp_path / REPRO.name
    shutil.copyfile(REPRO, path)
    uri = path.as_uri()
    blocked = [sys.executable, "-c", "import runpy, sys; sys.modules['model_explorer'] = None; "
               "sys.argv = ['mlir-lsp', '--stdio']; runpy.run_module('mlir_lsp_asserts', run_name='__main__')"]
    async with lsp_server(tmp_path, command=blocked) as lsp:
        await open_and_wait(lsp, uri, path.read_text())
        got = await _show(lsp, [{"uri": uri}])
        assert INSTALL_HINT in got["error"], got
        missing = await _show(lsp, [{"uri": (tmp_path / "nope.mlir").as_uri()}])
        assert "document not open" in missing["error"]

        def errors() -> list[str]:
            return [m.message for m in lsp.shown if m.type == types.MessageType.Error]

        await wait_until(lambda: len(errors()) >= 2)
        assert INSTALL_HINT in errors()[0] and "document not open" in errors()[1], errors()
        assert "Traceback" not in " ".join(m.message for m in lsp.shown)
        assert _viewers(lsp._server.pid) == []


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="function")
async def test_a_server_ended_by_sigterm_leaves_no_viewer(tmp_path):
    """An editor that ends the server's process group (code-server stopped) signals the server,
    not the viewer (it runs in a session of its own): the server stops it before it exits."""
    path = tmp_path / REPRO.name
    shutil.copyfile(REPRO, path)
    uri = path.as_uri()
    async with lsp_server(tmp_path) as lsp:
        await open_and_wait(lsp, uri, path.read_text())
        got = await _show(lsp, [{"uri": uri, "open": False}])
        assert "error" not in got, got
        server = lsp._server
        (viewer,) = _viewers(server.pid)
        os.kill(server.pid, signal.SIGTERM)
        assert await asyncio.wait_for(server.wait(), 60) == 128 + signal.SIGTERM
    await wait_until(lambda: not _alive(viewer), timeout=30)
    assert not _alive(viewer), f"Model Explorer (pid {viewer}) outlived the server"

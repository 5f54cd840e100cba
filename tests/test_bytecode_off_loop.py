"""Issue 29, defect 4: `mlirLsp/bytecodeToText` (sent by the VS Code extension for every
`.mlirbc` tab) runs MLIR in a child process, off the server's event loop: other requests are
answered while a large file converts, and a conversion that crashes is an error answer, not
the end of the server."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
from lsprotocol import types

from tests.reliability_lsp import REPRO, lsp_server, open_and_wait, processes, wait_until


@pytest.fixture
def big_bytecode(tmp_path):
    """20,000 functions as MLIR bytecode: seconds of conversion."""
    from iree.compiler import ir

    one = ("func.func @f{n}(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {{\n"
           "  %0 = arith.addf %a, %b : tensor<4xf32>\n  %1 = arith.mulf %0, %b : tensor<4xf32>\n"
           "  return %1 : tensor<4xf32>\n}}\n")
    module = ir.Module.parse("".join(one.format(n=i) for i in range(20_000)), ir.Context())
    path = tmp_path / "big.mlirbc"
    with open(path, "wb") as f:
        module.operation.write_bytecode(f)
    return path


def _converters(server_pid: int) -> list[int]:
    return [p for p, ppid, cmd in processes() if ppid == server_pid and "text_child_main" in cmd]


async def _symbols(lsp, uri: str) -> list:
    return await asyncio.wait_for(lsp.text_document_document_symbol_async(
        types.DocumentSymbolParams(types.TextDocumentIdentifier(uri))), 60)


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="function")
async def test_requests_are_answered_while_bytecode_converts_and_a_crash_is_an_answer(tmp_path, big_bytecode):
    path = tmp_path / REPRO.name
    path.write_text(REPRO.read_text())
    uri = path.as_uri()
    async with lsp_server(tmp_path, folders=[tmp_path]) as lsp:
        await open_and_wait(lsp, uri, path.read_text())
        server = lsp._server

        # a conversion, and meanwhile the outline of another document
        first = asyncio.ensure_future(lsp.protocol.send_request_async(
            "mlirLsp/bytecodeToText", {"uri": big_bytecode.as_uri()}))
        (child,) = await wait_until(lambda: _converters(server.pid), timeout=60) or [None]
        assert child is not None, "the conversion does not run in a child process"
        assert await _symbols(lsp, uri)
        assert _converters(server.pid) == [child], "answered only once the conversion was done"
        done = await asyncio.wait_for(first, 120)
        assert "func.func @f19999" in done.text and done.isBytecode

        # a conversion whose MLIR crashes: an error answer, and the server still serves
        crashing = asyncio.ensure_future(lsp.protocol.send_request_async(
            "mlirLsp/bytecodeToText", {"uri": big_bytecode.as_uri()}))
        (child,) = await wait_until(lambda: _converters(server.pid), timeout=60) or [None]
        assert child is not None
        os.kill(child, signal.SIGSEGV)
        answer = await asyncio.wait_for(crashing, 60)
        assert "crashed (SIGSEGV)" in answer.error, answer
        assert await _symbols(lsp, uri)
        assert server.returncode is None

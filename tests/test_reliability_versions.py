"""Issue 40, defects 4 and 5: the background work of one version of a document, over real stdio.

4. A save that changes nothing keeps the count that is running for that text (it used to kill
   both compiles, start them again, and the save's count, joining the killed one, got nothing:
   `mlirLsp/dispatchCounted` never came).
5. The real parser's child of a version is killed when the next version comes: no child outlives
   its version beside the next one (a child started before it was registered escaped the edit's
   kill, and a later registration overwrote it without a kill).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from lsprotocol import types

from reliability_lsp import REPRO, lsp_server, processes, wait_until

REAL = str(Path(sys.executable).with_name("iree-compile"))
COUNTED = "mlirLsp/dispatchCounted"


def slow_compiler(tmp: Path, log: Path) -> Path:
    """The real compiler behind a wrapper (outside the workspace, named iree-compile-*, as the
    compilerPath policy allows) that waits 2 s before each compile and logs its start and end: a
    compile killed by the server never logs `done`."""
    path = tmp / "iree-compile-logged"
    path.write_text(f'#!/bin/sh\ncase "$*" in *--version*|*--help*) exec "{REAL}" "$@";; esac\n'
                    f'echo "start $$" >> "{log}"\nsleep 2\n"{REAL}" "$@"\ncode=$?\necho "done $$" >> "{log}"\n'
                    'exit $code\n')
    path.chmod(0o755)
    return path


async def counted(lsp, uri: str):
    while True:  # bounded by the caller's wait_for
        p = await lsp.wait_for_notification(COUNTED)
        if p.uri == uri:
            return p


@pytest.mark.asyncio(loop_scope="function")
async def test_a_save_without_a_change_keeps_the_running_count(tmp_path):
    log = tmp_path / "compiles.log"
    log.touch()
    (tmp_path / "bin").mkdir()
    compiler = slow_compiler(tmp_path / "bin", log)
    model = tmp_path / "work" / "model.mlir"
    model.parent.mkdir()
    model.write_text(REPRO.read_text())
    uri = model.as_uri()
    options = {"mlirLsp": {"dispatch": {"trigger": "save", "compilerPath": str(compiler)},
                           "parserDiagnostics": False}}
    async with lsp_server(tmp_path, options=options, folders=[model.parent]) as lsp:
        announced = asyncio.ensure_future(counted(lsp, uri))
        lsp.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="mlir", version=1, text=model.read_text())))
        started = await wait_until(lambda: log.read_text().split(), timeout=60)
        assert started, "the open's count never started a compile"
        first = log.read_text().split()[1]
        lsp.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
        got = await asyncio.wait_for(announced, 120)
        assert got.version == 1 and got.flow_dispatches == 4, got
        assert f"done {first}" in log.read_text(), f"the compile running at the save was killed: {log.read_text()}"


def parser_children(server_pid: int) -> list[int]:
    return [p for p, ppid, cmd in processes() if ppid == server_pid and "server.parser_feature" in cmd]


def big_text() -> str:
    """3.5 MB of IR that the real parser takes a second or more over."""
    one = ("func.func @f{n}(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {{\n"
           "  %0 = arith.addf %a, %b : tensor<4xf32>\n  %1 = arith.mulf %0, %b : tensor<4xf32>\n"
           "  return %1 : tensor<4xf32>\n}}\n")
    return "".join(one.format(n=i) for i in range(18_000))


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="function")
async def test_no_parser_child_outlives_its_version(tmp_path):
    """40 edits, most 0.45-0.55 s apart (around the parser's half-second debounce, where a child
    starts as the next edit comes), every fourth 0.8 s after the last (a child that runs a while):
    the process table, read every 20 ms, never holds two parser children of the server at once."""
    uri = (tmp_path / "big.mlir").as_uri()
    text = big_text()
    lines = text.count("\n")
    options = {"mlirLsp": {"dispatch": {"trigger": "manual"}, "parserDiagnostics": True}}
    async with lsp_server(tmp_path, options=options) as lsp:
        pid = lsp._server.pid
        lsp.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="mlir", version=1, text=text)))
        assert await wait_until(lambda: parser_children(pid), timeout=60), "no parser child started"
        seen: set[int] = set()
        overlaps: list[list[int]] = []
        for version in range(2, 42):
            at = types.Position(lines + version - 2, 0)
            lsp.text_document_did_change(types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [types.TextDocumentContentChangePartial(range=types.Range(at, at), text=f"// edit {version}\n")]))
            loop = asyncio.get_running_loop()
            pause = 0.8 if version % 4 == 0 else 0.45 + 0.1 * ((version * 7) % 11) / 10
            end = loop.time() + pause
            while loop.time() < end:
                now = parser_children(pid)
                seen.update(now)
                if len(now) > 1:
                    overlaps.append(now)
                await asyncio.sleep(0.02)
        assert len(seen) >= 5, f"only {len(seen)} parser children were seen: the edits did not reach the parser"
        assert not overlaps, f"{len(overlaps)} reads of the process table held two parser children: {overlaps[:5]}"

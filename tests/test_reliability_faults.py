"""Faults of the compiler, seen from the real server (stdio): iree-compile missing, exiting
non-zero, killed by a signal, hanging past the timeout, printing megabytes. Each gives one clear
message (the request's error, one window/showMessage), leaves no compiler process behind (the
process table, /proc), and the server still answers.

The real iree-compile makes the faults wherever it can: a document it rejects (exit 1), a real
compile of the SDXL prompt encoder killed by the test with SIGSEGV or SIGKILL, the same compile
with a 1 s timeout, `--mlir-print-ir-before-all --mlir-print-ir-after-all` for megabytes of
output. Two faults need a wrapper (a small shell script named iree-compile-*, outside the
workspace, which the compilerPath policy allows): a configured compiler that disappears, and a
run of the real compiler followed by an exit status of its own (3).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import stat
import sys
from pathlib import Path

import pytest
from lsprotocol import types

from reliability_lsp import ENCODER, REPRO, compiler_processes, lsp_server, open_and_wait, still_answers, wait_until

REAL = str(Path(sys.executable).with_name("iree-compile"))
BROKEN = "func.func @f() {\n  %0 = arith.constant 1 : i32\n  return %0 : i32\n}\n"


def wrapper(path: Path, body: str) -> Path:
    """A wrapper around the real compiler (only where the real one cannot show the fault)."""
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


async def configure(lsp, **dispatch) -> None:
    lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"mlirLsp": {"dispatch": {"trigger": "manual", **dispatch}}}))
    await asyncio.sleep(0.2)


async def count(lsp, uri: str, timeout: float = 120):
    return await asyncio.wait_for(lsp.protocol.send_request_async("mlirLsp/dispatchCount", {"uri": uri}), timeout)


async def lens_titles(lsp, uri: str) -> list[str]:
    lenses = await lsp.text_document_code_lens_async(types.CodeLensParams(types.TextDocumentIdentifier(uri)))
    return [lens.command.title for lens in lenses if lens.command]


def errors_shown(lsp, since: int) -> list[str]:
    return [m.message for m in lsp.shown[since:] if m.type == types.MessageType.Error]


async def one_error_shown(lsp, since: int, expect: int = 0) -> list[str]:
    """The error messages shown since `since`: the request answers its failure in its result and
    shows no message box (expect=0); the command shows exactly one (expect=1). Never more."""
    if expect:
        await wait_until(lambda: errors_shown(lsp, since), timeout=5)
    await asyncio.sleep(0.3)  # a duplicate would arrive by now
    shown = errors_shown(lsp, since)
    assert len(shown) == expect, shown
    return shown


def no_orphans(marker: str) -> None:
    left = compiler_processes(marker)
    assert not left, f"compiler processes left behind: {left}"


async def wait_for_the_real_compiler(marker: str):
    """The compile's processes (pid, parent, cmdline), once the real binary runs."""
    def found():
        ps = compiler_processes(marker)
        return ps if any("--compile-to" in p[2] for p in ps) and len(ps) >= 1 else None
    return await wait_until(found, timeout=30)


async def opened(lsp, tmp_path, *names):
    docs = {"repro": REPRO.read_text(), "broken": BROKEN, "encoder": ENCODER.read_text()}
    paths = []
    for name in names:
        p = tmp_path / f"{name}.mlir"
        p.write_text(docs[name])
        await open_and_wait(lsp, p.as_uri(), docs[name])
        paths.append(p)
    return paths


@pytest.mark.asyncio(loop_scope="function")
async def test_exit_status_megabytes_and_a_missing_compiler(tmp_path):
    marker = str(tmp_path)
    async with lsp_server(tmp_path, options={"mlirLsp": {"dispatch": {"trigger": "manual"}}}) as lsp:
        repro, broken = await opened(lsp, tmp_path, "repro", "broken")

        # exit 1: the real compiler rejects the document
        n = len(lsp.shown)
        res = await count(lsp, broken.as_uri())
        assert "iree-compile failed (exit 1) at line 3" in res.error, res
        await one_error_shown(lsp, n)
        # the command (code lens, palette) says it in one message box
        n = len(lsp.shown)
        await asyncio.wait_for(lsp.workspace_execute_command_async(types.ExecuteCommandParams(
            command="mlirLsp.dispatchCount", arguments=[broken.as_uri()])), 120)
        (shown,) = await one_error_shown(lsp, n, expect=1)
        assert "exit 1" in shown
        no_orphans(marker)
        await still_answers(lsp, repro.as_uri())

        # megabytes on stderr (real flags, ~2 MB): drained and capped, the count stands
        await configure(lsp, flags="--mlir-print-ir-before-all --mlir-print-ir-after-all --mlir-print-debuginfo")
        res = await count(lsp, repro.as_uri())
        assert getattr(res, "flow_dispatches", None) == 4, res
        await configure(lsp, flags="")
        no_orphans(marker)

        # a non-zero exit of its own after a real run (wrapper: the real compiler cannot do this)
        three = wrapper(tmp_path / "iree-compile-exit3", f'"{REAL}" "$@"\nexit 3\n')
        await configure(lsp, compilerPath=str(three))
        n = len(lsp.shown)
        res = await count(lsp, broken.as_uri())
        assert "exit 3" in res.error, res
        await one_error_shown(lsp, n)
        no_orphans(marker)

        # missing: the configured compiler is deleted (wrapper, as above)
        gone = wrapper(tmp_path / "iree-compile-gone", f'exec "{REAL}" "$@"\n')
        await configure(lsp, compilerPath=str(gone))
        gone.unlink()
        n = len(lsp.shown)
        res = await count(lsp, repro.as_uri())
        assert "not found" in res.error or "cannot run" in res.error, res
        await one_error_shown(lsp, n)
        await still_answers(lsp, repro.as_uri())
    no_orphans(marker)


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="function")
async def test_timeout_and_signals_during_a_real_compile(tmp_path):
    marker = str(tmp_path)
    async with lsp_server(tmp_path, options={"mlirLsp": {"dispatch": {"trigger": "manual"}}}) as lsp:
        repro, encoder = await opened(lsp, tmp_path, "repro", "encoder")

        # hanging past the timeout: the real compile of the encoder takes several seconds
        await configure(lsp, timeout=1)
        n = len(lsp.shown)
        res = await count(lsp, encoder.as_uri())
        assert "longer than the 1 s timeout" in res.error, res
        await one_error_shown(lsp, n)
        await asyncio.sleep(0.3)
        no_orphans(marker)
        await still_answers(lsp, repro.as_uri())

        # killed by a signal from outside, in the middle of a real compile
        await configure(lsp, timeout=300)
        for sig in (signal.SIGSEGV, signal.SIGKILL):
            n = len(lsp.shown)
            pending = asyncio.ensure_future(count(lsp, encoder.as_uri()))
            assert await wait_for_the_real_compiler(marker), "the compile did not start"
            while not pending.done():  # every compile the request starts (a retry too) is killed
                procs = compiler_processes(marker)
                pids = {p[0] for p in procs}
                for pid, ppid, _cmd in procs:
                    if ppid not in pids:  # the process the server started, not its child
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, sig)
                await asyncio.sleep(0.05)
            res = await pending
            # LLVM's crash handler catches SIGSEGV, prints a stack and may die of another signal
            # (SIGABRT seen): the message names the signal it died of
            want = f"({sig.name})" if sig == signal.SIGKILL else "(SIG"
            assert "iree-compile" in res.error and want in res.error, res
            await one_error_shown(lsp, n)
            no_orphans(marker)  # its child (the real binary under the venv's launcher) went too
            await still_answers(lsp, repro.as_uri())
    no_orphans(marker)


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="function")
async def test_closing_the_document_or_stopping_the_server_kills_its_compile(tmp_path):
    marker = str(tmp_path)
    encoder = tmp_path / "encoder.mlir"
    encoder.write_text(ENCODER.read_text())
    async with lsp_server(tmp_path, options={"mlirLsp": {"dispatch": {"trigger": "manual"}}}) as lsp:
        await open_and_wait(lsp, encoder.as_uri(), encoder.read_text())
        pending = asyncio.ensure_future(count(lsp, encoder.as_uri()))
        assert await wait_for_the_real_compiler(marker)
        lsp.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(encoder.as_uri())))
        res = await pending
        assert "cancelled" in res.error
        assert await wait_until(lambda: not compiler_processes(marker), timeout=5) is not False
        no_orphans(marker)
        await open_and_wait(lsp, encoder.as_uri(), encoder.read_text(), version=2)
        asyncio.ensure_future(count(lsp, encoder.as_uri()))
        assert await wait_for_the_real_compiler(marker)
    # the server was shut down mid-compile: the compile went with it
    await wait_until(lambda: not compiler_processes(marker), timeout=10)
    no_orphans(marker)


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="function")
async def test_a_document_reopened_at_the_same_version_never_gets_the_closed_texts_count(tmp_path):
    """Closed while its compile's output is being read (the compiler has exited, the attribution
    of 1,660 dispatches is under way, nothing left to kill), then reopened at the same version
    with another text: the reopened text gets its own count and lens, never the closed one's
    (which used to be shared as a count "of version 1" in flight, and kept after the close)."""
    marker = str(tmp_path)
    model = tmp_path / "model.mlir"
    uri = model.as_uri()
    async with lsp_server(tmp_path, options={"mlirLsp": {"dispatch": {"trigger": "manual"}}}) as lsp:
        await open_and_wait(lsp, uri, ENCODER.read_text())
        first = asyncio.ensure_future(count(lsp, uri, timeout=600))
        assert await wait_for_the_real_compiler(marker)
        assert await wait_until(lambda: not compiler_processes(marker), timeout=600) is not False
        assert not first.done(), "the encoder's count ended before its output was read: no race to test"
        lsp.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
        await open_and_wait(lsp, uri, REPRO.read_text(), version=1)
        second = await count(lsp, uri)
        assert getattr(second, "flow_dispatches", None) == 4, second  # the repro's own count
        closed = await first
        assert getattr(closed, "flow_dispatches", None) in (1660, None), closed  # its own, or cancelled
        titles = await lens_titles(lsp, uri)
        assert titles and titles[0].startswith("4 dispatches"), titles
        assert not any("1660" in t or "1,660" in t for t in titles), titles


@pytest.mark.asyncio(loop_scope="function")
async def test_an_edit_while_the_first_count_finds_its_compiler_stops_the_old_texts_compile(tmp_path):
    """The open's count has read its text and is still finding the compiler (a `--version` run:
    the wrapper makes it take 2 s) when an edit and a save come. The edit's cancel found no
    compile to kill yet; the old text (the prompt encoder, a minute of compiling) must still not
    be compiled, and the new text's count (the repro's 4) is the one the server keeps."""
    marker = str(tmp_path)
    asked = tmp_path / "version-asked"
    slow = wrapper(tmp_path / "iree-compile-slow-version",
                   f'case "$*" in *--version*) touch "{asked}"; sleep 2;; esac\nexec "{REAL}" "$@"\n')
    model = tmp_path / "model.mlir"
    model.write_text(ENCODER.read_text())
    uri = model.as_uri()
    options = {"mlirLsp": {"dispatch": {"trigger": "save", "compilerPath": str(slow)}}}
    async with lsp_server(tmp_path, options=options) as lsp:
        lsp.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="mlir", version=1, text=ENCODER.read_text())))
        assert await wait_until(asked.exists, timeout=30), "the open's count never asked the compiler's version"
        lsp.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [types.TextDocumentContentChangeWholeDocument(text=REPRO.read_text())]))
        lsp.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
        res = await count(lsp, uri)
        assert getattr(res, "flow_dispatches", None) == 4, res
        # the open's count woke from its `--version` before this answer: its compile, had it
        # started, would be running now (the encoder's takes a minute)
        started = await wait_until(lambda: compiler_processes(marker), timeout=3)
        assert not started, f"the old text is being compiled after the edit: {started}"
        titles = await lens_titles(lsp, uri)
        assert titles and titles[0].startswith("4 dispatches"), titles
    no_orphans(marker)

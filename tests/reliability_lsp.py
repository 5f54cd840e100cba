"""Helpers of the reliability tests: the real server over stdio with an environment and
settings of the test's own, and the process table (/proc) to look for orphans."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path

from lsprotocol import types
from pytest_lsp import client_capabilities, make_test_lsp_client

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
from conftest import SHARED  # noqa: E402

REPRO = SHARED / "fixtures" / "repro" / "hoisted_gather.mlir"
ENCODER = SHARED / "fixtures" / "models" / "sdxl_prompt_encoder.input.mlir"
SERVER = [sys.executable, "-m", "mlir_lsp_asserts", "--stdio"]


@contextlib.asynccontextmanager
async def lsp_server(tmp: Path, *, command=None, env=None, options=None, folders=(), client="visual-studio-code"):
    """A started and initialized server; XDG_CACHE_HOME and TMPDIR inside `tmp`."""
    full_env = dict(os.environ)
    full_env.pop("CI", None)
    (tmp / "cache").mkdir(exist_ok=True)
    (tmp / "tmp").mkdir(exist_ok=True)
    full_env.update(XDG_CACHE_HOME=str(tmp / "cache"), TMPDIR=str(tmp / "tmp"))
    full_env.update(env or {})
    lsp = make_test_lsp_client()
    if options:  # workspace/configuration pulls get the same settings as the options
        lsp.set_configuration(options.get("mlirLsp", options), section="mlirLsp")
    cmd = command or SERVER
    await lsp.start_io(cmd[0], *cmd[1:], env=full_env)
    wf = [types.WorkspaceFolder(uri=Path(f).as_uri(), name=Path(f).name) for f in folders]
    lsp.initialize_result = await lsp.initialize_session(types.InitializeParams(  # type: ignore[attr-defined]
        capabilities=client_capabilities(client), initialization_options=options,
        workspace_folders=wf or None, root_uri=wf[0].uri if wf else None))
    lsp.shown = lsp.messages  # type: ignore[attr-defined]  (window/showMessage, recorded by pytest-lsp)
    try:
        yield lsp
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(lsp.shutdown_session(), 20)
        with contextlib.suppress(Exception):
            await lsp.stop()


async def open_and_wait(lsp, uri: str, text: str, version: int = 1):
    lsp.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="mlir", version=version, text=text)))
    while True:
        p = await asyncio.wait_for(lsp.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 60)
        if p.uri == uri and p.version == version:
            return p.diagnostics


async def still_answers(lsp, uri: str) -> None:
    """The server answers a request after the fault (document symbols of an open document)."""
    syms = await asyncio.wait_for(lsp.text_document_document_symbol_async(
        types.DocumentSymbolParams(types.TextDocumentIdentifier(uri))), 30)
    assert syms, "the server answered nothing"


def processes() -> list[tuple[int, int, str]]:
    """(pid, parent pid, command line) of every process, from /proc."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            stat = Path(f"/proc/{d}/stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            state = stat.rsplit(")", 1)[1].split()[0]
        except (OSError, ValueError, IndexError):
            continue
        if state != "Z" and cmd:
            out.append((int(d), ppid, cmd))
    return out


def compiler_processes(marker: str | None = None) -> list[tuple[int, int, str]]:
    """Live iree-compile processes, optionally only those whose command line holds `marker`."""
    return [p for p in processes() if "iree-compile" in p[2] and "--version" not in p[2]
            and (marker is None or marker in p[2])]


async def wait_until(pred, timeout: float = 30.0, step: float = 0.05):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        v = pred()
        if v:
            return v
        await asyncio.sleep(step)
    return pred()


def forget_published(lsp, uri: str) -> None:
    """Drop what the client keeps of `uri`'s last publish, before an action that should publish."""
    lsp.diagnostics.pop(uri, None)


async def published_again(lsp, uri: str, timeout: float = 120):
    """The non-empty diagnostics published for `uri` since `forget_published`. pytest-lsp keeps
    the last publish per uri whether or not a test waits for it, while `wait_for_notification`
    misses one that comes before the next wait: the kept one is checked each second."""
    async with asyncio.timeout(timeout):
        while not lsp.diagnostics.get(uri):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(lsp.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 1)
    return lsp.diagnostics[uri]

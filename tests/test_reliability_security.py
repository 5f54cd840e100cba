"""Security: no shell, only the configured compiler, writes only where they belong, and no
request path outside the workspace (mlir_lsp_asserts/server/guards.py says the policy)."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from pathlib import Path

import pytest

from reliability_lsp import REPO, REPRO, TESTS, lsp_server, open_and_wait, still_answers

PACKAGE = REPO / "mlir_lsp_asserts"
SHELL_PATTERNS = [r"shell\s*=\s*True", r"\bos\.system\s*\(", r"\bos\.popen\s*\(", r"\bos\.exec\w*\s*\(",
                  r"\bos\.spawn\w*\s*\(", r"\bcommands\.getoutput", r"\bpty\.spawn", r"\bsubprocess\.getoutput",
                  r"\bsubprocess\.getstatusoutput", r"create_subprocess_shell", r"\beval\s*\(", r"\bexec\s*\("]
# The one exec in the package: records.py builds a record class's __init__ as dataclasses does,
# from a fixed template and the class's own field names, each checked to be a plain identifier
# (test_records.py: a name that is not one is refused). No text from outside reaches it.
EXEC_OF_OWN_TEMPLATE = ("mlir_lsp_asserts/records.py", "exec(source, namespace)")


def test_no_shell_in_the_package_source():
    hits = []
    for p in sorted(PACKAGE.rglob("*.py")):
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if (str(p.relative_to(REPO)), code.strip()) == EXEC_OF_OWN_TEMPLATE:
                continue
            for pat in SHELL_PATTERNS:
                if re.search(pat, code):
                    hits.append(f"{p.relative_to(REPO)}:{n}: {line.strip()}")
    assert not hits, "\n".join(hits)


def test_every_process_start_is_an_argument_list():
    # each Popen/run call in the package passes a list literal (or a name bound to one)
    found = set()
    for p in sorted(PACKAGE.rglob("*.py")):
        text = p.read_text(encoding="utf-8")
        for m in re.finditer(r"subprocess\.(?:Popen|run|call|check_call|check_output)\(\s*([^,)]+)", text):
            arg = m.group(1).strip()
            assert arg.startswith("[") or re.fullmatch(r"[\w.]+", arg), f"{p.name}: {m.group(0)}"
            found.add(p.name)
    # the search sees the package's process starts: the compiler's runs at least
    assert "compiler.py" in found, found


def _wrapper(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.mark.asyncio(loop_scope="function")
async def test_runtime_spawns_and_writes_of_the_server(tmp_path):
    """The real server under an audit hook (tests/audited_server.py): a dispatch count (real
    iree-compile), hover, code actions, tokens, a bytecode conversion; every process it starts is
    the compiler or its own Python, as a list; every file it writes is in its cache or temp folder."""
    from lsprotocol import types

    ws = tmp_path / "ws"
    ws.mkdir()
    doc = ws / "repro.mlir"
    doc.write_text(REPRO.read_text())
    log = tmp_path / "audit.jsonl"
    async with lsp_server(tmp_path, command=[sys.executable, str(TESTS / "audited_server.py")],
                          env={"MLIR_LSP_AUDIT_LOG": str(log)}, folders=[ws]) as lsp:
        uri = doc.as_uri()
        await open_and_wait(lsp, uri, doc.read_text())
        res = await lsp.protocol.send_request_async("mlirLsp/dispatchCount", {"uri": uri})
        assert res.flow_dispatches == 4
        await lsp.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(17, 6)))
        await lsp.text_document_code_action_async(types.CodeActionParams(
            types.TextDocumentIdentifier(uri), types.Range(types.Position(0, 0), types.Position(40, 0)),
            types.CodeActionContext(diagnostics=[])))
        await lsp.text_document_semantic_tokens_full_async(
            types.SemanticTokensParams(types.TextDocumentIdentifier(uri)))
        await lsp.protocol.send_request_async("mlirLsp/bytecodeToText", {"uri": uri})
        await still_answers(lsp, uri)
    events = [json.loads(ln) for ln in log.read_text().splitlines()]
    spawns = [e for e in events if e["kind"] == "spawn"]
    assert spawns, "the audit hook saw no process start (the compile must have run)"
    allowed = {os.path.realpath(sys.executable)}
    for e in spawns:
        assert e["event"] == "subprocess.Popen" and not e["shell_string"], e
        prog = os.path.realpath(e["executable"] or e["argv"][0])
        assert os.path.basename(prog).startswith("iree-compile") or prog in allowed, e
        assert os.path.basename(prog) not in ("sh", "bash", "dash", "zsh"), e
        if prog in allowed:  # its own Python runs only its own parser module
            assert "mlir_lsp_asserts" in " ".join(e["argv"]), e
    places = [str(tmp_path / "cache"), str(tmp_path / "tmp"), "/dev/null"]
    for e in events:
        paths = [e["path"]] if e["kind"] == "write" else e.get("paths", []) if e["kind"] == "fileop" else []
        if e.get("event") == "os.link" and re.fullmatch(r"/proc/\d+/fd/\d+", paths[0]):
            paths = paths[1:]  # an unnamed file (O_TMPFILE) of an atomic write gets its name: where counts
        for p in paths:
            real = os.path.realpath(p)
            assert any(real == q or real.startswith(q.rstrip("/") + "/") for q in places), e
    assert doc.read_text() == REPRO.read_text()  # the server never writes the user's files itself


@pytest.mark.asyncio(loop_scope="function")
async def test_workspace_settings_cannot_choose_the_program(tmp_path):
    ws = tmp_path / "ws"
    (ws / "bin").mkdir(parents=True)
    marker = tmp_path / "ran"
    evil = _wrapper(ws / "bin" / "iree-compile", f"touch {marker}\nexit 0\n")
    other = _wrapper(tmp_path / "not-a-compiler", f"touch {marker}\nexit 0\n")
    doc = ws / "repro.mlir"
    doc.write_text(REPRO.read_text())
    for setting in (str(evil), "./bin/iree-compile", str(other), "sh -c 'touch x'"):
        opts = {"mlirLsp": {"dispatch": {"compilerPath": setting}}}
        async with lsp_server(tmp_path, options=opts, folders=[ws]) as lsp:
            uri = doc.as_uri()
            await open_and_wait(lsp, uri, doc.read_text())
            res = await lsp.protocol.send_request_async("mlirLsp/dispatchCount", {"uri": uri})
            assert getattr(res, "flow_dispatches", None) == 4, (setting, res)  # counted by the real compiler
            warned = [m.message for m in lsp.shown if "compilerPath" in m.message]
            assert warned and "ignored" in warned[0], (setting, [m.message for m in lsp.shown])
            # the same refusal for the setting arriving later, via workspace/didChangeConfiguration
            from lsprotocol import types

            lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=opts))
            res = await lsp.protocol.send_request_async("mlirLsp/dispatchCount", {"uri": uri})
            assert getattr(res, "flow_dispatches", None) == 4, (setting, res)
        assert not marker.exists(), setting


def test_compiler_path_policy():
    from types import SimpleNamespace

    from mlir_lsp_asserts.server import guards

    real = str(Path(sys.executable).with_name("iree-compile"))
    ls = SimpleNamespace(workspace=SimpleNamespace(folders={}, root_path=None))
    assert guards.compiler_path_problem(ls, real) is None
    assert guards.compiler_path_problem(ls, None) is None
    assert "absolute" in guards.compiler_path_problem(ls, "iree-compile")
    assert "name an iree-compile" in guards.compiler_path_problem(ls, "/bin/sh")
    assert "no such file" in guards.compiler_path_problem(ls, "/nonexistent/iree-compile")
    assert "string" in guards.compiler_path_problem(ls, ["/bin/sh", "-c", "x"])


@pytest.mark.asyncio(loop_scope="function")
async def test_request_paths_outside_the_workspace_are_refused(tmp_path):
    ws, outside = tmp_path / "ws", tmp_path / "elsewhere"
    ws.mkdir()
    outside.mkdir()
    inside_doc, outside_doc = ws / "a.mlir", outside / "b.mlir"
    inside_doc.write_text(REPRO.read_text())
    outside_doc.write_text(REPRO.read_text())
    link = ws / "link.mlir"
    link.symlink_to(outside_doc)  # a symlink out of the workspace is outside too
    async with lsp_server(tmp_path, folders=[ws]) as lsp:
        for p in (outside_doc, link):
            await open_and_wait(lsp, p.as_uri(), p.read_text())
            for method in ("mlirLsp/dispatchCount", "mlirLsp/bytecodeToText", "mlirLsp/checkFromDisk",
                           "mlirLsp/fixOnDisk"):
                res = await lsp.protocol.send_request_async(method, {"uri": p.as_uri(), "mode": "strip"})
                assert "outside the workspace" in res.error and str(p) in res.error, (method, res)
        assert outside_doc.read_text() == REPRO.read_text()  # fixOnDisk wrote nothing there
        for uri in ("file:///etc/passwd", "file:///proc/self/environ", (ws / ".." / "elsewhere" / "b.mlir").as_uri()):
            res = await lsp.protocol.send_request_async("mlirLsp/bytecodeToText", {"uri": uri})
            assert "refused" in res.error, (uri, res)
        res = await lsp.protocol.send_request_async("mlirLsp/bytecodeToText", {"uri": inside_doc.as_uri()})
        assert "cf.assert" in res.text
        await open_and_wait(lsp, inside_doc.as_uri(), inside_doc.read_text())
        await still_answers(lsp, inside_doc.as_uri())

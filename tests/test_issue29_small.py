"""Smaller defects of issue 29 (defect 10), each as a user meets it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import CONCISE_LINE, REPRO
from reliability_lsp import lsp_server


def test_the_cli_module_runs_with_python_m():
    """`python -m mlir_lsp_asserts.cli.main --check` checks (it raised NameError: its
    `if __name__ == "__main__"` stood above a function it calls)."""
    proc = subprocess.run([sys.executable, "-m", "mlir_lsp_asserts.cli.main", "--check", "--output-format", "concise",
                           str(REPRO)], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1
    assert len([ln for ln in proc.stdout.splitlines() if CONCISE_LINE.match(ln)]) == 4


@pytest.mark.asyncio(loop_scope="function")
async def test_bytecode_to_text_takes_a_command_argument_list(tmp_path):
    """`mlirLsp/bytecodeToText` reads its URI as every other request does: `{uri}`, `[uri]` or
    `[{uri}]` (a `[uri]` raised)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    f = ws / "r.mlir"
    f.write_text(REPRO.read_text())
    async with lsp_server(tmp_path, folders=[ws], options={"mlirLsp": {"workspace": {"watch": False}}}) as lsp:
        for params in ({"uri": f.as_uri()}, [f.as_uri()], [{"uri": f.as_uri()}]):
            res = await lsp.protocol.send_request_async("mlirLsp/bytecodeToText", params)
            text = res["text"] if isinstance(res, dict) else res.text
            assert text == REPRO.read_text(), params


def test_a_signal_is_named_the_same_by_the_compiler_and_the_parser():
    """One helper names the signal that ended iree-compile or the parser's child: its name, or
    `signal N` for a number no signal has (the compiler said a bare `200`)."""
    import inspect

    from mlir_lsp_asserts.dispatch import compiler
    from mlir_lsp_asserts.processes import signal_name
    from mlir_lsp_asserts.server import parser_feature

    assert signal_name(11) == "SIGSEGV"
    assert signal_name(200) == "signal 200"
    for module in (compiler, parser_feature):
        assert "signal_name(-" in inspect.getsource(module), module.__name__

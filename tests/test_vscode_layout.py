"""The VS Code extension's own house (issue 36, item 4): its sources split by feature, no file
in vscode-client/src over 450 lines, and extension.ts only wiring (activate, register, start)."""

from __future__ import annotations

from conftest import REPO

SRC = REPO / "vscode-client" / "src"
MAX_LINES = 450


def test_no_extension_source_file_is_over_450_lines():
    sizes = {p.name: len(p.read_text().splitlines()) for p in sorted(SRC.glob("*.ts"))}
    assert "extension.ts" in sizes and len(sizes) > 10, sizes
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}, sizes


def test_extension_ts_only_wires():
    text = (SRC / "extension.ts").read_text()
    # No client options, lookup, status bar item or request of its own: those live in their files.
    for feature in ("new LanguageClient", "createStatusBarItem", "sendRequest", "resolveServer", "execFile"):
        assert feature not in text, feature
    assert "export async function activate" in text

"""A config file that changes while the server runs (`mlir-lsp.toml`, `pyproject.toml`
`[tool.mlir-lsp]`): open documents take the new settings without a reopen, and files on disk
under it are checked again; seen by the server's own watcher, or by the client's
(`workspace/didChangeWatchedFiles`, which the server registers with clients that can)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from lsprotocol import types

from reliability_lsp import lsp_server, open_and_wait
from test_settings_open_closed import TEXT, codes, scanned

ALL = ["MLA001"] * 4 + ["MLA003"]


async def published(lsp, want: dict[str, list[str]]) -> dict[str, list[str]]:
    """Wait (30 s at most) until the last diagnostics published for each uri have the codes in
    `want`; returns what was last published for them (pytest-lsp keeps the last per uri)."""
    def now():
        return {uri: codes(lsp.diagnostics.get(uri, [])) for uri in want}

    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(30):
            while now() != want:
                await lsp.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return now()


def workspace_with(tmp_path, *names: str):
    """A workspace folder holding the repro (with one host-side assert) under each name."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in names:
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(TEXT)
    return ws, [ws / name for name in names]


@pytest.mark.asyncio(loop_scope="function")
async def test_a_config_file_written_in_the_workspace_applies_to_open_and_closed_files(tmp_path):
    ws, (opened, closed) = workspace_with(tmp_path, "open.mlir", "closed.mlir")
    async with lsp_server(tmp_path, folders=[ws]) as lsp:
        assert codes(await scanned(lsp, closed.as_uri())) == ALL
        assert codes(await open_and_wait(lsp, opened.as_uri(), TEXT)) == ALL
        # the client (VS Code's capabilities) is asked to watch the config files too
        watched = [w["globPattern"] for r in getattr(lsp, "registrations", [])
                   if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES for w in r.register_options["watchers"]]
        assert sorted(watched) == ["**/mlir-lsp.toml", "**/pyproject.toml"]
        # this client watches nothing: the server's own watcher sees the new file
        (ws / "pyproject.toml").write_text('[project]\nname = "m"\n\n[tool.mlir-lsp]\nignore = ["MLA003"]\n')
        want = {opened.as_uri(): ["MLA001"] * 4, closed.as_uri(): ["MLA001"] * 4}
        assert await published(lsp, want) == want
        # and its removal brings the finding back to both, with no reopen
        (ws / "pyproject.toml").unlink()
        want = {opened.as_uri(): ALL, closed.as_uri(): ALL}
        assert await published(lsp, want) == want


@pytest.mark.asyncio(loop_scope="function")
async def test_the_clients_watcher_report_applies_a_config_file_when_the_servers_watch_is_off(tmp_path):
    ws, (f,) = workspace_with(tmp_path, "a.mlir")
    options = {"mlirLsp": {"workspace": {"watch": False}}}
    async with lsp_server(tmp_path, folders=[ws], options=options) as lsp:
        assert codes(await open_and_wait(lsp, f.as_uri(), TEXT)) == ALL
        config = ws / "mlir-lsp.toml"
        config.write_text('ignore = ["MLA003"]\n')
        lsp.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
            [types.FileEvent(uri=config.as_uri(), type=types.FileChangeType.Created)]))
        want = {f.as_uri(): ["MLA001"] * 4}
        assert await published(lsp, want) == want


@pytest.mark.asyncio(loop_scope="function")
async def test_a_pyproject_that_gains_a_tool_table_becomes_the_config(tmp_path):
    """A pyproject.toml without `[tool.mlir-lsp]` is no config file; once the table is added, it is."""
    ws, (f,) = workspace_with(tmp_path, "a.mlir")
    py = ws / "pyproject.toml"
    py.write_text('[project]\nname = "m"\n')
    async with lsp_server(tmp_path, folders=[ws]) as lsp:
        assert codes(await scanned(lsp, f.as_uri())) == ALL  # the watcher is on
        assert codes(await open_and_wait(lsp, f.as_uri(), TEXT)) == ALL
        py.write_text('[project]\nname = "m"\n\n[tool.mlir-lsp]\nignore = ["MLA003"]\n')
        want = {f.as_uri(): ["MLA001"] * 4}
        assert await published(lsp, want) == want


@pytest.mark.asyncio(loop_scope="function")
async def test_the_scan_leaves_out_what_the_config_excludes_as_ci_does(tmp_path):
    """`exclude = ["third_party/*"]` keeps CI's `mlir-lsp --check .` out of a folder; the server's
    scan read and checked it anyway (up to 5000 files of 512 MB). Now it leaves the same files
    out, checks them when the pattern goes, and clears them when it comes back."""
    ws, (first, vendored, last) = workspace_with(tmp_path, "a.mlir", "third_party/b.mlir", "zz/z.mlir")
    config = ws / "mlir-lsp.toml"
    config.write_text('exclude = ["third_party/*"]\n')
    async with lsp_server(tmp_path, folders=[ws]) as lsp:
        assert codes(await scanned(lsp, last.as_uri())) == ALL  # the walk goes folder by folder, sorted: b before zz/z
        assert codes(lsp.diagnostics.get(first.as_uri(), [])) == ALL
        assert vendored.as_uri() not in lsp.diagnostics  # left out, as CI leaves it out
        config.write_text("exclude = []\n")
        want = {vendored.as_uri(): ALL}
        assert await published(lsp, want) == want
        config.write_text('exclude = ["third_party/*"]\n')
        want = {vendored.as_uri(): [], first.as_uri(): ALL}
        assert await published(lsp, want) == want

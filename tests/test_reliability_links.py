"""A cloned repository's symlinks and special files (issue 40, defect 7): the server's workspace
scan and the CLI's folder walk skip a link that leaves the folder and every file that is not a
regular one (a link to /dev/zero, a fifo), and never read without a bound; a file named on the
command line may be a link (followed, as ruff does), and a device named there is one clear line.
Each with the real server over stdio or the real CLI."""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types

from conftest import REPRO, CliResult
from reliability_lsp import lsp_server, processes, published_again

# Old code read /dev/zero to its end: the CLI runs under this address-space cap so that a
# failing run ends in a MemoryError instead of taking the machine's memory.
CLI_MEMORY_CAP = 3 << 30
SCAN_RSS_LIMIT_KB = 200 * 1024


def clone_with_links(tmp_path: Path) -> tuple[Path, Path]:
    """A folder `ws` as a cloned repository may hold it: a real file, a link to /dev/zero, a link
    to a `.mlir` outside it, a link inside it, a fifo; and that outside file."""
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    ws.mkdir()
    elsewhere.mkdir()
    shutil.copyfile(REPRO, ws / "a.mlir")
    outside = elsewhere / "secret.mlir"
    shutil.copyfile(REPRO, outside)
    (ws / "zero.mlir").symlink_to("/dev/zero")
    (ws / "out.mlir").symlink_to(outside)
    (ws / "sub").mkdir()
    (ws / "sub" / "same.mlir").symlink_to("../a.mlir")  # stays inside: checked
    os.mkfifo(ws / "zz_fifo.mlir")
    return ws, outside


def _capped():
    resource.setrlimit(resource.RLIMIT_AS, (CLI_MEMORY_CAP, CLI_MEMORY_CAP))


def cli(*args, timeout: float = 60) -> CliResult:
    env = dict(os.environ)
    env.pop("CI", None)
    proc = subprocess.run([sys.executable, "-m", "mlir_lsp_asserts", *map(str, args)], capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=timeout, env=env, preexec_fn=_capped)
    r = CliResult(proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"))
    assert "Traceback" not in r.stderr, r.stderr
    return r


def test_the_cli_folder_walk_skips_links_out_of_the_folder_and_special_files(tmp_path):
    ws, outside = clone_with_links(tmp_path)
    r = cli("--check", ws)
    assert r.returncode == 1, r.stderr
    assert sorted({m["path"] for m in r.concise()}) == [str(ws / "a.mlir"), str(ws / "sub" / "same.mlir")]
    assert [m["code"] for m in r.concise()] == ["MLA001"] * 8
    for name in ("zero.mlir", "out.mlir", "zz_fifo.mlir", outside.name):
        assert name not in r.stdout + r.stderr


def test_a_file_named_on_the_command_line_may_be_a_link_but_a_device_is_one_line(tmp_path):
    ws, _outside = clone_with_links(tmp_path)
    r = cli("--check", ws / "out.mlir")  # named: followed, reported under the name given
    assert r.returncode == 1, r.stderr
    assert {m["path"] for m in r.concise()} == {str(ws / "out.mlir")} and len(r.concise()) == 4
    for named in (ws / "zero.mlir", Path("/dev/zero")):
        r = cli("--check", named)
        assert r.returncode == 2, r.stderr
        assert r.error_lines() == [f"mlir-lsp: error: {named}: not a regular file (a character device)"]


def test_read_source_checks_the_size_before_it_reads(tmp_path):
    from mlir_lsp_asserts.source import SourceError, read_source

    big = tmp_path / "big.mlir"
    big.write_text(REPRO.read_text() * 40)
    with pytest.raises(SourceError, match=r"of IR, above the limit"):
        read_source(str(big), max_bytes=10_000)
    assert read_source(str(big), max_bytes=1 << 20).text == REPRO.read_text() * 40
    os.mkfifo(tmp_path / "zz_fifo.mlir")  # the server's reads: no pipe (its open would wait for a writer)
    with pytest.raises(SourceError, match=r"not a regular file \(a pipe\)"):
        read_source(str(tmp_path / "zz_fifo.mlir"), regular_only=True)


def _descendants(pid: int) -> list[int]:
    table = processes()
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        kids = [p for p, pp, _cmd in table if pp == parent]
        out += kids
        todo += kids
    return out


def _peak_rss_kb(pid: int) -> int:
    """The process's high-water mark of resident memory (VmHWM), 0 when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _scan_ended(lsp) -> bool:
    return any(isinstance(v, types.WorkDoneProgressEnd) for values in lsp.progress_reports.values() for v in values)


class Watchdog:
    """Keeps the high-water mark of resident memory of every process under the server, and kills
    one that passes the limit (the old code's read of /dev/zero grew 1.2 GB a second)."""

    def __init__(self, server: int):
        self.server = server
        self.peak: dict[int, int] = {}
        self.hog: int | None = None

    def look(self) -> None:
        for pid in _descendants(self.server):
            self.peak[pid] = max(self.peak.get(pid, 0), _peak_rss_kb(pid))
            if self.peak[pid] > SCAN_RSS_LIMIT_KB and self.hog is None:
                self.hog = pid
                os.kill(pid, 9)

    async def run(self) -> None:
        while True:
            self.look()
            await asyncio.sleep(0.05)


@pytest.mark.asyncio(loop_scope="function")
async def test_the_workspace_scan_reads_no_device_and_publishes_nothing_outside(tmp_path):
    """The scan (on open, no trust needed) of a folder holding a /dev/zero link and a link to a
    file outside it: its child stays under 200 MB, and only files in the folder are published.
    Links made after the scan (seen by the watcher) are skipped the same way."""
    ws, outside = clone_with_links(tmp_path)
    inside = ws.resolve()
    async with lsp_server(tmp_path, folders=[ws], client="neovim") as lsp:
        dog = Watchdog(lsp._server.pid)
        watching = asyncio.ensure_future(dog.run())
        try:
            loop = asyncio.get_running_loop()
            end = loop.time() + 120
            while not _scan_ended(lsp) and dog.hog is None and loop.time() < end:
                await asyncio.sleep(0.05)
            assert dog.hog is None, f"a child of the server reached {dog.peak[dog.hog] >> 10} MB"
            assert _scan_ended(lsp), "the scan did not end"
            a = (ws / "a.mlir").as_uri()
            assert len(lsp.diagnostics.get(a, [])) == 4
            assert all(Path(uri_path(u)).is_relative_to(inside) for u in lsp.diagnostics), set(lsp.diagnostics)

            # the watcher: links made now, then a file whose publish says the links were handled
            (ws / "late_zero.mlir").symlink_to("/dev/zero")
            (ws / "late_out.mlir").symlink_to(outside)
            late = ws / "late.mlir"
            late.write_text(REPRO.read_text())
            assert len(await published_again(lsp, late.as_uri(), timeout=60)) == 4
            dog.look()
            assert dog.hog is None, f"a child of the server reached {dog.peak[dog.hog] >> 10} MB"
            assert all(Path(uri_path(u)).is_relative_to(inside) for u in lsp.diagnostics), set(lsp.diagnostics)
            assert dog.peak and max(dog.peak.values()) < SCAN_RSS_LIMIT_KB, dog.peak
        finally:
            watching.cancel()


def uri_path(uri: str) -> str:
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(uri).path)

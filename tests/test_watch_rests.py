"""`mlir-lsp --check --watch` rests on an unchanged folder (issue 29, defect 1): it checks once,
then once per write, and the checker's own reads (watchdog's `opened` / `closed_no_write`
events on Linux) start no check."""

from __future__ import annotations

import os
import queue
import subprocess
import threading

from conftest import BIN, CONCISE_LINE, REPRO

QUIET = 2.0  # seconds
NO_ASSERT = "func.func @f() {\n  return\n}\n"


class WatchOutput:
    """The lines of a running `--watch`, grouped per check: the findings of each check, as the
    check's block (`checking...` to `Watching ...`) printed them."""

    def __init__(self, proc: subprocess.Popen):
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.blocks: list[int] = []  # findings per finished check
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc) -> None:
        for line in proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def next_check(self) -> int:
        """Wait for the next check to end; its number of findings."""
        findings = 0
        while True:
            line = self.lines.get(timeout=120)  # a guard against a hang, not a measure
            assert line is not None, f"--watch ended; checks so far {self.blocks}"
            if CONCISE_LINE.match(line):
                findings += 1
            elif line.startswith("Watching for file changes"):
                self.blocks.append(findings)
                return findings

    def rests_while_read(self, path) -> None:
        """Nothing is checked while the file is only read (as an editor or `cat` reads it, and
        as the checker itself does). The one wait on a clock here: that nothing happens is seen
        only by waiting; QUIET is ten times the watcher's debounce, and the watcher that never
        rested began its next check 0.2 s after the last."""
        for _ in range(3):
            path.read_bytes()
        try:
            line = self.lines.get(timeout=QUIET)
        except queue.Empty:
            return
        raise AssertionError(f"checked again with no write: {line!r} (checks so far {self.blocks})")


def test_watch_checks_once_then_only_after_a_write(tmp_path):
    target = tmp_path / "r.mlir"
    target.write_text(REPRO.read_text())
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([str(BIN / "mlir-lsp"), "--check", "--watch", "--output-format", "concise", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        out = WatchOutput(proc)
        assert out.next_check() == 4  # the repro's four asserts
        out.rests_while_read(target)
        target.write_text(NO_ASSERT)  # a write: one check, finding nothing
        assert out.next_check() == 0
        out.rests_while_read(target)
        assert out.blocks == [4, 0], out.blocks
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

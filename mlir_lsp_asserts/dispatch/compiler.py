"""Finding `iree-compile`, its version and the flags it knows, and running it safely.

Runs are argument lists (never a shell), in their own process group, with a timeout; a run
that times out or is cancelled has its whole group killed, and on Linux each run is killed when
the process that started it dies (`processes.death_signal`), so no `iree-compile` is orphaned.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping
from typing import Any

from ..processes import death_signal, signal_name
from .cache import read_json, write_json
from .compiler_lookup import (  # noqa: F401 - found here by the code that runs compiles
    WRAPPER_MODULE,
    Compiler,
    CompilerError,
    binary_cache_file,
    compiler_version,
    find_compiler,
)


@functools.lru_cache(maxsize=16)
def known_flags(path: str) -> frozenset[str]:
    """Every flag name (without `--`) of `--help-list-hidden`, cached per compiler binary
    (in memory, and on disk keyed by the binary's path, size and mtime)."""
    cache = binary_cache_file(path, "flags")
    cached = read_json(cache)
    if isinstance(cached, list):
        return frozenset(cached)
    try:
        out = subprocess.run([path, "--help-list-hidden"], capture_output=True, text=True, timeout=60,
                             preexec_fn=death_signal())
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CompilerError(f"{path} --help-list-hidden failed: {e}") from None
    flags = frozenset(re.findall(r"^\s+--([\w.\-]+)", out.stdout, re.M))
    if out.returncode == 0 and flags:
        write_json(cache, sorted(flags))
    return flags


class Run:
    """One compiler process; `cancel()` kills its process group at once."""

    def __init__(self, argv: list[str], timeout: float, cwd: str | None = None):
        self.argv = argv
        self.timeout = timeout
        self.cwd = cwd
        self._proc: subprocess.Popen | None = None
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()
        self._kill()

    def _kill(self) -> None:
        # The whole group, even when its leader has exited: the venv's iree-compile is a Python
        # launcher whose child (the real binary) outlives it when the launcher is killed.
        p = self._proc
        if p is not None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def run(self, max_stderr: int = 1 << 20) -> tuple[int, str]:
        """(exit code, stderr text, capped); raises CompilerError for timeout/cancel/signal."""
        if self._cancelled.is_set():
            raise CompilerError("cancelled")
        try:
            # Its own session (a cancel kills the group); killed with us however we die (this
            # thread waits for it below, as `death_signal` needs)
            proc = self._proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                 stderr=subprocess.PIPE, cwd=self.cwd, start_new_session=True,
                                                 preexec_fn=death_signal())
        except OSError as e:
            raise CompilerError(f"cannot run {self.argv[0]}: {e.strerror or e}") from None
        if self._cancelled.is_set():  # cancelled while it started: `cancel` saw no process to kill
            self._kill()
        stderr = proc.stderr
        assert stderr is not None  # stderr=PIPE
        chunks: list[bytes] = []
        size = 0

        def drain():
            nonlocal size
            for block in iter(lambda: stderr.read(65536), b""):
                if size < max_stderr:
                    chunks.append(block[: max_stderr - size])
                size += len(block)

        t = threading.Thread(target=drain, daemon=True)
        t.start()
        # A timer kills the group at the timeout, so the wait below blocks in waitpid():
        # `Popen.wait(timeout=...)` polls with sleeps of up to 50 ms after the compile ends.
        timed_out = threading.Event()

        def expire():
            timed_out.set()
            self._kill()

        timer = threading.Timer(self.timeout, expire)
        timer.daemon = True
        timer.start()
        try:
            code = proc.wait()
        finally:
            timer.cancel()
            self._kill()  # stragglers of the group first: they hold the stderr pipe open
            t.join(timeout=5)
        err = b"".join(chunks).decode("utf-8", "replace")
        if size > max_stderr:
            err += f"\n... ({size - max_stderr} more bytes of output not shown)"
        if self._cancelled.is_set():
            raise CompilerError("cancelled")
        if timed_out.is_set():
            raise CompilerError(f"iree-compile took longer than the {self.timeout:g} s timeout and was stopped")
        if code < 0:
            name = signal_name(-code)
            if -code in (signal.SIGKILL, signal.SIGTERM):
                raise CompilerError(f"iree-compile was killed ({name}) by something outside mlir-lsp "
                                    "(out of memory?); no count")
            raise CompilerError(f"iree-compile crashed ({name})" + (f": {first_error(err)}" if err.strip() else ""))
        return code, err


def first_error(err: str) -> str:
    for line in err.splitlines():
        if "error:" in line:
            return line.strip()[:500]
    lines = [ln for ln in err.splitlines() if ln.strip()]
    return (lines[0].strip()[:500] if lines else "")


DIAG_LINE = re.compile(r"^(?P<file>[^\n]+?):(?P<line>\d+):(?:(?P<col>\d+):)? "
                       r"(?P<sev>error|warning|note|remark): (?P<msg>.*)$", re.M)


def parse_diagnostics(stderr: str, files: Mapping[str, Callable[[int], int] | None]) -> list[dict]:
    """The compiler's `file:line:col: error: msg` diagnostics, each note attached to the error or
    warning before it. `files` maps the input files' names to a function that turns their line
    numbers into the user's (None: as they are); diagnostics at other places keep no line."""
    out: list[dict] = []
    for m in DIAG_LINE.finditer(stderr):
        fname, sev = m["file"], m["sev"]
        line = col = None
        if fname in files:
            mapper = files[fname]
            line, col = int(m["line"]), int(m["col"] or 1)
            if mapper is not None:
                line = mapper(line)
        d: dict[str, Any] = {"line": line, "column": col, "severity": sev, "message": m["msg"].strip(), "notes": []}
        if sev == "note" and out:
            out[-1]["notes"].append(d)
            del d["notes"]
        else:
            out.append(d)
    return out


# How IREE's parser rejects another release's syntax: types, attributes and ops renamed or
# moved between releases (e.g. `!flow.dispatch.tensor`, now `!iree_tensor_ext.dispatch.tensor`).
OTHER_RELEASE_SYNTAX = re.compile(
    r"unknown .* type|unregistered dialect|Dialect `[^']*' not found|unknown attribute|"
    r"custom op '[^']*' is unknown|does not have a registered|unknown .* attribute", re.I)


def other_release_syntax(errors: list[dict]) -> dict | None:
    """The first of a failed compile's errors that says the file is in another IREE release's
    syntax (this compiler cannot read it, whatever the file means), or None."""
    return next((e for e in errors if e.get("severity") == "error" and OTHER_RELEASE_SYNTAX.search(e["message"])),
                None)


def other_release_message(version: str, syntax: dict) -> str:
    """What to say instead of the compiler's error when `other_release_syntax` found one."""
    where = f" at line {syntax['line']}" if syntax.get("line") else ""
    return f"iree-compile {version} cannot read this file's IREE syntax ({syntax['message']}{where})"


# Failures that are a known limit of an older release, with what to do about it.
RELEASE_LIMITS = (
    (re.compile(r"runtime error in consteval.*'io_parameters' not registered"),
     "this iree-compile's const-eval cannot read parameter globals (seen with IREE 3.3); "
     "add --iree-opt-const-eval=false to the flags (docs/compatibility.md)"),
)


def release_limit_hint(message: str) -> str:
    """`; <what to do>` when a failed compile's message is a known limit of an older release, else ""."""
    return next((f"; {hint}" for pattern, hint in RELEASE_LIMITS if pattern.search(message)), "")

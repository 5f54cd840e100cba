"""Finding `iree-compile`, its version and the flags it knows, and running it safely.

Runs are argument lists (never a shell), in their own process group, with a timeout; a run
that times out or is cancelled has its whole group killed, and on Linux each run is killed when
the process that started it dies (`processes.death_signal`), so no `iree-compile` is orphaned.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..iree_release import compiler_message
from ..processes import death_signal, signal_name
from .cache import cache_root, read_json, write_json


class CompilerError(Exception):
    """A run that gave no count; the message says what went wrong, in one or two lines.
    `diagnostics`: the compiler's own errors at the user's lines (see `parse_diagnostics`)."""

    def __init__(self, message: str, diagnostics: list[dict] | None = None):
        super().__init__(message)
        self.diagnostics = diagnostics or []


class Compiler(NamedTuple):
    """An iree-compile binary and the version it reports."""

    path: str
    version: str


def find_compiler(setting: str | None = None) -> Compiler:
    """The compiler from a setting, else the one installed beside this package, else PATH."""
    tried = []
    candidates = []
    if setting:
        candidates.append(os.path.expanduser(setting))
    candidates.append(str(Path(sys.executable).with_name("iree-compile")))
    on_path = shutil.which("iree-compile")
    if on_path:
        candidates.append(on_path)
    for c in candidates:
        tried.append(c)
        if os.path.isfile(c) and os.access(c, os.X_OK):
            c = _past_wrapper(c)
            version = compiler_version(c)
            too_old = compiler_message(version)
            if too_old:
                raise CompilerError(f"{too_old}: {c}")
            return Compiler(c, version)
        if setting and c == os.path.expanduser(setting):
            raise CompilerError(f"iree-compile not found at the configured path {c}")
    raise CompilerError("iree-compile not found (tried: " + ", ".join(tried) +
                        "); install iree-base-compiler or set the compiler path")


WRAPPER_MODULE = "iree.compiler.tools.scripts.iree_compile"


def _past_wrapper(path: str) -> str:
    """The real binary behind the pip package's `iree-compile` console script, when that script
    runs on this very Python: the script is a Python start-up plus a `subprocess.call` of the
    binary (~0.1 s of CPU per compile, a fixed cost every preview would pay again)."""
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError:
        return path
    if not head.startswith(b"#!") or WRAPPER_MODULE.encode() not in head:
        return path
    interpreter = head[2:].split(b"\n", 1)[0].strip().decode(errors="replace")
    if os.path.abspath(interpreter) != os.path.abspath(sys.executable):  # this venv, this iree package
        return path
    import importlib.util

    spec = importlib.util.find_spec("iree.compiler")
    if spec is None or not spec.submodule_search_locations:
        return path
    real = os.path.join(list(spec.submodule_search_locations)[0], "_mlir_libs", "iree-compile")
    return real if os.path.isfile(real) and os.access(real, os.X_OK) else path


@functools.lru_cache(maxsize=16)
def compiler_version(path: str) -> str:
    """The version `--version` reports, cached per binary in memory and on disk (a `--version`
    run costs ~0.2 s, a fixed cost of every CLI preview otherwise)."""
    cache = _binary_cache_file(path, "version")
    cached = read_json(cache)
    if isinstance(cached, str):
        return cached
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30,
                             preexec_fn=death_signal())
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CompilerError(f"{path} --version failed: {e}") from None
    m = re.search(r"compiler version (\S+)", out.stdout)
    if out.returncode != 0 or m is None:
        raise CompilerError(f"{path} --version did not report a version (exit {out.returncode})")
    write_json(cache, m.group(1))
    return m.group(1)


@functools.lru_cache(maxsize=16)
def known_flags(path: str) -> frozenset[str]:
    """Every flag name (without `--`) of `--help-list-hidden`, cached per compiler binary
    (in memory, and on disk keyed by the binary's path, size and mtime)."""
    cache = _binary_cache_file(path, "flags")
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


def _binary_cache_file(path: str, kind: str) -> Path | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = hashlib.sha256(f"{os.path.realpath(path)}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:32]
    return cache_root() / "compilers" / f"{kind}-{key}.json"


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

"""Finding `iree-compile`, its version and the flags it knows, and running it safely.

Runs are argument lists (never a shell), in their own process group, with a timeout; a run
that times out or is cancelled has its whole group killed, so no `iree-compile` is orphaned.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path


class CompilerError(Exception):
    """A run that gave no count; the message says what went wrong, in one or two lines."""


@dataclass(frozen=True)
class Compiler:
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
            return Compiler(c, compiler_version(c))
        if setting and c == os.path.expanduser(setting):
            raise CompilerError(f"iree-compile not found at the configured path {c}")
    raise CompilerError("iree-compile not found (tried: " + ", ".join(tried) +
                        "); install iree-base-compiler or set the compiler path")


@functools.lru_cache(maxsize=16)
def compiler_version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CompilerError(f"{path} --version failed: {e}") from None
    m = re.search(r"compiler version (\S+)", out.stdout)
    if out.returncode != 0 or m is None:
        raise CompilerError(f"{path} --version did not report a version (exit {out.returncode})")
    return m.group(1)


@functools.lru_cache(maxsize=16)
def known_flags(path: str) -> frozenset[str]:
    """Every flag name (without `--`) of `--help-list-hidden`, cached per compiler binary
    (in memory, and on disk keyed by the binary's path, size and mtime)."""
    cache = _binary_cache_file(path, "flags")
    if cache is not None:
        try:
            return frozenset(json.loads(cache.read_text()))
        except (OSError, ValueError):
            pass
    try:
        out = subprocess.run([path, "--help-list-hidden"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CompilerError(f"{path} --help-list-hidden failed: {e}") from None
    flags = frozenset(re.findall(r"^\s+--([\w.\-]+)", out.stdout, re.M))
    if cache is not None and out.returncode == 0 and flags:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(sorted(flags)))
            os.replace(tmp, cache)
        except OSError:
            pass
    return flags


def _binary_cache_file(path: str, kind: str) -> Path | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = hashlib.sha256(f"{os.path.realpath(path)}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:32]
    return cache_root() / "compilers" / f"{kind}-{key}.json"


def cache_root() -> Path:
    """mlir-lsp's cache folder ($XDG_CACHE_HOME/mlir-lsp, else ~/.cache/mlir-lsp)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mlir-lsp"


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
        p = self._proc
        if p is not None and p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def run(self, max_stderr: int = 1 << 20) -> tuple[int, str]:
        """(exit code, stderr text, capped); raises CompilerError for timeout/cancel/signal."""
        if self._cancelled.is_set():
            raise CompilerError("cancelled")
        try:
            self._proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE, cwd=self.cwd, start_new_session=True)
        except OSError as e:
            raise CompilerError(f"cannot run {self.argv[0]}: {e.strerror or e}") from None
        chunks: list[bytes] = []
        size = 0

        def drain():
            nonlocal size
            for block in iter(lambda: self._proc.stderr.read(65536), b""):
                if size < max_stderr:
                    chunks.append(block[: max_stderr - size])
                size += len(block)

        t = threading.Thread(target=drain, daemon=True)
        t.start()
        try:
            code = self._proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self._kill()
            self._proc.wait()
            raise CompilerError(f"iree-compile took longer than the {self.timeout:g} s timeout and was stopped") from None
        finally:
            t.join(timeout=5)
            self._kill()
        err = b"".join(chunks).decode("utf-8", "replace")
        if size > max_stderr:
            err += f"\n... ({size - max_stderr} more bytes of output not shown)"
        if self._cancelled.is_set():
            raise CompilerError("cancelled")
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
            raise CompilerError(f"iree-compile crashed ({name})" + (f": {_first_error(err)}" if err.strip() else ""))
        return code, err


def _first_error(err: str) -> str:
    for line in err.splitlines():
        if "error:" in line:
            return line.strip()[:500]
    lines = [ln for ln in err.splitlines() if ln.strip()]
    return (lines[0].strip()[:500] if lines else "")


ERROR_LINE = re.compile(r"^(?P<file>[^\n:]+):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.*)$", re.M)


def parse_errors(stderr: str) -> list[tuple[str, int, int, str]]:
    """`file:line:col: error: msg` lines of a compiler run."""
    return [(m["file"], int(m["line"]), int(m["col"]), m["msg"]) for m in ERROR_LINE.finditer(stderr)]

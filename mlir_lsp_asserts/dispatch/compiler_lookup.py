"""Which `iree-compile` a count runs, and the release it reports.

`mlir-lsp --version` prints both, and is meant to start in tens of milliseconds (issue 37): this
module imports almost nothing. The compiler's own `--version` is run (subprocess, ~0.2 s) only
when that binary's release is not cached yet; the cache is one small file per binary, keyed by
its path, size and mtime, in mlir-lsp's cache folder (dispatch/cache.py). dispatch/compiler.py,
which runs compiles, takes these from here.
"""

from __future__ import annotations

import functools
import os
import sys

from ..iree_release import compiler_message
from ..records import NamedTuple
from .cache_folder import cache_folder


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
    candidates.append(os.path.join(os.path.dirname(sys.executable), "iree-compile"))
    on_path = _which("iree-compile")
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


def _which(name: str) -> str | None:
    """`shutil.which(name)` on POSIX, without importing shutil: the first PATH entry holding an
    executable file of that name."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or os.curdir, name)
        if os.path.exists(path) and os.access(path, os.F_OK | os.X_OK) and not os.path.isdir(path):
            return path
    return None


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
    for entry in sys.path:  # where `import iree.compiler` finds its package (a regular one)
        package = os.path.join(entry or os.curdir, "iree", "compiler")
        if os.path.isfile(os.path.join(package, "__init__.py")):
            real = os.path.join(package, "_mlir_libs", "iree-compile")
            return real if os.path.isfile(real) and os.access(real, os.X_OK) else path
    return path


@functools.lru_cache(maxsize=16)
def compiler_version(path: str) -> str:
    """The version `--version` reports, cached per binary in memory and on disk (a `--version`
    run costs ~0.2 s, a fixed cost of every CLI preview otherwise)."""
    cache = binary_cache_file(path, "version")
    cached = _cached_string(cache)
    if cached is not None:
        return cached
    import re
    import subprocess

    from ..processes import death_signal
    from .cache import write_json

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


def binary_cache_file(path: str, kind: str) -> str | None:
    """The cache file of `kind` for the binary at `path`, None when `path` is not there; its name
    changes with the binary's path (two checksums of it: the few binaries of one machine never
    share both), size and mtime. zlib's checksums, not hashlib's: hashlib loads OpenSSL's
    libcrypto, ~2.5 ms of a `--version` that takes ~20."""
    import zlib

    try:
        st = os.stat(path)
    except OSError:
        return None
    real = os.fsencode(os.path.realpath(path))
    key = f"{zlib.crc32(real):08x}{zlib.adler32(real):08x}-{st.st_size}-{st.st_mtime_ns}"
    return os.path.join(cache_folder(), "compilers", f"{kind}-{key}.json")


def _cached_string(cache: str | None) -> str | None:
    """The JSON string in a cache file (`"3.13.0"`: read without the json module when it holds
    no escape), None when there is none."""
    if cache is None:
        return None
    try:
        with open(cache, encoding="utf-8") as f:
            text = f.read().strip()
    except OSError:
        return None
    if len(text) >= 2 and text[0] == text[-1] == '"' and "\\" not in text[1:-1] and '"' not in text[1:-1]:
        return text[1:-1]
    import json

    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, str) else None

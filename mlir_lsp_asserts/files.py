"""Files: finding MLIR files under paths, reading them, writing fixed text atomically."""

from __future__ import annotations

import fnmatch
import os
import tempfile
from pathlib import Path

MLIR_SUFFIXES = (".mlir", ".mlirbc")


def discover(paths: list[str], exclude: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """Files to check under `paths` and messages about paths that gave none."""
    files: list[str] = []
    problems: list[str] = []
    for p in paths:
        if p == "-":
            files.append(p)
            continue
        path = Path(p)
        if path.is_dir():
            found = []
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not _excluded(os.path.join(root, d), exclude))
                for n in sorted(names):
                    full = os.path.join(root, n)
                    if n.endswith(MLIR_SUFFIXES) and not _excluded(full, exclude):
                        found.append(full)
            if not found:
                problems.append(f"{p}: no .mlir or .mlirbc files found")
            files.extend(found)
        elif path.exists():
            files.append(p)
        else:
            problems.append(f"{p}: no such file or directory")
    return files, problems


def _excluded(path: str, exclude: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(path, pat) or fnmatch.fnmatch(os.path.basename(path), pat) for pat in exclude)


def write_atomic(path: str, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same folder and a rename.

    The file keeps its mode; a crash at any point leaves either the old or the new content.
    """
    target = Path(path)
    st = target.stat()
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".mlir-lsp.tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, st.st_mode & 0o7777)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise

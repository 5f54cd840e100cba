"""mlir-lsp's cache folder, and the counter's cache of answers: in memory, and on disk as one
JSON file per key, each written whole (`files.write_atomic`) so that a reader never sees half.

    cache = CountCache(disk=True)
    key = cache.key("count::0", compiler, flags, text)   # what was computed, by what, from what
    cache.get(key)                                       # the stored answer, or None
    cache.put(key, {...})                                # kept in memory, written to disk
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ..files import write_atomic


def cache_root() -> Path:
    """mlir-lsp's cache folder ($XDG_CACHE_HOME/mlir-lsp, else ~/.cache/mlir-lsp)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mlir-lsp"


def write_new_or_atomic(path: str | Path, data: bytes) -> None:
    """`files.write_atomic`, also for a file that does not exist yet: it is made first (empty,
    with the mode the umask gives), then replaced whole. Raises OSError."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        write_atomic(str(path), data)
        return
    os.close(fd)
    try:
        write_atomic(str(path), data)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise


def read_json(path: Path | None) -> Any:
    """The JSON in a cache file, or None (no file, unreadable, or not JSON)."""
    if path is None:
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_json(path: Path | None, data: Any) -> None:
    """Store `data` in a cache file; a cache that cannot be written is no error."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_new_or_atomic(path, json.dumps(data).encode())
    except OSError:
        pass


class CountCache:
    """The answers of a counter (and its siblings, which share it), by key."""

    def __init__(self, disk: bool = True):
        self.disk = disk
        self._memory: dict[str, Any] = {}
        self.last_ir: dict[str, str] = {}  # without a disk cache: the last outputs, by key

    @property
    def folder(self) -> Path:
        return cache_root() / "dispatch"

    @staticmethod
    def key(kind: str, compiler, flags: list[str], text: str) -> str:
        """The key of `kind` of answer for `text`, by this `compiler` (path and version) and flags."""
        h = hashlib.sha256()
        for part in (kind, compiler.version, compiler.path, "\0".join(flags)):
            h.update(part.encode() + b"\0")
        h.update(text.encode("utf-8", "surrogatepass"))
        return h.hexdigest()

    def get(self, key: str) -> Any:
        if key in self._memory:
            return self._memory[key]
        if not self.disk:
            return None
        data = read_json(self.folder / f"{key}.json")
        if data is not None:
            self._memory[key] = data
        return data

    def put(self, key: str, data: Any) -> None:
        self._memory[key] = data
        if self.disk:
            write_json(self.folder / f"{key}.json", data)

    def keep_ir(self, key: str, ir: str, most: int = 2) -> None:
        """Without a disk cache: the last `most` outputs stay in memory."""
        self.last_ir[key] = ir
        while len(self.last_ir) > most:
            self.last_ir.pop(next(iter(self.last_ir)))

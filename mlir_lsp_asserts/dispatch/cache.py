"""mlir-lsp's cache folder, and the counter's cache of answers: in memory, and on disk as one
JSON file per key, each written whole (`files.write_atomic`) so that a reader never sees half.

    cache = CountCache(disk=True)
    key = cache.key("count::0", compiler, flags, text)   # what was computed, by what, from what
    cache.get(key)                                       # the stored answer, or None
    cache.put(key, {...})                                # kept in memory, written to disk

Both are bounded: in memory the most recently used answers (MEMORY_ENTRIES, MEMORY_BYTES of
JSON: an answer can hold a whole lowered torch module), on disk the newest files (DISK_FILES,
DISK_BYTES, by mtime; a hit touches its file), pruned every PRUNE_EVERY writes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from ..files import write_new_or_atomic
from .cache_folder import cache_folder

MEMORY_ENTRIES = 64
MEMORY_BYTES = 64 * 1024 * 1024
DISK_FILES = 2000
DISK_BYTES = 1024 * 1024 * 1024
PRUNE_EVERY = 64


def cache_root() -> Path:
    """mlir-lsp's cache folder ($XDG_CACHE_HOME/mlir-lsp, else ~/.cache/mlir-lsp)."""
    return Path(cache_folder())


def read_json(path: str | Path | None) -> Any:
    """The JSON in a cache file, or None (no file, unreadable, or not JSON)."""
    if path is None:
        return None
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def write_json(path: str | Path | None, data: Any, encoded: bytes | None = None) -> None:
    """Store `data` (`encoded`: its JSON, when already made) in a cache file; a cache that
    cannot be written is no error."""
    if path is None:
        return
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_new_or_atomic(path, encoded if encoded is not None else json.dumps(data).encode())
    except OSError:
        pass


def prune_folder(folder: Path, most_files: int, most_bytes: int) -> int:
    """Delete the oldest `*.json` files of `folder` (by mtime) past the newest `most_files` or
    `most_bytes`; how many were deleted. Files that go meanwhile are no error."""
    found = []
    try:
        with os.scandir(folder) as it:
            for e in it:
                if e.name.endswith(".json"):
                    with contextlib.suppress(OSError):
                        st = e.stat()
                        found.append((st.st_mtime_ns, st.st_size, e.path))
    except OSError:
        return 0
    found.sort(reverse=True)
    total = deleted = 0
    for n, (_mtime, size, path) in enumerate(found):
        total += size
        if n >= most_files or total > most_bytes:
            with contextlib.suppress(OSError):
                os.unlink(path)
                deleted += 1
    return deleted


class CountCache:
    """The answers of a counter (and its siblings, which share it), by key."""

    def __init__(self, disk: bool = True, memory_entries: int = MEMORY_ENTRIES, memory_bytes: int = MEMORY_BYTES,
                 disk_files: int = DISK_FILES, disk_bytes: int = DISK_BYTES):
        self.disk = disk
        self.limits = (memory_entries, memory_bytes, disk_files, disk_bytes)
        self._memory: OrderedDict[str, tuple[Any, int]] = OrderedDict()  # key -> (answer, its JSON size)
        self._memory_bytes = 0
        self._lock = threading.Lock()  # counts run in threads
        self._writes = 0
        self.last_ir: dict[str, str] = {}  # without a disk cache: the last outputs, by key

    def __len__(self) -> int:
        return len(self._memory)

    @property
    def memory_bytes(self) -> int:
        """The JSON size of the answers kept in memory."""
        return self._memory_bytes

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
        with self._lock:
            if key in self._memory:
                self._memory.move_to_end(key)
                return self._memory[key][0]
        if not self.disk:
            return None
        path = self.folder / f"{key}.json"
        try:
            encoded = path.read_bytes()
            data = json.loads(encoded)
        except (OSError, ValueError):
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # used: the newest to keep
        self._remember(key, data, len(encoded))
        return data

    def put(self, key: str, data: Any) -> None:
        encoded = json.dumps(data).encode()
        self._remember(key, data, len(encoded))
        if self.disk:
            write_json(self.folder / f"{key}.json", data, encoded)
            with self._lock:
                self._writes += 1
                prune = self._writes % PRUNE_EVERY == 1
            if prune:
                prune_folder(self.folder, self.limits[2], self.limits[3])

    def _remember(self, key: str, data: Any, size: int) -> None:
        most, most_bytes = self.limits[0], self.limits[1]
        with self._lock:
            old = self._memory.pop(key, None)
            if old is not None:
                self._memory_bytes -= old[1]
            if size > most_bytes:
                return  # bigger than the whole memory cache: on disk only
            self._memory[key] = (data, size)
            self._memory_bytes += size
            while len(self._memory) > most or self._memory_bytes > most_bytes:
                _k, (_d, dropped) = self._memory.popitem(last=False)
                self._memory_bytes -= dropped

    def keep_ir(self, key: str, ir: str, most: int = 2) -> None:
        """Without a disk cache: the last `most` outputs stay in memory."""
        self.last_ir[key] = ir
        while len(self.last_ir) > most:
            self.last_ir.pop(next(iter(self.last_ir)))

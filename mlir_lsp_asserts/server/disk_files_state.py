"""The files checked from disk (disk_files_feature): the server's `ls.disk_files`, state that the
dispatch features read too (`DiskFiles.text`), so it stands below them and below app.py."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator

from ..source import SourceError, read_source
from .open_documents import uri_path

log = logging.getLogger("mlir_lsp_asserts.server.disk_files_feature")


class DiskFiles:
    """The files checked from disk (the server's `ls.disk_files`)."""

    def __init__(self):
        self.checked: dict[str, tuple[tuple[int, int, int], dict]] = {}  # uri -> (file_stamp, answer)
        self.lock = threading.Lock()
        self._file_locks: dict[str, tuple[threading.Lock, list[int]]] = {}  # uri -> (lock, [users])

    @contextlib.contextmanager
    def file_lock(self, uri: str) -> Iterator[None]:
        """One check or fix of a file at a time: publishes keep the order of the work. The lock
        of a URI lives while someone holds or waits for it."""
        with self.lock:
            lock, users = self._file_locks.setdefault(uri, (threading.Lock(), [0]))
            users[0] += 1
        try:
            with lock:
                yield
        finally:
            with self.lock:
                users[0] -= 1
                if not users[0]:
                    del self._file_locks[uri]
    def forget(self, uri: str) -> None:
        with self.lock:
            self.checked.pop(uri, None)

    def text(self, uri: str) -> tuple[int, str, str] | None:
        """(version: the file's mtime in ns, text, path) of a file checked from disk, read now;
        None for any other URI (dispatch counts ask here for documents that are not open)."""
        with self.lock:
            known = uri in self.checked
        path = uri_path(uri) if known else None
        if path is None:
            return None
        try:
            version = os.stat(path).st_mtime_ns
            return version, read_source(path, weights=True, isolated=True, regular_only=True).text, path  # weights too
        except (OSError, SourceError) as e:
            log.info("disk file %s: %s", path, e)
            return None

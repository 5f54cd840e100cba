"""Caches that stay bounded (issue 29, defect 7): the counter's answers in memory and on disk,
and the disk files' locks per URI."""

from __future__ import annotations

import threading
import tracemalloc

from mlir_lsp_asserts.dispatch import cache as cache_mod
from mlir_lsp_asserts.dispatch.cache import CountCache
from mlir_lsp_asserts.server.disk_files_state import DiskFiles

MB = 1024 * 1024


def test_the_count_cache_keeps_a_bounded_memory(tmp_path, monkeypatch):
    """Answers can hold whole lowered modules (6.2 MB for a torch model): 200 answers of 1 MB
    keep no more than the memory bound, the newest answers among them."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cache = CountCache(disk=False)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(200):
            cache.put(f"k{n}", {"text": f"{n}:" + "x" * MB})
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < cache_mod.MEMORY_BYTES + 8 * MB, f"{kept / MB:.0f} MB kept"
    assert cache.get("k199") is not None  # the newest stays


def test_the_count_cache_folder_is_pruned(tmp_path, monkeypatch):
    """On disk: no more than the newest DISK_FILES answers (give or take one pruning period)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cache = CountCache(disk=True)
    writes = cache_mod.DISK_FILES + 2 * cache_mod.PRUNE_EVERY
    for n in range(writes):
        cache.put(f"{n:064x}", {"flow_dispatches": n})
    files = list(cache.folder.glob("*.json"))
    assert len(files) <= cache_mod.DISK_FILES + cache_mod.PRUNE_EVERY, len(files)
    assert (cache.folder / f"{writes - 1:064x}.json").is_file()  # the newest stays
    assert CountCache(disk=True).get(f"{writes - 1:064x}") == {"flow_dispatches": writes - 1}


def test_disk_file_locks_are_released_when_unused():
    state = DiskFiles()
    done = threading.Event()

    def hold():
        with state.file_lock("file:///ws/a.mlir"):
            done.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    for n in range(100):
        with state.file_lock(f"file:///ws/{n}.mlir"):
            pass
    assert len(state._file_locks) == 1  # only the one held
    done.set()
    t.join(30)
    assert len(state._file_locks) == 0

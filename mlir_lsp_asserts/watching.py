"""Which file-system events are changes: one filter for `mlir-lsp --check --watch` and the
server's workspace watcher.

On Linux, watchdog reports reads too (`opened`, `closed_no_write`): the checker's own reads of
the files it watches would otherwise come back as changes and it would never rest. Only these
kinds of event are writes (`closed` is a close after writing)."""

from __future__ import annotations

import os

WRITE_EVENTS = frozenset({"created", "modified", "deleted", "moved", "closed"})


def changed_paths(event, suffixes: tuple[str, ...]) -> list[str]:
    """The paths ending in one of `suffixes` that a watchdog event wrote, created, moved or
    deleted; none for a read or a folder."""
    if event.event_type not in WRITE_EVENTS or event.is_directory:
        return []
    out = []
    for p in (getattr(event, "src_path", ""), getattr(event, "dest_path", "")):
        p = os.fsdecode(p) if p else ""
        if p.endswith(suffixes):
            out.append(p)
    return out

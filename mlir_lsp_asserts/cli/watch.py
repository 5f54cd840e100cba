"""`--watch`: check again whenever an MLIR file under the given paths is written (watchdog);
reads (the checker's own among them) are no change (`watching.changed_paths`)."""

from __future__ import annotations

import os
import sys
import threading
import time

from ..files import MLIR_SUFFIXES
from ..watching import changed_paths

SETTLE_SECONDS = 0.2  # a burst of writes (a save, an export) is one change


def watch_loop(args, check_once) -> int:
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    changed = threading.Event()

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event):
            if changed_paths(event, MLIR_SUFFIXES):
                changed.set()

    observer = Observer()
    roots = set()
    for p in args.paths:
        if p == "-":
            continue
        root = p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p))
        roots.add(os.path.abspath(root))
    for r in roots:
        observer.schedule(Handler(), r, recursive=True)
    observer.start()
    try:
        while True:
            print(f"[{time.strftime('%H:%M:%S')}] checking...", file=sys.stderr)
            check_once()
            print("Watching for file changes (Ctrl+C to stop).", file=sys.stderr)
            changed.wait()
            while changed.is_set():  # let the writer finish: check once the writes settle
                changed.clear()
                changed.wait(SETTLE_SECONDS)
    except KeyboardInterrupt:
        return 0
    finally:
        observer.stop()
        observer.join(timeout=2)

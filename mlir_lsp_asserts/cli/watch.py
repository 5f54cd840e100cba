"""`--watch`: check again whenever an MLIR file under the given paths changes (watchdog)."""

from __future__ import annotations

import os
import sys
import threading
import time

from ..files import MLIR_SUFFIXES


def watch_loop(args, check_once) -> int:
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    changed = threading.Event()

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event):
            paths = [getattr(event, "src_path", ""), getattr(event, "dest_path", "")]
            if any(str(p).endswith(MLIR_SUFFIXES) for p in paths if p):
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
            time.sleep(0.2)  # let the writer finish; coalesce bursts
            changed.clear()
    except KeyboardInterrupt:
        return 0
    finally:
        observer.stop()
        observer.join(timeout=2)

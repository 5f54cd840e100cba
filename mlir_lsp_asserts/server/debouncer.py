"""Work that runs after a pause in typing: one waiting thread for all keys (documents).

A `threading.Timer` per edit cost each keystroke a thread started and the last one woken to be
cancelled: two switches of the interpreter between threads, 2-3 ms of a 50 MB document's edit
(issue 37: its p95 is <= 8 ms). Here a new edit only moves its key's deadline: the one thread
sleeps until the earliest deadline it knew of, finds the later one there and sleeps again; it is
woken only when a deadline comes earlier than that. What is due runs on a thread of its own (a
parse waits for its child process), started once per pause, not once per edit.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any


class Debouncer:
    def __init__(self, name: str):
        self.name = name
        self._due: dict[str, tuple[float, Callable[..., Any], tuple]] = {}  # key -> (deadline, fn, args)
        self._cond = threading.Condition(threading.Lock())
        self._thread: threading.Thread | None = None
        self._wake_at = -math.inf  # the deadline the thread sleeps until (-inf: it looks again anyway)
        self._stopped = False

    def schedule(self, key: str, delay: float, fn: Callable[..., Any], *args: Any) -> None:
        """Run `fn(*args)` `delay` seconds from now, replacing what `key` had pending."""
        at = time.monotonic() + delay
        with self._cond:
            if self._stopped:
                return
            self._due[key] = (at, fn, args)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
                self._thread.start()
            elif at < self._wake_at:
                self._cond.notify()

    def cancel(self, key: str) -> None:
        """Drop `key`'s pending run (the thread is not woken: it finds nothing due)."""
        with self._cond:
            self._due.pop(key, None)

    def pending(self, key: str) -> bool:
        return key in self._due

    def stop(self) -> None:
        """Nothing pending runs, nothing is scheduled again. Takes no lock (a signal handler calls
        it on a thread that may be inside `schedule`)."""
        self._stopped = True
        self._due.clear()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stopped:
                        return
                    now = time.monotonic()
                    ready = [k for k, (at, _fn, _args) in self._due.items() if at <= now]
                    if ready:
                        runs = [self._due.pop(k)[1:] for k in ready]
                        self._wake_at = -math.inf
                        break
                    self._wake_at = min((at for at, _fn, _args in self._due.values()), default=math.inf)
                    self._cond.wait(None if self._wake_at == math.inf else self._wake_at - now)
            for fn, args in runs:
                if self._stopped:
                    return
                threading.Thread(target=fn, args=args, name=f"{self.name} run", daemon=True).start()

"""What the server keeps of the dispatch counts of the open documents (`ls.dispatch`)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .open_documents import Stamp
from .options import DispatchOptions

if TYPE_CHECKING:  # the counter is imported by the first count, not when the server starts (issue 37)
    from ..dispatch.compiler import Compiler
    from ..dispatch.count import DispatchCounter
    from ..dispatch.measured_cost import Measurement
    from ..dispatch.preview import Preview
    from ..dispatch.results import BaselineComparison


@dataclass
class Answer:
    """The last dispatch count of one version of a document, as the server keeps it: a preview
    (with its comparison to the baseline), or why there is none. JSON only in `as_json`."""

    version: int | None
    preview: Preview | None = None
    baseline: BaselineComparison | None = None
    error: str | None = None
    compile_errors: list[dict] = field(default_factory=list)
    unsupported_syntax: bool = False  # the compiler cannot read this release's syntax

    @property
    def has_diagnostics(self) -> bool:
        """Whether it puts diagnostics on the document (compile errors, MLA004)."""
        return bool(self.compile_errors or (self.preview and self.preview.assert_sources))

    def as_json(self) -> dict:
        if self.preview is None:
            out: dict = {"error": self.error, "version": self.version, "compile_errors": self.compile_errors}
            if self.unsupported_syntax:
                out["unsupported_syntax"] = True
            return out
        out = self.preview.as_json()
        out["version"] = self.version
        if self.baseline is not None:
            out["baseline"] = self.baseline.as_json()
        return out


class DispatchState:
    """The previews of the open documents (the server's `ls.dispatch`); their settings are
    `ls.options.dispatch`."""

    def __init__(self):
        self.counter: DispatchCounter | None = None
        # Each table: uri -> (the stamp of the text it is of (open_documents.Stamp), ...)
        self.results: dict[str, tuple[Stamp, Answer]] = {}  # the last count
        self.running: dict[str, DispatchCounter] = {}
        self.lock = threading.Lock()
        self.lenses: dict[str, tuple[Stamp, list[tuple[int, str]]]] = {}
        self.timers: dict[str, threading.Timer] = {}
        # a count in progress, shared by requests for the same text
        self.inflight: dict[str, tuple[Stamp, threading.Event]] = {}
        # what the last what-if measured, for the findings of that text only
        self.measured: dict[str, tuple[Stamp, Measurement]] = {}
        # every counter handed out and not yet released (counts, dispatch_ir): `stop` cancels them
        # (weak: a caller that never releases its counter does not keep it)
        self.live: weakref.WeakSet[DispatchCounter] = weakref.WeakSet()
        self.stopped = False

    def cancel(self, uri: str) -> None:
        """A new edit: the pending timer is dropped and the running compile killed at once."""
        t = self.timers.pop(uri, None)
        if t:
            t.cancel()
        with self.lock:  # as `start`: a count registering now is either popped here or sees the edit
            running = self.running.pop(uri, None)
        if running is not None:
            running.cancel_all()

    def counting(self, uri: str, stamp: Stamp) -> bool:
        """Whether a count of this text (`stamp`) of `uri` is under way (shared by its requests)."""
        with self.lock:
            running = self.inflight.get(uri)
        return running is not None and running[0] == stamp and not running[1].is_set()

    def start(self, uri: str, own: DispatchCounter, current: Callable[[], bool]) -> bool:
        """`own` registered as the compiler of `uri`'s count, which an edit's `cancel` kills;
        False (nothing registered) when its text is no longer `current`: an edit came while the
        count was still setting up (finding the compiler), and its cancel had nothing to kill."""
        with self.lock:
            if not current():
                return False
            self.running[uri] = own
            return True

    def has_later(self, uri: str, stamp: Stamp) -> bool:
        """Whether the kept count of `uri` is of a later version of the same opening than `stamp`
        (asked with `lock` held): a count that ends after a later one's never takes its place."""
        kept = self.results.get(uri)
        if kept is None or kept[0][0] != stamp[0]:
            return False
        later, ours = kept[0][1], stamp[1]
        return later is not None and ours is not None and later > ours

    def forget(self, uri: str) -> None:
        """A closed document: its previews go (a count of it still finishing is kept under its
        stamp, which no reopened document has)."""
        self.cancel(uri)
        with self.lock:
            for table in (self.results, self.lenses, self.measured):
                table.pop(uri, None)

    def counter_for(self, opts: DispatchOptions, compiler: Compiler | None = None) -> DispatchCounter:
        """A counter of its own for one compile (own processes, cancelled per document), sharing
        the cache of the one counter made for the configured compiler (`compiler`: already found,
        by the count request)."""
        if self.counter is None:
            from ..dispatch.compiler import find_compiler
            from ..dispatch.count import DispatchCounter

            self.counter = DispatchCounter(compiler or find_compiler(opts.compiler_path), timeout=opts.timeout)
        own = self.counter.sibling()
        own.timeout = opts.timeout
        self.live.add(own)
        if self.stopped:  # after the add: a `stop` racing with us cannot miss this counter
            own.cancel_all()
        return own

    def release(self, own: DispatchCounter | None) -> None:
        """A counter of `counter_for` whose work is done."""
        if own is not None:
            self.live.discard(own)

    def stop(self) -> None:
        """The server is ending: every timer dropped, every compile killed, none started again.
        Takes no lock (a signal handler may run it while its thread holds one)."""
        self.stopped = True
        for t in list(self.timers.values()):
            t.cancel()
        for counter in list(self.live) + list(self.running.values()):
            counter.cancel_all()

"""The inputs of one dispatch count, counted as their request (`request.CountRequest`) asks: each
file read, counted (with the what-if, the stream level and the .vmfb's size asked for) and judged
against its budget, baseline or compstat goldens (`judging.judge_count`); then the baseline updates
written (`judging.write_updates`). `--dispatch-count` builds the request, calls `count_files` once
and prints what it gives back; its `shown` shows each file while the run goes on.

    run = count_files(req)  # req = request.count_request(settings, inputs=paths, ...)
    run.files[0].preview    # the count, judged (None: none; `error` says why)
    run.files[0].said       # the verdicts, and what explains a count over its baseline
    run.written, run.said   # the updates written (or none asked for); what writing them said
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Protocol

from ..source import SourceError, decode
from .compiler import CompilerError
from .count import DispatchCounter
from .judging import judge_count, write_updates
from .preview import Preview, preview
from .request import CountRequest


@dataclass
class FileCount:
    """One input counted and judged: its preview (None: no count, `error` says why: OSError,
    SourceError or CompilerError), the lines the judging said, whether it passed."""

    path: str
    preview: Preview | None = None
    said: list[str] = field(default_factory=list)
    passed: bool = True
    error: Exception | None = None


@dataclass
class FilesCount:
    """The inputs counted, in their order; the baseline updates asked for (a shard's results
    keep them for the merge), whether they were written and what writing them said."""

    files: list[FileCount] = field(default_factory=list)
    updates: list[dict] = field(default_factory=list)
    written: bool = True
    said: list[str] = field(default_factory=list)


class Shown(Protocol):
    """What a front end shows while the inputs are counted: something around each file's
    compiles (a spinner), and each file as soon as it is counted and judged."""

    def counting(self, path: str) -> contextlib.AbstractContextManager: ...

    def counted(self, done: FileCount) -> None: ...


class _Unshown:
    def counting(self, path: str) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def counted(self, done: FileCount) -> None:
        pass


def count_files(req: CountRequest, shown: Shown | None = None, write: bool = True) -> FilesCount:
    """The request's inputs counted and judged as it asks, shown to `shown` one by one; then,
    with `write` (a shard leaves it to the merge), the baseline updates `req.update_baseline`
    asks for written. A KeyboardInterrupt cancels the compiles running and is raised again."""
    counter = DispatchCounter(req.compiler, timeout=req.timeout, disk_cache=req.cache)
    attribution = req.needs_attribution
    shown = shown or _Unshown()
    run = FilesCount()
    for path in req.inputs:
        try:
            done = _count_file(counter, req, path, attribution, run.updates, shown)
        except KeyboardInterrupt:
            counter.cancel_all()
            raise
        run.files.append(done)
        shown.counted(done)
    if write and req.update_baseline and req.baseline_file:
        run.written = write_updates(req.baseline_file, run.updates, run.said, req.compstat is not None)
    return run


def _count_file(counter: DispatchCounter, req: CountRequest, path: str, attribution: bool, updates: list[dict],
                shown: Shown) -> FileCount:
    """One input read (its weights too: they are compiled), counted and judged."""
    try:
        with open(path, "rb") as f:
            src = decode(f.read(), path, weights=True)
        input_path = None if src.is_bytecode else path
        with shown.counting(path):
            pv = preview(counter, path, src.text, req.profile, list(req.flags), what_if=req.what_if,
                         stream=req.counts_stream, attribution=attribution, input_path=input_path)
            if req.binary_size:
                pv.binary_size = counter.binary_size(src.text, counter.prepare_flags(list(req.flags)).flags,
                                                     input_path=input_path)
    except (OSError, SourceError, CompilerError) as e:
        return FileCount(path, error=e)
    said: list[str] = []
    passed = judge_count(req, path, pv, src.text, said, updates)
    return FileCount(path, pv, said, passed)

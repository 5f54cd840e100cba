"""A preview: the dispatch count of a text, and with a what-if the count with the fixes applied
(both compiles at once), which dispatches exist only because of asserts, and for torch input
the source ops whose lowering put the asserts there. Both front ends show a `Preview`.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..syntax.asserts import AssertSource, trace_asserts
from .attribution import LineMap, attribution_of, describe, only_because_of_asserts
from .compiler import CompilerError
from .count import Counts, DispatchCounter, is_torch_input, untargeted_warning
from .results import Attribution, WhatIf


@dataclass
class Preview:
    path: str
    profile: str
    compiler_version: str
    flow_dispatches: int
    stream_dispatches: int | None
    per_function: dict[str, int]
    what_if: WhatIf | None
    seconds: float
    assert_sources: list[AssertSource] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    attribution: Attribution | None = None
    binary_size: int | None = None  # bytes of the .vmfb, when one was built (--binary-size)
    budget: dict | None = None  # the judging of a --dispatch-count: judging.budget_json

    def as_json(self) -> dict:
        return {"path": self.path, "profile": self.profile, "compiler_version": self.compiler_version,
                "flow_dispatches": self.flow_dispatches, "stream_dispatches": self.stream_dispatches,
                "per_function": self.per_function, "what_if": self.what_if.as_json() if self.what_if else None,
                "seconds": self.seconds, "assert_sources": [s.as_json() for s in self.assert_sources],
                "notes": list(self.notes), "warnings": list(self.warnings),
                "attribution": self.attribution.as_json() if self.attribution else None,
                **split_json(self.per_function),
                "binary_size": self.binary_size, "budget": self.budget}


def initializer_split(per_function: dict[str, int]) -> tuple[int, int]:
    """(dispatches in `util.initializer`s: hoisted constants, run once at load; dispatches in
    functions) of a count's per-function split (`attribution.dispatch_name`'s keys)."""
    init = sum(n for k, n in per_function.items() if k.startswith("util.initializer"))
    return init, sum(per_function.values()) - init


def split_json(per_function: dict[str, int]) -> dict[str, int]:
    """`initializer_split` as the JSON of a count says it."""
    init, funcs = initializer_split(per_function)
    return {"initializer_dispatches": init, "function_dispatches": funcs}


@dataclass
class FixedCount:
    """The what-if's compile: its counts (in the lines of the text as it is), how many asserts
    the fixes fixed, the traced sources of torch input, the lines the fixes deleted, notes."""

    counts: Counts
    asserts_fixed: int
    sources: list[AssertSource] = field(default_factory=list)
    removed: set[int] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)

    def as_cached(self) -> dict:
        return {"counts": self.counts.as_cached(), "n": self.asserts_fixed,
                "sources": [s.as_json() for s in self.sources], "removed": sorted(self.removed),
                "notes": self.notes}

    @classmethod
    def from_cached(cls, hit: dict) -> FixedCount:
        return cls(Counts.from_cached(hit["counts"]), hit["n"], [AssertSource.from_json(s) for s in hit["sources"]],
                   set(hit["removed"]), list(hit["notes"]))


def fixed_text(text: str, mode: str) -> tuple[str, int, list]:
    """The text with all safe fixes applied, how many asserts they fix, and their edits."""
    from ..checker import check_text
    from ..fixes import fix_text

    result = check_text(text)
    fo = fix_text(result, mode, unsafe=False)
    return fo.text, fo.fixed, fo.edits


@dataclass
class Request:
    """What one preview counts: `text` with `flags` (translated for the counter's compiler)."""

    counter: DispatchCounter
    text: str
    flags: list[str]
    stream: bool = False
    attribution: bool = False
    input_path: str | None = None

    def count(self) -> Counts:
        return self.counter.count(self.text, self.flags, stream=self.stream, attribution=self.attribution,
                                  input_path=self.input_path)


def count_fixed(req: Request, mode: str) -> FixedCount:
    """The what-if compile: torch input lowered first and fixed there, else the text fixed; its
    dispatches' lines mapped back into the text's."""
    counter, text, fl = req.counter, req.text, req.flags
    if is_torch_input(text):
        lowered = counter.lower_to_input(text, fl, input_path=req.input_path)
        name = counter.lowered_input_name(text, fl)
        sources = trace_asserts(lowered, text, name)
        fixed, n, _edits = fixed_text(lowered, mode)
        note = f"torch input: lowered with --compile-to=input, {n} asserts fixed, compiled from there"
        c = counter.count(fixed, fl, stream=req.stream, compile_from="input", attribution=req.attribution,
                          files=(name,) if name else ())
        return FixedCount(c, n, sources, notes=[note])
    fixed, n, edits = fixed_text(text, mode)
    line_map = LineMap(text, edits)
    c = counter.count(fixed, fl, stream=req.stream, attribution=req.attribution, line_map=line_map)
    if c.dispatches:  # into the lines of `text`
        c.dispatches = [d.moved(line_map) for d in c.dispatches]
    return FixedCount(c, n, removed=set(line_map.removed))


def cached_count_fixed(req: Request, mode: str) -> FixedCount:
    """`count_fixed`, cached by the unfixed text: a hit skips the check, the fixes and the
    lowering. A failed compile says it was the what-if's."""
    key = req.counter.key(f"what-if:{mode}:{int(req.stream)}:{int(req.attribution)}", req.flags, req.text)
    hit = req.counter.cache.get(key)
    if hit is not None:
        return FixedCount.from_cached(hit)
    try:
        got = count_fixed(req, mode)
    except CompilerError as e:
        if str(e) == "cancelled":
            raise
        done = "stripped" if mode == "strip" else "rewritten to util.assume.int"
        raise CompilerError(f"what-if compile (asserts {done}): {e}", e.diagnostics) from None
    req.counter.cache.put(key, got.as_cached())
    return got


def count_both(req: Request, mode: str, parallel: bool) -> tuple[Counts, FixedCount]:
    """The count as it is and the what-if, at once when there are cores for both; when one
    fails, the other is cancelled (also a compile it has yet to start)."""
    counter = req.counter
    workers = 2 if parallel and (os.cpu_count() or 1) > 1 else 1
    own_cancel = False
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            fb, fa = pool.submit(req.count), pool.submit(cached_count_fixed, req, mode)
            try:
                return fb.result(), fa.result()
            except BaseException:
                own_cancel = not counter.cancelled
                counter.cancel_all()
                raise
    finally:
        if own_cancel:  # both sides are done now: the counter serves the next file again
            counter.resume()


def preview(counter: DispatchCounter, path: str, text: str, profile: str, flags: list[str], *,
            what_if: str | None = None, stream: bool = False, parallel: bool = True,
            attribution: bool = False, input_path: str | None = None) -> Preview:
    """The counts for `text`, and with `what_if` ("strip"/"assume") the count with fixes applied.
    `attribution`: also which source ops end up in which dispatch, and (with `what_if`) which
    dispatches exist only because of asserts. `input_path`: a file that holds exactly `text`."""
    t0 = time.monotonic()
    rep = counter.prepare_flags(flags)
    req = Request(counter, text, rep.flags, stream, attribution, input_path)
    fx: FixedCount | None = None
    wi: WhatIf | None = None
    if what_if:
        b, fx = count_both(req, what_if, parallel)
        a = fx.counts
        wi = WhatIf(what_if, a.flow_dispatches, a.stream_dispatches, a.per_function, fx.asserts_fixed,
                    b.flow_dispatches - a.flow_dispatches)
    else:
        b = req.count()
    attr = None
    if attribution and b.dispatches is not None:
        lines: list[str] = text.split("\n")
        memo: dict = {}
        attr = attribution_of(describe(b.dispatches, lines, memo=memo))
        if wi is not None and fx is not None and fx.counts.dispatches is not None:
            fixed_described = describe(fx.counts.dispatches, lines, memo=memo)
            wi.only_because_of_asserts = only_because_of_asserts(attr.dispatches, fixed_described, fx.removed)
    warnings = list(rep.warnings)
    if b.untargeted:
        warnings.append(untargeted_warning(counter.compiler.version, rep.flags, b.untargeted))
    return Preview(path, profile, counter.compiler.version, b.flow_dispatches, b.stream_dispatches, b.per_function,
                   wi, round(time.monotonic() - t0, 3), assert_sources=fx.sources if fx else [],
                   notes=[*rep.notes, *(fx.notes if fx else [])], warnings=warnings, attribution=attr)

"""What a dispatch count answers, typed: the front ends keep these and write them as JSON only
at their edge (`as_json`: the fields and their order are the contract of the CLI's
`--output-format json`, the server's answers and the baseline files).

    SourceOp        a source op (1-based line and column, op name) some dispatch holds
    Dispatch        one dispatch: its name, function, root op and source ops
    Attribution     the dispatches of a compile with debug info, traced to the source
    WhatIf          the count with the fixes applied, and the dispatches only asserts cause
    Change          a dispatch one side of a comparison has and the other has not, and why
    BaselineComparison  a count against the baseline file's count (and attribution)
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class SourceOp:
    line: int
    column: int
    op: str

    def as_json(self) -> dict:
        return {"line": self.line, "column": self.column, "op": self.op}

    @classmethod
    def from_json(cls, d: dict) -> SourceOp:
        return cls(d["line"], d["column"], d["op"])


@dataclass(slots=True)
class Dispatch:
    """A dispatch, named as IREE's outlining names it (`main_dispatch_0`); `location`: its root
    op in the source (None: not in the file); `sources`: its ops in the source, sorted."""

    name: str
    function: str
    location: SourceOp | None
    sources: list[SourceOp]
    # The source lines of the `cf.assert` ops it holds (not part of the JSON: what a measured note
    # on a torch op looks up, the op's lowered asserts sharing its location).
    assert_lines: tuple[int, ...] = ()

    def as_json(self) -> dict:
        return {"name": self.name, "function": self.function,
                "location": self.location.as_json() if self.location else None,
                "sources": [s.as_json() for s in self.sources]}

    @classmethod
    def from_json(cls, d: dict) -> Dispatch:
        loc = d.get("location")
        return cls(d["name"], d["function"], SourceOp.from_json(loc) if loc else None,
                   [SourceOp.from_json(s) for s in d["sources"]])


def dispatches_json(dispatches: list[Dispatch] | None) -> list[dict] | None:
    return None if dispatches is None else [d.as_json() for d in dispatches]


@dataclass(slots=True)
class Attribution:
    dispatches: list[Dispatch]
    source_ops: int  # distinct source ops in some dispatch

    def as_json(self) -> dict:
        return {"dispatches": dispatches_json(self.dispatches), "source_ops": self.source_ops}

    @classmethod
    def from_json(cls, d: dict) -> Attribution:
        return cls([Dispatch.from_json(x) for x in d["dispatches"]], d["source_ops"])


@dataclass(slots=True)
class WhatIf:
    mode: str  # the fix applied: strip or assume
    flow_dispatches: int
    stream_dispatches: int | None
    per_function: dict[str, int]
    asserts_fixed: int
    saved: int
    # the dispatches of the count as it is with no counterpart in the what-if (None: no attribution)
    only_because_of_asserts: list[Dispatch] | None = None

    def as_json(self) -> dict:
        return {"mode": self.mode, "flow_dispatches": self.flow_dispatches,
                "stream_dispatches": self.stream_dispatches, "per_function": self.per_function,
                "asserts_fixed": self.asserts_fixed, "saved": self.saved,
                "only_because_of_asserts": dispatches_json(self.only_because_of_asserts)}

    @classmethod
    def from_json(cls, d: dict) -> WhatIf:
        only = d.get("only_because_of_asserts")
        return cls(d.get("mode", "strip"), d.get("flow_dispatches", 0), d.get("stream_dispatches"),
                   d.get("per_function", {}), d.get("asserts_fixed", 0), d.get("saved", 0),
                   None if only is None else [Dispatch.from_json(x) for x in only])


@dataclass(slots=True)
class Change:
    """A dispatch only one side of a comparison has; `causes`: what is visible of why, each a
    `{"kind": "assert" | "hoisted-initializer" | "split" | "merged", ...}` (see `diff`)."""

    name: str
    function: str
    file: str
    location: SourceOp | None
    sources: list[SourceOp]
    causes: list[dict] = field(default_factory=list)

    def as_json(self) -> dict:
        return {"name": self.name, "function": self.function, "file": self.file,
                "location": self.location.as_json() if self.location else None,
                "sources": [s.as_json() for s in self.sources], "causes": self.causes}


def changes_json(changes: list[Change] | None) -> list[dict] | None:
    return None if changes is None else [c.as_json() for c in changes]


@dataclass(slots=True)
class BaselineComparison:
    """A count against its baseline file: `error` when the file or its entry cannot be used;
    else the baseline's count, the difference, and the dispatches new and gone (None: the
    baseline or the count has no attribution, so the counts say how many, not which).
    `before`: the baseline's dispatches in the current lines (for the lenses, not in the JSON)."""

    file: str
    key: str | None = None
    flow_dispatches: int | None = None
    delta: int = 0
    new: list[Change] | None = None
    gone: list[Change] | None = None
    error: str | None = None
    before: list[Dispatch] | None = None

    def as_json(self) -> dict:
        if self.error is not None:
            return {"file": self.file, "error": self.error}
        return {"file": self.file, "key": self.key, "flow_dispatches": self.flow_dispatches,
                "delta": self.delta, "new": changes_json(self.new), "gone": changes_json(self.gone)}

"""Findings that carry their measured cost: what a what-if compile found for each MLA001 finding.

Asserts in linalg regions cost dispatches on some models (SDXL's prompt encoder: 2) and nothing
on others (BERT, GPT-2; any model at `--iree-opt-level=O3`, where IREE strips them itself). A
preview with a what-if (`dispatch.preview.preview(..., what_if=..., attribution=True)`) measured
which: this module turns its answer into one short note per finding.

    m = Measurement.of(preview, flags=extra_flags)   # None when the preview ran no what-if
    m.of_finding(finding, line0)                     # a Measured (None: not a measured rule)
    m.annotate(findings, line0, lower=True)          # copies: note added; MLA001 at information
                                                     # severity where the what-if saves nothing

A measurement belongs to the one text its preview compiled: the caller keeps it with that
text's version (the server) or uses it on the same text at once (the CLI).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from ..findings import Finding, Measured, Severity
from ..records import replace
from .attribution import by_assert_line, by_source_line
from .preview import Preview
from .results import Attribution, WhatIf

# The rules whose asserts the what-if removes and whose cost the note states. MLA002 asserts sit
# in IR that is already past dispatch creation; MLA003 ones are real checks the what-if keeps.
# MLA004: a torch op whose lowering puts asserts into linalg regions (torch input's what-if).
MEASURED_CODES = frozenset({"MLA001", "MLA004"})
_serials = itertools.count(1)


def lowered(severity: Severity) -> Severity:
    """Information for a finding that was an error or a warning; hints stay hints."""
    return Severity.INFORMATION if severity in (Severity.ERROR, Severity.WARNING) else severity


class Measurement:
    """One preview's what-if, ready to annotate the findings of the text it compiled."""

    def __init__(self, profile: str, flags: Iterable[str], what_if: WhatIf, attribution: Attribution | None,
                 flow_dispatches: int):
        self.serial = next(_serials)  # tells renderings made with different measurements apart
        self.profile = profile
        self.flags = tuple(flags)
        self.mode = what_if.mode
        self.flow_dispatches = flow_dispatches
        self.what_if_flow_dispatches = what_if.flow_dispatches
        self._by_line = by_source_line(attribution) if attribution else None
        self._asserts_at = by_assert_line(attribution) if attribution else {}
        self._rooted: dict[int, list[str]] = {}  # source line -> the dispatches rooted at its op
        for d in attribution.dispatches if attribution else []:
            if d.location is not None:
                self._rooted.setdefault(d.location.line, []).append(d.name)
        self._only = {d.name for d in what_if.only_because_of_asserts or []}

    @classmethod
    def of(cls, preview: Preview | None, flags: Iterable[str] = ()) -> Measurement | None:
        """From a `Preview`; None when there is none or it ran no what-if."""
        if preview is None or preview.what_if is None:
            return None
        return cls(preview.profile, flags, preview.what_if, preview.attribution, preview.flow_dispatches)

    @property
    def saved(self) -> int:
        return self.flow_dispatches - self.what_if_flow_dispatches

    def at_lines(self, lines: Iterable[int | None], torch_op: bool = False) -> Measured:
        """The measurement for an assert at the first of `lines` (1-based) that some dispatch
        holds; the later lines are fallbacks (the linalg op around the assert). `torch_op`: the
        line of a torch op, whose location every op of its lowering shares (and rides along on
        ops fused elsewhere): the dispatches holding the asserts located there, else those
        rooted at it, else those holding any op of it."""
        names: tuple[str, ...] | None = None
        if self._by_line is not None:
            names = ()
            for line in lines:
                if line is None:
                    continue
                found = ((self._asserts_at.get(line) or self._rooted.get(line)) if torch_op else None) \
                    or self._by_line.get(line)
                if found:
                    names = tuple(found)
                    break
        extra = tuple(n for n in names or () if n in self._only)
        return Measured(self.profile, self.flags, self.mode, self.flow_dispatches, self.what_if_flow_dispatches,
                        names, extra)

    def of_finding(self, f: Finding, line0: int = 0) -> Measured | None:
        """`line0`: the first line of the text `f`'s positions are relative to (a server piece)."""
        if f.code not in MEASURED_CODES:
            return None
        if f.code == "MLA004":  # on the torch op itself
            return self.at_lines((f.span.start_pos.line + line0 + 1,), torch_op=True)
        op_line = f.related[0].span.start_pos.line + line0 + 1 if f.related else None
        return self.at_lines((f.span.start_pos.line + line0 + 1, op_line))

    def annotate(self, findings: list[Finding], line0: int = 0, lower: bool = False) -> list[Finding]:
        """Copies of the measured findings with their `measured` set (and, with `lower`, at
        information severity where the what-if saves nothing); the others as they are."""
        out = []
        for f in findings:
            m = self.of_finding(f, line0)
            if m is None:
                out.append(f)
                continue
            out.append(replace(f, measured=m, severity=lowered(f.severity) if lower and m.free else f.severity))
        return out

"""MLA004 in a plain check of torch IR: the file lowered to `input` only, the cheap part of a
compile, and each torch op whose lowering put `cf.assert`s into linalg regions reported at its
own line (issue 38: `--check` said "0 findings" on exports whose asserts cost dispatches).

The lowering and the tracing are the what-if's (`DispatchCounter.lower_to_input`, cached under
the same key, then `syntax.asserts.trace_asserts`), so `--check` and `--check --what-if` report
the same MLA004 findings, and a later what-if or count reuses the lowering. Where the file is not
lowered (no iree-compile, a release that cannot read it, lowering turned off), `TorchLowering`
says so in one line that starts with NOT_LOWERED, never a silent "no finding".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..config import Settings
from ..findings import Finding, Severity
from ..iree_flags.strip_assertions import StripDecision
from ..rules import mla004_torch_op_lowers_to_assert as mla004
from ..syntax.asserts import trace_asserts
from ..syntax.lines import LineIndex
from ..syntax.locations import blank_locations
from ..syntax.resource_section import ir_end
from .compiler import CompilerError
from .count import DispatchCounter

NOT_LOWERED = "torch IR: its asserts appear when it is lowered"
OFF = "not lowered (--no-lower, or lower-torch = false in the config)"

# (severity, docs base URL, what the flags say about stripping): file_job.FileOutcome.torch_rule
TorchRule = tuple[Severity, "str | None", StripDecision]


@dataclass(frozen=True)
class Lowered:
    """What lowering one torch file found: its MLA004 findings, or `note` (one line) saying why
    it was not lowered."""

    findings: list[Finding]
    note: str | None = None


@dataclass
class TorchLowering:
    """Lowers torch files with `counter` and `flags` (the profile's, so the lowering is the one a
    count or a what-if makes and caches); `counter` None: `reason` says why nothing is lowered."""

    counter: DispatchCounter | None
    flags: list[str]
    reason: str = OFF

    def lower(self, text: str, lines: LineIndex, rule: TorchRule, input_path: str | None = None) -> Lowered:
        """The MLA004 findings of torch `text` (its whole text: the weights of an export that keeps
        them inline are compiled too), on the lines of `lines`. KeyboardInterrupt kills the
        compile (its process group) and removes its folder."""
        if self.counter is None:
            return Lowered([], f"{NOT_LOWERED}; {self.reason}")
        if text.find(" loc(", 0, ir_end(text)) != -1:  # its own debug locations (an export printed with
            text, input_path = blank_locations(text), None  # them) would hide its lines from the tracing
        try:
            lowered = self.counter.lower_to_input(text, self.flags, input_path=input_path)
        except CompilerError as e:
            if str(e) == "cancelled":
                raise
            return Lowered([], f"{NOT_LOWERED}; iree-compile {self.counter.compiler.version} could not lower it "
                               f"to input: {e}")
        sources = trace_asserts(lowered, text, self.counter.lowered_input_name(text, self.flags))
        return Lowered([mla004.finding(src, lines, *rule) for src in sources])


def lowering_for(settings: Settings, *, lower: bool = True, compiler: str | None = None,
                 cache: bool = True, off: str = OFF) -> TorchLowering:
    """The lowering a front end without a count request of its own uses (the Python API): the
    settings' profile and flags, the compiler beside this Python (or `compiler`); a lowering
    that says why when there is no compiler or the profile is unknown."""
    from .request import count_request

    if not lower or not settings.lower_torch:
        return TorchLowering(None, [], off)
    try:
        req = count_request(settings, compiler=compiler, cache=cache)
    except (ValueError, CompilerError) as e:
        return TorchLowering(None, [], f"not lowered: {e}")
    counter = DispatchCounter(req.compiler, timeout=req.timeout, disk_cache=cache)
    return TorchLowering(counter, counter.prepare_flags(list(req.flags)).flags)


def rule_of(settings: Settings) -> TorchRule | None:
    """MLA004's severity, docs URL and strip decision under `settings` (None: not selected)."""
    if not settings.enabled(mla004.RULE.code):
        return None
    return settings.severity_of(mla004.RULE.code), settings.docs_base_url, settings.strip_decision


def check_lowered(text: str, lines: LineIndex, whole: Callable[[], tuple[str, str | None]], *,
                  lower: bool = True) -> Lowered | None:
    """MLA004 for a front end that checked `text` with the default settings (`mla.check`): None
    when `text` is not torch IR; else the findings of its lowering, or the note saying why there
    are none. `whole()`: (the text with its weights, a file holding exactly it or None)."""
    from .count import is_torch_input

    settings = Settings()
    rule = rule_of(settings)
    if rule is None or not is_torch_input(text):
        return None
    lowering = lowering_for(settings, lower=lower, off="not lowered (lower=False)")
    if lowering.counter is None:
        return lowering.lower(text, lines, rule)
    full, path = whole()
    return lowering.lower(full, lines, rule, input_path=path)

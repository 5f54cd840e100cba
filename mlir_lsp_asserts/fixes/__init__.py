"""Fixes for assert findings: strip, or rewrite to `util.assume.int`.

A fix is data (title, mode, applicability, edits), read the same way by `--fix`/`--diff` and
by the server's code actions. Applicability follows ruff: stripping an assert that IREE never
checks (MLA001/MLA002) is safe; for a host assert (MLA003), which really runs, every fix
drops a runtime check and is unsafe.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..findings import Applicability, Finding, Fix, FixMode, TextEdit
from ..rules import RULES_BY_CODE
from ..syntax.asserts import assert_ops
from ..syntax.op_tree import Op
from ..syntax.scope import Scope
from .assume import AssumeGroup, build_groups
from .plan import apply_edits, goes_on, plan_edits

__all__ = ["attach_fixes", "attach_unit_fixes", "fix_asserts", "fix_text", "apply_edits", "FixOutcome"]


def _applicability(code: str) -> Applicability:
    return Applicability.SAFE if RULES_BY_CODE[code].strip_is_safe else Applicability.UNSAFE


def _short(msg: str | None) -> str:
    if not msg:
        return ""
    return f' "{msg[:60]}{"..." if len(msg) > 60 else ""}"'


def _assert_findings(result) -> list[tuple[Finding, Op]]:
    """The assert findings with their ops. An assert that seems to hold a region is text the
    reader could not close (a half-typed `"cf.assert"(%0) ({`): the real op has none, and
    deleting it would delete the code the region swallowed, so it gets no fix."""
    ops = {o.start: o for o in assert_ops(result.parsed) if not (o.regions or o.lazy_regions)}
    pairs = [(f, ops[f.op_start]) for f in result.findings if f.code in RULES_BY_CODE and f.op_start in ops]
    return [] if _no_fixes_for_nul(result.parsed.text, pairs) else _whole_statements(result.parsed.text, pairs)


GOES_ON_REASON = "the assert's statement goes on at the next line, past where mlir-lsp's reader ends it: no fix"
CONTINUED_REASON = ("a statement of this function goes on at a line that starts with `,`, `:` or `=`, which "
                    "mlir-lsp's fixes do not follow (their scans for uses go by lines): no fix")
# A line that starts with one of these continues the statement before it (MLIR is free-form).
_CONTINUED_LINE = re.compile(r"^[ \t]*[,:=]", re.M)


def _whole_statements(text: str, pairs: list[tuple[Finding, Op]]) -> list[tuple[Finding, Op]]:
    """The pairs whose assert ends its statement, in a top-level op with no continued line (where
    the reader may miss a use, so a fix may delete what is still used); the others get no fix,
    and say why."""
    kept = []
    continued: dict[int, bool] = {}  # per top-level op
    for f, op in pairs:
        top = op
        for outer in op.ancestors():
            top = outer
        if id(top) not in continued:
            continued[id(top)] = _CONTINUED_LINE.search(text, top.start, top.end) is not None
        if continued[id(top)]:
            f.fixes, f.assume_unavailable = [], CONTINUED_REASON
        elif goes_on(text, op):
            f.fixes, f.assume_unavailable = [], GOES_ON_REASON
        else:
            kept.append((f, op))
    return kept


# MLIR's lexer reads a NUL character as a space; the reader does not, and may read two statements
# as one: no fix is offered for such text (a fix planned on a wrong reading can break the IR).
NUL_REASON = "the text holds a NUL character, which MLIR reads as a space and mlir-lsp's reader does not: no fix"


def _no_fixes_for_nul(text: str, pairs: list[tuple[Finding, Op]]) -> bool:
    """True (and each finding says why it has no fix) when `text` holds a NUL character."""
    if "\x00" not in text:
        return False
    for f, _op in pairs:
        f.fixes, f.assume_unavailable = [], NUL_REASON
    return True




def attach_fixes(result, settings) -> None:
    """Give every assert finding its strip fix and, where sound, its assume fix."""
    pairs = _assert_findings(result)
    if not pairs:
        return
    text = result.parsed.text
    # One scope (and its use caches) per top-level op: memory stays proportional to a function.
    by_unit: dict[int, list[tuple[Finding, Op]]] = {}
    for f, op in pairs:
        unit = result.parsed.unit_at(op.start)
        by_unit.setdefault(id(unit[1]) if unit else 0, []).append((f, op))
    for unit_pairs in by_unit.values():
        _attach_checked_unit_fixes(text, unit_pairs, settings)


def attach_unit_fixes(text: str, pairs: list[tuple[Finding, Op]], settings,
                      window: tuple[int, int] | None = None, outside=None) -> set[str] | None:
    """Fixes for the asserts of one top-level op. With `window`, every edit must fall inside
    text[window[0]:window[1]] (an editor's piece of a big function); a fix that would need an
    edit outside it is not offered. `outside` (see `Scope`) answers for the rest of a big block
    when `text` is only part of it; the names found undefined in `text` are returned."""
    if _no_fixes_for_nul(text, pairs):
        return set()
    return _attach_checked_unit_fixes(text, _whole_statements(text, pairs), settings, window, outside)


def _attach_checked_unit_fixes(text: str, pairs: list[tuple[Finding, Op]], settings,
                               window: tuple[int, int] | None = None, outside=None) -> set[str] | None:
    """`attach_unit_fixes` for pairs already past `_no_fixes_for_nul` and `_whole_statements`
    (`attach_fixes` checks the whole text once, not once per unit)."""
    scope = Scope(text, window, outside=outside)
    groups, reasons = build_groups(scope, text, [op for _f, op in pairs])
    group_of = {id(a): g for g in groups for a in g.asserts}
    for f, op in pairs:
        app = _applicability(f.code)
        fixes = []
        edits = tuple(plan_edits(text, scope, [op], []))
        if _inside(edits, window):
            title = f"mlir-lsp ({f.code}): strip cf.assert{_short(f.assert_message)}"
            fixes.append(Fix(title, FixMode.STRIP, app, edits))
        g = group_of.get(id(op))
        f.assume_unavailable = None
        if g is not None:
            edits = tuple(plan_edits(text, scope, [], [g]))
            if _inside(edits, window):
                assume = Fix(f"mlir-lsp ({f.code}): rewrite to util.assume.int {g.fact}", FixMode.ASSUME, app, edits)
                fixes = [assume, *fixes] if settings.fix_mode == FixMode.ASSUME else [*fixes, assume]
            else:
                f.assume_unavailable = "the rewrite would edit lines far from the assert; use --fix"
        else:
            f.assume_unavailable = reasons.get(id(op), "not analysed")
        f.fixes = fixes
    return scope.missing


def _inside(edits, window) -> bool:
    return window is None or all(window[0] <= e.start and e.end <= window[1] for e in edits)


@dataclass
class FixOutcome:
    text: str
    fixed: int  # asserts removed or rewritten
    assumed: int  # of which rewritten to util.assume.int
    edits: list[TextEdit]


def fix_text(result, mode: str = FixMode.STRIP, unsafe: bool = False, codes: set[str] | None = None) -> FixOutcome:
    """Apply all applicable fixes of a check result at once (the CLI's --fix, fixAll)."""
    return fix_asserts(result.parsed.text, _assert_findings(result), mode, unsafe, codes)


def fix_asserts(text: str, pairs: list[tuple[Finding, Op]], mode: str = FixMode.STRIP, unsafe: bool = False,
                codes: set[str] | None = None) -> FixOutcome:
    """Apply the fixes of these (finding, assert op) pairs of `text` at once."""
    chosen = [(f, op) for f, op in pairs
              if (unsafe or _applicability(f.code) == Applicability.SAFE) and (codes is None or f.code in codes)]
    if not chosen:
        return FixOutcome(text, 0, 0, [])
    scope = Scope(text)
    groups: list[AssumeGroup] = []
    strip_ops = [op for _f, op in chosen]
    if mode == FixMode.ASSUME:
        groups, _reasons = build_groups(scope, text, strip_ops)
        in_group = {id(a) for g in groups for a in g.asserts}
        strip_ops = [op for op in strip_ops if id(op) not in in_group]
    edits = plan_edits(text, scope, strip_ops, groups)
    return FixOutcome(apply_edits(text, edits), len(chosen), sum(len(g.asserts) for g in groups), edits)

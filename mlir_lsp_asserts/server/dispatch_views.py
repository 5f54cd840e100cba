"""What the editor shows of the last dispatch count of a document: the code lenses' titles,
hover lines, and diagnostics (the compiler's errors, MLA004). Read from the `Answer`s the
server keeps; nothing here compiles."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..rules import doc_url
from ..rules import mla004_torch_op_lowers_to_assert as mla004
from ..syntax.tokens import symbol_after
from .dispatch_state import Answer, DispatchState
from .open_documents import Stamp
from .protocol import Server

if TYPE_CHECKING:  # the dispatch code is imported by the first count (issue 37): a view shows a count's answer
    from ..dispatch.preview import Preview
    from ..dispatch.results import BaselineComparison, Dispatch

OLDER_SYNTAX = "older IREE syntax"  # what the status bar and lens say when the compiler cannot read a file


def _functions(text: str) -> list[tuple[int, int, str]]:
    """(first line, last line, symbol name) of each top-level op with a body (1-based lines)."""
    from ..syntax.parsed_text import parse

    parsed = parse(text)
    lines = parsed.lines
    funcs = []
    for _chunk, op in parsed.units():
        if op.regions or op.lazy_regions:
            name = symbol_after(text, op.name_start, min(op.end, op.name_start + 2000))
            if name:
                funcs.append((lines.line_of(op.start) + 1, lines.line_of(max(op.start, op.end - 1)) + 1, name))
    return funcs


def _inside(dispatches: list[Dispatch], first: int, last: int) -> list[Dispatch]:
    return [d for d in dispatches if d.location and first <= d.location.line <= last]


def attribution_lenses(text: str, pv: Preview, baseline: BaselineComparison | None = None) -> list[tuple[int, str]]:
    """(0-based line, title) of the lenses attribution gives: per source function, the dispatches
    whose root op lies in it (and how that differs from the baseline's dispatches); on each op
    whose dispatch exists only because of asserts, its name; on each op whose dispatch the
    baseline has not, its name and cause."""
    attr = pv.attribution
    if not attr:
        return []
    before = baseline.before if baseline is not None else None
    out = []
    for first, last, name in _functions(text):
        mine = _inside(attr.dispatches, first, last)
        if mine:
            hoisted = sum(1 for d in mine if d.function.startswith("util.initializer"))
            title = f"@{name}: {len(mine)} dispatch{'es' if len(mine) != 1 else ''}"
            if hoisted:
                title += f" ({hoisted} hoisted into initializers)"
            if before is not None:
                was = len(_inside(before, first, last))
                if was != len(mine):
                    title += f" ({len(mine) - was:+d} vs baseline)"
            out.append((first - 1, title))
    for d in (pv.what_if.only_because_of_asserts if pv.what_if else None) or []:
        if d.location:
            out.append((d.location.line - 1,
                        f"dispatch {d.name} exists only because of cf.assert: gone with the asserts removed"))
    for e in (baseline.new if baseline is not None else None) or []:
        if e.location:
            from ..dispatch.diff import causes_text

            out.append((e.location.line - 1, f"new vs baseline: dispatch {e.name}: {causes_text(e)}"))
    return out


def count_diagnostics(ls: Server, uri: str, stamp: Stamp) -> list[types.Diagnostic]:
    """The diagnostics of the last dispatch count, for the text it compiled: the errors of a
    failed compile (source `iree-compile`), or MLA004 on the torch ops whose lowering put
    asserts into linalg regions."""
    with ls.dispatch.lock:
        r = ls.dispatch.results.get(uri)
    if not r or r[0] != stamp:
        return []
    answer = r[1]
    if answer.unsupported_syntax:
        return [syntax_diagnostic(answer)]
    out = compile_error_diagnostics(uri, answer.compile_errors)
    if not ls.settings.enabled("MLA004") or answer.preview is None:
        return out
    strip = ls.settings.strip_decision  # the dispatch flags strip the lowered asserts: say so
    stripped = f"; {mla004.when_stripped(strip)}" if strip.stripped else ""
    for src in answer.preview.assert_sources:
        line, col = src.line - 1, src.column - 1
        out.append(types.Diagnostic(
            range=types.Range(types.Position(line, col), types.Position(line, col + len(src.op))),
            message=mla004.message(src) + stripped,
            severity=types.DiagnosticSeverity.Information, code="MLA004", source="mlir-lsp",
            code_description=types.CodeDescription(
                href=doc_url("MLA004", ls.settings.docs_base_url))))
    return out


def syntax_diagnostic(answer: Answer) -> types.Diagnostic:
    """One note, at information severity, that the compiler cannot read the file's syntax (as the
    parser diagnostics say it), instead of the compiler's error."""
    from ..dispatch.compiler import other_release_syntax

    e = other_release_syntax(answer.compile_errors) or {"line": 1, "column": 1}
    line, col = max((e["line"] or 1) - 1, 0), max((e["column"] or 1) - 1, 0)
    return types.Diagnostic(range=types.Range(types.Position(line, col), types.Position(line, col + 1)),
                            message=f"dispatch count {answer.error}; it is probably another IREE release's",
                            severity=types.DiagnosticSeverity.Information, source="iree-compile")


def compile_error_diagnostics(uri: str, errors: list[dict]) -> list[types.Diagnostic]:
    """The compiler's diagnostics at their lines (those at no line of this file go on line 1)."""
    sev = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
           "remark": types.DiagnosticSeverity.Information}
    out = []
    for e in errors[:100]:
        line, col = max((e["line"] or 1) - 1, 0), max((e["column"] or 1) - 1, 0)
        rng = types.Range(types.Position(line, col), types.Position(line, col + 1))
        related = [types.DiagnosticRelatedInformation(
            types.Location(uri, types.Range(types.Position(n["line"] - 1, max(n["column"] - 1, 0)),
                                            types.Position(n["line"] - 1, max(n["column"] - 1, 0) + 1))),
            n["message"]) for n in e.get("notes", []) if n["line"]]
        message = e["message"] + "".join(f"\nnote: {n['message']}" for n in e.get("notes", []) if not n["line"])
        severity = sev.get(e["severity"], types.DiagnosticSeverity.Error)
        out.append(types.Diagnostic(range=rng, message=message, severity=severity,
                                    source="iree-compile", related_information=related or None))
    return out


def hover_lines(state: DispatchState, uri: str, stamp: Stamp, line: int) -> list[str]:
    """Markdown lines for a hover on the op at 0-based `line` (e.g. a cf.assert): the dispatches
    it ends up in, and those of them that exist only because of asserts (last preview, with
    attribution). For the server's hover: `parts.extend(dispatch_feature.hover_lines(...))`."""
    pv = _preview(state, uri, stamp)
    if pv is None or not pv.attribution:
        return []
    from ..dispatch.attribution import by_source_line

    names = by_source_line(pv.attribution).get(line + 1, [])
    if not names:
        return []
    only = {d.name for d in (pv.what_if.only_because_of_asserts if pv.what_if else None) or []}
    out = [f"- ends up in dispatch{'es' if len(names) > 1 else ''} " + ", ".join(f"`{n}`" for n in names[:8])
           + (" ..." if len(names) > 8 else "")]
    extra = [n for n in names if n in only]
    if extra:
        out.append("- " + ", ".join(f"`{n}`" for n in extra) + " exist" + ("s" if len(extra) == 1 else "")
                   + " only because of asserts (gone with them removed)")
    return out


def _preview(state: DispatchState, uri: str, stamp: Stamp) -> Preview | None:
    """The preview of the last count, when it compiled this text."""
    with state.lock:
        r = state.results.get(uri)
    return r[1].preview if r and r[0] == stamp else None


def saved_dispatches(state: DispatchState, uri: str, stamp: Stamp) -> int | None:
    pv = _preview(state, uri, stamp)
    return pv.what_if.saved if pv is not None and pv.what_if else None


def lens_title(answer: Answer) -> str:
    if answer.unsupported_syntax:
        return f"mlir-lsp: dispatches: n/a ({OLDER_SYNTAX})"
    pv = answer.preview
    if pv is None:
        return f"mlir-lsp: dispatch count failed: {(answer.error or '')[:120]}"
    title = f"{pv.flow_dispatches} dispatches ({pv.profile})"
    w = pv.what_if
    if w:
        title += f", {w.flow_dispatches} with the asserts removed ({w.flow_dispatches - pv.flow_dispatches:+d})"
    b = answer.baseline
    if b and b.error is not None:
        title += f"; baseline: {b.error[:100]}"
    elif b:
        title += f"; {b.delta:+d} vs baseline" if b.delta else "; same as baseline"
    return title

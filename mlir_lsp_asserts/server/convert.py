"""Translations between the core's data (offsets, findings, fixes) and LSP types.

A live document answers in document coordinates (`incremental.located`); a finding's own spans
are relative to the text it was checked in, so the helpers that take a finding take the first
line of that text (`FindingGroup.first_line`) and shift by it.
"""

from __future__ import annotations

from lsprotocol import types

from ..findings import Finding, Span, TextEdit
from ..rules import Severity
from ..syntax.lines import LineIndex

SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFORMATION: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}


def lsp_range(lines: LineIndex, start: int, end: int, line0: int = 0) -> types.Range:
    s, e = lines.position(start), lines.position(end)
    return types.Range(types.Position(s[0] + line0, s[1]), types.Position(e[0] + line0, e[1]))


def to_range(r: tuple[tuple[int, int], tuple[int, int]]) -> types.Range:
    """A document range ((line, character), (line, character)) as LSP's."""
    (sl, sc), (el, ec) = r
    return types.Range(types.Position(sl, sc), types.Position(el, ec))


def range_edits(edits: list[tuple[tuple[tuple[int, int], tuple[int, int]], str]]) -> list[types.TextEdit]:
    """Document ranges and their new texts as LSP text edits."""
    return [types.TextEdit(to_range(r), new) for r, new in edits]


def span_range(span: Span, line0: int = 0) -> types.Range:
    return types.Range(types.Position(span.start_pos.line + line0, span.start_pos.character),
                       types.Position(span.end_pos.line + line0, span.end_pos.character))


def diagnostic(uri: str, f: Finding, line0: int = 0) -> types.Diagnostic:
    related = [
        types.DiagnosticRelatedInformation(types.Location(uri, span_range(r.span, line0)), r.message)
        for r in f.related
    ]
    return types.Diagnostic(
        range=span_range(f.span, line0),
        message=f.full_message,
        severity=SEVERITY[f.severity],
        code=f.code,
        code_description=types.CodeDescription(href=f.doc_url) if f.doc_url else None,
        source="mlir-lsp",
        related_information=related or None,
    )


def _pos_json(p, line0: int) -> dict:
    return {"line": p.line + line0, "character": p.character}


def _range_json(span: Span, line0: int) -> dict:
    return {"start": _pos_json(span.start_pos, line0), "end": _pos_json(span.end_pos, line0)}


def diagnostic_json(uri: str, f: Finding, line0: int = 0) -> dict:
    """`diagnostic(...)` as the JSON the protocol sends, built directly (a publish of hundreds
    of findings through attrs and cattrs costs ~15 ms; this costs well under one)."""
    d = {"range": _range_json(f.span, line0), "message": f.full_message, "severity": int(SEVERITY[f.severity]),
         "code": f.code, "source": "mlir-lsp"}
    if f.doc_url:
        d["codeDescription"] = {"href": f.doc_url}
    if f.related:
        d["relatedInformation"] = [{"location": {"uri": uri, "range": _range_json(r.span, line0)}, "message": r.message}
                                   for r in f.related]
    return d


def plain_diagnostic(message: str, severity=types.DiagnosticSeverity.Error, line: int = 0,
                     source: str = "mlir-lsp") -> types.Diagnostic:
    at = types.Position(line, 0)
    return types.Diagnostic(types.Range(at, at), message, severity=severity, source=source)


def text_edits(lines: LineIndex, edits: list[TextEdit], line0: int = 0) -> list[types.TextEdit]:
    return [types.TextEdit(lsp_range(lines, e.start, e.end, line0), e.new_text) for e in edits]


def workspace_edit(uri: str, version: int | None, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
    return types.WorkspaceEdit(document_changes=[
        types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
            edits=edits,
        )
    ])

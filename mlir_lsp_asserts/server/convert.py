"""Translations between the core's data (offsets, findings, fixes) and LSP types.

A live document answers in document coordinates (`incremental.located`); a finding's own spans
are relative to the text it was checked in, so the helpers that take a finding take the first
line of that text (`FindingGroup.first_line`) and shift by it. A publish's JSON is built without
lsprotocol, in `diagnostics_json.py` (the early start sends it before pygls is imported).
"""

from __future__ import annotations

from lsprotocol import types

from ..findings import Finding, Span, TextEdit
from ..syntax.lines import LineIndex
from . import diagnostics_json
from .diagnostics_json import diagnostic_json as diagnostic_json  # a finding's JSON, built without lsprotocol

SEVERITY = {severity: types.DiagnosticSeverity(n) for severity, n in diagnostics_json.SEVERITY.items()}


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

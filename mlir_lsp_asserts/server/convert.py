"""Translations between the core's data (offsets, findings, fixes) and LSP types."""

from __future__ import annotations

from lsprotocol import types

from ..findings import Finding, TextEdit
from ..rules import Severity
from ..syntax.index import LineIndex

SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFORMATION: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}


def lsp_range(lines: LineIndex, start: int, end: int) -> types.Range:
    s, e = lines.position(start), lines.position(end)
    return types.Range(types.Position(*s), types.Position(*e))


def diagnostic(uri: str, lines: LineIndex, f: Finding) -> types.Diagnostic:
    related = [
        types.DiagnosticRelatedInformation(
            types.Location(uri, lsp_range(lines, r.span.start, r.span.end)), r.message)
        for r in f.related
    ]
    return types.Diagnostic(
        range=lsp_range(lines, f.span.start, f.span.end),
        message=f.message,
        severity=SEVERITY[f.severity],
        code=f.code,
        code_description=types.CodeDescription(href=f.doc_url) if f.doc_url else None,
        source="mlir-lsp",
        related_information=related or None,
        data={"op_start": f.op_start, "code": f.code},
    )


def text_edits(lines: LineIndex, edits) -> list[types.TextEdit]:
    return [types.TextEdit(lsp_range(lines, e.start, e.end), e.new_text) for e in edits]


def workspace_edit(uri: str, version: int | None, lines: LineIndex, edits: list[TextEdit]) -> types.WorkspaceEdit:
    return types.WorkspaceEdit(document_changes=[
        types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
            edits=text_edits(lines, edits),
        )
    ])

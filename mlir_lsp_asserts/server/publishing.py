"""Diagnostics: the checker's findings (rendered once per piece of the document and reused
until that piece changes or moves), then each other source's (the real parser, the compiler:
`ls.diagnostic_sources`) for the same version, pushed as one publish, or pulled with
`textDocument/diagnostic` by clients that prefer it (never both)."""

from __future__ import annotations

import functools
import json
import re

from lsprotocol import types
from pygls.protocol import default_converter

from . import dispatch_feature
from .convert import diagnostic_json, plain_diagnostic
from .open_documents import OpenDocument


@functools.cache
def converter():
    """LSP objects <-> JSON, as pygls converts them (it offers no public handle on its own); built
    on first use (issue 37): neither `initialize` nor a publish of the checker's findings needs it."""
    return default_converter()


# A publish lists at most this many findings, then one summary (like other linters' caps).
MAX_PUBLISHED = 2000
POSITION_LINE = re.compile(r'\{"line": (\d+)')


def all_diagnostics(ls, uri: str) -> tuple[int | None, list[types.Diagnostic]]:
    """The document's version and all its diagnostics, as LSP objects (pull requests)."""
    doc = ls.documents.get(uri)
    if doc is None:
        return None, []
    params = json.loads(publish_json(ls, doc))
    conv = converter()
    return doc.version, [conv.structure(d, types.Diagnostic) for d in params["diagnostics"]]

def _other_diagnostics(ls, doc: OpenDocument) -> list[types.Diagnostic]:
    """What the other sources (the real parser, the compiler) say of this version."""
    return [d for source in ls.diagnostic_sources for d in source(doc)]


def publish_json(ls, doc: OpenDocument) -> str:
    """The params of a publish as JSON text. Each piece keeps its findings' JSON for the line
    it starts at, so an edit re-renders only the pieces it changed or moved."""
    live = doc.live
    parts = [json.dumps(converter().unstructure(plain_diagnostic(doc.error)))] if doc.error else []
    if problem := doc.tail_problem():
        parts.append(json.dumps(converter().unstructure(plain_diagnostic(problem[1], types.DiagnosticSeverity.Error,
                                                                  line=problem[0]))))
    shown = 0
    measured = dispatch_feature.measurement(ls.dispatch, doc.uri, doc.stamp)
    # A rendering holds for its first line and the measurement it shows (none, or one what-if).
    lower = doc.live.settings.measured_severity  # the file's settings (file_settings)
    tag = None if measured is None else (measured.serial, lower)
    def render(findings, line0: int) -> str:
        if measured is not None:
            findings = measured.annotate(findings, line0, lower)
        return ", ".join(json.dumps(diagnostic_json(doc.uri, f, line0)) for f in findings)

    # Unmeasured findings move with their lines (a measurement is matched by line: rendered again).
    for rendered, count, line0 in live.rendered_findings(render, tag, moved if measured is None else None):
        parts.append(rendered)
        shown += count
        if shown >= MAX_PUBLISHED and live.finding_count() > shown:
            parts.append(json.dumps(converter().unstructure(not_shown(live.finding_count() - shown, line0))))
            break
    parts.extend(json.dumps(converter().unstructure(d)) for d in _other_diagnostics(ls, doc))
    version = "null" if doc.version is None else str(int(doc.version))
    diagnostics = ", ".join(x for x in parts if x)
    return f'{{"uri": {json.dumps(doc.uri)}, "version": {version}, "diagnostics": [{diagnostics}]}}'

def moved(rendered: str, lines: int) -> str:
    """Diagnostics rendered by `diagnostic_json`, `lines` lines further down. Every position is a
    `{"line": N, ...}` object, and `{"` never occurs inside a JSON string (its `"` is escaped)."""
    return POSITION_LINE.sub(lambda m: f'{{"line": {int(m.group(1)) + lines}', rendered)


def not_shown(count: int, line: int) -> types.Diagnostic:
    """The one diagnostic that stands for the findings past `MAX_PUBLISHED`."""
    return plain_diagnostic(f"mlir-lsp: {count} more findings not shown "
                            "(run `mlir-lsp --check --statistics` for all of them)",
                            types.DiagnosticSeverity.Information, line=line)


def publish(ls, uri: str, refresh_pull: bool = False) -> None:
    """Push diagnostics, unless the client pulls them for this document (then pushing would
    show every finding twice): clients that pull get a refresh request instead."""
    if uri not in ls.documents:
        return
    if uri in ls.pulled:
        caps = ls.client_capabilities
        ws = caps.workspace if caps else None
        if refresh_pull and ws and ws.diagnostics and ws.diagnostics.refresh_support:
            ls.workspace_diagnostic_refresh(None)
        return
    ls.protocol.send_notification_json(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, publish_json(ls, ls.documents[uri]))


def pull_diagnostics(ls, params: types.DocumentDiagnosticParams):
    uri = params.text_document.uri
    if uri not in ls.documents:
        return types.RelatedFullDocumentDiagnosticReport(items=[])
    if uri not in ls.pulled:  # from now on this client pulls: clear what was pushed
        ls.pulled.add(uri)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
    return types.RelatedFullDocumentDiagnosticReport(items=ls.diagnostics(uri)[1])


def setup(server) -> None:
    options = types.DiagnosticOptions(inter_file_dependencies=False, workspace_diagnostics=False)
    server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC, options)(pull_diagnostics)

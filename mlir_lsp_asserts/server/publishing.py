"""Diagnostics: the checker's findings (rendered once per piece of the document and reused
until that piece changes or moves), then each other source's (the real parser, the compiler:
`ls.diagnostic_sources`) for the same version, pushed as one publish, or pulled with
`textDocument/diagnostic` by clients that prefer it (never both)."""

from __future__ import annotations

import functools
import json

from lsprotocol import types
from pygls.protocol import default_converter

from . import dispatch_feature
from .convert import plain_diagnostic
from .diagnostics_json import MAX_PUBLISHED as MAX_PUBLISHED
from .diagnostics_json import not_shown_message, publish_params_json
from .open_documents import OpenDocument


@functools.cache
def converter():
    """LSP objects <-> JSON, as pygls converts them (it offers no public handle on its own); built
    on first use (issue 37): neither `initialize` nor a publish of the checker's findings needs it."""
    return default_converter()


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
    """The params of a publish as JSON text (`diagnostics_json.publish_params_json`, which the
    early start's first publish of a document uses too), with the last dispatch measurement of
    this text and the other sources' diagnostics."""
    measured = dispatch_feature.measurement(ls.dispatch, doc.uri, doc.stamp)
    others = [converter().unstructure(d) for d in _other_diagnostics(ls, doc)]
    return publish_params_json(doc, measured, others)


def not_shown(count: int, line: int) -> types.Diagnostic:
    """The one diagnostic that stands for the findings past `MAX_PUBLISHED`."""
    return plain_diagnostic(not_shown_message(count), types.DiagnosticSeverity.Information, line=line)


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

"""Document sync: didOpen, didChange, didSave, didClose. The documents are ours (an
`OpenDocument` each, kept in pieces), not pygls's workspace, whose per-change rebuild of the whole
text costs 300 ms on 50 MB."""

from __future__ import annotations

import contextlib
import gc
import logging

from lsprotocol import types

from . import dispatch_feature, file_settings, workspace_feature
from .open_documents import OpenDocument

log = logging.getLogger(__name__)


def _settle(doc: OpenDocument, rebuilds_before: int) -> None:
    """After a large document was read in whole: collect the read's garbage, then move what is
    left out of the collector's way (gc.freeze), so later collections do not walk it and no
    keystroke pays a 100 ms full collection. Unfrozen first, so old documents can be freed."""
    if doc.live.in_pieces and doc.live.rebuilds != rebuilds_before:
        gc.unfreeze()
        gc.collect()
        gc.freeze()


# A text at least this large is read with the collector paused (`collector_paused`).
PAUSE_COLLECTOR_CHARS = 1 << 20


@contextlib.contextmanager
def collector_paused(chars: int):
    """The garbage collector off while a large text is read whole: its collections over the
    hundreds of thousands of objects the read makes (85,000 small functions: ops, pieces) were a
    third of the read's time (1.8 s -> 1.3 s in process). The read makes no garbage cycles worth
    a collection meanwhile; `_settle` collects once after it, and freezes what is left."""
    if chars < PAUSE_COLLECTOR_CHARS or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def did_open(ls, params: types.DidOpenTextDocumentParams):
    td = params.text_document
    with ls.lock, collector_paused(len(td.text)):
        ls.documents[td.uri] = doc = OpenDocument(td.uri, td.version, td.text, file_settings.for_uri(ls, td.uri))
    workspace_feature.opened(ls, td.uri)
    ls.publish(td.uri)
    # the diagnostics are out: now the read's leftovers (the outlines), then its garbage
    with ls.lock:
        doc.live.finish_reading()
    _settle(doc, 0)
    dispatch_feature.schedule(ls, td.uri, "open")
    ls.parser_diagnostics.schedule(ls, td.uri)


def did_change(ls, params: types.DidChangeTextDocumentParams):
    uri = params.text_document.uri
    doc = ls.documents.get(uri)
    if doc is None:
        log.warning("didChange for a document that is not open: %s", uri)
        return
    before = doc.live.rebuilds
    ranged: list[tuple[int, int, int]] = []
    shifts: list[tuple[int, int, int]] | None = ranged  # None after a whole-text change
    for ch in params.content_changes:
        rng = getattr(ch, "range", None)
        if rng is None:
            shifts = None
            break
        ranged.append((rng.start.line, rng.end.line, ch.text.count("\n")))
    whole = max((len(ch.text) for ch in params.content_changes if getattr(ch, "range", None) is None), default=0)
    with ls.lock, collector_paused(whole):
        doc.change(params.content_changes, params.text_document.version)
    if shifts is not None:  # the real parser's last findings follow the lines they are on
        ls.parser_diagnostics.shift(uri, shifts, doc.stamp)
    ls.publish(uri)
    _settle(doc, before)
    dispatch_feature.schedule(ls, uri, "change")
    ls.parser_diagnostics.schedule(ls, uri)


def did_save(ls, params: types.DidSaveTextDocumentParams):
    if params.text_document.uri in ls.documents:
        dispatch_feature.schedule(ls, params.text_document.uri, "save")


def did_close(ls, params: types.DidCloseTextDocumentParams):
    uri = params.text_document.uri
    with ls.lock:
        ls.documents.pop(uri, None)
    ls.pulled.discard(uri)
    ls.dispatch.forget(uri)
    ls.parser_diagnostics.forget(uri)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
    workspace_feature.closed(ls, uri)


def setup(server) -> None:
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(did_open)
    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(did_change)
    server.feature(types.TEXT_DOCUMENT_DID_SAVE)(did_save)
    server.feature(types.TEXT_DOCUMENT_DID_CLOSE)(did_close)

"""A document's diagnostics as the JSON the protocol sends, built without lsprotocol or cattrs.

The one source of a publish's params: `publishing.publish_json` (the pygls server) and
`early_start` (the first answers, before pygls is imported) both call `publish_params_json`,
so the first publish of a document is the same text whichever of them sends it. The findings'
JSON is built directly (a publish of hundreds of findings through attrs and cattrs costs ~15 ms;
this costs well under one), in the key order lsprotocol's converter gives, without spaces: a
publish of 680 findings is 6% smaller, which the client reads and parses after every edit.
`notification_frame` is the one builder of a notification's bytes on the wire (header and body).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..findings import Finding, Severity, Span
from .framing import message_frame

if TYPE_CHECKING:
    from .open_documents import OpenDocument

# LSP's DiagnosticSeverity numbers
SEVERITY = {Severity.ERROR: 1, Severity.WARNING: 2, Severity.INFORMATION: 3, Severity.HINT: 4}
ERROR, INFORMATION = 1, 3
# A publish lists at most this many findings, then one summary (like other linters' caps).
MAX_PUBLISHED = 2000
POSITION_LINE = re.compile(r'\{"line":(\d+)')
_dumps = json.JSONEncoder(separators=(",", ":")).encode  # json.dumps's C encoder, without spaces


def _pos_json(p, line0: int) -> dict:
    return {"line": p.line + line0, "character": p.character}


def _range_json(span: Span, line0: int) -> dict:
    return {"start": _pos_json(span.start_pos, line0), "end": _pos_json(span.end_pos, line0)}


def diagnostic_json(uri: str, f: Finding, line0: int = 0) -> dict:
    """A finding (of a text starting at line `line0`) as an LSP Diagnostic's JSON."""
    d = {"range": _range_json(f.span, line0), "message": f.full_message, "severity": SEVERITY[f.severity],
         "code": f.code, "source": "mlir-lsp"}
    if f.doc_url:
        d["codeDescription"] = {"href": f.doc_url}
    if f.related:
        d["relatedInformation"] = [{"location": {"uri": uri, "range": _range_json(r.span, line0)}, "message": r.message}
                                   for r in f.related]
    return d


def plain_json(message: str, severity: int = ERROR, line: int = 0, source: str = "mlir-lsp") -> dict:
    """A diagnostic at the start of `line` with no code (`convert.plain_diagnostic`'s JSON)."""
    at = {"line": line, "character": 0}
    return {"range": {"start": at, "end": dict(at)}, "message": message, "severity": severity, "source": source}


def not_shown_message(count: int) -> str:
    return f"mlir-lsp: {count} more findings not shown (run `mlir-lsp --check --statistics` for all of them)"


def moved(rendered: str, lines: int) -> str:
    """Diagnostics rendered by `diagnostic_json`, `lines` lines further down. Every position is a
    `{"line":N,...}` object, and `{"` never occurs inside a JSON string (its `"` is escaped)."""
    return POSITION_LINE.sub(lambda m: f'{{"line":{int(m.group(1)) + lines}', rendered)


def publish_params_json(doc: OpenDocument, measured: Any = None, others: Iterable[dict] = ()) -> str:
    """The params of a publish as JSON text: the document's own problems (not checked, an
    unclosed resource section), the checker's findings (with what `measured`, a dispatch
    measurement of this text, says of them), then `others` (other sources' diagnostics, as
    JSON). Each piece keeps its findings' JSON for the line it starts at, so an edit re-renders
    only the pieces it changed or moved."""
    live = doc.live
    parts = [_dumps(plain_json(doc.error))] if doc.error else []
    if problem := doc.tail_problem():
        parts.append(_dumps(plain_json(problem[1], ERROR, line=problem[0])))
    shown = 0
    # A rendering holds for its first line and the measurement it shows (none, or one what-if).
    lower = live.settings.measured_severity  # the file's settings (file_settings)
    tag = None if measured is None else (measured.serial, lower)

    def render(findings, line0: int) -> str:
        if measured is not None:
            findings = measured.annotate(findings, line0, lower)
        return ",".join(_dumps(diagnostic_json(doc.uri, f, line0)) for f in findings)

    # Unmeasured findings move with their lines (a measurement is matched by line: rendered again).
    for rendered, count, line0 in live.rendered_findings(render, tag, moved if measured is None else None):
        parts.append(rendered)
        shown += count
        if shown >= MAX_PUBLISHED and live.finding_count() > shown:
            parts.append(_dumps(plain_json(not_shown_message(live.finding_count() - shown), INFORMATION,
                                               line=line0)))
            break
    parts.extend(_dumps(d) for d in others)
    version = "null" if doc.version is None else str(int(doc.version))
    diagnostics = ",".join(x for x in parts if x)
    return f'{params_prefix(doc.uri)}"version":{version},"diagnostics":[{diagnostics}]}}'


def params_prefix(uri: str) -> str:
    """How the params of a publish for `uri` begin (`publish_params_json`)."""
    return f'{{"uri":{_dumps(uri)},'


def notification_frame(method: str, params_json: str) -> bytes:
    """A notification whose params are JSON text, as the bytes the protocol sends."""
    return message_frame(f'{{"jsonrpc":"2.0","method":"{method}","params":{params_json}}}')

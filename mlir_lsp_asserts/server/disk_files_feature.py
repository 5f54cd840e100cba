"""Files the client never syncs: checked and fixed on disk, their findings published for their URI.

VS Code gives no extension the text of a document above 50 MB (`MODEL_SYNC_LIMIT`): no didOpen
reaches the server, yet diagnostics published for the file's URI still show (Problems panel,
squiggles). The extension asks for such a file (`.mlir` or `.mlirbc`):

    mlirLsp/checkFromDisk {uri, force?}
        -> {uri, megabytes, findings, fixable, error, notes}
        checks the file on disk as `mlir-lsp --check` does (same cost: an export's resource
        section is not read; nothing is kept in memory) and publishes its findings; an
        unchanged file (same size, mtime and inode) is not checked again unless `force` (e.g. after
        its config file changed)
    mlirLsp/fixOnDisk {uri, mode: "strip" | "assume", unsafe?}
        -> {fixed, remaining, error}
        `mlir-lsp --check --fix` on it (the fixed text verified by the real parser, written
        atomically), then publishes what is left
    mlirLsp/diskFileClosed {uri}   (notification)
        the editor closed it: its findings are cleared (the workspace watch takes it back)

A file checked this way also answers `mlirLsp/dispatchCount` and `mlirLsp/dispatchIR`, with its
text read from disk when asked (`DiskFiles.text`). Paths outside the workspace folders are
refused (guards.py); a document the client has open keeps its own diagnostics and is neither
checked nor written here. Settings are an open document's and the workspace scan's
(`config.editor_settings_for`): the config file found for the path, else the editor's settings
(a broken config file is the answer's error, shown at line 1, as `mlir-lsp --check` says it).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from lsprotocol import types

from ..file_job import FileOutcome, JobOptions, run_file
from ..files import file_stamp
from ..findings import Applicability, FixMode
from ..records import replace
from . import file_settings, guards, workspace_feature
from .arguments import command_arguments
from .convert import diagnostic, plain_diagnostic
from .disk_files_state import DiskFiles
from .open_documents import uri_path
from .publishing import MAX_PUBLISHED, not_shown

log = logging.getLogger(__name__)
CHECK_REQUEST = "mlirLsp/checkFromDisk"
FIX_REQUEST = "mlirLsp/fixOnDisk"
CLOSED_NOTIFICATION = "mlirLsp/diskFileClosed"
MB = 1024 * 1024


def _param(params, name: str, default=None):
    return command_arguments(params).get(name, default)


def _job(ls, path: str) -> JobOptions:
    """A job with the file's settings in the server's one order (file_settings); a config file
    that cannot be used is left to the job, which answers its error as `mlir-lsp --check` does.
    Bytecode is read in a child process (`isolated`): MLIR never runs in the server's own."""
    settings, problem = file_settings.for_path(ls, path)
    return JobOptions(isolated=True) if problem else JobOptions(settings=settings, isolated=True)


def _target(ls, uri) -> tuple[str | None, str | None]:
    """(path, None) of a request's file, or (None, why it is refused)."""
    if not isinstance(uri, str) or not uri.startswith("file:"):
        return None, f"not a file URI: {uri!r}"
    if refused := guards.refuse_path(ls, uri):
        return None, refused
    if uri in ls.documents:
        return None, ("the document is open in the editor: its findings come from the editor's text "
                      "(use the quick fixes or fix all there)")
    return uri_path(uri), None


def _publish(ls, uri: str, out: FileOutcome | None) -> None:
    """Publish a job's findings for `uri` (none: clear) from a worker thread, and wait until it
    is sent: a client that looks at its diagnostics when the answer comes sees them."""
    diags: list[types.Diagnostic] = []
    if out is not None and out.error:
        diags.append(plain_diagnostic(f"mlir-lsp: {Path(out.path).name}: {out.error}"))
    if out is not None:
        diags.extend(diagnostic(uri, f) for f in out.findings[:MAX_PUBLISHED])
        if len(out.findings) > MAX_PUBLISHED:
            diags.append(not_shown(len(out.findings) - MAX_PUBLISHED, out.findings[MAX_PUBLISHED].span.start_pos.line))
    params = types.PublishDiagnosticsParams(uri=uri, diagnostics=diags)
    sent = threading.Event()

    def send() -> None:
        try:
            ls.text_document_publish_diagnostics(params)
        finally:
            sent.set()

    ls.in_loop(send)
    sent.wait(30)  # (called from a worker) the publish goes out before the request's answer


def _answer(uri: str, size: int, out: FileOutcome) -> dict:
    fixable = sum(1 for f in out.findings if any(x.applicability == Applicability.SAFE for x in f.fixes))
    return {"uri": uri, "megabytes": round(size / MB, 1), "findings": len(out.findings), "fixable": fixable,
            "error": out.error or out.write_error, "notes": [*out.notes, *([out.resources] if out.resources else [])]}


def _gone(ls, uri: str, path: str) -> dict:
    ls.disk_files.forget(uri)
    _publish(ls, uri, None)
    return {"uri": uri, "megabytes": 0, "findings": 0, "fixable": 0, "error": f"no such file: {path}", "notes": []}


def check_from_disk(ls, uri, force: bool = False) -> dict:
    path, refused = _target(ls, uri)
    if path is None:
        return {"uri": uri, "megabytes": None, "findings": 0, "fixable": 0, "error": refused, "notes": []}
    state: DiskFiles = ls.disk_files
    with state.file_lock(uri):
        try:
            stamp = file_stamp(path)
        except FileNotFoundError:
            return _gone(ls, uri, path)
        except OSError as e:
            return {"uri": uri, "megabytes": None, "findings": 0, "fixable": 0,
                    "error": f"cannot read: {e.strerror or e}", "notes": []}
        with state.lock:
            cached = state.checked.get(uri)
        if not force and cached is not None and cached[0] == stamp:
            return cached[1]  # published when it was computed
        out = run_file(path, _job(ls, path))
        answer = _answer(uri, stamp[0], out)
        with state.lock:
            state.checked[uri] = (stamp, answer)
        _publish(ls, uri, out)
        return answer


def fix_on_disk(ls, uri, mode, unsafe: bool = False) -> dict:
    if mode not in tuple(FixMode):
        return {"fixed": 0, "remaining": None, "error": f"mode must be one of {', '.join(FixMode)}, not {mode!r}"}
    path, refused = _target(ls, uri)
    if path is None:
        return {"fixed": 0, "remaining": None, "error": refused}
    state: DiskFiles = ls.disk_files
    with state.file_lock(uri):
        if not os.path.exists(path):
            _gone(ls, uri, path)
            return {"fixed": 0, "remaining": None, "error": f"no such file: {path}"}
        out = run_file(path, replace(_job(ls, path), fix=True, fix_mode=str(mode), unsafe_fixes=bool(unsafe)))
        try:
            stamp = file_stamp(path)
        except OSError:
            stamp = None
        if stamp is not None and not out.error:  # the findings of the file as it is now
            with state.lock:
                state.checked[uri] = (stamp, _answer(uri, stamp[0], out))
        else:
            state.forget(uri)
        _publish(ls, uri, out)
        return {"fixed": out.fixed_count, "remaining": len(out.findings), "error": out.error or out.write_error}


def closed(ls, uri: str) -> None:
    """The editor closed a file it never synced: clear its findings, as for a closed document;
    the workspace watch (when on) checks it again as any file on disk."""
    with ls.disk_files.lock:
        known = ls.disk_files.checked.pop(uri, None) is not None
    if known and uri not in ls.documents:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        workspace_feature.closed(ls, uri)


def setup(server) -> None:
    @server.feature(CHECK_REQUEST)
    @server.thread()
    def check_request(ls, params):
        return check_from_disk(ls, _param(params, "uri"), bool(_param(params, "force", False)))

    @server.feature(FIX_REQUEST)
    @server.thread()
    def fix_request(ls, params):
        return fix_on_disk(ls, _param(params, "uri"), _param(params, "mode"), bool(_param(params, "unsafe", False)))

    @server.feature(CLOSED_NOTIFICATION)
    def closed_notification(ls, params):
        closed(ls, _param(params, "uri"))

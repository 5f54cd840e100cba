"""The rule settings of one file, open or not: the one order (`config.editor_settings_for`):
its config file when it has one, else the editor's `mlirLsp` settings, else the defaults."""

from __future__ import annotations

import logging
from pathlib import Path

from ..config import Settings, editor_settings_for
from .open_documents import uri_path

log = logging.getLogger(__name__)


def for_path(ls, path: str | None) -> tuple[Settings, str | None]:
    """(settings, the config file's error or None) of the file at `path` (None: not a file)."""
    settings, problem = editor_settings_for(Path(path) if path else None, ls.settings)
    if problem:
        log.info("%s: the editor's settings (the config file cannot be used: %s)", path, problem)
    return settings, problem


def for_uri(ls, uri: str) -> Settings:
    path = uri_path(uri)
    return for_path(ls, path)[0] if path else ls.settings


def resettle(ls) -> list[str]:
    """After a config file changed: each open document whose settings are now other takes them
    (it is checked again); returns those documents' uris, to publish."""
    changed = []
    with ls.lock:
        for uri, doc in list(ls.documents.items()):
            new = for_uri(ls, uri)
            if new != doc.live.settings:
                ls.documents[uri] = doc.with_settings(new)
                changed.append(uri)
    return changed


def republish(ls, uris: list[str]) -> None:
    """New settings for these open documents: push their diagnostics to a client that is pushed
    them, and ask one that pulls to pull again (one refresh for all its documents)."""
    for uri in uris:
        if uri not in ls.pulled:
            ls.publish(uri)
    pulled = [uri for uri in uris if uri in ls.pulled]
    if pulled:
        ls.publish(pulled[0], refresh_pull=True)

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

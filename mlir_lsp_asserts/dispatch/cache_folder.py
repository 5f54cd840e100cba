"""Where mlir-lsp keeps its caches: $XDG_CACHE_HOME/mlir-lsp, else ~/.cache/mlir-lsp. On its own
(the os module only) for `mlir-lsp --version`, which reads one cached file (compiler_lookup.py)."""

from __future__ import annotations

import os


def cache_folder() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mlir-lsp")

"""`mlirLsp/bytecodeToText`: the textual form of a `.mlirbc` file, like mlir-lsp-server's
bytecode conversion (its weights left out, see bytecode.py)."""

from __future__ import annotations

from pathlib import Path

from ..source import SourceError, read_source
from . import guards
from .arguments import command_arguments
from .open_documents import uri_path


def bytecode_to_text(ls, params):
    """Textual form of a `.mlirbc` file (like mlir-lsp-server's bytecode conversion)."""
    uri = command_arguments(params).get("uri")
    path = uri_path(uri) if isinstance(uri, str) else None
    if path is None:
        return {"error": f"not a file URI: {uri}"}
    if refused := guards.refuse_path(ls, uri):
        return {"error": refused}
    try:
        src = read_source(path, isolated=True, regular_only=True)  # MLIR in a child: its crash not ours
    except (OSError, SourceError) as e:
        return {"error": f"{Path(path).name}: {getattr(e, 'strerror', None) or e}"}
    return {"text": src.text, "isBytecode": src.is_bytecode}


def setup(server) -> None:
    server.feature("mlirLsp/bytecodeToText")(server.thread()(bytecode_to_text))

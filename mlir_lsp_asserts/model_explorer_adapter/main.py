"""The adapter class Model Explorer registers when it imports this module (see `__init__`).

`convert(path)`: a `.json` file is a graph collection `mlir-lsp --dispatch-graph` wrote, read
as it is; any other file (MLIR text, `.mlirbc`, torch IR) is counted with the real
`iree-compile` (the default profile, or `MLIR_LSP_PROFILE`; the config's profiles found from
the file; the count cache as always) and its dispatch graph built with the what-if.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from model_explorer import Adapter, AdapterMetadata, extension_manager
from model_explorer.graph_builder import GraphCollection

from ..config import settings_for
from ..dispatch.compiler import find_compiler
from ..dispatch.count import DispatchCounter
from ..dispatch.graph import graph_for_text
from ..iree_flags.flags import profile_flags
from ..source import decode
from . import ADAPTER_ID


class DispatchGraphAdapter(Adapter):
    metadata = AdapterMetadata(
        id=ADAPTER_ID,
        name="mlir-lsp: IREE dispatch graph",
        description="The dispatches iree-compile forms from an MLIR file (mlir-lsp), with the asserts that cost "
                    "dispatches marked; or a graph JSON written by mlir-lsp --dispatch-graph -o.",
        fileExts=["mlir", "mlirbc"],
    )

    def convert(self, model_path: str, settings: dict) -> dict:
        if model_path.endswith(".json"):
            with open(model_path, encoding="utf-8") as f:
                data = json.load(f)
        else:
            data = graph_of_file(model_path)
        return {"graphCollections": [GraphCollection(label=data["label"], graphs=data["graphs"])]}


def graph_of_file(path: str) -> dict:
    """The graph collection of an MLIR file, counted as `mlir-lsp --dispatch-graph` counts it."""
    with open(path, "rb") as f:
        src = decode(f.read(), path, weights=True)
    profile = os.environ.get("MLIR_LSP_PROFILE", "default")
    user = {k: list(v) for k, v in settings_for(Path(path), None).profiles}
    counter = DispatchCounter(find_compiler(None))
    build = graph_for_text(src.text, path, counter=counter, profile=profile, flags=profile_flags(profile, user),
                           input_path=None if src.is_bytecode else path)
    return build.collection


def _first_for_mlir() -> None:
    """Loading this extension asks for it: make it the adapter a `.mlir` / `.mlirbc` file opens
    with. The web app takes the first adapter listed for a file's ending, and Model Explorer's
    own MLIR adapter, listed before any extension, reads no IREE dialects (its "Error")."""
    cls = getattr(extension_manager, "ExtensionManager", None)
    listing = getattr(cls, "get_extensions_metadata", None)
    if listing is None or getattr(listing, "mlir_lsp_first", False):
        return

    def get_extensions_metadata(self) -> list:
        return sorted(listing(self), key=lambda ext: ext.get("id") != ADAPTER_ID)  # stable: the rest keep order

    get_extensions_metadata.mlir_lsp_first = True  # type: ignore[attr-defined]
    cls.get_extensions_metadata = get_extensions_metadata  # type: ignore[union-attr]


_first_for_mlir()

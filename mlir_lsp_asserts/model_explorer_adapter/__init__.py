"""mlir-lsp's adapter extension for Google's Model Explorer: IREE's dispatches of an MLIR file as
a graph (`dispatch/graph.py`), or a graph JSON that `mlir-lsp --dispatch-graph -o` wrote.

    model-explorer FILE.mlir --extensions=mlir_lsp_asserts.model_explorer_adapter

Model Explorer imports `<module>.main` of each extension; the adapter lives there (`main.py`),
so that importing this package needs no Model Explorer.
"""

ADAPTER_ID = "mlir_lsp_dispatch_graph"
MODULE = __name__
INSTALL_HINT = "pip install 'mlir-lsp[graph]'"

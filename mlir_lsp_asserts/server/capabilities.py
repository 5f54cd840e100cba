"""The answer to `initialize` as data, for the early start (`early_start.py`), which sends it
before pygls is imported: the capabilities pygls computes from the features the server sets up
(`app.py`), and the two parts of them that pygls takes from the client's params (the position
encoding, and `willSave`/`willSaveWaitUntil`), by pygls's rules.

tests/test_early_start.py compares `initialize_result` with the real server's answer for the
params of real clients (VS Code, Neovim, Emacs, pytest-lsp's, a bare one) and fails on any
difference: a feature added to the server (or a pygls that answers otherwise) fails it, and its
message holds the capabilities to write here.
"""

from __future__ import annotations

from typing import Any

# pygls's answer to a client that says nothing, without `positionEncoding` (see `initialize_result`)
CAPABILITIES: dict[str, Any] = {
    "textDocumentSync": {"openClose": True, "change": 2, "save": True},
    "hoverProvider": True,
    "definitionProvider": True,
    "referencesProvider": True,
    "documentSymbolProvider": True,
    "codeActionProvider": {
        "codeActionKinds": ["quickfix", "source.fixAll.mlir-lsp", "source.mlir-lsp.stripAll",
                            "source.mlir-lsp.assumeAll"],
        "resolveProvider": True,
    },
    "codeLensProvider": {"resolveProvider": False},
    "foldingRangeProvider": True,
    "executeCommandProvider": {"commands": ["mlirLsp.dispatchCount", "mlirLsp.showDispatchIR",
                                            "mlirLsp.showDispatchGraph"]},
    "semanticTokensProvider": {
        "legend": {
            "tokenTypes": ["namespace", "function", "variable", "label", "class", "type", "macro", "string",
                           "number", "comment", "keyword"],
            "tokenModifiers": ["declaration"],
        },
        "range": True,
        "full": True,
    },
    "diagnosticProvider": {"interFileDependencies": False, "workspaceDiagnostics": False},
    "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True}, "fileOperations": {}},
}
# pygls's `ServerCapabilitiesBuilder.choose_position_encoding`: the client's first of these, else utf-16
ENCODINGS = ("utf-8", "utf-16", "utf-32")
DEFAULT_ENCODING = "utf-16"


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _optional(value: Any, kind: type) -> bool:
    """None, or a `kind` (a bool is not an int here)."""
    return value is None or isinstance(value, kind) and (kind is bool or not isinstance(value, bool))


def readable(params: Any) -> bool:
    """Whether pygls reads these params as surely as we do: the fields either side looks at have
    the types the protocol gives them. Params in doubt are left to pygls (its answer, or its error)."""
    if not isinstance(params, dict) or not isinstance(caps := params.get("capabilities"), dict):
        return False
    encodings = _get(caps, "general", "positionEncodings")
    sync = _get(caps, "textDocument", "synchronization")
    folders = params.get("workspaceFolders")
    return (_optional(params.get("processId"), int) and _optional(params.get("rootUri"), str)
            and _optional(params.get("rootPath"), str) and _optional(params.get("locale"), str)
            and _optional(params.get("trace"), str) and _optional(params.get("clientInfo"), dict)
            and _optional(caps.get("general"), dict) and _optional(caps.get("textDocument"), dict)
            and _optional(sync, dict)
            and (encodings is None or isinstance(encodings, list) and all(isinstance(e, str) for e in encodings))
            and all(_optional(_get(sync, key), bool) for key in ("willSave", "willSaveWaitUntil"))
            and (folders is None or isinstance(folders, list) and all(
                isinstance(f, dict) and isinstance(f.get("uri"), str) and isinstance(f.get("name"), str)
                for f in folders)))


def initialize_result(params: dict, name: str, version: str) -> dict:
    """The `result` pygls answers to `initialize` with these (readable) params."""
    encodings = _get(params, "capabilities", "general", "positionEncodings") or []
    encoding = next((e for e in encodings if e in ENCODINGS), DEFAULT_ENCODING)
    capabilities = {"positionEncoding": encoding, **CAPABILITIES}
    sync = dict(CAPABILITIES["textDocumentSync"])
    for key in ("willSave", "willSaveWaitUntil"):  # pygls: the client's value `and` our handler (none)
        if _get(params, "capabilities", "textDocument", "synchronization", key) is not None:
            sync[key] = False
    capabilities["textDocumentSync"] = sync
    return {"capabilities": capabilities, "serverInfo": {"name": name, "version": version}}

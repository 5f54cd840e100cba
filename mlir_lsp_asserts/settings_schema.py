"""The language server's settings defaults, keyed as the `mlirLsp` settings section uses them.

`mlir-lsp --show-settings` prints them as JSON; editor integrations (the VS Code extension's
package.json) are checked against this output, so the server's own defaults (`config.Settings`,
the dispatch preview's `DispatchState`, the workspace watcher's and the parser diagnostics'
state) stay the one source of truth.
"""

from __future__ import annotations

import json

# Section key -> attribute of the feature's state object, for the settings read by
# `DispatchState.configure` and `workspace_feature.configure` (tests check that every key those
# read is listed here).
DISPATCH_KEYS = {"enabled": "enabled", "trigger": "trigger", "idleMs": "idle_ms", "timeout": "timeout",
                 "autoMaxMegabytes": "auto_max_mb", "attribution": "attribution", "profile": "profile",
                 "flags": "extra_flags", "whatIf": "what_if", "compilerPath": "compiler_path"}
WORKSPACE_KEYS = {"watch": "enabled", "maxFiles": "max_files", "maxFileMegabytes": "max_bytes"}


def _plain(value):
    return list(value) if isinstance(value, (list, tuple)) else value


def server_settings_defaults() -> dict:
    from .config import Settings
    from .rules import resolve_code
    from .server.dispatch_feature import DispatchState
    from .server.parser_feature import ParserDiagnostics
    from .server.workspace_feature import WorkspaceWatch

    s, d, w = Settings(), DispatchState(), WorkspaceWatch()
    every = frozenset(resolve_code("ALL"))
    workspace = {key: getattr(w, attr) for key, attr in WORKSPACE_KEYS.items()}
    workspace["maxFileMegabytes"] = w.max_bytes / (1024 * 1024)
    return {
        "select": ["ALL"] if s.select == every else sorted(s.select),
        "ignore": sorted(s.ignore),
        "severity": {code: sev.value for code, sev in s.severity},
        "fixMode": s.fix_mode,
        "profiles": {name: {"flags": list(flags)} for name, flags in s.profiles},
        "parserDiagnostics": ParserDiagnostics().enabled,
        "dispatch": {key: _plain(getattr(d, attr)) for key, attr in DISPATCH_KEYS.items()},
        "workspace": workspace,
    }


def show_settings() -> int:
    print(json.dumps(server_settings_defaults(), indent=2, sort_keys=True))
    return 0

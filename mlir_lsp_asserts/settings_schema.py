"""The language server's settings defaults, keyed as the `mlirLsp` settings section uses them.

`mlir-lsp --show-settings` prints them as JSON; editor integrations (the VS Code extension's
package.json) are checked against this output, so the server's own defaults (`config.Settings`
and the dispatch preview's `DispatchState`) stay the one source of truth.
"""

from __future__ import annotations

import json


def server_settings_defaults() -> dict:
    from .config import Settings
    from .rules import resolve_code
    from .server.dispatch_feature import DispatchState

    s, d = Settings(), DispatchState()
    every = frozenset(resolve_code("ALL"))
    return {
        "select": ["ALL"] if s.select == every else sorted(s.select),
        "ignore": sorted(s.ignore),
        "severity": {code: sev.value for code, sev in s.severity},
        "fixMode": s.fix_mode,
        "profiles": {name: {"flags": list(flags)} for name, flags in s.profiles},
        "dispatch": {
            "enabled": d.enabled,
            "trigger": d.trigger,
            "idleMs": d.idle_ms,
            "timeout": d.timeout,
            "profile": d.profile,
            "flags": list(d.extra_flags),
            "whatIf": d.what_if,
            "compilerPath": d.compiler_path,
        },
    }


def show_settings() -> int:
    print(json.dumps(server_settings_defaults(), indent=2, sort_keys=True))
    return 0

"""`mlir-lsp --list-profiles`, and the config a count's profiles come from (no compiler needed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..config import Settings, settings_for
from ..iree_flags.flags import list_profiles


def config_settings(args) -> Settings:
    """The config's settings (`--config`, else the one found from the first FILE). A config that
    cannot be read raises its ConfigError (a ValueError): a profile of it must not just vanish."""
    return settings_for(Path(args.paths[0]) if args.paths else None, Path(args.config) if args.config else None)


def run_list_profiles(args) -> int:
    import shlex

    try:
        profiles = list_profiles({k: list(v) for k, v in config_settings(args).profiles})
    except ValueError as e:
        print(f"mlir-lsp: error: {e}", file=sys.stderr)
        return 2
    if args.output_format == "json":
        print(json.dumps(profiles, indent=2))
        return 0
    rows = [(p["name"] + (" (config)" if p["source"] == "config" else ""), p["target"], shlex.join(p["flags"]))
            for p in profiles]
    name_w, target_w = (max(len(r[i]) for r in rows) for i in (0, 1))
    for name, target, flags in rows:  # the flags quoted for a shell (or --flags)
        print(f"{name:<{name_w}}  {target:<{target_w}}  {flags}")
    return 0

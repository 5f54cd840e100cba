"""`mlir-lsp --check [--force-exclude ...] PATH...`, the command line of pre-commit's hook and of
most CI jobs, read without argparse: argparse's import, gettext's and locale's, and the building
of the parser's 57 arguments were ~5 ms of a small file's check. The result is the namespace
argparse gives for the same command line; any other form (another option, an option after a
path, a path that starts with `-`) goes through argparse (cli/arguments.py), which also says
what is wrong with a bad one.

tests/test_startup.py compares the namespaces for each accepted form, and the defaults below with
the parser's: an option added to the parser must be added here.
"""

from __future__ import annotations

from types import SimpleNamespace

# The options argparse sets to True when given (store_true), else False.
SWITCHES = ("version", "check", "stdio", "show_settings", "statistics", "exit_zero", "quiet", "watch", "force_exclude",
            "no_progress", "measured_severity", "no_lower", "fix", "unsafe_fixes", "diff", "compile",
            "dispatch_count", "list_profiles", "what_if", "stream", "attribution", "update_baseline", "binary_size",
            "no_cache", "dispatch_diff", "against_baseline", "dispatch_graph", "open", "merge_results")
# The options whose value is None when not given.
VALUED = ("tcp", "explain", "output_format", "select", "extend_select", "ignore", "config", "docs_base_url",
          "stdin_filename", "jobs", "fix_mode", "profile", "flags", "what_if_mode", "compiler", "max_dispatches",
          "baseline", "against", "against_git", "against_compiler", "against_flags", "against_profile", "output",
          "port", "shard", "results_out")
OTHER_DEFAULTS = {"paths": [], "timeout": 900.0}

# The switches read here, besides --check: what a pre-commit hook or a CI job puts before the files.
READ_HERE = {"--check": "check", "--force-exclude": "force_exclude", "--quiet": "quiet", "--no-progress": "no_progress",
             "--exit-zero": "exit_zero", "--statistics": "statistics", "--fix": "fix", "--diff": "diff"}


def plain_check(argv: list[str]) -> SimpleNamespace | None:
    """The namespace of `argv` when it is `--check`, switches of `READ_HERE`, then one or more
    paths none of which starts with `-`; else None (argparse's to read)."""
    if not argv or argv[0] != "--check":
        return None
    given = {}
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        dest = READ_HERE.get(argv[i])
        if dest is None:  # anything else, `--` and `-` included
            return None
        given[dest] = True
        i += 1
    paths = argv[i:]
    if not paths or any(p.startswith("-") for p in paths):
        return None
    args: dict[str, object] = dict.fromkeys(SWITCHES, False)
    args.update(dict.fromkeys(VALUED))
    args.update(OTHER_DEFAULTS)
    args.update(given, check=True, paths=list(paths))
    return SimpleNamespace(**args)

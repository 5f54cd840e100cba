"""`mlir-lsp --merge-results A.json B.json ...`: the shards of one run (`--shard K/N
--results-out FILE`) merged into the report, exit code and baseline that one run gives."""

from __future__ import annotations

import sys

from .dispatch import apply_updates, counts_exit, render_counts
from .dispatch_diff import FORMATS as DIFF_FORMATS
from .dispatch_diff import diffs_exit, render_diffs
from .output import MERGED_FORMATS, render_check_records
from .results import ResultsError, gather

FORMATS = {"dispatch-count": ("concise", "json"), "dispatch-diff": DIFF_FORMATS, "check": MERGED_FORMATS}


def _error(msg: str) -> int:
    print(f"mlir-lsp: error: {msg}", file=sys.stderr)
    return 2


def run_merge(args) -> int:
    if not args.paths:
        return _error("--merge-results needs the results files (written by --shard K/N --results-out FILE)")
    if args.update_baseline and not args.baseline:
        return _error("--update-baseline needs --baseline FILE (the one the shards counted against)")
    try:
        mode, records, updates, problems = gather(args.paths)
    except ResultsError as e:
        return _error(str(e))
    fmt = args.output_format or "concise"
    if mode not in FORMATS:
        return _error(f"{args.paths[0]}: results of an unknown mode {mode!r}")
    try:
        return _merged(args, mode, fmt, records, updates, problems)
    except (KeyError, TypeError, AttributeError) as e:
        return _error(f"a results file is damaged (its records lack {e})")


def _merged(args, mode: str, fmt: str, records: list[dict], updates: list[dict], problems: list[str]) -> int:
    if fmt not in FORMATS[mode]:
        return _error(f"a merge of {mode} results prints {', '.join(FORMATS[mode])}, not {fmt}")
    for msg in problems:
        level = "error" if msg.endswith("no such file or directory") else "warning"
        print(f"mlir-lsp: {level}: {msg}", file=sys.stderr)
    for r in records:
        for line in r.get("stderr", []):
            print(line, file=sys.stderr)
    if mode == "dispatch-count":
        sys.stdout.write(render_counts(records, fmt))
        written = not args.update_baseline or apply_updates(args.baseline, updates)
        return counts_exit(records, written)
    if mode == "dispatch-diff":
        sys.stdout.write(render_diffs(records, fmt))
        return diffs_exit(records, args.exit_zero)
    sys.stdout.write(render_check_records(records, fmt))
    for r in records:
        if r["error"]:
            print(f"mlir-lsp: error: {r['path']}: {r['error']}", file=sys.stderr)
    if any(r["error"] for r in records) or any(p.endswith("no such file or directory") for p in problems):
        return 2
    return 1 if sum(r.get("findings", 0) for r in records) and not args.exit_zero else 0

"""A shard's results file (`--shard K/N --results-out FILE`), merged by `--merge-results`.

    {"mlir-lsp-results": 1, "mode": "dispatch-count", "shard": [K, N], "inputs": [...],
     "records": [...], "updates": [...], "problems": [...]}

`inputs`: every input of the whole run, in the order one run would take them (each shard lists
them all, so the merge can check it has every shard of the same run and put the records back in
that order). `records`: one per input of this shard, what one run would print for it (see the
mode's `render`). `updates`: the baseline writes `--update-baseline` asked for, left to the merge
(`dispatch.apply_updates`). `problems`: messages about the inputs as a whole (one run's stderr).
"""

from __future__ import annotations

import sys

from ..files import load_json, write_new_or_atomic
from ..shards import parse_shard, select

RESULTS_KEY, RESULTS_VERSION = "mlir-lsp-results", 1


def shard_of_args(args) -> tuple[int, int] | None:
    """The `--shard` asked for (None: the whole run); ValueError for a bad K/N."""
    return parse_shard(args.shard) if args.shard else None


def shard_inputs(args, inputs: list[str]) -> list[str]:
    return select(inputs, shard_of_args(args))


def write_results(args, mode: str, inputs: list[str], records: list[dict], updates: list[dict] | None = None,
                  problems: list[str] | None = None) -> bool:
    """The results file of `--results-out` (nothing without it); False when it cannot be written."""
    if not args.results_out:
        return True
    import json  # a check without --results-out writes no JSON

    shard = shard_of_args(args) or (1, 1)
    data = {RESULTS_KEY: RESULTS_VERSION, "mode": mode, "shard": list(shard), "inputs": list(inputs),
            "records": records, "updates": updates or [], "problems": problems or []}
    try:
        write_new_or_atomic(args.results_out, (json.dumps(data) + "\n").encode("utf-8"))
    except OSError as e:
        print(f"mlir-lsp: error: cannot write {args.results_out}: {e.strerror or e}", file=sys.stderr)
        return False
    return True


class ResultsError(Exception):
    pass


def read_results(path: str) -> dict:
    data = load_json(path, ResultsError, "no such file")
    if not isinstance(data, dict) or data.get(RESULTS_KEY) != RESULTS_VERSION:
        raise ResultsError(f"{path}: not a results file of mlir-lsp --results-out")
    shard = data.get("shard")
    if (not isinstance(shard, list) or len(shard) != 2 or not all(isinstance(x, int) for x in shard)
            or not isinstance(data.get("records"), list) or not isinstance(data.get("inputs"), list)
            or not all(isinstance(r, dict) for r in [*data["records"], *data.get("updates", [])])):
        raise ResultsError(f"{path}: a results file without its shard, inputs or records")
    return data


def gather(paths: list[str]) -> tuple[str, list[dict], list[dict], list[str]]:
    """(mode, records in one run's order, updates in that order, problems) of the shards'
    files, which must be every shard of one run exactly once. Raises ResultsError."""
    shards = [(p, read_results(p)) for p in paths]
    first_path, first = shards[0]
    n = first["shard"][1]
    seen: dict[int, str] = {}
    for p, d in shards:
        if d["mode"] != first["mode"]:
            raise ResultsError(f"{p}: results of {d['mode']}, {first_path} of {first['mode']}")
        if d["shard"][1] != n or d["inputs"] != first["inputs"]:
            raise ResultsError(f"{p}: another run than {first_path} (other inputs or shard count)")
        k = d["shard"][0]
        if k in seen:
            raise ResultsError(f"{p}: shard {k}/{n} again (also {seen[k]})")
        seen[k] = p
    missing = [str(k) for k in range(1, n + 1) if k not in seen]
    if missing:
        raise ResultsError(f"shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} of {n} missing")
    order = {path: i for i, path in enumerate(first["inputs"])}
    records = sorted((r for _, d in shards for r in d["records"]), key=lambda r: order.get(r.get("path"), -1))
    updates = sorted((u for _, d in shards for u in d.get("updates", [])),
                     key=lambda u: order.get(u.get("path"), -1))
    return first["mode"], records, updates, list(first.get("problems", []))

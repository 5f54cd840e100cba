"""Dispatch budgets for CI, like IREE's own `current <= golden` checks.

A baseline file holds golden counts per file and profile:
    {"version": 1, "counts": {"models/encoder.mlir": {"default": 1658}}}
and, written by `--update-baseline` since version 2, the attribution of each count (see
`diff.compact`), so that a run over its budget can say which dispatches are new and why:
    {"version": 2, "counts": {...}, "attribution": {"models/encoder.mlir": {"default": {...}}}}
The attribution is kept compact (`compact`) and read back into the lines of the current text,
moved by edits (`expand`).
"""

from __future__ import annotations

import json
import os
import zlib
from collections import defaultdict
from dataclasses import dataclass, field

from ..files import load_json, write_new_or_atomic
from .attribution import Site, describe, dispatch_name
from .results import Dispatch


class BaselineError(Exception):
    pass


@dataclass
class Baseline:
    counts: dict[str, dict[str, int]]
    attribution: dict[str, dict[str, dict]] = field(default_factory=dict)  # file -> profile -> compact

    def stored(self, path: str, profile: str) -> dict | None:
        entry = self.attribution.get(path, {})
        return entry.get(profile) if isinstance(entry, dict) else None


def load_baseline(path: str, regular_only: bool = False) -> Baseline:
    """`regular_only`: the path comes from settings (the server's `dispatch.baseline`, which a
    cloned repository may set): a fifo or a device is refused unread (`files.load_json`)."""
    data = load_json(path, BaselineError, "baseline file not found (create it with --update-baseline)", "baseline",
                     regular_only)
    counts = data.get("counts") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(counts, dict):
        raise BaselineError(f"{path}: not a baseline file (expected {{\"version\": 1, \"counts\": {{...}}}})")
    attribution = data.get("attribution")
    return Baseline(counts, attribution if isinstance(attribution, dict) else {})


def save_baseline(path: str, baseline: Baseline) -> None:
    """Written whole to a temporary file beside it, then moved over it: never half-written."""
    data: dict = {"version": 2 if baseline.attribution else 1,
                  "counts": {k: dict(sorted(v.items())) for k, v in sorted(baseline.counts.items())}}
    text = json.dumps(data, indent=2)
    if baseline.attribution:  # one line per file and profile: readable counts, a small file
        rows = []
        for file, profiles in sorted(baseline.attribution.items()):
            inner = ",\n".join(f"      {json.dumps(p)}: {json.dumps(v, separators=(',', ':'))}"
                               for p, v in sorted(profiles.items()))
            rows.append(f"    {json.dumps(file)}: {{\n{inner}\n    }}")
        text = text[:-2] + ',\n  "attribution": {\n' + ",\n".join(rows) + "\n  }\n}"
    write_new_or_atomic(path, (text + "\n").encode("utf-8"))


@dataclass
class Verdict:
    ok: bool
    message: str


def against(count: int, limit: int, over: str, under: str) -> list[Verdict]:
    """A failing verdict over the limit, a passing one under it, none at it."""
    if count > limit:
        return [Verdict(False, over)]
    return [Verdict(True, under)] if count < limit else []


def judge(path: str, profile: str, count: int, max_dispatches: int | None,
          baseline: dict[str, dict[str, int]] | None) -> list[Verdict]:
    out = []
    if max_dispatches is not None:
        out += against(count, max_dispatches,
                        f"{path}: {count} dispatches is over the budget of {max_dispatches} "
                        f"(+{count - max_dispatches})",
                        f"{path}: {count} dispatches, {max_dispatches - count} under the budget of {max_dispatches}")
    if baseline is not None:
        golden = baseline.get(path, {}).get(profile)
        if golden is None:
            out.append(Verdict(True, f"{path}: no baseline for profile {profile!r} (run with --update-baseline)"))
        else:
            out += against(count, golden,
                            f"{path}: {count} dispatches with profile {profile!r}, above the baseline "
                            f"{golden} (+{count - golden})",
                            f"{path}: {count} dispatches with profile {profile!r}, went down from the "
                            f"baseline {golden} ({count - golden}); update it with --update-baseline")
    return out


# -- baselines that can explain: the attribution, compact -------------------------------------
HASH_DIGITS = 6


def line_hash(line: str) -> str:
    """A short hash of a line's text (blanks around it ignored): finds a moved line again."""
    return f"{zlib.crc32(line.strip().encode('utf-8', 'surrogatepass')):08x}"[:HASH_DIGITS]


def _ranges(lines: list[int]) -> str:
    out, i = [], 0
    while i < len(lines):
        j = i
        while j + 1 < len(lines) and lines[j + 1] == lines[j] + 1:
            j += 1
        out.append(str(lines[i]) if i == j else f"{lines[i]}-{lines[j]}")
        i = j + 1
    return ",".join(out)


def _unranges(text: str) -> list[int]:
    out: list[int] = []
    for part in filter(None, text.split(",")):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def compact(dispatches: list[Dispatch], lines: list[str]) -> dict:
    """The attribution as a baseline keeps it: per function, each dispatch in order as [root
    line, source line ranges] (its name follows from the function and its place, as IREE names
    it), and one short hash per line named, in line order, so that lines can be found again
    after edits moved them."""
    functions: dict[str, list] = {}
    for d in dispatches:
        root = d.location.line if d.location else None
        functions.setdefault(d.function, []).append([root, _ranges(sorted({s.line for s in d.sources}))])
    return {"functions": functions, "hashes": "".join(
        line_hash(lines[ln - 1]) if 0 < ln <= len(lines) else "0" * HASH_DIGITS for ln in _named(functions))}


def _named(functions: dict[str, list]) -> list[int]:
    out = set()
    for rows in functions.values():
        for root, ranges in rows:
            out.update(_unranges(ranges))
            if root is not None:
                out.add(int(root))
    return sorted(out)


def expand(stored: dict, lines: list[str]) -> list[Dispatch] | None:
    """A baseline's stored attribution as dispatches, in the lines of
    the current text: a line whose text moved is found again by its hash (where the lines
    before it went, else the nearest line with the same text), a line whose text is gone is
    dropped. None when the entry is unreadable."""
    try:
        functions = stored["functions"]
        named = _named(functions)
        hashes = stored["hashes"]
        if len(hashes) != HASH_DIGITS * len(named):
            return None
        want = {ln: hashes[HASH_DIGITS * i:HASH_DIGITS * (i + 1)] for i, ln in enumerate(named)}
        rows = [(dispatch_name(str(fn), k), str(fn), root, _unranges(ranges))
                for fn, items in functions.items() for k, (root, ranges) in enumerate(items)]
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    where: dict[int, int | None] = {}
    by_hash: dict[str, list[int]] | None = None
    shift = 0  # lines move together: try where the last line went first
    for ln, h in want.items():
        for guess in (ln + shift, ln):
            if 0 < guess <= len(lines) and line_hash(lines[guess - 1]) == h:
                where[ln] = guess
                break
        else:
            if by_hash is None:
                by_hash = defaultdict(list)
                for i, text in enumerate(lines, 1):
                    by_hash[line_hash(text)].append(i)
            cands = by_hash.get(h, [])
            where[ln] = min(cands, key=lambda c: abs(c - ln - shift)) if cands else None
        found = where[ln]
        if found is not None:
            shift = found - ln
    raw = []
    for name, function, root, srcs in rows:
        moved = sorted({(ln, _col(lines, ln)) for ln in (where.get(s) for s in srcs) if ln is not None})
        r = where.get(root) if root is not None else None
        raw.append(Site(name, function, (r, _col(lines, r)) if r else None, moved))
    return describe(raw, lines)


def baseline_key(baseline: Baseline, path: str, folders: list[str]) -> str | None:
    """The key under which `baseline` holds the file at `path`: keys are paths as given to the
    CLI, so relative ones are tried against each of `folders` (workspace roots, the baseline's
    own folder)."""
    target = os.path.realpath(path)
    for key in baseline.counts:
        cands = [key] if os.path.isabs(key) else [os.path.join(f, key) for f in folders]
        if any(os.path.realpath(c) == target for c in cands):
            return key
    return None


def _col(lines: list[str], line: int | None) -> int:
    """The column of the op on a line: after `%x = `, else the first non-blank character."""
    if line is None or not 0 < line <= len(lines):
        return 1
    text = lines[line - 1]
    eq = text.find(" = ")
    if text.lstrip().startswith("%") and eq != -1:
        return eq + 4
    return len(text) - len(text.lstrip()) + 1

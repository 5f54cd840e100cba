"""Dispatch budgets for CI, like IREE's own `current <= golden` checks.

A baseline file holds golden counts per file and profile:
    {"version": 1, "counts": {"models/encoder.mlir": {"default": 1658}}}
and, written by `--update-baseline` since version 2, the attribution of each count (see
`diff.compact`), so that a run over its budget can say which dispatches are new and why:
    {"version": 2, "counts": {...}, "attribution": {"models/encoder.mlir": {"default": {...}}}}
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass, field


class BaselineError(Exception):
    pass


@dataclass
class Baseline:
    counts: dict[str, dict[str, int]]
    attribution: dict[str, dict[str, dict]] = field(default_factory=dict)  # file -> profile -> compact

    def stored(self, path: str, profile: str) -> dict | None:
        entry = self.attribution.get(path, {})
        return entry.get(profile) if isinstance(entry, dict) else None


def load_baseline(path: str) -> Baseline:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise BaselineError(f"{path}: baseline file not found (create it with --update-baseline)") from None
    except (OSError, ValueError) as e:
        raise BaselineError(f"{path}: cannot read baseline: {e}") from None
    counts = data.get("counts") if isinstance(data, dict) else None
    if not isinstance(counts, dict):
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
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".baseline.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        try:  # the mode the file had, else what the umask gives a new file (mkstemp makes it 0600)
            mode = os.stat(path).st_mode & 0o7777
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@dataclass
class Verdict:
    ok: bool
    message: str


def judge(path: str, profile: str, count: int, max_dispatches: int | None,
          baseline: dict[str, dict[str, int]] | None) -> list[Verdict]:
    out = []
    if max_dispatches is not None:
        if count > max_dispatches:
            out.append(Verdict(False, f"{path}: {count} dispatches is over the budget of {max_dispatches} "
                                      f"(+{count - max_dispatches})"))
        elif count < max_dispatches:
            out.append(Verdict(True, f"{path}: {count} dispatches, {max_dispatches - count} under the budget of {max_dispatches}"))
    if baseline is not None:
        golden = baseline.get(path, {}).get(profile)
        if golden is None:
            out.append(Verdict(True, f"{path}: no baseline for profile {profile!r} (run with --update-baseline)"))
        elif count > golden:
            out.append(Verdict(False, f"{path}: {count} dispatches with profile {profile!r}, above the baseline "
                                      f"{golden} (+{count - golden})"))
        elif count < golden:
            out.append(Verdict(True, f"{path}: {count} dispatches with profile {profile!r}, went down from the "
                                     f"baseline {golden} ({count - golden}); update it with --update-baseline"))
    return out

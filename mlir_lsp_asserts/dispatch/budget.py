"""Dispatch budgets for CI, like IREE's own `current <= golden` checks.

A baseline file holds golden counts per file and profile:
    {"version": 1, "counts": {"models/encoder.mlir": {"default": 1658}}}
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass


class BaselineError(Exception):
    pass


def load_baseline(path: str) -> dict[str, dict[str, int]]:
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
    return counts


def save_baseline(path: str, counts: dict[str, dict[str, int]]) -> None:
    data = {"version": 1, "counts": {k: dict(sorted(v.items())) for k, v in sorted(counts.items())}}
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".baseline.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


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

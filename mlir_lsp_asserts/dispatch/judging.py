"""A count judged against what its request holds it to: the budget (`max_dispatches`), our own
baseline or the iree-test-suites compstat goldens; a count over its baseline explained from the
stored attribution, and the update of the baseline that `--update-baseline` asks for.

    said: list[str] = []
    ok = judge_count(req, pv, text, said, updates)   # said: the lines for the user (stderr)
"""

from __future__ import annotations

import os

from .baselines import Baseline, BaselineError, Verdict, against, compact, judge, load_baseline, save_baseline
from .compstat import COUNT_KEY, SIZE_KEY, CompstatFile, as_baseline, load_compstat_files, write_goldens
from .diff import Change, compare_with_baseline, entry_line
from .preview import Preview, initializer_split
from .request import CountRequest


def judge_count(req: CountRequest, path: str, pv: Preview, text: str, said: list[str], updates: list[dict]) -> bool:
    """Whether the count of `path` passes (the lines to say added to `said`, the update of the
    baseline asked for to `updates`); the attribution taken out of the preview when only the
    baseline asked for it."""
    if req.compstat is not None:
        return _judged_compstat(req, pv, text, req.compstat.files[path], said, updates)
    return _judged(req, pv, text, said, updates)


def _judged(req: CountRequest, pv: Preview, text: str, err: list[str], updates: list[dict]) -> bool:
    """Whether the count is within its budget and baseline (the verdicts said, a count over
    its baseline explained); the baseline update asked for added to `updates`, and the
    attribution taken out of the output when only the baseline asked for it."""
    baseline = req.baseline
    verdicts = judge(pv.path, req.profile, pv.flow_dispatches, req.max_dispatches,
                     baseline.counts if baseline is not None else None)
    ok = _said(err, verdicts)
    golden = baseline.counts.get(pv.path, {}).get(req.profile) if baseline is not None else None
    pv.budget = budget_json(ok, req.max_dispatches, req.baseline_file if baseline is not None else None,
                            golden, pv.flow_dispatches, "flow")
    stored = _explained(req, pv, text, baseline if not ok else None, req.baseline_file, err)
    if req.update_baseline and req.baseline_file:
        updates.append({"kind": "baseline", "path": pv.path, "profile": pv.profile, "count": pv.flow_dispatches,
                        "attribution": stored})
    return ok


def budget_json(passed: bool, max_dispatches: int | None, baseline_file: str | None, golden: int | None,
                count: int | None, level: str) -> dict:
    """The JSON of a count's judging (its `budget`): whether it passed, the cap, the baseline's
    count at `level` (flow, or stream for compstat goldens; null when the baseline has none) and
    the change against it; `new_dispatches` is filled in when a count over its baseline is explained."""
    change = count - golden if golden is not None and count is not None else None
    return {"passed": passed, "max_dispatches": max_dispatches,
            "baseline": None if baseline_file is None else {"file": baseline_file, "level": level, "count": golden,
                                                           "change": change},
            "new_dispatches": None}


def _explained(req: CountRequest, pv: Preview, text: str, over: Baseline | None, baseline_path: str | None,
               err: list[str]) -> dict | None:
    """A count over the baseline `over` explained (the new dispatches' names also in the count's
    `budget`); the attribution to store (compact), taken out of the output when only the baseline
    asked for it."""
    if pv.attribution is None:
        return None
    lines = text.split("\n")
    if over is not None and baseline_path is not None:
        new = compare_with_baseline(pv, lines, over, pv.path, baseline_path).new
        err.extend(explain_over_baseline(pv, new, baseline_path))
        if pv.budget is not None and new is not None:
            pv.budget["new_dispatches"] = [e.name for e in new]
    stored = compact(pv.attribution.dispatches, lines) if req.update_baseline else None
    if not req.attribution:  # asked for by the baseline only: not in the output
        pv.attribution = None
        if pv.what_if:
            pv.what_if.only_because_of_asserts = None
    return stored


def _judged_compstat(req: CountRequest, pv: Preview, text: str, f: CompstatFile, err: list[str],
                     updates: list[dict]) -> bool:
    """The count judged as iree-test-suites' compstat test judges it: the stream-level count at
    most the golden, the .vmfb's size at most its golden (each when the file has one); over
    one, the new dispatches named from the attribution beside the file."""
    golden, count = f.golden_dispatch_count, pv.stream_dispatches
    size, golden_size = pv.binary_size, f.golden_binary_size
    ok = True
    if count is None:
        err.extend([f"mlir-lsp: error: {pv.path}: iree-compile gave no stream-level dispatch-count for {f.path}"])
        ok = False
    elif req.update_baseline:
        pass
    elif golden is None:
        err.extend([f"mlir-lsp: {pv.path}: {count} dispatches at stream level; {f.path} has no "
                   f"{COUNT_KEY} (write it with --update-baseline)"])
    else:
        ok = _said(err, against(count, golden, f"{pv.path}: {count} dispatches at stream level, over the golden "
                                 f"{golden} of {f.path} (+{count - golden}); at flow level {split_text(pv)}",
                                 f"{pv.path}: {count} dispatches at stream level, under the golden {golden} of "
                                 f"{f.path} ({count - golden}); lower it with --update-baseline"))
    pv.budget = budget_json(ok, req.max_dispatches, f.path, golden, count, "stream")
    if size is not None and golden_size is not None and not req.update_baseline:
        ok = _said(err, against(size, golden_size, f"{pv.path}: the .vmfb is {size} bytes, over the "
                                 f"{SIZE_KEY} {golden_size} of {f.path} (+{size - golden_size})",
                                 f"{pv.path}: the .vmfb is {size} bytes, under the {SIZE_KEY} {golden_size} of "
                                 f"{f.path}")) and ok
    elif golden_size is not None and size is None and not req.update_baseline:
        err.extend([f"mlir-lsp: note: {pv.path}: {SIZE_KEY} of {f.path} not checked (no .vmfb built: --binary-size)"])
    if req.max_dispatches is not None:
        ok = _said(err, judge(pv.path, req.profile, pv.flow_dispatches, req.max_dispatches, None)) and ok
    pv.budget["passed"] = ok
    over = as_baseline(pv.path, f, pv.profile, golden) if not ok and golden is not None else None
    if over is not None and not over.stored(pv.path, pv.profile):
        err.extend([f"mlir-lsp: note: no attribution beside {f.path} for profile {pv.profile!r}: write it with "
                   "--update-baseline to see which dispatches are new"])
    stored = _explained(req, pv, text, over, f.path, err)
    if req.update_baseline and count is not None:
        values = {COUNT_KEY: count, **({SIZE_KEY: size} if size is not None else {})}
        updates.append({"kind": "compstat", "path": pv.path, "file": f.path, "profile": pv.profile,
                        "values": values, "attribution": stored})
    return ok


def _said(err: list[str], verdicts: list[Verdict]) -> bool:
    """The verdicts said (failing ones as errors); whether all pass."""
    err.extend([("mlir-lsp: " if v.ok else "mlir-lsp: error: ") + v.message for v in verdicts])
    return all(v.ok for v in verdicts)


def split_text(pv: Preview) -> str:
    """`N in initializers (run once), M in functions` of a count's dispatches."""
    init, funcs = initializer_split(pv.per_function)
    return (f"{init + funcs} dispatches: {init} in initializers (hoisted constants, run once), "
            f"{funcs} in functions")


def explain_over_baseline(pv: Preview, new: list[Change] | None, baseline_path: str, limit: int = 20) -> list[str]:
    """The dispatches a count over its baseline has that the baseline's attribution has not
    (`new`: `diff.compare_with_baseline`'s; None when the baseline stores no attribution)."""
    if new is None:
        return [f"mlir-lsp: note: {baseline_path} stores no attribution for {pv.path}: rewrite it with "
                "--update-baseline to see which dispatches are new"]
    out = [entry_line(e, "new", "the baseline") for e in new[:limit]]
    if len(new) > limit:
        out.append(f"mlir-lsp: ... {len(new) - limit} more new dispatches (mlir-lsp --dispatch-diff "
                   f"--against-baseline --baseline {baseline_path} {pv.path})")
    return out


def write_updates(file: str, updates: list[dict], said: list[str], compstat: bool) -> bool:
    """The counts (and attribution) of a run written: into the baseline `file` (its other
    entries kept), or into the goldens of the compstat files (only those numbers changed); the
    lines for the user (what was written, or why not) added to `said`. `compstat`: whether
    `file` names compstat files (`is_compstat_target`; a request knows it), which a run without
    counts leaves alone."""
    ours = [u for u in updates if u["kind"] == "baseline"]
    try:
        for u in updates:
            if u["kind"] == "compstat":
                write_goldens(u["file"], u["values"], u["profile"], u.get("attribution"))
                said.append(f"mlir-lsp: wrote {u['file']}")
        if ours or not updates and not compstat:
            try:
                kept = load_baseline(file)
            except BaselineError:
                kept = Baseline({})
            for u in ours:
                kept.counts.setdefault(u["path"], {})[u["profile"]] = u["count"]
                if u.get("attribution") is not None:
                    kept.attribution.setdefault(u["path"], {})[u["profile"]] = u["attribution"]
            save_baseline(file, kept)
            said.append(f"mlir-lsp: wrote {file}")
    except BaselineError as e:
        said.append(f"mlir-lsp: error: {e}")
        return False
    except OSError as e:
        said.append(f"mlir-lsp: error: cannot write {e.filename or file}: {e.strerror or e}")
        return False
    return True


def is_compstat_target(file: str) -> bool:
    """Whether the baseline `file` names compstat files (a folder that cannot be read counts)."""
    try:
        return load_compstat_files(file) is not None
    except BaselineError:
        return os.path.isdir(file)

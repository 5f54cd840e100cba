"""`mlir-lsp --dispatch-count`: the command-line front end of `dispatch/`."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..config import config_folder, settings_for
from ..dispatch.baselines import (
    Baseline,
    BaselineError,
    Verdict,
    against,
    compact,
    judge,
    load_baseline,
    save_baseline,
)
from ..dispatch.compiler import (
    CompilerError,
    find_compiler,
    other_release_message,
    other_release_syntax,
)
from ..dispatch.compstat import (
    COUNT_KEY,
    SIZE_KEY,
    CompstatFile,
    as_baseline,
    load_compstat_files,
    load_sidecar,
    match_inputs,
    write_goldens,
)
from ..dispatch.count import DispatchCounter
from ..dispatch.diff import compare_with_baseline, entry_line
from ..dispatch.preview import Preview, initializer_split, preview
from ..iree_flags.flags import BUILTIN_PROFILES, list_profiles, profile_flags, split_flags, target_of
from ..rules import mla004_torch_op_lowers_to_assert as mla004
from ..source import SourceError, decode
from .results import shard_inputs, write_results


def add_arguments(p) -> None:
    d = p.add_argument_group("dispatch count")
    d.add_argument("--dispatch-count", action="store_true",
                   help="compile with iree-compile (gfx942 by default) and print the dispatch counts")
    d.add_argument("--profile", default=None,
                   help=f"flag profile: {', '.join(BUILTIN_PROFILES)} or one from the config (see --list-profiles); "
                        "default: the config's `profile`, else default")
    d.add_argument("--list-profiles", action="store_true",
                   help="print each profile's name, target and iree-compile flags (--output-format json too)")
    d.add_argument("--flags", default=None, help="extra iree-compile flags (one string, shell quoting); default: the "
                   "config's `flags`. In --check they tell whether IREE strips the asserts (--iree-opt-level=O1+)")
    d.add_argument("--what-if", action="store_true", help="also count with all safe fixes applied")
    d.add_argument("--what-if-mode", choices=("strip", "assume"), default=None,
                   help="fix used by --what-if: strip (default) or assume (implies --what-if)")
    d.add_argument("--stream", action="store_true", help="also report the stream-level dispatch-count")
    d.add_argument("--attribution", action="store_true",
                   help="compile with --mlir-print-debuginfo and report which source ops end up in which dispatch, "
                        "and (with --what-if) which dispatches exist only because of asserts")
    d.add_argument("--compiler", default=None, help="path of iree-compile")
    d.add_argument("--timeout", type=float, default=900.0, help="seconds before a compile is stopped")
    d.add_argument("--max-dispatches", type=int, default=None, help="exit 1 when a count is above N")
    d.add_argument("--baseline", default=None, metavar="FILE.json", help="golden counts per file and profile")
    d.add_argument("--update-baseline", action="store_true", help="write the counts into --baseline")
    d.add_argument("--binary-size", action="store_true",
                   help="also compile each FILE to a .vmfb for the profile and report its size (compared with and "
                        "written to a compstat baseline's golden_binary_size)")
    d.add_argument("--no-cache", action="store_true", help="do not read or write the on-disk count cache")


class Spinner:
    def __init__(self, label: str, enabled: bool):
        self.label, self.enabled = label, enabled
        self._stop = threading.Event()
        self._t: threading.Thread | None = None

    def __enter__(self):
        if self.enabled:
            self._t = threading.Thread(target=self._spin, daemon=True)
            self._t.start()
        return self

    def _spin(self):
        t0 = time.monotonic()
        frames = "|/-\\"
        i = 0
        while not self._stop.wait(0.2):
            sys.stderr.write(f"\r{frames[i % 4]} compiling {self.label} ({time.monotonic() - t0:.0f} s)")
            sys.stderr.flush()
            i += 1

    def __exit__(self, *exc):
        self._stop.set()
        if self._t:
            self._t.join()
            sys.stderr.write("\r" + " " * 70 + "\r")


@dataclass
class CompstatRun:
    """A `--baseline` of iree-test-suites compstat files: each input's file, and the settings."""

    files: dict[str, CompstatFile]


def _compstat_setup(args, inputs: list[str], flags: list[str]) -> CompstatRun | None:
    """The compstat files of `--baseline` matched to the inputs (None: our own baseline format).
    Raises BaselineError / ValueError (a bad config)."""
    if not args.baseline:
        return None
    files = load_compstat_files(args.baseline)
    if files is None:
        return None
    s = settings_for(Path(inputs[0]) if inputs else None, Path(args.config) if args.config else None)
    if not s.compstat and not args.config:  # else the config seen from the compstat files
        s = settings_for(Path(args.baseline))
    matched, warnings = match_inputs(inputs, files, s.compstat, config_folder(s), args.profile,
                                     target_of(flags), args.baseline)
    for w in warnings:
        print(f"mlir-lsp: warning: {w}", file=sys.stderr)
    return CompstatRun(matched)


def run_dispatch_count(args) -> int:
    if not args.paths:
        print("mlir-lsp: error: --dispatch-count needs at least one FILE", file=sys.stderr)
        return 2
    try:
        paths = shard_inputs(args, args.paths)
        flags = profile_flags(args.profile, user_profiles(args))
        if args.flags:
            flags += split_flags(args.flags)
        compiler = find_compiler(args.compiler)
        compstat = _compstat_setup(args, paths, flags)
        baseline = (load_baseline(args.baseline) if args.baseline and not args.update_baseline and compstat is None
                    else None)
    except (ValueError, CompilerError, BaselineError) as e:
        print(f"mlir-lsp: error: {e}", file=sys.stderr)
        return 2
    counter = DispatchCounter(compiler, timeout=args.timeout, disk_cache=not args.no_cache)
    # a baseline that stores attribution can explain a count over it; --update-baseline stores it
    explainable = (compstat is not None and any(load_sidecar(f.path).get(args.profile) for f in compstat.files.values())
                   or baseline is not None and any(baseline.stored(p, args.profile) for p in paths))
    with_attribution = args.attribution or explainable or bool(args.update_baseline and args.baseline)
    records: list[dict] = []
    updates: list[dict] = []
    fmt = args.output_format or "concise"
    interactive = sys.stderr.isatty()
    for path in paths:
        err: list[str] = []
        rec: dict = {"path": path, "head": [], "summary": [], "json": None, "stderr": err, "error": False,
                     "failed": False}
        records.append(rec)
        try:
            with open(path, "rb") as f:
                src = decode(f.read(), path, weights=True)  # compiled: the weights too
            text = src.text
            with Spinner(path, interactive):
                mode = args.what_if_mode or ("strip" if args.what_if else None)
                pv = preview(counter, path, text, args.profile, flags, what_if=mode,
                             stream=args.stream or compstat is not None, attribution=with_attribution,
                             input_path=None if src.is_bytecode else path)
                if args.binary_size:
                    pv.binary_size = counter.binary_size(text, counter.prepare_flags(flags).flags,
                                                         input_path=None if src.is_bytecode else path)
        except (OSError, SourceError, CompilerError) as e:
            _say(err, failure_lines(path, e, compiler.version))
            rec["error"] = True
            continue
        except KeyboardInterrupt:
            counter.cancel_all()
            return 130
        _say(err, [f"mlir-lsp: warning: {path}: {w}" for w in pv.warnings]
             + [f"mlir-lsp: note: {path}: {n}" for n in pv.notes])
        rec["head"] = [f"{path}:{a.line}:{a.column}: {mla004.concise(a)}" for a in pv.assert_sources]
        if compstat is not None:
            ok = _judged_compstat(args, pv, text, compstat.files[path], err, updates)
        else:
            ok = _judged(args, pv, text, baseline, err, updates)
        rec["failed"] = not ok
        rec["json"] = pv.as_json()
        rec["summary"] = summary_lines(pv, args.quiet)
    sys.stdout.write(render_counts(records, fmt))
    if args.results_out:  # a shard's part: the merge writes the baseline
        written = write_results(args, "dispatch-count", list(args.paths), records, updates)
    else:
        written = not (args.update_baseline and args.baseline) or apply_updates(args.baseline, updates)
    return counts_exit(records, written)


def _say(sink: list[str], lines: list[str]) -> None:
    """Lines for stderr: printed now, and kept for a shard's results file."""
    for line in lines:
        print(line, file=sys.stderr)
    sink.extend(lines)


def render_counts(records: list[dict], fmt: str) -> str:
    """What `--dispatch-count` prints for its files (a merge of shards prints the same): JSON,
    or the MLA004 lines of each file, then each file's summary."""
    if fmt == "json":
        return json.dumps([r["json"] for r in records if r["json"] is not None], indent=2) + "\n"
    lines = [line for r in records for line in r["head"]] + [line for r in records for line in r["summary"]]
    return "".join(line + "\n" for line in lines)


def counts_exit(records: list[dict], written: bool) -> int:
    if not written or any(r["error"] for r in records):
        return 2
    return 1 if any(r["failed"] for r in records) else 0


def failure_lines(path: str, e: Exception, version: str) -> list[str]:
    """What to say of a file that gave no count: the compiler's errors, then one error line."""
    diagnostics = e.diagnostics if isinstance(e, CompilerError) else []
    out = compile_error_lines(path, diagnostics)
    msg = getattr(e, "strerror", None) or str(e)
    syntax = other_release_syntax(diagnostics)
    if syntax is not None:  # not the file's fault: another release's compiler reads it
        msg = (f"{other_release_message(version, syntax)}; it is probably another IREE "
               "release's: count it with that release's iree-compile (--compiler PATH)")
    return [*out, f"mlir-lsp: error: {path}: {msg}"]


def _judged(args, pv: Preview, text: str, baseline: Baseline | None, err: list[str], updates: list[dict]) -> bool:
    """Whether the count is within its budget and baseline (the verdicts said, a count over
    its baseline explained); the baseline update asked for added to `updates`, and the
    attribution taken out of the output when only the baseline asked for it."""
    verdicts = judge(pv.path, args.profile, pv.flow_dispatches, args.max_dispatches,
                     baseline.counts if baseline is not None else None)
    ok = _said(err, verdicts)
    stored = _explained(args, pv, text, baseline if not ok else None, args.baseline, err)
    if args.update_baseline and args.baseline:
        updates.append({"kind": "baseline", "path": pv.path, "profile": pv.profile, "count": pv.flow_dispatches,
                        "attribution": stored})
    return ok


def _explained(args, pv: Preview, text: str, over: Baseline | None, baseline_path: str | None,
               err: list[str]) -> dict | None:
    """A count over the baseline `over` explained; the attribution to store (compact), taken out
    of the output when only the baseline asked for it."""
    if pv.attribution is None:
        return None
    lines = text.split("\n")
    if over is not None and baseline_path is not None:
        _say(err, explain_over_baseline(pv, lines, over, baseline_path))
    stored = compact(pv.attribution.dispatches, lines) if args.update_baseline else None
    if not args.attribution:  # asked for by the baseline only: not in the output
        pv.attribution = None
        if pv.what_if:
            pv.what_if.only_because_of_asserts = None
    return stored


def _judged_compstat(args, pv: Preview, text: str, f: CompstatFile, err: list[str], updates: list[dict]) -> bool:
    """The count judged as iree-test-suites' compstat test judges it: the stream-level count at
    most the golden, the .vmfb's size at most its golden (each when the file has one); over
    one, the new dispatches named from the attribution beside the file."""
    golden, count = f.golden_dispatch_count, pv.stream_dispatches
    size, golden_size = pv.binary_size, f.golden_binary_size
    ok = True
    if count is None:
        _say(err, [f"mlir-lsp: error: {pv.path}: iree-compile gave no stream-level dispatch-count for {f.path}"])
        ok = False
    elif args.update_baseline:
        pass
    elif golden is None:
        _say(err, [f"mlir-lsp: {pv.path}: {count} dispatches at stream level; {f.path} has no "
                   f"{COUNT_KEY} (write it with --update-baseline)"])
    else:
        ok = _said(err, against(count, golden, f"{pv.path}: {count} dispatches at stream level, over the golden "
                                 f"{golden} of {f.path} (+{count - golden}); at flow level {split_text(pv)}",
                                 f"{pv.path}: {count} dispatches at stream level, under the golden {golden} of "
                                 f"{f.path} ({count - golden}); lower it with --update-baseline"))
    if size is not None and golden_size is not None and not args.update_baseline:
        ok = _said(err, against(size, golden_size, f"{pv.path}: the .vmfb is {size} bytes, over the "
                                 f"{SIZE_KEY} {golden_size} of {f.path} (+{size - golden_size})",
                                 f"{pv.path}: the .vmfb is {size} bytes, under the {SIZE_KEY} {golden_size} of "
                                 f"{f.path}")) and ok
    elif golden_size is not None and size is None and not args.update_baseline:
        _say(err, [f"mlir-lsp: note: {pv.path}: {SIZE_KEY} of {f.path} not checked (no .vmfb built: --binary-size)"])
    if args.max_dispatches is not None:
        ok = _said(err, judge(pv.path, args.profile, pv.flow_dispatches, args.max_dispatches, None)) and ok
    over = as_baseline(pv.path, f, pv.profile, golden) if not ok and golden is not None else None
    if over is not None and not over.stored(pv.path, pv.profile):
        _say(err, [f"mlir-lsp: note: no attribution beside {f.path} for profile {pv.profile!r}: write it with "
                   "--update-baseline to see which dispatches are new"])
    stored = _explained(args, pv, text, over, f.path, err)
    if args.update_baseline and count is not None:
        values = {COUNT_KEY: count, **({SIZE_KEY: size} if size is not None else {})}
        updates.append({"kind": "compstat", "path": pv.path, "file": f.path, "profile": pv.profile,
                        "values": values, "attribution": stored})
    return ok


def _said(err: list[str], verdicts: list[Verdict]) -> bool:
    """The verdicts said (failing ones as errors); whether all pass."""
    _say(err, [("mlir-lsp: " if v.ok else "mlir-lsp: error: ") + v.message for v in verdicts])
    return all(v.ok for v in verdicts)


def split_text(pv: Preview) -> str:
    """`N in initializers (run once), M in functions` of a count's dispatches."""
    init, funcs = initializer_split(pv.per_function)
    return (f"{init + funcs} dispatches: {init} in initializers (hoisted constants, run once), "
            f"{funcs} in functions")


def summary_lines(r: Preview, quiet: bool = False) -> list[str]:
    """The concise form of one count: a line, the largest functions, the attribution."""
    line = f"{r.path}: {r.flow_dispatches} dispatches"
    if r.stream_dispatches is not None:
        line += f" ({r.stream_dispatches} at stream level)"
    if r.what_if:
        w = r.what_if
        verb = "removed" if w.mode == "strip" else "rewritten to util.assume.int"
        line += f", {w.flow_dispatches} with the asserts {verb}"
        if w.saved:
            line += f" ({w.saved:+d} saved)".replace("+", "")
    line += f"  [profile {r.profile}, iree-compile {r.compiler_version}, {r.seconds:.1f} s]"
    out = [line, f"    of the {split_text(r)}"]
    if r.binary_size is not None:
        out.append(f"    .vmfb: {r.binary_size} bytes")
    if len(r.per_function) > 1 and not quiet:
        for k, v in sorted(r.per_function.items(), key=lambda kv: -kv[1])[:10]:
            out.append(f"    {v:>6}  {k}")
    return out + attribution_lines(r)


def apply_updates(file: str, updates: list[dict]) -> bool:
    """The counts (and attribution) of a run written: into the baseline `file` (its other
    entries kept), or into the goldens of the compstat files (only those numbers changed)."""
    ours = [u for u in updates if u["kind"] == "baseline"]
    try:
        for u in updates:
            if u["kind"] == "compstat":
                write_goldens(u["file"], u["values"], u["profile"], u.get("attribution"))
                print(f"mlir-lsp: wrote {u['file']}", file=sys.stderr)
        if ours or not updates and not _is_compstat_target(file):
            try:
                kept = load_baseline(file)
            except BaselineError:
                kept = Baseline({})
            for u in ours:
                kept.counts.setdefault(u["path"], {})[u["profile"]] = u["count"]
                if u.get("attribution") is not None:
                    kept.attribution.setdefault(u["path"], {})[u["profile"]] = u["attribution"]
            save_baseline(file, kept)
            print(f"mlir-lsp: wrote {file}", file=sys.stderr)
    except BaselineError as e:
        print(f"mlir-lsp: error: {e}", file=sys.stderr)
        return False
    except OSError as e:
        print(f"mlir-lsp: error: cannot write {e.filename or file}: {e.strerror or e}", file=sys.stderr)
        return False
    return True


def _is_compstat_target(file: str) -> bool:
    try:
        return load_compstat_files(file) is not None
    except BaselineError:
        return os.path.isdir(file)


def explain_over_baseline(pv: Preview, lines: list[str], baseline: Baseline, baseline_path: str,
                          limit: int = 20) -> list[str]:
    """The dispatches a count over its baseline has that the baseline's attribution has not."""
    new = compare_with_baseline(pv, lines, baseline, pv.path, baseline_path).new
    if new is None:
        return [f"mlir-lsp: note: {baseline_path} stores no attribution for {pv.path}: rewrite it with "
                "--update-baseline to see which dispatches are new"]
    out = [entry_line(e, "new", "the baseline") for e in new[:limit]]
    if len(new) > limit:
        out.append(f"mlir-lsp: ... {len(new) - limit} more new dispatches (mlir-lsp --dispatch-diff "
                   f"--against-baseline --baseline {baseline_path} {pv.path})")
    return out


def run_list_profiles(args) -> int:
    import shlex

    try:
        profiles = list_profiles(user_profiles(args))
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


def compile_error_lines(path: str, diagnostics: list[dict], limit: int = 20) -> list[str]:
    """The compiler's errors at the user's lines, `path:line:col: error: msg` (notes below)."""
    out = []
    for d in diagnostics[:limit]:
        where = f"{path}:{d['line']}:{d['column']}" if d["line"] else path
        out.append(f"{where}: {d['severity']}: {d['message']} (iree-compile)")
        for n in d.get("notes", [])[:5]:
            nwhere = f"{path}:{n['line']}:{n['column']}" if n["line"] else path
            out.append(f"{nwhere}: note: {n['message']}")
    if len(diagnostics) > limit:
        out.append(f"{path}: ... {len(diagnostics) - limit} more iree-compile diagnostics not shown")
    return out


def attribution_lines(r: Preview, limit: int = 10) -> list[str]:
    """The concise summary of attribution: one line, then the dispatches asserts alone cause."""
    if not r.attribution:
        return []
    ds = r.attribution.dispatches
    traced = sum(1 for d in ds if d.sources)
    line = f"    attribution: {traced} of {len(ds)} dispatches traced to {r.attribution.source_ops} source ops"
    extra = r.what_if.only_because_of_asserts if r.what_if else None
    if extra is not None:
        line += f"; {len(extra)} only because of asserts"
    out = [line]
    for d in (extra or [])[:limit]:
        loc = d.location
        where = f"{r.path}:{loc.line}:{loc.column}: `{loc.op}`" if loc else r.path
        out.append(f"    {where} -> {d.name} ({d.function}) exists only because of asserts")
    if extra and len(extra) > limit:
        out.append(f"    ... {len(extra) - limit} more")
    return out


def user_profiles(args) -> dict[str, list[str]]:
    """The config's profiles (`--config`, else the one found from the first FILE). A config that
    cannot be read raises its ConfigError (a ValueError): a profile of it must not just vanish."""
    s = settings_for(Path(args.paths[0]) if args.paths else None, Path(args.config) if args.config else None)
    return {k: list(v) for k, v in s.profiles}

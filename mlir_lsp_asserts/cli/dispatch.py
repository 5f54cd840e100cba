"""`mlir-lsp --dispatch-count`: the command-line front end of `dispatch/`."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

from ..config import settings_for
from ..dispatch.baselines import (
    Baseline,
    BaselineError,
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
from ..dispatch.count import DispatchCounter
from ..dispatch.diff import compare_with_baseline, entry_line
from ..dispatch.flags import BUILTIN_PROFILES, list_profiles, profile_flags, split_flags
from ..dispatch.preview import Preview, preview
from ..rules import mla004_torch_op_lowers_to_assert as mla004
from ..source import SourceError, decode


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


def run_dispatch_count(args) -> int:
    if not args.paths:
        print("mlir-lsp: error: --dispatch-count needs at least one FILE", file=sys.stderr)
        return 2
    try:
        flags = profile_flags(args.profile, user_profiles(args))
        if args.flags:
            flags += split_flags(args.flags)
        compiler = find_compiler(args.compiler)
        baseline = load_baseline(args.baseline) if args.baseline and not args.update_baseline else None
    except (ValueError, CompilerError, BaselineError) as e:
        print(f"mlir-lsp: error: {e}", file=sys.stderr)
        return 2
    counter = DispatchCounter(compiler, timeout=args.timeout, disk_cache=not args.no_cache)
    # a baseline that stores attribution can explain a count over it; --update-baseline stores it
    explainable = baseline is not None and any(baseline.stored(p, args.profile) for p in args.paths)
    with_attribution = args.attribution or explainable or bool(args.update_baseline and args.baseline)
    results: list[Preview] = []
    errors, failed = 0, False
    stored: dict[str, dict] = {}
    fmt = args.output_format or "concise"
    interactive = sys.stderr.isatty()
    for path in args.paths:
        try:
            with open(path, "rb") as f:
                src = decode(f.read(), path, weights=True)  # compiled: the weights too
            text = src.text
            with Spinner(path, interactive):
                mode = args.what_if_mode or ("strip" if args.what_if else None)
                pv = preview(counter, path, text, args.profile, flags, what_if=mode, stream=args.stream,
                             attribution=with_attribution, input_path=None if src.is_bytecode else path)
        except (OSError, SourceError, CompilerError) as e:
            print("\n".join(failure_lines(path, e, compiler.version)), file=sys.stderr)
            errors += 1
            continue
        except KeyboardInterrupt:
            counter.cancel_all()
            return 130
        for w in pv.warnings:
            print(f"mlir-lsp: warning: {path}: {w}", file=sys.stderr)
        for n in pv.notes:
            print(f"mlir-lsp: note: {path}: {n}", file=sys.stderr)
        if fmt != "json":
            for a in pv.assert_sources:
                print(f"{path}:{a.line}:{a.column}: {mla004.concise(a)}")
        results.append(pv)
        failed |= not _judged(args, pv, text, baseline, stored)
    if fmt == "json":
        print(json.dumps([r.as_json() for r in results], indent=2))
    else:
        for r in results:
            print("\n".join(summary_lines(r, args.quiet)))
    if args.update_baseline and args.baseline and not _update_baseline(args.baseline, results, stored):
        return 2
    if errors:
        return 2
    return 1 if failed else 0


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


def _judged(args, pv: Preview, text: str, baseline: Baseline | None, stored: dict[str, dict]) -> bool:
    """Whether the count is within its budget and baseline (the verdicts printed, a count over
    its baseline explained); the attribution to store kept in `stored`, and taken out of the
    output when only the baseline asked for it."""
    verdicts = judge(pv.path, args.profile, pv.flow_dispatches, args.max_dispatches,
                     baseline.counts if baseline is not None else None)
    for v in verdicts:
        print(("mlir-lsp: " if v.ok else "mlir-lsp: error: ") + v.message, file=sys.stderr)
    ok = all(v.ok for v in verdicts)
    if pv.attribution is not None:
        lines = text.split("\n")
        if not ok and baseline is not None:
            for line in explain_over_baseline(pv, lines, baseline, args.baseline):
                print(line, file=sys.stderr)
        if args.update_baseline:
            stored[pv.path] = compact(pv.attribution.dispatches, lines)
        if not args.attribution:  # asked for by the baseline only: not in the output
            pv.attribution = None
            if pv.what_if:
                pv.what_if.only_because_of_asserts = None
    return ok


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
    out = [line]
    if len(r.per_function) > 1 and not quiet:
        for k, v in sorted(r.per_function.items(), key=lambda kv: -kv[1])[:10]:
            out.append(f"    {v:>6}  {k}")
    return out + attribution_lines(r)


def _update_baseline(file: str, results: list[Preview], stored: dict[str, dict]) -> bool:
    """The counts (and attribution) written into the baseline `file`, its other entries kept."""
    try:
        kept = load_baseline(file)
    except BaselineError:
        kept = Baseline({})
    for r in results:
        kept.counts.setdefault(r.path, {})[r.profile] = r.flow_dispatches
        if r.path in stored:
            kept.attribution.setdefault(r.path, {})[r.profile] = stored[r.path]
    try:
        save_baseline(file, kept)
    except OSError as e:
        print(f"mlir-lsp: error: cannot write {file}: {e.strerror or e}", file=sys.stderr)
        return False
    print(f"mlir-lsp: wrote {file}", file=sys.stderr)
    return True


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

"""`mlir-lsp --dispatch-count`: the command-line front end of `dispatch/`."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Sequence

from ..config import Settings
from ..dispatch.baselines import (
    BaselineError,
)
from ..dispatch.compiler import (
    CompilerError,
    other_release_message,
    other_release_syntax,
)
from ..dispatch.count_files import FileCount, count_files
from ..dispatch.judging import is_compstat_target, split_text, write_updates
from ..dispatch.preview import Preview
from ..dispatch.request import CountRequest, count_request
from ..iree_flags.flags import split_flags
from ..records import replace
from ..rules import mla004_torch_op_lowers_to_assert as mla004
from .profiles import config_settings
from .results import shard_inputs, write_results


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


def cli_settings(args) -> Settings:
    """The config's settings with the `--profile` and `--flags` asked for (main.py defaults them
    to the config's)."""
    s = config_settings(args)
    return replace(s, profile=args.profile, flags=tuple(split_flags(args.flags)) if args.flags else ())


def request_of(args, inputs: Sequence[str] = (), baseline: bool = False) -> CountRequest:
    """The count request of the command line's options, for `inputs` (with `baseline`:
    `--baseline` read for them). Raises ValueError, CompilerError, BaselineError."""
    settings = cli_settings(args)
    return count_request(settings, compiler=args.compiler, timeout=args.timeout,
                         what_if=args.what_if_mode or ("strip" if args.what_if else None),
                         baseline=args.baseline if baseline else None, inputs=inputs,
                         config_given=bool(args.config), update_baseline=args.update_baseline,
                         max_dispatches=args.max_dispatches, attribution=args.attribution, stream=args.stream,
                         binary_size=args.binary_size, cache=not args.no_cache)


def run_dispatch_count(args) -> int:
    if not args.paths:
        print("mlir-lsp: error: --dispatch-count needs at least one FILE", file=sys.stderr)
        return 2
    try:
        paths = shard_inputs(args, args.paths)
        req = request_of(args, paths, baseline=True)
    except (ValueError, CompilerError, BaselineError) as e:
        print(f"mlir-lsp: error: {e}", file=sys.stderr)
        return 2
    for w in req.compstat.warnings if req.compstat is not None else ():
        print(f"mlir-lsp: warning: {w}", file=sys.stderr)
    version = req.compiler.version
    try:  # a shard's part leaves the baseline to the merge
        run = count_files(req, ShownCounts(version, sys.stderr.isatty()), write=not args.results_out)
    except KeyboardInterrupt:
        return 130
    records = [count_record(done, version, args.quiet) for done in run.files]
    sys.stdout.write(render_counts(records, args.output_format or "concise"))
    if args.results_out:
        written = write_results(args, "dispatch-count", list(args.paths), records, run.updates)
    else:
        for line in run.said:
            print(line, file=sys.stderr)
        written = run.written
    return counts_exit(records, written)


class ShownCounts:
    """What `--dispatch-count` shows while it counts: a spinner around a file's compiles (on a
    terminal), and each file's lines for stderr as soon as it is done."""

    def __init__(self, version: str, interactive: bool):
        self.version, self.interactive = version, interactive

    def counting(self, path: str) -> Spinner:
        return Spinner(path, self.interactive)

    def counted(self, done: FileCount) -> None:
        for line in stderr_lines(done, self.version):
            print(line, file=sys.stderr)


def count_record(done: FileCount, version: str, quiet: bool = False) -> dict:
    """What one input's count prints (its MLA004 lines, its summary, its JSON, its stderr lines),
    as a shard's results file keeps it."""
    pv = done.preview
    rec: dict = {"path": done.path, "head": [], "summary": [], "json": None, "stderr": stderr_lines(done, version),
                 "error": pv is None, "failed": False}
    if pv is not None:
        rec["head"] = [f"{done.path}:{a.line}:{a.column}: {mla004.concise(a)}" for a in pv.assert_sources]
        rec["failed"] = not done.passed
        rec["json"] = pv.as_json()
        rec["summary"] = summary_lines(pv, quiet)
    return rec


def stderr_lines(done: FileCount, version: str) -> list[str]:
    """What to say on stderr of one input: why it has no count, or the count's warnings and
    notes, then what judging it said."""
    pv, path = done.preview, done.path
    if pv is None:
        assert done.error is not None, "a file without a count has the error why"
        return failure_lines(path, done.error, version)
    return ([f"mlir-lsp: warning: {path}: {w}" for w in pv.warnings]
            + [f"mlir-lsp: note: {path}: {n}" for n in pv.notes] + done.said)


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
    """The counts (and attribution) of a merged run written (`judging.write_updates`), what was
    written or why not said on stderr."""
    said: list[str] = []
    ok = write_updates(file, updates, said, is_compstat_target(file))
    for line in said:
        print(line, file=sys.stderr)
    return ok


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

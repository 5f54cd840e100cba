"""`mlir-lsp --dispatch-diff`: which dispatches one compile of a file has that another has not,
from which source ops, and why. The front end of `dispatch/diff.py`.

The two sides: the file as it is (`--compiler`, `--profile`, `--flags`) and the file compiled
another way: another compiler (`--against-compiler`), other flags (`--against-flags`,
`--against-profile`), another revision (`--against FILE2`, `--against-git REV`), or the
attribution a baseline stores (`--against-baseline`, with `--baseline FILE`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass

from ..dispatch.baselines import Baseline, BaselineError, load_baseline
from ..dispatch.compiler import Compiler, CompilerError, find_compiler
from ..dispatch.count import DispatchCounter
from ..dispatch.diff import (
    Comparison,
    against_baseline,
    compiled_side,
    diff,
    entry_line,
    entry_text,
)
from ..iree_flags.flags import split_flags
from ..records import replace
from ..source import SourceError, decode
from .dispatch import cli_settings, request_of
from .output import gh_escape
from .results import shard_inputs, write_results

FORMATS = ("concise", "full", "json", "github")
CONCISE_SOURCES = 8


def _error(msg: str) -> int:
    print(f"mlir-lsp: error: {msg}", file=sys.stderr)
    return 2


def read_file(path: str) -> tuple[str, bool]:
    with open(path, "rb") as f:
        src = decode(f.read(), path, weights=True)  # compiled: the weights too
    return src.text, src.is_bytecode


def git_show(rev: str, path: str) -> str:
    """FILE as of revision REV of the repository holding it (`git show REV:./FILE`)."""
    folder, name = os.path.split(os.path.abspath(path))
    try:
        r = subprocess.run(["git", "-C", folder, "show", f"{rev}:./{name}"], capture_output=True, timeout=120,
                           check=False)
    except FileNotFoundError:
        raise OSError("git not found (needed by --against-git)") from None
    except subprocess.TimeoutExpired:
        raise OSError(f"git show {rev}:{path} did not finish in 120 s") from None
    if r.returncode != 0:
        msg = r.stderr.decode("utf-8", "replace").strip().splitlines()
        raise OSError(f"git show {rev}:{name}: {msg[-1] if msg else f'exit {r.returncode}'}")
    return decode(r.stdout, weights=True).text


def has_other_side(args) -> bool:
    return bool(args.against or args.against_git or args.against_baseline or args.against_compiler
                or args.against_flags is not None or args.against_profile is not None)


def sides_error(args) -> str | None:
    """What is wrong with the `--against*` options (which exclude each other), or None."""
    texts = [x for x in (args.against, args.against_git, args.against_baseline or None) if x]
    if len(texts) > 1:
        return "--against, --against-git and --against-baseline exclude each other"
    if args.against and len(args.paths) != 1:
        return "--against FILE2 compares one FILE"
    if args.against_baseline and not args.baseline:
        return "--against-baseline needs --baseline FILE.json"
    return None


@dataclass
class Sides:
    """What both sides are compiled with (from the options): flags, compilers, a baseline."""

    flags: list[str]
    other_flags: list[str]
    compiler: Compiler
    other_compiler: Compiler
    baseline: Baseline | None

    def counters(self, args) -> tuple[DispatchCounter, DispatchCounter]:
        counter = DispatchCounter(self.compiler, timeout=args.timeout, disk_cache=not args.no_cache)
        other = (counter.sibling() if self.other_compiler.path == self.compiler.path
                 else DispatchCounter(self.other_compiler, timeout=args.timeout, disk_cache=not args.no_cache))
        return counter, other


def prepare_sides(args) -> Sides:
    """The sides' flags, compilers and baseline; raises ValueError, CompilerError, BaselineError."""
    req = request_of(args)
    other_extra = args.against_flags if args.against_flags is not None else args.flags
    other = replace(cli_settings(args), profile=args.against_profile or args.profile,
                    flags=tuple(split_flags(other_extra)) if other_extra else ())
    other_compiler = find_compiler(args.against_compiler) if args.against_compiler else req.compiler
    baseline = load_baseline(args.baseline) if args.against_baseline else None
    return Sides(list(req.flags), other.dispatch_flags(), req.compiler, other_compiler, baseline)


def run_dispatch_diff(args) -> int:
    fmt = args.output_format or "concise"
    if fmt not in FORMATS:
        return _error(f"--dispatch-diff prints {', '.join(FORMATS)}, not {fmt}")
    if not args.paths:
        return _error("--dispatch-diff needs a FILE")
    if not has_other_side(args):
        return _error("--dispatch-diff needs the other side: --against FILE2, --against-git REV, --against-baseline, "
                      "--against-compiler PATH, --against-flags FLAGS or --against-profile NAME")
    if (bad := sides_error(args)) is not None:
        return _error(bad)
    try:
        sides = prepare_sides(args)
    except (ValueError, CompilerError, BaselineError) as e:
        return _error(str(e))
    flags, other_flags, baseline = sides.flags, sides.other_flags, sides.baseline
    counter, other_counter = sides.counters(args)
    workers = 2 if (args.jobs or os.cpu_count() or 1) > 1 else 1
    try:
        paths = shard_inputs(args, args.paths)
    except ValueError as e:
        return _error(str(e))
    records: list[dict] = []
    for path in paths:
        try:
            r = _one(args, path, flags, other_flags, counter, other_counter, baseline, workers)
        except (OSError, SourceError, CompilerError, BaselineError) as e:
            if isinstance(e, OSError) and e.filename and e.strerror:  # names the file it is about
                msg = f"mlir-lsp: error: {e.filename}: {e.strerror}"
            else:
                msg = f"mlir-lsp: error: {path}: {e}"
            print(msg, file=sys.stderr)
            records.append({"path": path, "error": True, "stderr": [msg]})
            continue
        except KeyboardInterrupt:
            counter.cancel_all()
            other_counter.cancel_all()
            return 130
        records.append({"path": path, "error": False, "delta": r.delta, "json": r.as_json(),
                        "text": text_lines(r), "full": text_lines(r, full=True), "github": github_lines(r),
                        "stderr": [f"mlir-lsp: note: {r.path} ({side.label}): {n}"
                                   for side in (r.current, r.against) for n in side.notes]})
    for rec in records:
        if not rec["error"]:
            for line in rec["stderr"]:
                print(line, file=sys.stderr)
    sys.stdout.write(render_diffs(records, fmt))
    if not write_results(args, "dispatch-diff", list(args.paths), records):
        return 2
    return diffs_exit(records, args.exit_zero)


def render_diffs(records: list[dict], fmt: str) -> str:
    """What `--dispatch-diff` prints for its files (a merge of shards prints the same)."""
    done = [r for r in records if not r["error"]]
    if fmt == "json":
        return json.dumps([r["json"] for r in done], indent=2) + "\n"
    key = {"github": "github", "full": "full"}.get(fmt, "text")
    return "\n".join(line for r in done for line in r[key]) + "\n"


def diffs_exit(records: list[dict], exit_zero: bool) -> int:
    if any(r["error"] for r in records):
        return 2
    return 1 if any(r["delta"] > 0 for r in records) and not exit_zero else 0


def other_label(args, compiler, other_compiler) -> str:
    parts = []
    if args.against:
        parts.append(args.against)
    elif args.against_git:
        parts.append(f"git {args.against_git}")
    elif args.against_baseline:
        parts.append(f"baseline {args.baseline}")
    if other_compiler.path != compiler.path:
        parts.append(f"iree-compile {other_compiler.version} ({other_compiler.path})")
    if args.against_profile is not None and args.against_profile != args.profile:
        parts.append(f"profile {args.against_profile}")
    if args.against_flags is not None:
        parts.append(f"flags {args.against_flags!r}" if args.against_flags else "no extra flags")
    return ", ".join(parts)


def _one(args, path, flags, other_flags, counter, other_counter, baseline, workers) -> Comparison:
    text, is_bytecode = read_file(path)
    label = other_label(args, counter.compiler, other_counter.compiler)
    other_profile = args.against_profile or args.profile
    if baseline is not None:
        cur = compiled_side(counter, "current", path, text, flags, args.profile,
                            input_path=None if is_bytecode else path)
        got = against_baseline(cur, baseline, path, label)
        if got is None or got[0].new is None:
            raise BaselineError(f"{args.baseline} stores no attribution for {path} with profile {args.profile!r} "
                                "(write it with --dispatch-count --update-baseline)")
        return got[0]
    other_text, other_path, other_input = other_file(args, path, text, is_bytecode)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        fc = pool.submit(side_of, counter, "current", path, text, flags, args.profile, None if is_bytecode else path)
        fo = pool.submit(side_of, other_counter, label, other_path, other_text, other_flags, other_profile, other_input)
        try:
            done, _ = wait((fc, fo), return_when=FIRST_EXCEPTION)
            failed = next((e for e in (f.exception() for f in (fc, fo) if f in done) if e is not None), None)
            if failed is not None:
                raise failed  # the side that failed, not the other one cancelled for it
            cur, other = fc.result(), fo.result()
        except BaseException:
            counter.cancel_all()  # the other side too, also a compile it has yet to start
            other_counter.cancel_all()
            raise
        finally:
            pool.shutdown(wait=True)
            counter.resume()  # the next FILE is counted again
            other_counter.resume()
    return diff(cur, other)


def other_file(args, path: str, text: str, is_bytecode: bool) -> tuple[str, str, str | None]:
    """(text, path, input_path) of the other side's file: FILE2, FILE at a git revision, or FILE."""
    if args.against:
        other_text, other_bc = read_file(args.against)
        return other_text, args.against, None if other_bc else args.against
    if args.against_git:
        return git_show(args.against_git, path), f"{args.against_git}:{path}", None
    return text, path, None if is_bytecode else path


def side_of(counter, label, path, text, flags, profile, input_path):
    """One side's compile; a failure says which side it is (`the other side (LABEL)`)."""
    try:
        return compiled_side(counter, label, path, text, flags, profile, input_path=input_path)
    except CompilerError as e:
        if str(e) == "cancelled":
            raise
        which = "this side" if label == "current" else f"the other side ({label})"
        raise CompilerError(f"{which}: {e}", e.diagnostics) from None


def _changes(r: Comparison):
    """(kind, change) of the dispatches only one side has: the new ones, then the gone ones."""
    for kind, changes in (("new", r.new), ("gone", r.gone)):
        for e in changes or []:
            yield kind, e


def summary(r: Comparison) -> str:
    c, a = r.current, r.against
    return (f"{r.path}: {c.flow_dispatches} dispatches, {a.flow_dispatches} with {a.label} "
            f"({r.delta:+d}): {len(r.new or [])} new, {len(r.gone or [])} gone  "
            f"[profile {c.profile}, iree-compile {c.compiler_version}]")


def text_lines(r: Comparison, full: bool = False) -> list[str]:
    out = [summary(r)]
    for kind, e in _changes(r):
        out.append(entry_line(e, kind, r.against.label))
        shown = e.sources if full else e.sources[:CONCISE_SOURCES]
        out.extend(f"    {e.file}:{s.line}:{s.column} {s.op}" for s in shown)
        if len(e.sources) > len(shown):
            out.append(f"    ... {len(e.sources) - len(shown)} more source ops (--output-format full)")
    return out


def github_lines(r: Comparison) -> list[str]:
    """GitHub annotations at the source lines of the file in the checkout; dispatches only a
    revision or a baseline has are reported without a place."""
    out = [f"::notice title=mlir-lsp dispatch diff::{gh_escape(summary(r))}"]
    for kind, e in _changes(r):
        msg = gh_escape(entry_text(e, kind, r.against.label))
        loc = e.location
        if loc and e.file == r.path:
            props = (f"file={gh_escape(e.file, True)},line={loc.line},col={loc.column},"
                     f"title={gh_escape('mlir-lsp ' + e.name, True)}")
            out.append(f"::{'warning' if kind == 'new' else 'notice'} {props}::{msg}")
        else:
            out.append(f"::notice title={gh_escape('mlir-lsp ' + e.name, True)}::{msg}")
    return out

"""`mlir-lsp`: the command line. Parses arguments and translates between the user and the core.

    mlir-lsp --check [options] PATH...     check files (CI mode)
    mlir-lsp [--stdio | --tcp HOST:PORT]   run the language server
    mlir-lsp --dispatch-graph FILE [-o G.json | --open]   the dispatches as a Model Explorer graph
    mlir-lsp --compile FILE -o OUT.vmfb [--fix-mode assume]   compile with the fix, dispatches saved
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # typing's, without importing typing (`--version`, `--explain`: rules/base.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..file_job import FileOutcome, JobOptions
    from . import measured, torch_check

# Each mode imports what it runs, when it runs (a check: the checker and the output formats; the
# server: pygls; a count: the compiler), so that `mlir-lsp --version` or a pre-commit --check of a
# small file starts in tens of milliseconds (tests/test_startup.py says what each mode may load).

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
PARALLEL_THRESHOLD = 8
# Without -j, worker processes only for this much text or more: below it starting them costs more
# than they save (200 small files, a pre-commit run, check in well under a second in one process).
PARALLEL_BYTES = 4 << 20


def _split_codes(values):
    if values is None:
        return None
    return [c for v in values for c in v.split(",") if c.strip()]


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    try:
        alone = _flag_alone(argv)
        if alone is not None:  # a few lines printed at once: no handlers to install (signal, enum)
            try:
                return alone()
            except KeyboardInterrupt:
                print("mlir-lsp: stopped (SIGINT)", file=sys.stderr)
                return 130
        from .signals import run_stoppable  # SIGTERM and SIGHUP stop as Ctrl-C does

        return run_stoppable(lambda: run(argv))
    except BrokenPipeError:  # `mlir-lsp ... | head`: the reader is gone, nothing more to say
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that the exit's flush of stdout is quiet too
        return EXIT_ERROR


def command() -> None:
    """The `mlir-lsp` command (and `python -m mlir_lsp_asserts`): `main()`, then the process
    ends. When nothing is left to run at exit (no atexit handler, no thread but this one), it ends
    without the interpreter's teardown, which frees every module and object one by one: ~10 ms,
    an eighth of a small file's check. `main()` itself returns, for callers in a Python process."""
    code = main()
    if _nothing_left_to_run():
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass  # the usual exit reports it, as it would have
        else:
            os._exit(code)
    sys.exit(code)


def _nothing_left_to_run() -> bool:
    import atexit

    ncallbacks = getattr(atexit, "_ncallbacks", None)
    if ncallbacks is None or ncallbacks():
        return False
    threading = sys.modules.get("threading")
    return threading is None or (threading.active_count() == 1 and not getattr(threading, "_threading_atexits", [1]))


def run(argv: list[str]) -> int:
    """The command line `argv` (without the program's name), after main()'s `_flag_alone`."""
    if argv in ([], ["--stdio"]):
        # The language server as editors start it, before anything else is read or imported: the
        # editor waits for its `initialize` answer (server/early_start.py).
        from ..server import run_server

        return run_server()
    from .plain_check import plain_check

    plain = plain_check(argv)
    if plain is not None:
        args: Any = plain
    else:  # any other command line
        from .arguments import build_parser

        args = build_parser().parse_args(argv)
    if args.check or args.fix or args.diff:
        _collect_less()
    if args.version:
        from .version import print_version

        return print_version(args.compiler)
    if args.show_settings:
        from ..server.options import show_settings

        return show_settings()
    if args.explain is not None:
        return explain_rule(args.explain, args.output_format)
    args.given_compile = _compile_defaults(args)
    for flag, given in (("--shard", args.shard), ("--results-out", args.results_out)):
        if given is not None and not (args.check or args.dispatch_count or args.dispatch_diff):
            print(f"mlir-lsp: error: {flag} goes with --check, --dispatch-count or --dispatch-diff", file=sys.stderr)
            return EXIT_ERROR
    if args.shard is not None:
        from ..shards import parse_shard

        try:
            parse_shard(args.shard)
        except ValueError as e:
            print(f"mlir-lsp: error: {e}", file=sys.stderr)
            return EXIT_ERROR
    if args.merge_results:
        from .merge import run_merge

        return run_merge(args)
    if args.list_profiles:
        from .profiles import run_list_profiles

        return run_list_profiles(args)
    if args.compile:
        from .compile import run_compile

        return run_compile(args)
    if args.dispatch_graph:
        from .dispatch_graph import run_dispatch_graph

        return run_dispatch_graph(args)
    if args.dispatch_diff:
        from .dispatch_diff import run_dispatch_diff

        return run_dispatch_diff(args)
    if args.dispatch_count:
        from .dispatch import run_dispatch_count

        return run_dispatch_count(args)
    if args.check or args.fix or args.diff:
        try:
            return run_check(args)
        except KeyboardInterrupt:
            return 130
    if args.paths:
        print("mlir-lsp: error: paths given without --check (did you mean `mlir-lsp --check PATH`?)",
              file=sys.stderr)
        return EXIT_ERROR
    from ..server import run_server

    return run_server(tcp=args.tcp)


def _collect_less() -> None:
    """A check keeps what its start-up builds (modules, classes, compiled patterns: tens of
    thousands of objects) to its end: the collector's young-generation passes over them, one per
    700 new objects, were ~6% of a small file's check. One per 100,000 here."""
    import gc

    gc.set_threshold(100_000)


def _flag_alone(argv: list[str]) -> Callable[[], int] | None:
    """`mlir-lsp --version` and `mlir-lsp --explain RULE`, as the whole command line, run without
    argparse: its import and the parser's 60-odd arguments were a third of such a start. What
    argparse would make of these two forms is exactly this; any other form goes through it.
    They run without `run_stoppable`'s SIGTERM handler too (`signal` imports `enum`): Python's
    own ends them, and the one process `--version` may start (the compiler's `--version`, when
    its release is not cached) dies with it (`processes.death_signal`)."""
    if argv == ["--version"]:
        from .version import print_version

        return print_version
    if len(argv) == 2 and argv[0] == "--explain" and not argv[1].startswith("-"):
        return lambda: explain_rule(argv[1], None)
    return None


def explain_rule(token: str, fmt: str | None) -> int:
    """`--explain RULE`: the rule's page as Markdown (or, with `--output-format json`, an object
    with code, name, summary, default severity, the page's URL and its text)."""
    from ..rules import RULES_BY_CODE, doc_url, explain

    try:
        code, name, page = explain(token)
    except ValueError as e:
        print(f"mlir-lsp: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    if fmt == "json":
        import json

        rule = RULES_BY_CODE.get(code)
        print(json.dumps({"code": code, "name": name, "summary": rule.summary if rule else "text the structural reader "
                          "cannot follow", "severity": rule.severity.value if rule else "error",
                          "url": doc_url(code), "explanation": page}, indent=2))
    else:
        sys.stdout.write(page if page.endswith("\n") else page + "\n")
    return EXIT_CLEAN


def _compile_defaults(args) -> dict:
    """`--profile` and `--flags` as given (in --check they override each file's config); then
    `args.profile` and `args.flags` default to the config's `profile` and `flags` (`--config`,
    else the one found from the first PATH), as the dispatch count and --what-if use them."""
    from ..config import ConfigError, Settings, settings_for

    given = {k: v for k, v in (("profile", args.profile), ("flags", args.flags)) if v is not None}
    if args.profile is None or args.flags is None:
        try:
            found = settings_for(args.paths[0] if args.paths else None, args.config or None)
        except ConfigError:
            found = Settings()  # reported where the config is used, with the file's name
        if args.profile is None:
            args.profile = found.profile or "default"
        if args.flags is None and found.flags:
            import shlex

            args.flags = shlex.join(found.flags)
    return given


def _options(args) -> JobOptions:
    from ..file_job import JobOptions

    override = dict(getattr(args, "given_compile", {}))
    if args.docs_base_url is not None:
        override["docs-base-url"] = args.docs_base_url
    if args.measured_severity:
        override["measured-severity"] = True
    for key, val in (("select", args.select), ("extend-select", args.extend_select), ("ignore", args.ignore)):
        codes = _split_codes(val)
        if codes is not None:
            override[key] = codes
    return JobOptions(settings_override=override or None, config_file=args.config, fix=args.fix,
                      unsafe_fixes=args.unsafe_fixes, diff=args.diff, fix_mode=args.fix_mode,
                      with_fixes=_shows_fixes(args))


def wants_measure(args) -> bool:
    """Does this --check measure its findings (cli/measured.py)?"""
    return bool(args.what_if or args.what_if_mode or args.measured_severity)


def _shows_fixes(args) -> bool:
    """Does this run print, write or use the findings' fixes? (A concise check does not: its
    findings are checked without them, and the fixes' code is not even imported.)"""
    from .output import SHOW_FIXES

    return bool(args.fix or args.diff or args.statistics or args.results_out or wants_measure(args)
                or (args.output_format or "concise") in SHOW_FIXES)


class _Progress:
    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.enabled = total, 0, enabled
        self.last = 0.0

    def step(self):
        self.done += 1
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < 0.1 and self.done < self.total:
            return
        self.last = now
        width = 30
        filled = width * self.done // max(self.total, 1)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} files")
        sys.stderr.flush()

    def close(self):
        if self.enabled:
            sys.stderr.write("\r" + " " * 60 + "\r")
            sys.stderr.flush()


def _interactive() -> bool:
    return sys.stderr.isatty() and not os.environ.get("CI")


def check_paths(args, opts: JobOptions) -> tuple[list[FileOutcome], list[str], list[str]]:
    """(the outcomes of the files of this run (its shard), messages about the paths, every file
    of the whole run)."""
    from ..config import ConfigError, settings_for
    from ..file_job import run_file
    from ..files import discover
    from .results import shard_inputs

    try:  # the folder walk uses the excludes of the config seen from here (or --config)
        exclude = settings_for(os.getcwd(), args.config or None).exclude
    except ConfigError:
        exclude = ()  # the bad config is reported per file, with the file's name
    every, problems = discover(args.paths, exclude, force_exclude=args.force_exclude)
    files = shard_inputs(args, every)
    stdin_data = None
    if "-" in files:
        stdin_data = sys.stdin.buffer.read()
    progress = _Progress(len(files), _interactive() and not args.no_progress and len(files) > 1 and not args.quiet)
    outcomes: list[FileOutcome] = []
    jobs = args.jobs or cpu_count()
    disk = [f for f in files if f != "-"]
    if len(files) >= PARALLEL_THRESHOLD and jobs > 1 and (args.jobs or _total_size(disk) >= PARALLEL_BYTES):
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs) as pool:
            chunk = max(1, len(disk) // (jobs * 8))
            for oc in pool.map(run_file, disk, [opts] * len(disk), chunksize=chunk):
                outcomes.append(oc)
                progress.step()
        if "-" in files:
            outcomes.append(run_file("-", opts, stdin_data))
    else:
        for f in files:
            outcomes.append(run_file(f, opts, stdin_data if f == "-" else None))
            progress.step()
    progress.close()
    if args.stdin_filename:
        for oc in outcomes:
            if oc.path == "-":
                oc.path = args.stdin_filename
    return outcomes, problems, every


def run_check(args) -> int:
    if not args.paths:
        print("mlir-lsp: error: --check needs at least one PATH (or - for stdin)", file=sys.stderr)
        return EXIT_ERROR
    opts = _options(args)
    try:
        from ..config import ConfigError, settings_from_mapping

        if opts.settings_override:  # a profile of a file's config is checked with that config
            settings_from_mapping({k: v for k, v in opts.settings_override.items() if k != "profile"}, "command line")
    except ConfigError as e:
        print(f"mlir-lsp: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    measurer: measured.Measurer | torch_check.TorchChecker | None = None
    if wants_measure(args):
        from . import measured

        try:
            measurer = measured.prepare(args)
        except (ValueError, measured.CompilerError) as e:
            print(f"mlir-lsp: error: {e}", file=sys.stderr)
            return EXIT_ERROR
    else:  # torch IR: MLA004 by lowering to input only (its compiler code is loaded for a torch file only)
        from . import torch_check

        measurer = torch_check.prepare(args)
    if args.watch:
        from .watch import watch_loop

        return watch_loop(args, lambda: _check_once(args, opts, measurer))
    return _check_once(args, opts, measurer)


def _check_once(args, opts: JobOptions, measurer=None) -> int:
    from .output import RENDERERS, FileReport, check_records, render_statistics
    from .results import write_results

    t0 = time.monotonic()
    outcomes, problems, every = check_paths(args, opts)
    if measurer is not None:
        problems = problems + measurer.measure(outcomes, args.quiet)
    fmt = args.output_format or "concise"
    errors = 0
    for msg in problems:
        level = "error" if msg.endswith("no such file or directory") else "warning"
        print(f"mlir-lsp: {level}: {msg}", file=sys.stderr)
    for oc in outcomes:
        if oc.error or oc.write_error:
            errors += 1
            print(f"mlir-lsp: error: {oc.path}: {oc.error or oc.write_error}", file=sys.stderr)
        for note in oc.notes:
            if not args.quiet:
                print(f"mlir-lsp: {oc.path}: {note}", file=sys.stderr)
    if any(p.endswith("no such file or directory") for p in problems):
        errors += 1
    reports = [FileReport(oc.path, oc.findings, oc.text, oc.lines) for oc in outcomes if not oc.error]
    if args.diff:
        for oc in outcomes:
            if oc.diff:
                sys.stdout.write(oc.diff)
    elif any(oc.stdout_text is not None for oc in outcomes):
        for oc in outcomes:
            if oc.stdout_text is not None:
                sys.stdout.write(oc.stdout_text)
        if not args.quiet or fmt not in ("concise", "full"):
            sys.stderr.write(RENDERERS[fmt](reports))  # stdout carries the fixed text
    else:
        sys.stdout.write(RENDERERS[fmt](reports))
    if args.results_out and not write_results(args, "check", every, check_records(outcomes), problems=problems):
        errors += 1
    if args.statistics:
        stream = sys.stderr if fmt not in ("concise", "full") else sys.stdout
        stream.write(render_statistics(reports))
    n = sum(len(r.findings) for r in reports)
    fixed = sum(oc.fixed_count for oc in outcomes)
    if not args.quiet and fmt in ("concise", "full") and not args.diff:
        secs = time.monotonic() - t0
        files = len(reports)
        summary = f"Found {n} finding{'s' if n != 1 else ''} in {files} file{'s' if files != 1 else ''} ({secs:.2f} s)"
        if fixed:
            summary += f"; fixed {fixed}"
        print(summary, file=sys.stderr)
    if errors:
        return EXIT_ERROR
    if args.diff:
        return EXIT_FINDINGS if any(oc.changed for oc in outcomes) else EXIT_CLEAN
    if n and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _total_size(paths: list[str]) -> int:
    total = 0
    for path in paths:
        try:
            total += os.stat(path).st_size
        except OSError:
            pass  # reported by the check of that file
        if total >= PARALLEL_BYTES:
            break
    return total


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


if __name__ == "__main__":
    sys.exit(main())

"""The command line's arguments: `build_parser` (--check and --fix, the mode flags) and the
argparse groups of the other modes, so that parsing a command line imports none of the code that
runs a mode (the dispatch count, the compiler, Model Explorer). `main.py` imports this module
only when it parses a command line (`--version` and `--explain RULE` alone need no argparse)."""

from __future__ import annotations

import argparse
import os
import sys

from ..iree_flags.flags import BUILTIN_PROFILES
from ..model_explorer_adapter import INSTALL_HINT

OUTPUT_FORMATS = ("concise", "full", "json", "json-lines", "github", "sarif", "junit")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors exit 2 with one line, like ruff
        self.print_usage(sys.stderr)
        self.exit(2, f"mlir-lsp: error: {message}\n")  # main.EXIT_ERROR


def terminal_columns() -> int:
    """`shutil.get_terminal_size().columns` (what argparse wraps its help at), without importing
    shutil and its compressors: argparse would, at each `add_argument`."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):  # no stdout, or not a terminal
            columns = 0
    return columns or 80


def seconds(text: str) -> float:
    """`--timeout`: a number of seconds above 0 and up to a week (NaN stopped every compile at
    once; a wait of ~1e9 s or more makes the timer's thread raise)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= 7 * 86_400:  # False for NaN too
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 604800 (a week), not {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    width = terminal_columns() - 2  # as argparse's HelpFormatter takes it
    p = _Parser(prog="mlir-lsp", description="Find cf.assert ops that cost IREE dispatches; "
                "language server (default) and CI checker (--check).",
                formatter_class=lambda prog: argparse.HelpFormatter(prog, width=width))
    p.add_argument("--version", action="store_true", help="print the version, the iree-compile it uses and the Python")
    mode = p.add_argument_group("mode")
    mode.add_argument("--check", action="store_true", help="check files and report findings")
    mode.add_argument("--stdio", action="store_true", help="run the language server on stdio (default)")
    mode.add_argument("--tcp", metavar="HOST:PORT", help="run the language server on TCP (debugging)")
    mode.add_argument("--show-settings", action="store_true",
                      help="print the server's settings defaults (section mlirLsp) as JSON")
    mode.add_argument("--explain", metavar="RULE",
                      help="print a rule's documentation (code or name, e.g. MLA001), like `ruff rule`")
    c = p.add_argument_group("check")
    c.add_argument("paths", nargs="*", metavar="PATH", help="files, directories, or - for stdin")
    c.add_argument("--output-format", choices=OUTPUT_FORMATS, default=None,
                   help="concise (default), full, json, json-lines, github, sarif, junit")
    c.add_argument("--select", action="append", default=None, metavar="CODES",
                   help="comma-separated rule codes or prefixes to report (default: all)")
    c.add_argument("--extend-select", action="append", default=None, metavar="CODES")
    c.add_argument("--ignore", action="append", default=None, metavar="CODES",
                   help="comma-separated rule codes to never report")
    c.add_argument("--config", metavar="FILE", help="use this mlir-lsp.toml/pyproject.toml")
    c.add_argument("--docs-base-url", metavar="URL",
                   help="rule links point to URL/MLA001.md (default: the pages installed with mlir-lsp)")
    c.add_argument("--statistics", action="store_true", help="print the count of findings per rule")
    c.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    c.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary")
    c.add_argument("--watch", action="store_true", help="check again whenever a file changes")
    c.add_argument("--stdin-filename", metavar="NAME", help="name to report for - (stdin)")
    c.add_argument("--force-exclude", action="store_true",
                   help="apply the config's exclude patterns to files named on the command line too (pre-commit)")
    c.add_argument("--no-progress", action="store_true", help="never show the progress bar")
    c.add_argument("-j", "--jobs", type=int, default=None, help="worker processes (default: cores)")
    add_measured(c)
    f = p.add_argument_group("fix")
    f.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    f.add_argument("--unsafe-fixes", action="store_true", help="also apply unsafe fixes (host asserts)")
    f.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    f.add_argument("--fix-mode", choices=("strip", "assume"), default=None,
                   help="strip asserts (default) or rewrite them to util.assume.int where sound")
    add_compile(p)
    add_dispatch_count(p)
    add_dispatch_diff(p)
    add_dispatch_graph(p)
    add_shards(p)
    return p


def add_measured(group) -> None:
    group.add_argument("--measured-severity", action="store_true",
                       help="with --what-if (implied): MLA001 at information severity in files whose what-if saves "
                            "no dispatch (config: measured-severity)")
    group.add_argument("--no-lower", action="store_true",
                       help="never lower torch IR to find its MLA004 findings (config: lower-torch = false)")


def add_compile(p) -> None:
    g = p.add_argument_group("compile with the fix (--compile FILE -o OUT.vmfb)")
    g.add_argument("--compile", action="store_true",
                   help="lower FILE to input, apply the safe fixes (--fix-mode, default assume; host asserts kept), "
                        "compile on to -o OUT.vmfb with --profile and --flags, and report the dispatches saved")


def add_dispatch_count(p) -> None:
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
    d.add_argument("--timeout", type=seconds, default=900.0, help="seconds before a compile is stopped")
    d.add_argument("--max-dispatches", type=int, default=None, help="exit 1 when a count is above N")
    d.add_argument("--baseline", default=None, metavar="FILE.json", help="golden counts per file and profile")
    d.add_argument("--update-baseline", action="store_true", help="write the counts into --baseline")
    d.add_argument("--binary-size", action="store_true",
                   help="also compile each FILE to a .vmfb for the profile and report its size (compared with and "
                        "written to a compstat baseline's golden_binary_size)")
    d.add_argument("--no-cache", action="store_true", help="do not read or write the on-disk count cache")


def add_dispatch_diff(p) -> None:
    d = p.add_argument_group("dispatch diff (--dispatch-diff FILE: the file as it is against ...)")
    d.add_argument("--dispatch-diff", action="store_true",
                   help="compare two compiles of each FILE: the dispatches only one side has, their source ops "
                        "and causes (exit 1 when the file's side has more dispatches)")
    d.add_argument("--against", metavar="FILE2", help="the other side compiles FILE2 (another revision of FILE)")
    d.add_argument("--against-git", metavar="REV", help="the other side compiles FILE as of git revision REV")
    d.add_argument("--against-baseline", action="store_true",
                   help="the other side is the attribution stored in --baseline (written by --update-baseline)")
    d.add_argument("--against-compiler", metavar="PATH", help="the other side uses this iree-compile")
    d.add_argument("--against-flags", metavar="FLAGS", default=None,
                   help="the other side's extra flags instead of --flags (one string, shell quoting)")
    d.add_argument("--against-profile", metavar="NAME", default=None, help="the other side's profile")


def add_dispatch_graph(p) -> None:
    g = p.add_argument_group("dispatch graph (--dispatch-graph FILE: the dispatches as a graph for Model Explorer)")
    g.add_argument("--dispatch-graph", action="store_true",
                   help="write FILE's dispatches as a Model Explorer graph (JSON): data flow between them, the ones "
                        "holding asserts, existing only because of asserts (--what-if) or only on one side "
                        "(--against*) marked")
    g.add_argument("-o", dest="output", metavar="FILE", default=None,
                   help="with --dispatch-graph: write the graph here (default: stdout); "
                        "with --compile: the .vmfb to write")
    g.add_argument("--open", action="store_true",
                   help="with --dispatch-graph: start Model Explorer on the graph and print its URL; runs until Ctrl-C "
                        f"(needs {INSTALL_HINT})")
    g.add_argument("--port", type=int, default=None, help="Model Explorer's port with --open (default: a free one)")


def add_shards(p) -> None:
    g = p.add_argument_group("shards (a model zoo across CI machines)")
    g.add_argument("--shard", metavar="K/N", default=None,
                   help="run shard K of N (from 1) of the inputs of --check, --dispatch-count or --dispatch-diff: "
                        "a stable split by path")
    g.add_argument("--results-out", metavar="FILE.json", default=None,
                   help="write this run's results (and the baseline updates it would make) to FILE for "
                        "--merge-results")
    g.add_argument("--merge-results", action="store_true",
                   help="merge the --results-out files given as PATHs into one run's report, exit code and "
                        "(with --baseline FILE --update-baseline) baseline")

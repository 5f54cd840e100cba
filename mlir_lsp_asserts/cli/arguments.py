"""The command line's arguments of each mode beyond --check and --fix (which `main.build_parser`
declares itself): argparse groups only, so that parsing a command line imports none of the code
that runs a mode (the dispatch count, the compiler, Model Explorer)."""

from __future__ import annotations

from ..iree_flags.flags import BUILTIN_PROFILES
from ..model_explorer_adapter import INSTALL_HINT

OUTPUT_FORMATS = ("concise", "full", "json", "json-lines", "github", "sarif", "junit")


def add_measured(group) -> None:
    group.add_argument("--measured-severity", action="store_true",
                       help="with --what-if (implied): MLA001 at information severity in files whose what-if saves "
                            "no dispatch (config: measured-severity)")
    group.add_argument("--no-lower", action="store_true",
                       help="never lower torch IR to find its MLA004 findings (config: lower-torch = false)")


def wants_measure(args) -> bool:
    """Does this --check measure its findings (cli/measured.py)?"""
    return bool(args.what_if or args.what_if_mode or args.measured_severity)


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
    d.add_argument("--timeout", type=float, default=900.0, help="seconds before a compile is stopped")
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

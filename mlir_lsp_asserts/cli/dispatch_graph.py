"""`mlir-lsp --dispatch-graph FILE`: IREE's dispatches of a file as a graph for Google's Model
Explorer (the front end of `dispatch/graph.py` and `graph_viewer.py`).

    mlir-lsp --dispatch-graph model.mlir -o graph.json                 # the JSON (stdout without -o)
    mlir-lsp --dispatch-graph model.mlir --against fixed.mlir --open   # Model Explorer, new ones marked

The count's options (`--profile`, `--flags`, `--compiler`, `--what-if`, `--what-if-mode`) and
the other side of `--dispatch-diff` (`--against*`) mean what they mean there.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from ..dispatch.baselines import BaselineError
from ..dispatch.compiler import CompilerError
from ..dispatch.diff import Side, against_baseline, compiled_side
from ..dispatch.graph import GraphBuild, graph_for_text
from ..graph_viewer import INSTALL_HINT, ViewerUnavailable, available, open_viewer
from ..source import SourceError
from .dispatch import Spinner, failure_lines
from .dispatch_diff import (
    Sides,
    has_other_side,
    other_file,
    other_label,
    prepare_sides,
    read_file,
    side_of,
    sides_error,
)


def _error(msg: str) -> int:
    print(f"mlir-lsp: error: {msg}", file=sys.stderr)
    return 2


def run_dispatch_graph(args) -> int:
    if len(args.paths) != 1:
        return _error("--dispatch-graph takes one FILE")
    if (bad := sides_error(args)) is not None:
        return _error(bad)
    if args.open and not available():
        return _error(f"--open needs Model Explorer: {INSTALL_HINT} (-o FILE.json writes the graph without it)")
    try:
        sides = prepare_sides(args)
    except (ValueError, CompilerError, BaselineError) as e:
        return _error(str(e))
    path = args.paths[0]
    counter, other_counter = sides.counters(args)
    try:
        with Spinner(path, sys.stderr.isatty()):
            build = _build(args, path, sides, counter, other_counter)
    except (OSError, SourceError, CompilerError, BaselineError, ValueError) as e:
        if isinstance(e, OSError) and e.filename and e.strerror:
            return _error(f"{e.filename}: {e.strerror}")
        print("\n".join(failure_lines(path, e, counter.compiler.version)), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        counter.cancel_all()
        other_counter.cancel_all()
        return 130
    for n in [*build.preview.warnings]:
        print(f"mlir-lsp: warning: {path}: {n}", file=sys.stderr)
    for n in [*build.preview.notes, *(build.comparison.against.notes if build.comparison else [])]:
        print(f"mlir-lsp: note: {path}: {n}", file=sys.stderr)
    print(summary(path, build), file=sys.stderr)
    if args.output:
        try:
            build.write(args.output)
        except OSError as e:
            return _error(f"cannot write {args.output}: {e.strerror or e}")
        print(f"mlir-lsp: wrote {args.output}", file=sys.stderr)
    elif not args.open:
        sys.stdout.buffer.write(build.json_bytes() + b"\n")
        sys.stdout.flush()
    return _serve(args, build) if args.open else 0


def _build(args, path: str, sides: Sides, counter, other_counter) -> GraphBuild:
    text, is_bytecode = read_file(path)
    input_path = None if is_bytecode else path
    against: Side | None = None
    if has_other_side(args):
        label = other_label(args, sides.compiler, sides.other_compiler)
        if sides.baseline is not None:
            cur = compiled_side(counter, "current", path, text, sides.flags, args.profile, input_path=input_path)
            got = against_baseline(cur, sides.baseline, path, label)
            if got is None or got[0].new is None:
                raise BaselineError(f"{args.baseline} stores no attribution for {path} with profile {args.profile!r} "
                                    "(write it with --dispatch-count --update-baseline)")
            against = got[0].against
        else:
            other_text, other_path, other_input = other_file(args, path, text, is_bytecode)
            against = side_of(other_counter, label, other_path, other_text, sides.other_flags,
                              args.against_profile or args.profile, other_input)
    mode = args.what_if_mode or ("strip" if args.what_if else None)
    return graph_for_text(text, path, counter=counter, profile=args.profile, flags=sides.flags, what_if_mode=mode,
                          against=against, against_counter=other_counter, input_path=input_path)


def summary(path: str, build: GraphBuild) -> str:
    """One line: the count, the graph's size, how many of each mark."""
    graph = build.collection["graphs"][0]
    edges = sum(len(n["incomingEdges"]) for n in graph["nodes"])
    marks = ", ".join(f"{len(ids)} {mark}" for mark, ids in build.marked.items() if ids)
    line = f"{path}: {build.dispatches} dispatches, {edges} edges between them"
    if build.comparison is not None:
        c = build.comparison
        line += f"; {c.against.flow_dispatches} with {c.against.label} ({c.delta:+d})"
    return line + (f"; marked: {marks}" if marks else "") + f"  [graph {build.build_seconds:.2f} s]"


def _serve(args, build: GraphBuild) -> int:
    """Model Explorer on the graph until Ctrl-C (or SIGTERM / SIGHUP); its server stopped after."""
    folder = None
    if args.output:
        graph = Path(args.output)
    else:
        folder = tempfile.mkdtemp(prefix="mlir-lsp-graph-")
        graph = Path(folder) / "dispatch-graph.json"
        build.write(str(graph))
    selected = build.selection()
    viewer = None

    def stop(signum, _frame):
        raise KeyboardInterrupt

    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        viewer = open_viewer(graph, select_node=selected[1] if selected else None, port=args.port,
                             graph_id=selected[0] if selected else None,
                             expand=build.layers_around(*selected) if selected else None)
        print(viewer.url, flush=True)
        print("mlir-lsp: Model Explorer is serving the graph; Ctrl-C stops it", file=sys.stderr, flush=True)
        while viewer.running():
            time.sleep(0.5)
        return _error(f"Model Explorer stopped (exit {viewer.process.returncode})")
    except ViewerUnavailable as e:
        return _error(str(e))
    except KeyboardInterrupt:
        return 0
    finally:
        if viewer is not None:
            viewer.stop()
        for s, h in old.items():
            signal.signal(s, h)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(Exception):
            sys.stdout.flush()

"""Dispatch-preview figures, in one run (no asserts): `python bench/bench_dispatch.py [--runs N]`.

1. Preview end to end (`mlir-lsp --dispatch-count`, no cache) versus a bare `iree-compile`
   with the same flags to dispatch-creation, on the SDXL prompt encoder (target within 5%),
   medians of N interleaved runs; the same on the small repro, where the difference is the
   preview's fixed overhead (start-up, reading the output); and the cost of attribution
   (`--mlir-print-debuginfo` on the bare compile, `--attribution` on the preview).
2. A cache hit of the same preview (target under 50 ms inside the engine).
3. Cancelling a running compile: time from `cancel()` to the process group's death
   (target under 100 ms), and whether any iree-compile is left afterwards.
4. A dispatch diff (`--dispatch-diff`) of the prompt encoder against its fixed self: the two
   compiles with debug info, run in parallel, against the diff's own work (describing both
   sides, finding the asserts, aligning the two texts, matching; target under 5% of the
   compiles). On both 50 MB shapes of bench_check.py (their compiles take many minutes), the
   text work of a diff of two revisions (aligning a file with its every-assert-stripped self,
   reading its asserts) against `iree-opt` parsing the file once, a lower bound of any compile
   (target < 1x). `--only-diff` runs this part alone.
5. The dispatch graph for Model Explorer (`--dispatch-graph --what-if --against FIXED`) of the
   prompt encoder (1,660 dispatches) and of a UNet-sized module (the encoder twice, its second
   copy's symbols renamed: 3,320 dispatches): the compiles (with debug info, the what-if and
   the fixed side), the graph's own work and the JSON written in one pass (target: small next
   to the compile), and, with chromium and playwright-core there, the time Model Explorer takes
   to load and show the graph with the first new dispatch selected (screenshots in bench/out/).
   `--only-graph` runs this part alone.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from mlir_lsp_asserts.dispatch.compiler import CompilerError, Run, find_compiler  # noqa: E402
from mlir_lsp_asserts.dispatch.count import DispatchCounter  # noqa: E402
from mlir_lsp_asserts.dispatch.preview import preview  # noqa: E402
from mlir_lsp_asserts.iree_flags.flags import profile_flags  # noqa: E402

ENCODER = ROOT.parent / "shared" / "fixtures" / "models" / "sdxl_prompt_encoder.input.mlir"
REPRO = ROOT.parent / "shared" / "fixtures" / "repro" / "hoisted_gather.mlir"
BIN = Path(sys.executable).parent


def _timed(argv: list[str], env=None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its children): CPU time stays meaningful
    when other work loads the machine, wall time does not."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    for _attempt in range(3):  # a run killed from outside (another job's cleanup) is run again
        p = subprocess.run(argv, capture_output=True, env=env)
        if p.returncode == 0:
            break
        print(f"  (run failed, exit {p.returncode}; again) {p.stderr.decode(errors='replace')[-300:]}", file=sys.stderr)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
    else:
        raise SystemExit(f"{argv[0]} failed 3 times (exit {p.returncode})")
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bare(flags: list[str], path: Path = ENCODER, extra: tuple[str, ...] = (), exe: str | None = None):
    """A bare compile: the `iree-compile` a user runs (the pip package's Python console script,
    which starts the binary), or `exe`."""
    with tempfile.TemporaryDirectory() as d:
        return _timed([exe or str(BIN / "iree-compile"), str(path), *flags, *extra, "--compile-to=dispatch-creation",
                       "-o", os.path.join(d, "out.mlir")])


def ours(path: Path = ENCODER, extra: tuple[str, ...] = ()) -> tuple[float, float]:
    env = dict(os.environ, XDG_CACHE_HOME=CACHE)  # compiler version/flags cached as a user's are
    return _timed([str(BIN / "mlir-lsp"), "--dispatch-count", "--no-cache", *extra, str(path)], env=env)


CACHE = tempfile.mkdtemp(prefix="bench-dispatch-")
SHOTS = ROOT / "bench" / "out"  # Model Explorer's screenshots of the big graphs


def interleaved(runs: int, *fns) -> list[tuple[float, float]]:
    """(median wall, median CPU) of `runs` rounds, each round running every fn once."""
    times: list[list[tuple[float, float]]] = [[] for _ in fns]
    for _ in range(runs):
        for i, fn in enumerate(fns):
            times[i].append(fn())
    return [(statistics.median(w for w, _c in t), statistics.median(c for _w, c in t)) for t in times]


def bench_diff(flags: list[str]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from mlir_lsp_asserts.dispatch.diff import compiled_side, diff
    from mlir_lsp_asserts.dispatch.preview import fixed_text

    for name, path in (("prompt encoder", ENCODER), ("repro", REPRO)):
        text = path.read_text()
        fixed = fixed_text(text, "strip")[0]
        counter = DispatchCounter(find_compiler(), disk_cache=False)
        other = counter.sibling()
        t0 = time.monotonic()
        with ThreadPoolExecutor(2) as pool:  # what --dispatch-diff does: the two compiles at once
            a = pool.submit(counter.count, text, flags, attribution=True)
            b = pool.submit(other.count, fixed, flags, attribution=True)
            a.result(), b.result()
        compiles = time.monotonic() - t0
        own = []
        for _ in range(3):  # the compiles are in the memory cache now: what is left is the diff's work
            t0 = time.monotonic()
            r = diff(compiled_side(counter, "current", str(path), text, flags, "default"),
                     compiled_side(other, "fixed", "fixed", fixed, flags, "default"))
            own.append(time.monotonic() - t0)
        work = statistics.median(own)
        print(f"dispatch diff, {name} against its fixed self ({r.current.flow_dispatches} vs "
              f"{r.against.flow_dispatches}, {len(r.new or [])} new): two compiles in parallel {compiles:.2f} s, "
              f"the diff's own work {work * 1000:.0f} ms = {work / compiles * 100:.1f}% (target < 5%)")
    import bench_check
    import generate
    from mlir_lsp_asserts.dispatch.diff import Side, align

    shapes = (("spread", "generated_50mb", generate.generate, bench_check.TARGET_BYTES),
              ("model-shaped", "model_shaped_20x", lambda _n: generate.generate_model_shaped(20), 20))
    for name, stem, make, target in shapes:
        path, _asserts = bench_check.generated(stem, make, target)
        text = path.read_text()
        lines, fixed = text.split("\n"), fixed_text(text, "strip")[0].split("\n")
        t0 = time.monotonic()
        al = align(lines, fixed)
        Side("current", str(path), 0, {}, [], lines).asserts()
        work = time.monotonic() - t0
        parse = bench_check.run_measured([str(BIN / "iree-opt"), str(path), "-o", os.devnull]).seconds
        paired = sum(1 for x in al.to_current[1:] if x)
        print(f"diff text work, {name} ({path.stat().st_size / 1e6:.1f} MB, {len(lines):,} lines): aligned with its "
              f"fixed self ({paired:,} of {len(fixed):,} lines paired) and its asserts read in {work:.2f} s; "
              f"iree-opt parse {parse:.2f} s: ratio {work / parse:.2f} (target < 1)")


def twice(text: str) -> str:
    """A module holding `text`'s module twice, the second copy's symbols and resources renamed
    (a UNet-sized count from the prompt encoder: its every dispatch twice)."""
    import re

    head, _, tail = text.partition("\n}\n{-#")
    first, _, body = head.partition("\n")
    copy = re.sub(r"@([\w$.\-]+)", r"@\1__b", body)
    copy = re.sub(r"dense_resource<([^>]+)>", r"dense_resource<\1__b>", copy)
    res_head, _, rest = tail.partition("builtin: {\n")
    entries, _, res_tail = rest.partition("\n    }\n  }\n#-}")
    entries_b = re.sub(r"^(      )([\w.]+): ", r"\1\2__b: ", entries, flags=re.M)
    return (f"{first}\n{body}\n{copy}\n}}\n{{-#{res_head}builtin: {{\n{entries},\n{entries_b}"
            f"\n    }}\n  }}\n#-}}{res_tail}")


def bench_graph(flags: list[str]) -> None:
    import shutil

    from mlir_lsp_asserts.dispatch.diff import compiled_side
    from mlir_lsp_asserts.dispatch.graph import graph_for_text
    from mlir_lsp_asserts.dispatch.preview import fixed_text

    work = Path(tempfile.mkdtemp(prefix="bench-graph-"))
    encoder = ENCODER.read_text()
    for name, text in (("prompt encoder", encoder), ("UNet-sized (the encoder twice)", twice(encoder))):
        path = work / f"{name.split()[0]}.mlir"
        path.write_text(text)
        counter = DispatchCounter(find_compiler(), disk_cache=False)
        t0 = time.monotonic()
        fixed = fixed_text(text, "strip")[0]
        side = compiled_side(counter.sibling(), "fixed", "fixed.mlir", fixed, flags, "default")
        build = graph_for_text(text, str(path), counter=counter, flags=flags, against=side)
        total = time.monotonic() - t0
        t1 = time.monotonic()
        out = work / f"{path.stem}.graph.json"
        build.write(str(out))
        written = time.monotonic() - t1
        nodes = build.collection["graphs"][0]["nodes"]
        edges = sum(len(n["incomingEdges"]) for n in nodes)
        compiles = total - build.build_seconds
        own = build.build_seconds + written
        print(f"dispatch graph, {name}: {build.dispatches} nodes, {edges} edges, {len(build.marked['new'])} new, "
              f"{out.stat().st_size / 1e6:.1f} MB JSON; the compiles (debug info, what-if, fixed side) "
              f"{compiles:.1f} s, "
              f"the graph's own work {build.build_seconds:.2f} s + JSON written {written:.2f} s = "
              f"{own / compiles * 100:.1f}% of the compiles")
        shot = browser_load(out, build)
        if shot is not None:
            print(f"  Model Explorer: server up in {shot[0]:.1f} s, graph shown with {shot[2]} selected "
                  f"in {shot[1]:.1f} s (headless chromium, software GL)")
    shutil.rmtree(work, ignore_errors=True)


def browser_load(graph: Path, build) -> tuple[float, float, str] | None:
    """(seconds until the server answers, seconds from opening the page until the selected
    node's attributes show, the node), or None without Model Explorer, chromium or node."""
    import json
    import shutil

    from mlir_lsp_asserts.graph_viewer import available, open_viewer

    require_from = ROOT / "vscode-client" / "package.json"
    chromium = shutil.which("chromium")
    if not (available() and chromium and shutil.which("node")
            and (require_from.parent / "node_modules" / "playwright-core").exists()):
        print("  (Model Explorer's load time not measured: needs model_explorer, chromium, node and playwright-core)")
        return None
    graph_id, node = build.selection()
    SHOTS.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with open_viewer(graph, select_node=node, graph_id=graph_id, expand=build.layers_around(graph_id, node)) as v:
        up = time.monotonic() - t0
        cfg = {"url": v.url, "chromium": chromium, "requireFrom": str(require_from),
               "screenshot": str(SHOTS / graph.with_suffix(".png").name), "expect": [f"id {node}"], "timeout": 300000}
        p = subprocess.run(["node", str(ROOT / "tests" / "model_explorer_driver.mjs"), json.dumps(cfg)],
                           capture_output=True, text=True, timeout=600)
    seen = json.loads(p.stdout.strip().splitlines()[-1])
    if seen.get("errors"):
        print(f"  (Model Explorer: {seen['errors'][0][:200]})")
    return up, seen.get("loadSeconds", float("nan")), node


def main() -> int:
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 3
    if "--only-diff" in sys.argv:
        bench_diff(profile_flags("default"))
        return 0
    if "--only-graph" in sys.argv:
        bench_graph(profile_flags("default"))
        return 0
    flags = profile_flags("default")
    ours(REPRO)  # warm the per-binary caches (version, flag list) like any second run
    real = find_compiler().path
    (rb, rbc), (rr, rrc), (ro, roc) = interleaved(max(runs, 7), lambda: bare(flags, REPRO),
                                                  lambda: bare(flags, REPRO, exe=real), lambda: ours(REPRO))
    print(f"repro: bare iree-compile {rb:.3f} s ({rbc:.3f} s CPU; the binary itself {rr:.3f} s, {rrc:.3f} s CPU), "
          f"mlir-lsp preview {ro:.3f} s ({roc:.3f} s CPU): fixed overhead {ro - rb:+.3f} s wall, "
          f"{roc - rbc:+.3f} s CPU (over the binary: {ro - rr:+.3f} s, {roc - rrc:+.3f} s CPU)")
    load = os.getloadavg()[0]
    (mb, mbc), (mr, mrc), (mo, moc), (mbd, mbdc), (moa, moac) = interleaved(
        runs, lambda: bare(flags), lambda: bare(flags, exe=real), lambda: ours(),
        lambda: bare(flags, extra=("--mlir-print-debuginfo",), exe=real), lambda: ours(extra=("--attribution",)))
    print(f"prompt encoder to dispatch-creation (median of {runs}, load {load:.1f} on {os.cpu_count()} cores): "
          f"bare iree-compile {mb:.2f} s ({mbc:.2f} s CPU), mlir-lsp preview {mo:.2f} s ({moc:.2f} s CPU): "
          f"ratio {mo / mb:.3f} (target <= 1.05), CPU {moc / mbc:.3f}; against the binary itself "
          f"({mr:.2f} s, {mrc:.2f} s CPU): {mo / mr:.3f}, CPU {moc / mrc:.3f}")
    print(f"attribution: the binary with --mlir-print-debuginfo {mbd:.2f} s ({mbd / mr:.3f} x without, "
          f"CPU {mbdc / mrc:.3f} x), preview --attribution {moa:.2f} s ({moa / mo:.3f} x the preview, "
          f"CPU {moac / moc:.3f} x)")
    if "--no-cancel" in sys.argv:
        return 0

    counter = DispatchCounter(find_compiler(), disk_cache=False)
    text = ENCODER.read_text()
    preview(counter, str(ENCODER), text, "default", flags)
    hits = []
    for _ in range(5):
        t0 = time.monotonic()
        pv = preview(counter, str(ENCODER), text, "default", flags)
        hits.append(time.monotonic() - t0)
    print(f"cache hit: median {statistics.median(hits) * 1000:.1f} ms (target < 50 ms), count {pv.flow_dispatches}")

    deaths = []
    for _ in range(5):
        with tempfile.TemporaryDirectory() as d:
            run = Run([str(BIN / "iree-compile"), str(ENCODER), *flags, "--compile-to=dispatch-creation",
                       "-o", os.path.join(d, "o.mlir")], timeout=600)
            done = threading.Event()
            end = [0.0]

            def go():
                try:
                    run.run()  # noqa: B023 - runs within this iteration
                except CompilerError:
                    pass
                end[0] = time.monotonic()  # noqa: B023
                done.set()  # noqa: B023

            threading.Thread(target=go, daemon=True).start()
            time.sleep(1.0)
            t0 = time.monotonic()
            run.cancel()
            done.wait(10)
            deaths.append(end[0] - t0)
    left = subprocess.run(["pgrep", "-f", "iree-compile.*sdxl_prompt_encoder"], capture_output=True, text=True).stdout
    print(f"cancel -> compile dead: median {statistics.median(deaths) * 1000:.1f} ms, max {max(deaths) * 1000:.1f} ms "
          f"(target < 100 ms); iree-compile processes left: {len(left.split())}")
    bench_diff(flags)
    bench_graph(flags)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Dispatch-preview figures, in one run (no asserts): `python bench/bench_dispatch.py [--runs N]`.

1. Preview end to end (`mlir-lsp --dispatch-count`, no cache) versus a bare `iree-compile`
   with the same flags to dispatch-creation, on the SDXL prompt encoder (target within 5%),
   medians of N interleaved runs; the same on the small repro, where the difference is the
   preview's fixed overhead (start-up, reading the output); and the cost of attribution
   (`--mlir-print-debuginfo` on the bare compile, `--attribution` on the preview).
2. A cache hit of the same preview (target under 50 ms inside the engine).
3. Cancelling a running compile: time from `cancel()` to the process group's death
   (target under 100 ms), and whether any iree-compile is left afterwards.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from mlir_lsp_asserts.dispatch.compiler import CompilerError, Run, find_compiler  # noqa: E402
from mlir_lsp_asserts.dispatch.count import DispatchCounter, preview  # noqa: E402
from mlir_lsp_asserts.dispatch.flags import profile_flags  # noqa: E402

ENCODER = ROOT.parent / "shared" / "fixtures" / "models" / "sdxl_prompt_encoder.input.mlir"
REPRO = ROOT.parent / "shared" / "fixtures" / "repro" / "hoisted_gather.mlir"
BIN = Path(sys.executable).parent


def bare(flags: list[str], path: Path = ENCODER, extra: tuple[str, ...] = ()) -> float:
    with tempfile.TemporaryDirectory() as d:
        t0 = time.monotonic()
        subprocess.run([str(BIN / "iree-compile"), str(path), *flags, *extra, "--compile-to=dispatch-creation",
                        "-o", os.path.join(d, "out.mlir")], check=True, capture_output=True)
        return time.monotonic() - t0


def ours(path: Path = ENCODER, extra: tuple[str, ...] = ()) -> float:
    env = dict(os.environ, XDG_CACHE_HOME=CACHE)  # compiler version/flags cached as a user's are
    t0 = time.monotonic()
    subprocess.run([str(BIN / "mlir-lsp"), "--dispatch-count", "--no-cache", *extra, str(path)], check=True,
                   capture_output=True, env=env)
    return time.monotonic() - t0


CACHE = tempfile.mkdtemp(prefix="bench-dispatch-")


def interleaved(runs: int, *fns) -> list[float]:
    """Medians of `runs` rounds, each round running every fn once (so load changes hit all)."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for i, fn in enumerate(fns):
            times[i].append(fn())
    return [statistics.median(t) for t in times]


def main() -> int:
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 3
    flags = profile_flags("default")
    ours(REPRO)  # warm the per-binary caches (version, flag list) like any second run
    rb, ro = interleaved(max(runs, 7), lambda: bare(flags, REPRO), lambda: ours(REPRO))
    print(f"repro: bare iree-compile {rb:.3f} s, mlir-lsp preview {ro:.3f} s: fixed overhead {ro - rb:.3f} s")
    mb, mo, mbd, moa = interleaved(runs, lambda: bare(flags), lambda: ours(),
                                   lambda: bare(flags, extra=("--mlir-print-debuginfo",)),
                                   lambda: ours(extra=("--attribution",)))
    print(f"prompt encoder to dispatch-creation (median of {runs}): bare iree-compile {mb:.2f} s, "
          f"mlir-lsp preview {mo:.2f} s, ratio {mo / mb:.3f} (target <= 1.05)")
    print(f"attribution: bare with --mlir-print-debuginfo {mbd:.2f} s ({mbd / mb:.3f} x bare), "
          f"preview --attribution {moa:.2f} s ({moa / mb:.3f} x bare)")
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
                    run.run()
                except CompilerError:
                    pass
                end[0] = time.monotonic()
                done.set()

            threading.Thread(target=go, daemon=True).start()
            time.sleep(1.0)
            t0 = time.monotonic()
            run.cancel()
            done.wait(10)
            deaths.append(end[0] - t0)
    left = subprocess.run(["pgrep", "-f", "iree-compile.*sdxl_prompt_encoder"], capture_output=True, text=True).stdout
    print(f"cancel -> compile dead: median {statistics.median(deaths) * 1000:.1f} ms, max {max(deaths) * 1000:.1f} ms "
          f"(target < 100 ms); iree-compile processes left: {len(left.split())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

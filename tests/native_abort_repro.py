"""Reduction of the native abort seen in the fixes soak (`malloc(): unaligned tcache chunk
detected`, SIGABRT, after ~25,000 parses in one process): only `iree.compiler.ir` calls on varied
texts. The texts are made first (tests/fuzzlib.py's mutations of real IR, seeded), then parsed
the way the code does, with one thing varied at a time:

    python tests/native_abort_repro.py --parses 40000 --variant fresh

    fresh      a new ir.Context() per parse, dropped by reference counting (fixes/verify.py before)
    reuse      one ir.Context() for every parse
    nothreads  a new context per parse, with enable_multithreading(False)
    release    a new context per parse, module and context deleted and gc.collect() after each
    context    the in-process parse of the package's workers (fixes.verify.parse_error_here: one
               context per thread, multithreading off, replaced every 500 parses); the fixes soak
               aborted with it in-process after ~2,800 inputs (docs/reliability.md)
    worker     what the package does now (fixes.verify.real_parse_error: a worker child, replaced
               every 1,000 parses)

The fixes soak's own sequence, which aborts deterministically in-process (the same input in two
runs, docs/reliability.md): record the texts it parses (through the worker, safely), then replay
them here with only `iree.compiler.ir` calls:

    python tests/native_abort_repro.py --record /tmp/soak-parses.jsonl --inputs 3000
    python tests/native_abort_repro.py --replay /tmp/soak-parses.jsonl --variant context

Prints a line every 5,000 parses and `done N parses` at the end; a native abort ends the process
with the C library's message on stderr and signal 6 (exit status -6 seen from a parent)."""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def texts(count: int, seed: int) -> list[str]:
    import fuzzlib

    rnd = random.Random(seed)
    c = fuzzlib.RandomChooser(rnd)
    sources = fuzzlib.fix_sources()
    out = []
    for _ in range(count):
        out.append(fuzzlib.mutate_valid(c, sources) if rnd.random() < 0.8 else fuzzlib.mutate(c, sources, rounds=1))
    return out


def record(path: Path, inputs: int, seed: int = 1) -> None:
    """The texts `bench/soak.py --only fixes` (seed 1) parses for its first `inputs` inputs, in order."""
    import fuzzlib
    from mlir_lsp_asserts.fixes import verify

    rnd = random.Random(seed)
    c = fuzzlib.RandomChooser(rnd)
    fix_sources, big = fuzzlib.fix_sources(), fuzzlib.clip_gathers()
    real = verify.real_parse_error
    with open(path, "w", encoding="utf-8", errors="surrogatepass") as out:
        def parse(text: str) -> str | None:
            out.write(json.dumps(text) + "\n")
            return real(text)
        verify.real_parse_error = parse  # fuzzlib.parse_chunks looks it up at each call
        for _ in range(inputs):  # as soak_fixes draws them
            r = rnd.random()
            if r < 0.8:
                text = fuzzlib.mutate_valid(c, fix_sources)
            elif r < 0.97:
                text = fuzzlib.mutate(c, fix_sources, rounds=1)
            else:
                text = fuzzlib.mutate_valid(c, [big])
            try:
                fuzzlib.check_fixes(text)
            except Exception:  # noqa: BLE001 - a bad fix is the soak's finding, not this script's
                pass


def parser(variant: str):
    from iree.compiler import ir

    if variant in ("context", "worker"):
        from mlir_lsp_asserts.fixes import verify
        return verify.parse_error_here if variant == "context" else verify.real_parse_error
    shared = ir.Context() if variant == "reuse" else None

    def parse(text: str) -> bool:
        ctx = shared or ir.Context()
        if variant == "nothreads":
            ctx.enable_multithreading(False)
        try:
            m = ir.Module.parse(text, ctx)
            ok = True
        except ir.MLIRError:
            m, ok = None, False
        if variant == "release":
            del m
            del ctx
            gc.collect()
        return ok
    return parse


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parses", type=int, default=40_000)
    ap.add_argument("--variant", default="fresh",
                    choices=("fresh", "reuse", "nothreads", "release", "context", "worker"))
    ap.add_argument("--distinct", type=int, default=3000, help="distinct texts, parsed round-robin")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--record", type=Path, help="write the fixes soak's parsed texts here (JSON lines)")
    ap.add_argument("--inputs", type=int, default=3000, help="with --record: the soak's inputs")
    ap.add_argument("--replay", type=Path, help="parse the texts of a --record file, in order")
    args = ap.parse_args()
    if args.record:
        record(args.record, args.inputs)
        return 0
    if args.replay:
        with open(args.replay, encoding="utf-8", errors="surrogatepass") as f:
            pool = [json.loads(line) for line in f]
        args.parses = len(pool)
    else:
        pool = texts(args.distinct, args.seed)
    parse = parser(args.variant)
    t0 = time.monotonic()
    accepted = 0
    for i in range(args.parses):
        accepted += bool(parse(pool[i % len(pool)]) in (True, None))
        if (i + 1) % 5000 == 0:
            print(f"{args.variant}: {i + 1} parses, {accepted} accepted, {time.monotonic() - t0:.0f} s", flush=True)
    print(f"done {args.parses} parses ({args.variant}), {time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`make soak`: the long versions of the reliability tests, with figures.

    .venv/bin/python bench/soak.py [--inputs N] [--seconds S] [--only reader,fixes,faults,files,load]

- reader: coverage-guided fuzzing (atheris/libFuzzer, bench/fuzz_atheris.py) of the reader and
  the rules on mutated real IR, until N inputs or S seconds; prints inputs tried, crashes, the
  rate and what 1 M inputs take at that rate. Runs add up: the corpus, the crashing inputs and
  the counters are kept in bench/out/reader-fuzz/ (--reader-dir), each run resumes from them and
  prints the total of all runs; N defaults to what the total lacks to 1,000,000 (remove the
  folder to start over).
- fixes: mutated real IR that IREE's parser accepts; every offered fix must parse and stay
  inside its ops (tests/fuzzlib.py `check_fixes`); prints inputs, parsable, fixes checked.
- frames: bad frames (not UTF-8, not JSON, not messages, random, mutated real messages) between
  real requests over the real server's stdio (tests/framefuzz.py): every real request answered,
  the server still running, leaving on `exit` with status 0.
- faults, files, load: see their sections below.
Exit status 1 when anything failed (a crash, a bad fix, an orphan process, a stale publish).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

FAILED: list[str] = []
LAST_INPUT = Path(tempfile.gettempdir()) / "mlir-lsp-soak-last-fix-input.mlir"
READER_DIR = ROOT / "bench" / "out" / "reader-fuzz"  # corpus, crashing inputs, totals.json (ignored by git)
MILLION = 1_000_000


def say(line: str = "") -> None:
    print(line, flush=True)


def fmt_rate(n: int, seconds: float) -> str:
    rate = n / seconds if seconds > 0 else 0.0
    million = 1_000_000 / rate if rate else float("inf")
    return f"{rate:,.0f}/s; 1,000,000 inputs take {million / 60:,.1f} min at this rate"


def reader_totals(folder: Path) -> dict:
    path = folder / "totals.json"
    return json.loads(path.read_text()) if path.exists() else {"runs": [], "inputs": 0, "crashes": 0, "seconds": 0.0}


def add_reader_run(folder: Path, n: int, crashes: int, seconds: float, tool: str) -> None:
    """Add one run to the folder's totals and print them: one number that grows across runs."""
    totals = reader_totals(folder)
    totals["runs"].append({"ended": time.strftime("%Y-%m-%d %H:%M:%S"), "tool": tool, "inputs": n,
                           "crashes": crashes, "seconds": round(seconds, 1)})
    totals["inputs"] += n
    totals["crashes"] += crashes
    totals["seconds"] = round(totals["seconds"] + seconds, 1)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / "totals.tmp"
    tmp.write_text(json.dumps(totals, indent=1))
    os.replace(tmp, folder / "totals.json")
    say(f"   all runs in {folder.relative_to(ROOT) if folder.is_relative_to(ROOT) else folder}: "
        f"{len(totals['runs'])} runs, {totals['inputs']:,} inputs, {totals['crashes']} crashes, "
        f"{totals['seconds']:,.0f} s, {totals['inputs'] / max(totals['seconds'], 1e-9):,.0f} inputs/s "
        f"(the first ended {totals['runs'][0]['ended']})")


def reader_budget(inputs: int | None, folder: Path) -> int:
    """This run's inputs: as asked, else what the total lacks to 1 M (1 M again once reached)."""
    if inputs is not None:
        return inputs
    left = MILLION - reader_totals(folder)["inputs"]
    return left if left > 0 else MILLION


def soak_reader_plain(inputs: int, seconds: float, folder: Path) -> None:
    """Without atheris: the same mutations and oracle, seeded random (not coverage-guided)."""
    import fuzzlib

    say(f"== reader + rules: random mutations (atheris is not installed), up to {inputs:,} inputs or {seconds:,.0f} s")
    c = fuzzlib.RandomChooser(random.Random(5))
    sources = fuzzlib.reader_sources()
    n = crashes = 0
    t0 = time.monotonic()
    while n < inputs and time.monotonic() - t0 < seconds:
        text = fuzzlib.mutate(c, sources)
        n += 1
        try:
            fuzzlib.check_reader(text)
        except Exception as e:  # noqa: BLE001
            crashes += 1
            say(f"   crash: {type(e).__name__}: {str(e)[:160]}")
    elapsed = time.monotonic() - t0
    say(f"   inputs tried: {n:,}   crashes: {crashes}   time: {elapsed:,.0f} s   rate: {fmt_rate(n, elapsed)}")
    add_reader_run(folder, n, crashes, elapsed, "random")
    if crashes:
        FAILED.append("reader")


def soak_reader(inputs: int | None, seconds: float, folder: Path) -> None:
    import importlib.util

    inputs = reader_budget(inputs, folder)
    if importlib.util.find_spec("atheris") is None:
        soak_reader_plain(inputs, seconds, folder)
        return
    art = folder / "artifacts"
    kept = len(list((art / "corpus").glob("*"))) if (art / "corpus").exists() else 0
    say(f"== reader + rules: coverage-guided fuzzing (atheris), up to {inputs:,} inputs or {seconds:,.0f} s; "
        f"corpus of earlier runs: {kept:,} inputs")
    stats = folder / "run-stats.json"
    stats.unlink(missing_ok=True)
    cmd = [sys.executable, str(ROOT / "bench" / "fuzz_atheris.py"), "--stats", str(stats), "--artifacts", str(art),
           f"-runs={inputs}", f"-max_total_time={int(seconds)}", "-max_len=65536", "-timeout=30",
           "-print_final_stats=1", "-close_fd_mask=1"]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.monotonic() - t0
    executed = re.search(r"stat::number_of_executed_units:\s*(\d+)", proc.stderr)
    data = json.loads(stats.read_text()) if stats.exists() else {}
    n = int(executed.group(1)) if executed else data.get("inputs", 0)
    crashes = data.get("crashes", 0)
    saved = [p for p in art.glob("crash-*") if p.suffix != ".txt"] if art.exists() else []  # ours and libFuzzer's
    # an input libFuzzer stopped on in this run (it still prints its final stats): a hang over
    # -timeout, a memory blow-up, a native crash
    stopped_on = [p for kind in ("timeout-*", "oom-*", "leak-*", "crash-*") for p in art.glob(kind)
                  if not p.suffix and p.stat().st_mtime >= time.time() - elapsed - 1] if art.exists() else []
    # libFuzzer's answer to SIGINT (someone stopped the run): its inputs count, it is no crash
    interrupted = "run interrupted" in proc.stderr or bool(data.get("interrupted"))
    libfuzzer_crash = bool(stopped_on) or (proc.returncode != 0 and not executed and not interrupted)
    say(f"   inputs tried: {n:,}   crashes: {crashes}   time: {elapsed:,.0f} s   rate: {fmt_rate(n, elapsed)}"
        + ("   (interrupted)" if interrupted else ""))
    add_reader_run(folder, n, crashes + bool(libfuzzer_crash), elapsed, "atheris")
    if data.get("bytes") and data.get("inputs"):
        say(f"   mean input size: {data['bytes'] / data['inputs']:,.0f} bytes; "
            f"corpus grown by coverage: {_new_units(proc.stderr)} inputs")
    for kind, count in data.get("crash_kinds", {}).items():
        say(f"   crash x{count}: {kind}")
    if saved:
        say(f"   crashing inputs saved in {art} (all runs); one again: bench/fuzz_atheris.py --reproduce FILE")
    if libfuzzer_crash:
        say("   libFuzzer stopped early: " + (proc.stderr.strip().splitlines() or ["?"])[-1])
        for p in stopped_on:
            say(f"   on {p} (again: bench/fuzz_atheris.py --reproduce {p})")
    if crashes or libfuzzer_crash:
        FAILED.append("reader")


def _new_units(stderr: str) -> str:
    m = re.search(r"stat::new_units_added:\s*(\d+)", stderr)
    return m.group(1) if m else "?"


def soak_fixes(inputs: int, seconds: float, seed: int = 1) -> None:
    import fuzzlib

    say(f"== fixes: mutated real IR that the real parser accepts, up to {inputs:,} inputs or {seconds:,.0f} s")
    rnd = random.Random(seed)
    c = fuzzlib.RandomChooser(rnd)
    fix_sources = fuzzlib.fix_sources()
    big = fuzzlib.clip_gathers()
    n = parsed = fixes = 0
    bad: dict[str, int] = {}
    t0 = time.monotonic()
    next_progress = t0 + 60
    while n < inputs and time.monotonic() - t0 < seconds:
        r = rnd.random()
        if r < 0.8:
            text = fuzzlib.mutate_valid(c, fix_sources)
        elif r < 0.97:  # byte-level mutations: mostly rejected by the parser, the rest must fix cleanly
            text = fuzzlib.mutate(c, fix_sources, rounds=1)
        else:
            text = fuzzlib.mutate_valid(c, [big])
        n += 1
        LAST_INPUT.write_text(text, encoding="utf-8", errors="surrogatepass")  # kept if the parser crashes natively
        try:
            fig = fuzzlib.check_fixes(text)
        except Exception as e:  # noqa: BLE001
            kind = f"{type(e).__name__}: {str(e)[:160]}"
            if kind not in bad:
                (Path(tempfile.gettempdir()) / f"mlir-lsp-soak-fix-{len(bad)}.mlir").write_text(text)
            bad[kind] = bad.get(kind, 0) + 1
            continue
        parsed += fig["parsed"]
        fixes += fig["fixes"]
        if time.monotonic() >= next_progress:  # figures so far (they survive a native crash)
            next_progress += 60
            say(f"   ... {n:,} inputs, {parsed:,} accepted, {fixes:,} fixes checked, {sum(bad.values())} bad, "
                f"{time.monotonic() - t0:,.0f} s")
    elapsed = time.monotonic() - t0
    say(f"   inputs: {n:,}   accepted by the parser: {parsed:,}   fixes checked: {fixes:,}   "
        f"bad fixes: {sum(bad.values())}   time: {elapsed:,.0f} s   rate: {n / elapsed:,.1f} inputs/s")
    for kind, count in bad.items():
        say(f"   bad x{count}: {kind}")
    if bad:
        FAILED.append("fixes")


def soak_faults(rounds: int) -> None:
    """The compiler fault tests (real server, real iree-compile, /proc checked), `rounds` times."""
    say(f"== compiler faults: tests/test_reliability_faults.py x{rounds} (missing, exit 1/3, megabytes, "
        "timeout, SIGSEGV, SIGKILL, close and shutdown mid-compile)")
    t0 = time.monotonic()
    failed = 0
    for _ in range(rounds):
        p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            str(ROOT / "tests" / "test_reliability_faults.py")],
                           cwd=ROOT, capture_output=True, text=True)
        if p.returncode != 0:
            failed += 1
            say("   " + (p.stdout.strip().splitlines() or ["?"])[-1])
    say(f"   rounds: {rounds}   failed: {failed}   faults injected: {rounds * 10}   "
        f"time: {time.monotonic() - t0:,.0f} s")
    if failed:
        FAILED.append("faults")


def soak_files(rounds: int, work: Path, seed: int = 3) -> None:
    """`--fix` of a 2 MB file killed with SIGKILL at a random moment: the file is always the old or
    the new text, and after the next run no temporary file is left."""
    say(f"== files: --fix killed with SIGKILL at a random moment, {rounds} times")
    rnd = random.Random(seed)
    src = (ROOT.parent / "shared" / "fixtures" / "models" / "sdxl_prompt_encoder.input.mlir").read_bytes()
    folder = work / "files"
    folder.mkdir()
    target = folder / "model.mlir"
    fixed = None
    old_seen = new_seen = bad = leftover = 0
    t0 = time.monotonic()
    for _ in range(rounds):
        target.write_bytes(src)
        p = subprocess.Popen([sys.executable, "-m", "mlir_lsp_asserts", "--check", "--fix", str(target)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rnd.uniform(0.0, 1.5))
        p.kill()
        p.wait()
        now = target.read_bytes()
        if now == src:
            old_seen += 1
        elif fixed is not None and now == fixed:
            new_seen += 1
        elif fixed is None and b"cf.assert %" not in now and len(now) > len(src) // 2:
            fixed, new_seen = now, new_seen + 1
        else:
            bad += 1
        subprocess.run([sys.executable, "-m", "mlir_lsp_asserts", "--check", "--fix", str(target)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        extra = [n for n in os.listdir(folder) if n != target.name]
        leftover += len(extra)
        for n in extra:
            os.unlink(folder / n)
    say(f"   kills: {rounds}   old text kept: {old_seen}   new text complete: {new_seen}   "
        f"half-written: {bad}   temporary files left after the next run: {leftover}   "
        f"time: {time.monotonic() - t0:,.0f} s")
    if bad or leftover:
        FAILED.append("files")


def soak_frames(frames: int, work: Path, seed: int = 7) -> None:
    import framefuzz

    say(f"== frames: {frames:,} bad frames between real requests over the server's stdio")
    t0 = time.monotonic()
    folder = work / "frames"
    folder.mkdir()
    try:
        fig = framefuzz.session(folder, frames, seed, every=25)
        ok = fig.answered == fig.real_requests and fig.alive_before_exit and fig.exit_status == 0
        said = "; ".join(f"{rid}: {code}" for rid, code in fig.junk_errors.items())
        say(f"   bad frames: {fig.bad_frames:,}   real requests: {fig.real_requests}   answered: {fig.answered}   "
            f"running before exit: {fig.alive_before_exit}   exit status: {fig.exit_status}   "
            f"time: {time.monotonic() - t0:,.0f} s")
        say(f"   JSON-RPC errors of the bad requests with an id: {said}")
    except Exception as e:  # noqa: BLE001 - a dead server or a torn answer: the figure
        ok = False
        say(f"   FAILED after {time.monotonic() - t0:,.0f} s: {type(e).__name__}: {str(e)[:200]}")
    if not ok:
        say(f"   the server's log: {folder / 'server.log'} (kept only while the soak runs)")
        FAILED.append("frames")


SECTIONS = ("reader", "fixes", "frames", "faults", "files", "load")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    env_inputs = os.environ.get("SOAK_INPUTS")
    ap.add_argument("--inputs", type=int, default=int(env_inputs) if env_inputs else None,
                    help="reader fuzz inputs of this run (default: what the total of all runs lacks to 1,000,000; "
                         "env SOAK_INPUTS)")
    ap.add_argument("--reader-dir", type=Path, default=Path(os.environ.get("SOAK_READER_DIR", READER_DIR)),
                    help="the reader fuzz's corpus, crashing inputs and totals, kept across runs "
                         "(default bench/out/reader-fuzz; env SOAK_READER_DIR)")
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_SECONDS", 3600)),
                    help="time limit of the reader fuzz (default 3600; env SOAK_SECONDS)")
    ap.add_argument("--fix-inputs", type=int, default=int(os.environ.get("SOAK_FIX_INPUTS", 20000)))
    ap.add_argument("--fix-seconds", type=float, default=float(os.environ.get("SOAK_FIX_SECONDS", 600)))
    ap.add_argument("--fault-rounds", type=int, default=int(os.environ.get("SOAK_FAULT_ROUNDS", 20)))
    ap.add_argument("--frames", type=int, default=int(os.environ.get("SOAK_FRAMES", 5000)),
                    help="bad frames of the frames section (default 5,000; env SOAK_FRAMES)")
    ap.add_argument("--load-seconds", type=float, default=float(os.environ.get("SOAK_LOAD_SECONDS", 60)))
    ap.add_argument("--in-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--only", default=os.environ.get("SOAK_ONLY", ",".join(SECTIONS)),
                    help="comma-separated sections: " + ", ".join(SECTIONS))
    args = ap.parse_args(argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in only if s not in SECTIONS]
    if unknown:
        ap.error(f"unknown section(s): {', '.join(unknown)}")
    say(f"mlir-lsp soak, {time.strftime('%Y-%m-%d %H:%M:%S')}, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="mlir-lsp-soak-") as d:
        work = Path(d)
        if "reader" in only:
            soak_reader(args.inputs, args.seconds, args.reader_dir)
        if "fixes" in only and args.in_child:
            soak_fixes(args.fix_inputs, args.fix_seconds)
        elif "fixes" in only:  # in a child: a native crash of the real parser is a figure, not the end
            p = subprocess.Popen([sys.executable, __file__, "--only", "fixes", "--in-child", "--fix-inputs",
                                  str(args.fix_inputs), "--fix-seconds", str(args.fix_seconds)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for line in p.stdout:
                if not line.startswith(("mlir-lsp soak", "== all", "== FAILED")):
                    say(line.rstrip("\n"))
            p.stderr_text = p.stderr.read()
            p.wait()
            if p.returncode < 0 or p.returncode not in (0, 1):
                say(f"   NATIVE CRASH of the fixes run (exit {p.returncode}): {p.stderr_text.strip()[-300:]}")
                say(f"   the input being checked is in {LAST_INPUT}")
                FAILED.append("fixes (native crash)")
            elif p.returncode == 1:
                FAILED.append("fixes")
        if "frames" in only:
            soak_frames(args.frames, work)
        if "faults" in only:
            soak_faults(args.fault_rounds)
        if "files" in only:
            soak_files(args.fault_rounds * 5, work)
        if "load" in only:
            sys.path.insert(0, str(ROOT / "bench"))
            import load_server

            FAILED.extend(load_server.run(args.load_seconds, say))
    say("== " + ("FAILED: " + ", ".join(FAILED) if FAILED else "all soak sections passed"))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())

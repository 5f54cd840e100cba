"""`make bench`: `mlir-lsp --check` versus iree-opt's parse of the same files, in one run.

For a generated ~50 MB module of 30,000 small functions and a ~47 MB model-shaped one (one
function holding every op: the real SDXL prompt encoder's body 20 times, bench/generate.py; both
cached in bench/out/, both need ../shared), for the real SDXL prompt encoder, and for a stress
file holding one 8 MB weight as a single `dense<"0x...">` literal, it prints the median of 3 runs of

    mlir-lsp --check --output-format json FILE      (our check, a subprocess like in CI)
    iree-opt FILE -o /dev/null                      (IREE's parser + verifier)

the ratio (target < 1.0), our peak resident memory against the file size (target < 4x), and the
start-up cost of `mlir-lsp --check` on a tiny file, which dominates small inputs.

Times are only printed, never asserted. The script exits 1 only when something is wrong rather
than slow: the generated module does not parse with iree-opt, or the number of findings is not
the number of `cf.assert` ops in the file.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
BIN = Path(sys.executable).parent
ENCODER = ROOT.parent / "shared" / "fixtures" / "models" / "sdxl_prompt_encoder.input.mlir"
TINY = ROOT / "examples" / "hoisted_gather.mlir"
TARGET_BYTES = 50_000_000
RUNS = 3

sys.path.insert(0, str(HERE))
import generate  # noqa: E402


class Run:
    def __init__(self, seconds: float, cpu: float, maxrss_kib: int, code: int, stdout: bytes, stderr: bytes):
        self.seconds, self.cpu, self.maxrss_kib, self.code = seconds, cpu, maxrss_kib, code
        self.stdout, self.stderr = stdout, stderr


# Peak RSS must come from a small parent: at exec, Linux folds the pre-exec address space's
# high-water mark into the child's ru_maxrss, and a fork or posix_spawn of this script shares (or
# copies) the 50 MB module it generated or read. So a bare `python -S` waiter launches the command,
# times it and reports its wait4 rusage (floor: the waiter's own few MiB).
WAITER = r"""
import os, sys, time
t0 = time.monotonic()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)
_, status, ru = os.wait4(pid, 0)
os.write(3, b"%f %f %d %d" % (time.monotonic() - t0, ru.ru_utime + ru.ru_stime, ru.ru_maxrss,
                             os.waitstatus_to_exitcode(status)))
"""


def run_measured(argv: list[str]) -> Run:
    """Wall time, peak RSS (KiB) and exit code of one run of argv, with its output captured."""
    out_path, err_path, rep_path = OUT / "last_stdout", OUT / "last_stderr", OUT / "last_rusage"
    wr = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(out_path), wr, 0o644),
        (os.POSIX_SPAWN_OPEN, 2, str(err_path), wr, 0o644),
        (os.POSIX_SPAWN_OPEN, 3, str(rep_path), wr, 0o644),
    ]
    env = dict(os.environ, NO_COLOR="1")
    pid = os.posix_spawn(sys.executable, [sys.executable, "-S", "-c", WAITER, *argv], env, file_actions=actions)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"bench waiter failed for {argv}: {err_path.read_text(errors='replace')[-500:]}")
    secs, cpu, rss, code = rep_path.read_text().split()
    return Run(float(secs), float(cpu), int(rss), int(code), out_path.read_bytes(), err_path.read_bytes())


def measure(argv: list[str], n: int = RUNS) -> tuple[float, int, list[Run]]:
    runs = [run_measured(argv) for _ in range(n)]
    return statistics.median(r.seconds for r in runs), max(r.maxrss_kib for r in runs), runs


def fmt_times(runs: list[Run]) -> str:
    """Each run's wall time, and the median CPU time (user + system, all threads)."""
    return "/".join(f"{r.seconds:.2f}" for r in runs) + f"; cpu {cpu(runs):.2f} s"


def cpu(runs: list[Run]) -> float:
    return statistics.median(r.cpu for r in runs)


def mark(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def bench(path: Path, expected_asserts: int | None, startup: float, startup_rss: int) -> bool:
    """Prints the figures for one file; False when something is wrong (not when slow)."""
    data = path.read_bytes()
    size, lines, in_text = len(data), data.count(b"\n"), data.count(b"cf.assert")
    del data
    ours_argv = [str(BIN / "mlir-lsp"), "--check", "--output-format", "json", str(path)]
    opt_argv = [str(BIN / "iree-opt"), str(path), "-o", os.devnull]
    ours, opt = [], []
    for _ in range(RUNS):  # interleaved, so that a change in machine load hits both alike
        ours.append(run_measured(ours_argv))
        opt.append(run_measured(opt_argv))
    ours_t, ours_rss = statistics.median(r.seconds for r in ours), max(r.maxrss_kib for r in ours)
    opt_t, opt_rss = statistics.median(r.seconds for r in opt), max(r.maxrss_kib for r in opt)
    good = True
    rss_bytes = ours_rss * 1024
    ratio = ours_t / opt_t
    print(f"\n{path.name}: {size / 1e6:.1f} MB, {lines:,} lines")
    print(f"  mlir-lsp --check  median {ours_t:6.2f} s  ({fmt_times(ours)})  peak RSS {ours_rss / 1024:6.0f} MiB"
          f" = {rss_bytes / size:.2f}x the file (target < 4x: {mark(rss_bytes < 4 * size)});"
          f" {(ours_rss - startup_rss) * 1024 / size:.2f}x above the start-up's {startup_rss / 1024:.0f} MiB")
    print(f"  iree-opt parse    median {opt_t:6.2f} s  ({fmt_times(opt)})  peak RSS {opt_rss / 1024:6.0f} MiB"
          f" = {opt_rss * 1024 / size:.2f}x the file")
    print(f"  ratio check / parse: {ratio:.2f} (target < 1.0: {mark(ratio < 1.0)});"
          f" without our start-up ({startup:.2f} s): {(ours_t - startup) / opt_t:.2f};"
          f" in CPU time: {cpu(ours) / cpu(opt):.2f}")
    bad_opt = [r for r in opt if r.code != 0]
    if bad_opt:
        good = False
        print(f"  ERROR: iree-opt exit {bad_opt[0].code}: {bad_opt[0].stderr.decode(errors='replace')[:800]}")
    bad_ours = [r for r in ours if r.code not in (0, 1)]
    if bad_ours:
        good = False
        print(f"  ERROR: mlir-lsp exit {bad_ours[0].code}: {bad_ours[0].stderr.decode(errors='replace')[:800]}")
        return good
    findings = json.loads(ours[-1].stdout or b"[]")
    by_code = Counter(f["code"] for f in findings)
    n_assert = sum(v for k, v in by_code.items() if k.startswith("MLA"))
    expected = in_text if expected_asserts is None else expected_asserts
    same = n_assert == expected
    good &= same
    print(f"  findings: {dict(sorted(by_code.items()))}; {n_assert} assert findings, expected {expected}"
          f" ({'same' if same else 'MISMATCH'}; 'cf.assert' occurs {in_text} times in the text)")
    return good


def generated(name: str, make, target: int) -> tuple[Path, int]:
    """A generated module in bench/out, rebuilt when generate.py changes; checked once with iree-opt."""
    OUT.mkdir(exist_ok=True)
    path = OUT / f"{name}.mlir"
    meta_path = OUT / f"{name}.json"
    key = {"generator": generate.source_hash(), "target_bytes": target}
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    if path.exists() and meta.get("key") == key:
        print(f"using {path.relative_to(ROOT)} ({meta['functions']:,} functions, {meta['asserts']} cf.assert;"
              " it parsed with iree-opt when generated)")
        return path, meta["asserts"]
    print(f"generating {path.relative_to(ROOT)} ({target / 1e6:.0f} MB) ...", flush=True)
    t0 = time.monotonic()
    text, asserts = make(target)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    funcs = text.count("func.func @")
    del text
    print(f"  {funcs:,} functions, {asserts} cf.assert, {time.monotonic() - t0:.1f} s")
    check = run_measured([str(BIN / "iree-opt"), str(tmp), "-o", os.devnull])
    if check.code != 0:
        print(f"ERROR: the generated module does not parse with iree-opt (exit {check.code}):\n"
              f"{check.stderr.decode(errors='replace')[:2000]}")
        sys.exit(1)
    print(f"  parses and verifies with iree-opt ({check.seconds:.2f} s)")
    tmp.replace(path)
    meta_path.write_text(json.dumps({"key": key, "asserts": asserts, "functions": funcs}))
    return path, asserts


def main() -> int:
    big, asserts = generated("generated_50mb", generate.generate, TARGET_BYTES)
    # Stress: one weight inline as a single dense<"0x..."> string of 16 M characters.
    lit, lit_asserts = generated("one_8mb_literal", generate.generate_big_literal, 8 * 1024 * 1024)
    st_t, st_rss, _ = measure([str(BIN / "mlir-lsp"), "--check", "--output-format", "json", str(TINY)])
    print(f"start-up: mlir-lsp --check on {TINY.name} ({TINY.stat().st_size} bytes): median {st_t:.2f} s,"
          f" peak RSS {st_rss / 1024:.0f} MiB")
    print("\n== spread shape: 30,000 small functions")
    ok = bench(big, asserts, st_t, st_rss)
    if ENCODER.exists():
        # The shape torch exports have: every op in one function (bench/generate.py).
        model, model_asserts = generated("model_shaped_20x", lambda _n: generate.generate_model_shaped(20), 20)
        print("\n== model shape: one function holding every op (the prompt encoder's body 20x, values renamed)")
        ok &= bench(model, model_asserts, st_t, st_rss)
        ok &= bench(ENCODER, 16, st_t, st_rss)
    else:
        print(f"\n(skipped: {ENCODER} not found)")
    ok &= bench(lit, lit_asserts, st_t, st_rss)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

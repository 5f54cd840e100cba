"""`make bench`: mlir-lsp --check versus iree-opt's parse on the same files, in one run.

Prints medians of 3 runs, the ratio (target < 1.0) and our peak resident memory versus the file
size (target < 4x), for a generated ~50 MB module and for the real SDXL prompt encoder.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(HERE))
from generate import generate  # noqa: E402


def run_measured(argv: list[str]) -> tuple[float, int, bytes, int]:
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:  # child: exec with stdout to a file
        fd = os.open(os.devnull, os.O_WRONLY)
        out = os.open(str(HERE / "out" / "last_stdout"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, 1)
        os.dup2(fd, 2)
        os.execv(argv[0], argv)
    _pid, status, usage = os.wait4(pid, 0)
    elapsed = time.monotonic() - t0
    return elapsed, usage.ru_maxrss, (HERE / "out" / "last_stdout").read_bytes(), os.waitstatus_to_exitcode(status)


def median_run(argv, n=3):
    runs = [run_measured(argv) for _ in range(n)]
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs), runs[-1]


def bench(path: Path, expected_asserts: int | None) -> None:
    size = path.stat().st_size
    ours_t, ours_rss, last = median_run([str(BIN / "mlir-lsp"), "--check", "--output-format", "json", str(path)])
    findings = json.loads(last[2] or b"[]")
    opt_t, opt_rss, opt_last = median_run([str(BIN / "iree-opt"), str(path), "-o", os.devnull])
    print(f"\n{path.name}: {size / 1e6:.1f} MB")
    print(f"  mlir-lsp --check   {ours_t:7.2f} s   peak RSS {ours_rss / 1024:7.0f} MiB "
          f"({ours_rss * 1024 / size:.2f}x the file; target < 4x)")
    print(f"  iree-opt (parse)   {opt_t:7.2f} s   peak RSS {opt_rss / 1024:7.0f} MiB"
          + ("" if opt_last[3] == 0 else f"   (iree-opt exit {opt_last[3]})"))
    print(f"  ratio check / parse: {ours_t / opt_t:.2f} (target < 1.0)")
    n_assert = sum(1 for f in findings if f["code"].startswith("MLA"))
    note = "" if expected_asserts is None else f" (expected {expected_asserts})"
    print(f"  findings: {n_assert}{note}")


def main() -> int:
    (HERE / "out").mkdir(exist_ok=True)
    big = HERE / "out" / "generated_50mb.mlir"
    meta = HERE / "out" / "generated_50mb.json"
    if not big.exists() or not meta.exists():
        text, asserts = generate(50_000_000)
        big.write_text(text)
        meta.write_text(json.dumps({"asserts": asserts}))
    asserts = json.loads(meta.read_text())["asserts"]
    bench(big, asserts)
    enc = ROOT.parent / "shared" / "fixtures" / "models" / "sdxl_prompt_encoder.input.mlir"
    if enc.exists():
        bench(enc, 16)
    return 0


if __name__ == "__main__":
    sys.exit(main())

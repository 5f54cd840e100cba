"""`make bench`: `mlir-lsp --check` and `--check --fix` versus iree-opt's parse of the same files.

    python bench/bench_check.py [--only spread,model,inline,other] [--runs 3]

Three shapes of large file, each made by a generator of ours and cached in bench/out/ (all need
../shared beside the checkout):
- spread: a ~50 MB module of 30,000 small functions (bench/generate.py);
- model: a ~47 MB model-shaped one, one function holding every op (the real SDXL prompt
  encoder's body 20 times, values renamed; bench/generate.py);
- inline: an export with its weights inline, clip_l's IR with its 196 parameters as
  `dense_resource`s in a trailing `{-# dialect_resources #-}` section (~493 MB, 0.4 MB of it IR;
  bench/inline_weights.py), as text and as `.mlirbc` (~246 MB);
and (`other`) the real SDXL prompt encoder and a stress file holding one 8 MB weight as a single
`dense<"0x...">` literal. For each file, the median of N interleaved runs of

    mlir-lsp --check --output-format json FILE      (our check, a subprocess like in CI)
    iree-opt FILE -o /dev/null                      (IREE's parser + verifier)

with the time ratio and our peak resident memory, each beside its target:
- spread, model, other: time < 1.0x iree-opt's, peak RSS < 4x the file (the 2.4 MB prompt
  encoder, smaller than the interpreter's start-up: peak RSS < 1.0x iree-opt's);
- inline text: time < 0.25x iree-opt's, peak RSS < 1.3x the file;
- inline .mlirbc: time < 1.5x iree-opt's parse of the .mlirbc, peak RSS < 1.5x iree-opt's.
Then, on fresh copies of each shape's text, `mlir-lsp --check --fix --fix-mode assume` (median of
N): time (beside iree-opt's parse of the original, no target), peak RSS (target < 1.5x the file
for inline; for the 50 MB shapes beside the file's size and iree-opt's, no target; the peak of
the real-parser check's child is included, as wait4 reports descendants), and whether iree-opt
accepts the result, how many `cf.assert` ops are left in its IR part (target 0, or the findings
the fix reports as left) and, for inline, whether the resource section (the bytes from the first
line starting with `{-#`) is byte-identical (sha256).
Last, the start-up cost of `mlir-lsp --check` on a tiny file, which dominates small inputs.

`mlir-lsp` is run as `sys.executable -m mlir_lsp_asserts` with this checkout first on
PYTHONPATH, so that the code measured is this checkout's (the venv's `mlir-lsp` script runs
whichever checkout was installed editable); BENCH_PACKAGE_DIR=DIR measures the package in DIR.

Times are only printed, never asserted. The script exits 1 only when something is wrong rather
than slow: a generated file does not parse with iree-opt, the number of findings is not the
number of `cf.assert` ops in the file, a command fails, a fixed file does not parse, keeps an
assert it should not or has a different resource section.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import mmap
import os
import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
BIN = Path(sys.executable).parent
MODELS = ROOT.parent / "shared" / "fixtures" / "models"
ENCODER = MODELS / "sdxl_prompt_encoder.input.mlir"
CLIP_L = MODELS / "clip_l.input.mlir"
TINY = ROOT / "examples" / "hoisted_gather.mlir"
TARGET_BYTES = 50_000_000
SHAPES = ("spread", "model", "inline", "other")
# This checkout's package, whatever the venv has installed (PYTHONPATH: `child_env`).
MLIR_LSP = [sys.executable, "-m", "mlir_lsp_asserts"]
IREE_OPT = str(BIN / "iree-opt")
FIX_ARGS = ["--check", "--fix", "--fix-mode", "assume", "--output-format", "json"]

sys.path.insert(0, str(HERE))
import generate  # noqa: E402
import inline_weights  # noqa: E402
from measuring import RUNS, Run, child_env, cpu, fmt_times, measure, med, peak, run_measured  # noqa: E402, F401


def load() -> str:
    """The machine's load, printed beside the figures (other work on it slows both sides)."""
    return f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores"


def mark(ok: bool) -> str:
    return "ok" if ok else "MISSED"




@dataclass(frozen=True)
class Targets:
    """One file's targets: our time over iree-opt's, and our peak RSS over the file's size or
    over iree-opt's peak (None: not a target for this file)."""

    time: float = 1.0
    rss_file: float | None = 4.0
    rss_opt: float | None = None


DEFAULT_TARGETS = Targets()


@dataclass(frozen=True)
class Facts:
    """What a file holds, read without decoding it: its IR part ends where its first line starting
    with `{-#` (the resource section) starts."""

    size: int
    ir_bytes: int
    lines: int  # of the IR part
    asserts: int  # cf.assert ops in the IR part, custom (`cf.assert %`) or generic form
    section_sha256: str | None  # of the bytes from the resource section's first line on


def facts_of(path: Path, digest: bool = False) -> Facts:
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        at = -1 if mm[:3] == b"{-#" else mm.find(b"\n{-#")
        cut = len(mm) if at == -1 and mm[:3] != b"{-#" else at + 1
        ir = mm[:cut]
        sha = None
        if digest and cut < len(mm):
            h = hashlib.sha256()
            for off in range(cut, len(mm), 64 << 20):
                h.update(mm[off:off + (64 << 20)])
            sha = h.hexdigest()
        return Facts(len(mm), cut, ir.count(b"\n"), ir.count(b"cf.assert %") + ir.count(b'"cf.assert"('), sha)


@dataclass(frozen=True)
class Startup:
    seconds: float
    rss_kib: int


def interleaved(ours_argv: list[str], opt_argv: list[str], runs: int) -> tuple[list[Run], list[Run]]:
    """`runs` runs of each, alternating, so that a change in machine load hits both alike."""
    ours, opt = [], []
    for _ in range(runs):
        ours.append(run_measured(ours_argv))
        opt.append(run_measured(opt_argv))
    return ours, opt


def describe(path: Path, facts: Facts | None) -> str:
    if facts is None:
        return f"\n{path.name}: {path.stat().st_size / 1e6:.1f} MB (MLIR bytecode)"
    line = f"\n{path.name}: {facts.size / 1e6:.1f} MB, {facts.lines:,} lines"
    rest = facts.size - facts.ir_bytes
    if rest:
        line += (f" in its IR part ({facts.ir_bytes / 1e6:.2f} MB); resource section"
                 f" {f'{rest / 1e6:.1f} MB' if rest >= 1e6 else f'{rest / 1e3:.1f} KB'}")
    return line


def print_check(size: int, ours: list[Run], opt: list[Run], startup: Startup, targets: Targets) -> None:
    ours_t, opt_t, ours_rss, opt_rss = med(ours), med(opt), peak(ours), peak(opt)
    rss = f"peak RSS {ours_rss / 2**20:6.0f} MiB = {ours_rss / size:.2f}x the file"
    if targets.rss_file is not None:
        rss += f" (target < {targets.rss_file:g}x: {mark(ours_rss < targets.rss_file * size)})"
    rss += f" = {ours_rss / opt_rss:.2f}x iree-opt's"
    if targets.rss_opt is not None:
        rss += f" (target < {targets.rss_opt:g}x: {mark(ours_rss < targets.rss_opt * opt_rss)})"
    above = (ours_rss - startup.rss_kib * 1024) / size
    print(f"  mlir-lsp --check  median {ours_t:6.2f} s  ({fmt_times(ours)})  {rss};"
          f" {above:.2f}x the file above the start-up's {startup.rss_kib / 1024:.0f} MiB")
    print(f"  iree-opt parse    median {opt_t:6.2f} s  ({fmt_times(opt)})  peak RSS {opt_rss / 2**20:6.0f} MiB"
          f" = {opt_rss / size:.2f}x the file")
    ratio = ours_t / opt_t
    print(f"  ratio check / parse: {ratio:.2f} (target < {targets.time:g}: {mark(ratio < targets.time)});"
          f" without our start-up ({startup.seconds:.2f} s): {(ours_t - startup.seconds) / opt_t:.2f};"
          f" in CPU time: {cpu(ours) / cpu(opt):.2f}")


def failed(runs: list[Run], what: str, ok_codes: tuple[int, ...] = (0,)) -> bool:
    """Prints the first failed run's error; True when there is one."""
    bad = [r for r in runs if r.code not in ok_codes]
    if bad:
        print(f"  ERROR: {what} exit {bad[0].code}: {bad[0].stderr.decode(errors='replace')[:800]}")
    return bool(bad)


def findings_match(run: Run, expected: int, facts: Facts | None) -> bool:
    findings = json.loads(run.stdout or b"[]")
    by_code = Counter(f["code"] for f in findings)
    n_assert = sum(v for k, v in by_code.items() if k.startswith("MLA"))
    same = n_assert == expected
    in_text = "" if facts is None else f"; {facts.asserts} cf.assert ops in the text"
    print(f"  findings: {dict(sorted(by_code.items()))}; {n_assert} assert findings, expected {expected}"
          f" ({'same' if same else 'MISMATCH'}{in_text})")
    return same


@dataclass(frozen=True)
class Checked:
    good: bool
    opt_seconds: float  # iree-opt's parse: median time, peak RSS (bytes)
    opt_rss: int


def bench(path: Path, expected: int, startup: Startup, targets: Targets = DEFAULT_TARGETS, runs: int = RUNS) -> Checked:
    """Prints the figures of `--check` on one file; `good` is False when something is wrong (not
    when slow)."""
    facts = None if path.suffix == ".mlirbc" else facts_of(path)
    ours, opt = interleaved([*MLIR_LSP, "--check", "--output-format", "json", str(path)],
                            [IREE_OPT, str(path), "-o", os.devnull], runs)
    print(describe(path, facts))
    print_check(path.stat().st_size, ours, opt, startup, targets)
    good = not failed(opt, "iree-opt")
    if failed(ours, "mlir-lsp", (0, 1)):
        return Checked(False, med(opt), peak(opt))
    return Checked(good & findings_match(ours[-1], expected, facts), med(opt), peak(opt))


def bench_fix(path: Path, opt: Checked, rss_target: float | None, runs: int = RUNS) -> bool:
    """`--check --fix --fix-mode assume` on fresh copies of `path`: figures, and False when the
    result is wrong (iree-opt rejects it, an assert the fix did not report is left, or its
    resource section changed)."""
    before = facts_of(path, digest=True)
    work = OUT / f"fixing_{path.name}"
    fixes = []
    for _ in range(runs):
        shutil.copyfile(path, work)
        fixes.append(run_measured([*MLIR_LSP, *FIX_ARGS, str(work)]))
    t, rss = med(fixes), peak(fixes)
    target = "" if rss_target is None else f" (target < {rss_target:g}x: {mark(rss < rss_target * before.size)})"
    print(f"  --check --fix --fix-mode assume on a copy: median {t:.2f} s ({fmt_times(fixes)}) ="
          f" {t / opt.opt_seconds:.2f}x iree-opt's parse of the original; peak RSS {rss / 2**20:.0f} MiB ="
          f" {rss / before.size:.2f}x the file{target} = {rss / opt.opt_rss:.2f}x iree-opt's parse")
    if failed(fixes, "mlir-lsp --fix", (0, 1)):
        work.unlink()
        return False
    after = facts_of(work, digest=before.section_sha256 is not None)
    parse = run_measured([IREE_OPT, str(work), "-o", os.devnull])
    work.unlink()
    reported = sum(1 for f in json.loads(fixes[-1].stdout or b"[]") if f["code"].startswith("MLA"))
    left_ok = after.asserts == reported
    section_ok = after.section_sha256 == before.section_sha256
    section = ("" if before.section_sha256 is None else
               f"; resource section {'byte-identical' if section_ok else 'CHANGED'}"
               f" (sha256 {before.section_sha256[:12]}.. -> {(after.section_sha256 or 'none')[:12]}..)")
    print(f"  fixed file: iree-opt {'accepts it' if parse.code == 0 else 'REJECTS it'} ({parse.seconds:.2f} s);"
          f" {before.asserts} -> {after.asserts} cf.assert ops in the IR part (target 0: {mark(after.asserts == 0)};"
          f" {reported} assert findings reported as left: {'same' if left_ok else 'MISMATCH'}){section}")
    if parse.code != 0:
        print(f"  ERROR: {parse.stderr.decode(errors='replace')[:800]}")
    return parse.code == 0 and left_ok and section_ok


def parses_or_exit(path: Path, what: str) -> Run:
    """iree-opt's parse of a generated file; exits 1 when it does not parse."""
    check = run_measured([IREE_OPT, str(path), "-o", os.devnull])
    if check.code != 0:
        print(f"ERROR: the generated {what} does not parse with iree-opt (exit {check.code}):\n"
              f"{check.stderr.decode(errors='replace')[:2000]}")
        sys.exit(1)
    print(f"  parses and verifies with iree-opt ({check.seconds:.2f} s)")
    return check


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
    size = f" ({target / 1e6:.0f} MB)" if target >= 1_000_000 else ""
    print(f"generating {path.relative_to(ROOT)}{size} ...", flush=True)
    t0 = time.monotonic()
    text, asserts = make(target)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    funcs = text.count("func.func @")
    del text
    print(f"  {funcs:,} functions, {asserts} cf.assert, {time.monotonic() - t0:.1f} s")
    parses_or_exit(tmp, "module")
    tmp.replace(path)
    meta_path.write_text(json.dumps({"key": key, "asserts": asserts, "functions": funcs}))
    return path, asserts


def short_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def generated_inline() -> tuple[Path, Path, int]:
    """The inline shape in bench/out, as text and .mlirbc, rebuilt when bench/inline_weights.py or
    its source (clip_l) changes: the text checked once with iree-opt, which writes the .mlirbc."""
    OUT.mkdir(exist_ok=True)
    text, code, meta_path = OUT / "clip_inline.mlir", OUT / "clip_inline.mlirbc", OUT / "clip_inline.json"
    key = {"generator": short_hash(HERE / "inline_weights.py"), "source": short_hash(CLIP_L)}
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    if text.exists() and code.exists() and meta.get("key") == key:
        print(f"using {text.relative_to(ROOT)} and {code.name} ({meta['blobs']} weights inline, {meta['asserts']}"
              " cf.assert; it parsed with iree-opt when generated)")
        return text, code, meta["asserts"]
    print(f"generating {text.relative_to(ROOT)} and {code.name} from {CLIP_L.name} ...", flush=True)
    t0 = time.monotonic()
    tmp, btmp = OUT / "clip_inline.tmp.mlir", OUT / "clip_inline.tmp.mlirbc"
    info = inline_weights.make(str(CLIP_L), str(tmp))
    asserts = facts_of(tmp).asserts
    print(f"  {info['file_bytes'] / 1e6:.1f} MB, IR {info['ir_bytes'] / 1e3:.0f} KB, {info['blobs']} weights"
          f" inline, {asserts} cf.assert, {time.monotonic() - t0:.1f} s")
    parses_or_exit(tmp, "export")
    conv = run_measured([IREE_OPT, "--emit-bytecode", str(tmp), "-o", str(btmp)])
    if conv.code != 0:
        print(f"ERROR: iree-opt --emit-bytecode failed (exit {conv.code}): "
              f"{conv.stderr.decode(errors='replace')[:800]}")
        sys.exit(1)
    print(f"  {code.name}: {btmp.stat().st_size / 1e6:.1f} MB ({conv.seconds:.2f} s)")
    tmp.replace(text)
    btmp.replace(code)
    meta_path.write_text(json.dumps({"key": key, "asserts": asserts, "blobs": info["blobs"]}))
    return text, code, asserts


def check_and_fix(title: str, path: Path, asserts: int, startup: Startup, runs: int) -> bool:
    """A 50 MB shape: `--check`, then `--check --fix` on a copy (no memory target: the figure is
    beside the file's size and iree-opt's)."""
    print(f"\n== {title} ({load()})")
    checked = bench(path, asserts, startup, runs=runs)
    return bench_fix(path, checked, None, runs) & checked.good


def spread_shape(startup: Startup, runs: int) -> bool:
    path, asserts = generated("generated_50mb", generate.generate, TARGET_BYTES)
    return check_and_fix("spread shape: 30,000 small functions", path, asserts, startup, runs)


def model_shape(startup: Startup, runs: int) -> bool:
    if not ENCODER.exists():
        print(f"\n(model shape skipped: {ENCODER} not found)")
        return True
    # The shape torch exports have: every op in one function (bench/generate.py).
    path, asserts = generated("model_shaped_20x", lambda _n: generate.generate_model_shaped(20), 20)
    return check_and_fix("model shape: one function holding every op (the prompt encoder's body 20x, values"
                         " renamed)", path, asserts, startup, runs)


def inline_shape(startup: Startup, runs: int) -> bool:
    if not CLIP_L.exists():
        print(f"\n(inline shape skipped: {CLIP_L} not found)")
        return True
    text, code, asserts = generated_inline()
    print(f"\n== inline shape: clip_l exported with its weights inline (a trailing dialect_resources section;"
          f" {load()})")
    checked = bench(text, asserts, startup, Targets(time=0.25, rss_file=1.3), runs)
    ok = checked.good & bench(code, asserts, startup, Targets(time=1.5, rss_file=None, rss_opt=1.5), runs).good
    print(f"\n{text.name} again:")
    return bench_fix(text, checked, 1.5, runs) & ok


def other_files(startup: Startup, runs: int) -> bool:
    ok = True
    if ENCODER.exists():
        print(f"\n== the real SDXL prompt encoder ({load()})")
        # A 2.4 MB file is smaller than the interpreter's own start-up (14 MiB): its peak is judged
        # against iree-opt's parse of it, not against its size (printed beside, as for every file).
        ok &= bench(ENCODER, 16, startup, Targets(rss_file=None, rss_opt=1.0), runs=runs).good
    # Stress: one weight inline as a single dense<"0x..."> string of 16 M characters.
    lit, lit_asserts = generated("one_8mb_literal", generate.generate_big_literal, 8 * 1024 * 1024)
    print(f"\n== one 8 MB weight as a single dense literal ({load()})")
    return bench(lit, lit_asserts, startup, runs=runs).good & ok


SHAPE_BENCHES = {"spread": spread_shape, "model": model_shape, "inline": inline_shape, "other": other_files}


def names_list(allowed: tuple[str, ...]):
    """An argparse type: a comma-separated list of some of `allowed`."""
    def parse(arg: str) -> list[str]:
        names = [s.strip() for s in arg.split(",") if s.strip()]
        if not names or any(s not in allowed for s in names):
            raise argparse.ArgumentTypeError(f"one or more of {', '.join(allowed)} (comma-separated), not {arg!r}")
        return names
    return parse


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", type=names_list(SHAPES), default=list(SHAPES), metavar="SHAPES",
                    help=f"comma-separated, of {', '.join(SHAPES)} (default: all)")
    ap.add_argument("--runs", type=int, default=RUNS, help="runs of each command (median; default 3)")
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    st_t, st_rss, _ = measure([*MLIR_LSP, "--check", "--output-format", "json", str(TINY)], args.runs)
    startup = Startup(st_t, st_rss)
    print(f"start-up: mlir-lsp --check on {TINY.name} ({TINY.stat().st_size} bytes): median {st_t:.2f} s,"
          f" peak RSS {st_rss / 1024:.0f} MiB")
    ok = True
    for shape in args.only:
        ok &= SHAPE_BENCHES[shape](startup, args.runs)
        print(f"  ({load()} at the end)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

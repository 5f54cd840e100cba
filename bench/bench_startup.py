"""`make bench`: start-up, and many small functions (issue 37). Each line is paired against a
yardstick run in the same loop (ours, then its, N times: a change in the machine's load hits both
alike), with the load average beside it.

    python bench/bench_startup.py [--only startup,server,small] [--runs 10]

startup (the command line):
- `mlir-lsp --check` of the 2.6 KB example against the native `iree-opt` (the binary in
  iree/compiler/_mlir_libs, not the venv's Python wrapper) parsing it: target <= 3x;
- `--explain MLA001` and `--version` against `python -c pass` of the same venv: target <= 2x;
- 200 small files in one `--check` (a pre-commit run) against iree-opt run once per file: <= 1.0x.
server: its `initialize` answer (target <= 100 ms) and the first diagnostics of a small document
(<= 200 ms), both from the spawn of the process (`--only server` runs these lines alone).
small: ~50 MB of ~85,000 small functions (bench/generate.py `generate_small_functions`, 680
asserts, upstream dialects): `--check` against iree-opt's parse (< 1.0x), the server's open
(didOpen -> first diagnostics: <= 1.2x our --check and <= 0.5x iree-opt) and the edits next to an
assert after the first (p95 <= 8 ms: the server's part, to the publish's last byte, plus V8's
JSON.parse of the publish, as VS Code's client parses it; this client's CPython parse is printed
beside it; the first edit, sent on the open's publish, waits for the work the open left for after
it and is printed on its own line, as bench_server.py does).
The prompt encoder and the 8 MB literal are bench_check.py's `other` shape.

The start-up and server lines run the venv's `mlir-lsp` script, as users and editors do (with
this checkout first on PYTHONPATH); the small-functions lines `python -m mlir_lsp_asserts`, as
bench_check.py. The package's modules are compiled to `__pycache__` first (as pip does on install) and the
commands run without PYTHONDONTWRITEBYTECODE: a start-up that compiles its sources is not a
user's. Figures only; the script exits 1 only when a command fails or a count is wrong.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_check  # noqa: E402
import generate  # noqa: E402
from lsp_bench import AssertToggle, Client, did_open, mla001, open_timed, print_edits_8ms, verdict  # noqa: E402
from measuring import OUT, ROOT, Run  # noqa: E402

SECTIONS = ("startup", "server", "small")
MLIR_LSP = bench_check.MLIR_LSP
# The start-up lines run what users run: the venv's `mlir-lsp` script (pip's console script; the
# measured environment puts this checkout's package first on PYTHONPATH, so it runs this code).
# `python -m mlir_lsp_asserts` (bench_check's command) also pays for runpy, which the script does not.
SCRIPT = bench_check.BIN / "mlir-lsp"
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else MLIR_LSP
TINY = bench_check.TINY
paired = bench_check.interleaved  # ours, theirs, ours, theirs ...
FILES = 200


def native_iree_opt() -> str:
    """The iree-opt binary of the venv's iree-base-compiler (not bin/iree-opt, a Python wrapper)."""
    spec = importlib.util.find_spec("iree.compiler")
    assert spec is not None and spec.submodule_search_locations, "iree-base-compiler is not installed"
    return str(Path(next(iter(spec.submodule_search_locations))) / "_mlir_libs" / "iree-opt")


def line(what: str, ours: list[Run], theirs: list[Run], yardstick: str, target: float,
         ok_codes: tuple[int, ...] = (0,)) -> bool:
    bad = [r for r in ours + theirs if r.code not in ok_codes + (0,)]
    if bad:
        print(f"  ERROR: {what}: exit {bad[0].code}: {bad[0].stderr.decode(errors='replace')[:600]}")
        return False
    ratio = statistics.median(x.seconds / y.seconds for x, y in zip(ours, theirs, strict=True))
    cpu = statistics.median(x.cpu / y.cpu for x, y in zip(ours, theirs, strict=True) if y.cpu > 0)
    print(f"  {what}: median {statistics.median(r.seconds for r in ours) * 1e3:7.1f} ms"
          f" (cpu {statistics.median(r.cpu for r in ours) * 1e3:.0f} ms) against {yardstick}"
          f" {statistics.median(r.seconds for r in theirs) * 1e3:7.1f} ms (cpu"
          f" {statistics.median(r.cpu for r in theirs) * 1e3:.0f} ms): {ratio:.2f}x paired, {cpu:.2f}x in CPU"
          f" [target <= {target:g}x: {verdict(ratio <= target)}]  ({bench_check.load()})")
    return True


def server_section(args) -> bool:
    """The server's `initialize` answer and a small document's first diagnostics, from the spawn."""
    runs = args.runs
    print(f"\n== the server's start: the {TINY.stat().st_size / 1e3:.1f} KB example ({bench_check.load()})")
    text = TINY.read_text(encoding="utf-8")
    uri = TINY.resolve().as_uri()
    opened = did_open(uri, text)
    inits, diags = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        c = Client(COMMAND)
        c.request("initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": {
            "textDocument": {"publishDiagnostics": {"versionSupport": True}}}})
        inits.append(next(t for t, m in c.messages if m.get("id") == 1 and "method" not in m) - t0)
        c.notify("initialized", {})
        c.send_bytes(opened)
        t, publish = c.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == uri)
        diags.append(t - t0)
        assert mla001(publish) == 4, publish
        c.close()
        answers = [m for _t, m in c.messages if m.get("id") == 1 and "method" not in m]
        assert len(answers) == 1, answers  # the early start's answer, and not pygls's again
    init_ms, diag_ms = statistics.median(inits) * 1e3, statistics.median(diags) * 1e3
    print(f"  server: initialize answered {init_ms:.0f} ms after the spawn [target <= 100 ms: "
          f"{verdict(init_ms <= 100)}]; the example's first diagnostics {diag_ms:.0f} ms after it [target <= 200 ms: "
          f"{verdict(diag_ms <= 200)}]  (medians of {runs}; {bench_check.load()})")
    return True


def startup_section(args) -> bool:
    opt = native_iree_opt()
    work = OUT / "startup"
    shutil.rmtree(work, ignore_errors=True)
    (work / "many").mkdir(parents=True)
    example = work / TINY.name  # outside the checkout: no pyproject.toml naming mlir-lsp above it
    shutil.copyfile(TINY, example)
    for i in range(FILES):
        shutil.copyfile(TINY, work / "many" / f"f{i:03d}.mlir")
    print(f"\n== start-up: the {TINY.stat().st_size / 1e3:.1f} KB example, iree-opt = {opt}, mlir-lsp = "
          f"{' '.join(COMMAND)} ({bench_check.load()})")
    ok = line("mlir-lsp --check example", *paired([*COMMAND, "--check", str(example)],
                                                   [opt, str(example), "-o", os.devnull], args.runs),
              "iree-opt parse", 3.0, ok_codes=(1,))
    for extra in (["--explain", "MLA001"], ["--version"]):
        ok &= line(f"mlir-lsp {' '.join(extra)}", *paired([*COMMAND, *extra], [sys.executable, "-c", "pass"],
                                                           args.runs), "python -c pass", 2.0)
    loop = f'for f in "$@"; do "{opt}" "$f" -o /dev/null || exit 1; done'
    files = sorted(str(p) for p in (work / "many").iterdir())
    ok &= line(f"mlir-lsp --check of {FILES} files", *paired([*COMMAND, "--check", str(work / "many")],
                                                              ["/bin/sh", "-c", loop, "sh", *files],
                                                              max(3, args.runs // 3)),
               "iree-opt once per file", 1.0, ok_codes=(1,))
    return ok


def small_section(args) -> bool:
    path, asserts = bench_check.generated("small_functions_50mb", generate.generate_small_functions, 50_000_000)
    text = path.read_text(encoding="utf-8")
    opt = native_iree_opt()
    print(f"\n== many small functions: {path.relative_to(ROOT)}, {len(text) / 1e6:.1f} MB, "
          f"{text.count('func.func'):,} functions, {asserts} asserts ({bench_check.load()})")
    runs = max(3, args.runs // 3)
    ours, theirs = paired([*MLIR_LSP, "--check", "--output-format", "json", str(path)],
                          [opt, str(path), "-o", os.devnull], runs)
    ok = line("mlir-lsp --check", ours, theirs, "iree-opt parse", 1.0, ok_codes=(1,))
    found = len([f for f in json.loads(ours[0].stdout) if f["code"].startswith("MLA")]) if ok else -1
    if found != asserts:
        print(f"  ERROR: {found} findings, {asserts} asserts in the file")
        ok = False
    check_s, parse_s = statistics.median(r.seconds for r in ours), statistics.median(r.seconds for r in theirs)
    lines = text.split("\n")
    assert_line = next(i for i in range(len(lines) // 2, len(lines)) if lines[i].lstrip().startswith("cf.assert"))
    opens, firsts, edits, received = [], [], [], []
    for _ in range(runs):
        c = Client(MLIR_LSP)
        c.request("initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": {
            "textDocument": {"publishDiagnostics": {"versionSupport": True}}}})
        uri = path.resolve().as_uri()
        took, first = open_timed(c, uri, text)
        opens.append(took)
        assert mla001(first) == asserts, mla001(first)
        toggle = AssertToggle(c, uri, assert_line, None)
        firsts.append(toggle.toggle())  # sent on the open's publish: timed on its own, as bench_server does
        edits += [toggle.toggle() for _ in range(args.edits)]
        received += toggle.received[1:]
        c.close()
    open_s = statistics.median(opens)
    print(f"  server open -> first diagnostics: median {open_s:.2f} s = {open_s / check_s:.2f}x our --check "
          f"[target <= 1.2x: {verdict(open_s <= 1.2 * check_s)}], {open_s / parse_s:.2f}x iree-opt's parse "
          f"[target <= 0.5x: {verdict(open_s <= 0.5 * parse_s)}]")
    print(f"  the first edit, sent on the open's publish (it waits for the outlines and the collection the open "
          f"leaves for after its publish): {', '.join(f'{x * 1e3:.0f}' for x in firsts)} ms")
    print_edits_8ms("  ", edits, received, first, bench_check.load())
    return ok


def main() -> int:
    # The client keeps every publish it got (hundreds of 680 diagnostics on the small-functions
    # shape): its own full collections (50-150 ms) would be timed as the server's edit latency.
    import gc

    gc.disable()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--edits", type=int, default=50, help="small: edits per server run")
    ap.add_argument("--only", type=bench_check.names_list(SECTIONS), default=list(SECTIONS), metavar="SECTIONS")
    args = ap.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # the children's environment is this one's
    compileall.compile_dir(str(ROOT / "mlir_lsp_asserts"), quiet=1)
    OUT.mkdir(exist_ok=True)
    ok = True
    for name in args.only:
        ok &= {"startup": startup_section, "server": server_section, "small": small_section}[name](args)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

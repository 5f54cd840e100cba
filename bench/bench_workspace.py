"""bench_server.py's workspace section: a server whose workspace folder it scans while the SDXL
prompt encoder is opened and edited, against a server with no folder (see bench_server.py)."""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_check  # noqa: E402
import generate  # noqa: E402
from lsp_bench import (  # noqa: E402
    AssertToggle,
    Client,
    children_peak_kib,
    cpu_s,
    mla001,
    open_timed,
    peak_rss_kib,
    print_edits,
    verdict,
)

ROOT = HERE.parent
MLIR_LSP = bench_check.MLIR_LSP
ENCODER = bench_check.ENCODER


WORKSPACE = bench_check.OUT / "workspace"
MAX_SCAN_EDITS = 5000


def workspace_folder() -> tuple[Path, dict[str, int]]:
    """bench/out/workspace, made afresh: the prompt encoder (a copy), the two 50 MB shapes and the
    inline export (hard links to bench/out's files, copies where linking fails); returns the
    encoder's path and the big files' names with their asserts."""
    big = [bench_check.generated("generated_50mb", generate.generate, 50_000_000),
           bench_check.generated("model_shaped_20x", lambda _n: generate.generate_model_shaped(20), 20),
           bench_check.generated_inline()[::2]]
    shutil.rmtree(WORKSPACE, ignore_errors=True)
    WORKSPACE.mkdir()
    shutil.copyfile(ENCODER, WORKSPACE / ENCODER.name)
    for path, _n in big:
        try:
            os.link(path, WORKSPACE / path.name)
        except OSError:
            shutil.copyfile(path, WORKSPACE / path.name)
    return WORKSPACE / ENCODER.name, {path.name: n for path, n in big}


class ScanWatch:
    """What a server's workspace scan has shown so far: when each big file's diagnostics were
    published (and how many assert findings they held), and when the scan's `$/progress` ended."""

    def __init__(self, names):
        self.names = set(names)
        self.published: dict[str, tuple[float, int]] = {}
        self.ended: float | None = None
        self.seen = 0

    def update(self, c: Client) -> None:
        with c.lock:
            new = c.messages[self.seen:]
        self.seen += len(new)
        for t, m in new:
            params = m.get("params") or {}
            if m.get("method") == "textDocument/publishDiagnostics":
                name = Path(unquote(urlparse(params["uri"]).path)).name
                if name in self.names and name not in self.published:
                    n = sum(1 for d in params["diagnostics"] if str(d.get("code", "")).startswith("MLA"))
                    self.published[name] = (t, n)
            elif (m.get("method") == "$/progress" and str(params.get("token", "")).startswith("mlir-lsp-scan")
                  and params.get("value", {}).get("kind") == "end"):
                self.ended = t

    def done(self) -> bool:
        return self.ended is not None or len(self.published) == len(self.names)

    def end(self) -> float | None:
        """When the scan was over: its progress ended, or else its last big file was published."""
        return self.ended or (max(t for t, _n in self.published.values()) if self.published else None)


def workspace_session(folder: Path | None, enc: Path, line: int, names, args) -> dict:
    """A server with `folder` as its workspace (None: no folder), the encoder opened right after
    `initialized`, then edits next to one of its asserts every `--edit-gap` s: while the scan runs
    (until its progress ends, every big file is published, or `--scan-timeout`), or `--edits` of
    them without a folder."""
    c = Client(MLIR_LSP)
    params = {"processId": os.getpid(), "rootUri": folder.as_uri() if folder else None, "capabilities": {
        "textDocument": {"publishDiagnostics": {"versionSupport": True}}, "window": {"workDoneProgress": True},
        "workspace": {"workspaceFolders": True}}}
    if folder is not None:
        params["workspaceFolders"] = [{"uri": folder.as_uri(), "name": folder.name}]
    c.request("initialize", params)
    uri = enc.as_uri()
    start = time.perf_counter()
    opened, first = open_timed(c, uri, enc.read_text(), versioned=True)
    toggle, scan = AssertToggle(c, uri, line), ScanWatch(names)
    edits: list[tuple[float, float]] = []  # (sent, latency)
    kids, sample_at, cpu0 = 0, 0.0, cpu_s(c.proc.pid)
    while len(edits) < (args.edits if folder is None else MAX_SCAN_EDITS):
        scan.update(c)
        if folder is not None and (scan.done() or time.perf_counter() - start > args.scan_timeout):
            break
        sent = time.perf_counter()
        edits.append((sent, toggle.toggle()))
        if sent > sample_at:  # the scan's worker lives as long as the server: its VmHWM is its peak
            kids, sample_at = max(kids, children_peak_kib(c.proc.pid)), sent + 0.5
        time.sleep(args.edit_gap)
    if folder is not None and scan.ended is None:  # every big file published: the progress ends next
        try:
            c.wait(lambda m: m.get("method") == "$/progress" and m["params"].get("value", {}).get("kind") == "end"
                   and str(m["params"].get("token", "")).startswith("mlir-lsp-scan"), timeout=10, start=scan.seen)
        except TimeoutError:
            pass
        scan.update(c)
    out = {"open": opened, "findings": mla001(first), "start": start, "scan": scan, "edits": edits,
           "cpu_per_edit": (cpu_s(c.proc.pid) - cpu0) / max(1, len(edits)),
           "peak_rss_kib": peak_rss_kib(c.proc.pid), "children_kib": max(kids, children_peak_kib(c.proc.pid))}
    c.close()
    return out


def workspace_section(args) -> None:
    if not ENCODER.exists():
        print(f"\n(workspace section skipped: {ENCODER} not found)")
        return
    enc, expected = workspace_folder()
    lines = enc.read_text().split("\n")
    asserts = [i for i, ln in enumerate(lines) if ln.lstrip().startswith("cf.assert")]
    line = asserts[len(asserts) // 2]
    sizes = ", ".join(f"{p.name} {p.stat().st_size / 1e6:.1f} MB" for p in sorted(WORKSPACE.iterdir()))
    print(f"\n== workspace: a server whose folder {WORKSPACE.relative_to(ROOT)} holds {sizes}; the encoder opened "
          f"right after `initialized`, edits (line {line + 1}, a cf.assert, commented out and in) every "
          f"{args.edit_gap * 1000:.0f} ms; against a server with no folder ({bench_check.load()})")
    alone, scanning = [], []
    for _ in range(args.runs):  # interleaved, so that a change in machine load hits both alike
        alone.append(workspace_session(None, enc, line, expected, args))
        scanning.append(workspace_session(WORKSPACE, enc, line, expected, args))
    print_workspace(alone, scanning, expected, args)


def runs_of(xs) -> str:
    return "/".join("-" if x is None else f"{x:.2f}" for x in xs)


def print_workspace(alone: list[dict], scanning: list[dict], expected: dict[str, int], args) -> None:
    a_open = statistics.median(r["open"] for r in alone)
    print(f"no folder:   encoder open -> first diagnostics median {a_open:.2f} s "
          f"(runs: {runs_of(r['open'] for r in alone)}), {alone[0]['findings']} MLA001")
    print_edits("no folder  ", [lat for r in alone for _t, lat in r["edits"]], "edit next to an assert ->",
                [r["cpu_per_edit"] for r in alone])
    s_open = statistics.median(r["open"] for r in scanning)
    print(f"with folder: encoder open -> first diagnostics median {s_open:.2f} s "
          f"(runs: {runs_of(r['open'] for r in scanning)}) = {s_open / a_open:.2f}x the no-folder "
          f"server's [target < 1.5x: {verdict(s_open < 1.5 * a_open)}]")
    during = [lat for r in scanning for t, lat in r["edits"] if r["scan"].end() is None or t < r["scan"].end()]
    sent = sum(len(r["edits"]) for r in scanning)
    if during:
        print_edits("with folder", during, f"edit next to an assert while the scan ran (of {sent} edits sent) ->",
                    [r["cpu_per_edit"] for r in scanning])
    else:
        print("with folder: no edit was sent while the scan ran (it was over before the first)")
    for name, n in expected.items():
        seen = [r["scan"].published.get(name) for r in scanning]
        times = runs_of(None if p is None else p[0] - r["start"] for p, r in zip(seen, scanning, strict=True))
        counts = sorted({p[1] for p in seen if p is not None})
        print(f"  scan: {name} published after {times} s (from `initialized`; -: not during the scan), "
              f"assert findings {counts} (its asserts: {n}) [target: published in every run: "
              f"{verdict(all(p is not None for p in seen))}]")
    ends = runs_of(r["scan"].ended - r["start"] if r["scan"].ended else None for r in scanning)
    print(f"  scan's progress ended after {ends} s (-: not seen within {args.scan_timeout:g} s, or 10 s after the"
          " last big file was published)")
    peaks = [max(r[key] for r in rs) / 1024 for key in ("peak_rss_kib", "children_kib") for rs in (scanning, alone)]
    print(f"  peak RSS (VmHWM): server {peaks[0]:.0f} MiB with the folder, {peaks[1]:.0f} MiB without; its child "
          f"processes at most {peaks[2]:.0f} MiB / {peaks[3]:.0f} MiB")

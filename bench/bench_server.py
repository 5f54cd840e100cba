"""Benchmark: the real server over stdio on a generated 50 MB module, side by side with upstream
mlir-lsp-server (Debian's mlir-22-tools) on the same file. Figures only; no timed assertion.

    .venv/bin/python bench/bench_server.py [--runs 3] [--edits 50] [--memory-edits 1000]
                                           [--upstream PATH] [--no-upstream]

Measures, for each server:
- open: time from `didOpen` to the first `publishDiagnostics` (target: below iree-opt's batch
  parse of the file, which is measured too);
- edit: time from a `didChange` inside one function (commenting a `cf.assert` out, then in) to
  the `publishDiagnostics` for that version (target for mlir-lsp: p95 < 20 ms and >= 100x
  faster than mlir-lsp-server);
and for mlir-lsp only, resident memory before and after `--memory-edits` edits (target: < 20 %
growth). Medians over `--runs` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_check  # noqa: E402
import generate  # noqa: E402

ROOT = HERE.parent
BIN = Path(sys.executable).parent
UPSTREAM_OPT = "/usr/lib/llvm-22/bin/mlir-opt"
UPSTREAM_CANDIDATES = ["/usr/lib/llvm-22/bin/mlir-lsp-server", "mlir-lsp-server-22", "mlir-lsp-server"]


class Client:
    """A minimal LSP client over a child's stdio: enough to time notifications precisely."""

    def __init__(self, argv: list[str]):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.lock = threading.Condition()
        self.messages: list[tuple[float, dict]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = out.read(length)
            msg = json.loads(body)
            if "id" in msg and "method" in msg:  # a request from the server: answer null
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            with self.lock:
                self.messages.append((time.perf_counter(), msg))
                self.lock.notify_all()

    def _send(self, msg: dict) -> None:
        data = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        self.proc.stdin.flush()

    def notify(self, method: str, params) -> float:
        t = time.perf_counter()
        self._send({"jsonrpc": "2.0", "method": method, "params": params})
        return t

    def request(self, method: str, params, timeout: float = 60):
        self.next_id += 1
        rid = self.next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == rid and "method" not in m, timeout)[1]

    def wait(self, pred, timeout: float = 120, start: int = 0) -> tuple[float, dict]:
        deadline = time.monotonic() + timeout
        with self.lock:
            i = start
            while True:
                while i < len(self.messages):
                    t, m = self.messages[i]
                    i += 1
                    if pred(m):
                        return t, m
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no answer from the server")
                self.lock.wait(left)

    def mark(self) -> int:
        with self.lock:
            return len(self.messages)

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - a benchmark closes what it opened, whatever happened
            self.proc.kill()
            self.proc.wait()


def has_children(pid: int) -> bool:
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                return True
        except (OSError, ValueError, IndexError):
            pass
    return False


def settle(pid: int, timeout: float = 120) -> None:
    """Wait until the server is idle: its background real-parser child (0.5 s after the last
    edit, ~10 s on 50 MB) has come and gone."""
    time.sleep(1.0)
    deadline = time.monotonic() + timeout
    while has_children(pid) and time.monotonic() < deadline:
        time.sleep(0.2)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def session(argv: list[str], uri: str, text: str, assert_line: int, edits: int, memory_edits: int = 0) -> dict:
    c = Client(argv)
    init = c.request("initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": {
        "textDocument": {"publishDiagnostics": {"versionSupport": True}}}})
    sync = init["result"]["capabilities"].get("textDocumentSync", 1)
    sync = sync.get("change", 1) if isinstance(sync, dict) else sync
    full = sync == 1  # the server takes whole texts only (mlir-lsp-server): send what an editor would
    if full:
        at = sum(len(ln) + 1 for ln in text.split("\n", assert_line)[:assert_line])
        commented = text[:at] + "// " + text[at:]
    c.notify("initialized", {})
    mark = c.mark()
    t0 = c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "mlir", "version": 1,
                                                             "text": text}})
    t1, _m = c.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                    and m["params"]["uri"] == uri, timeout=600, start=mark)
    out = {"open": t1 - t0, "edits": [], "full_sync": full}
    version = 1

    def edit(comment: bool) -> float:
        nonlocal version
        version += 1
        rng = {"start": {"line": assert_line, "character": 0},
               "end": {"line": assert_line, "character": 0 if comment else 3}}
        mark = c.mark()
        v = version
        change = {"text": commented if comment else text} if full else {"range": rng, "text": "// " if comment else ""}
        t = c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": v}, "contentChanges": [change]})
        # Upstream publishes without a version field when the client gives none back: match on
        # the first publish after the change for it.
        tp, _m = c.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
                        and m["params"].get("version", v) == v, timeout=600, start=mark)
        return tp - t

    for k in range(edits):
        out["edits"].append(edit(k % 2 == 0))
    if edits % 2:
        edit(False)
    if memory_edits:
        settle(c.proc.pid)
        before = rss_kib(c.proc.pid)
        for k in range(memory_edits):
            edit(k % 2 == 0)
        settle(c.proc.pid)
        out["rss_before_kib"], out["rss_after_kib"] = before, rss_kib(c.proc.pid)
    c.close()
    return out


def p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]


def upstream_twin(path: Path, text: str) -> Path:
    """The same module with its IREE-only ops (util.global parameters) replaced by upstream
    ones, so that upstream's server, which has no IREE dialect, parses all of it too."""
    import re

    twin = path.with_name(path.stem + ".upstream.mlir")
    if not twin.exists() or twin.stat().st_mtime < path.stat().st_mtime:
        t = re.sub(r"^  util\.global private @param_\d+ = .*\n", "", text, flags=re.M)
        t = re.sub(r"util\.global\.load @param_\d+ : (tensor<[^>]*>)", r"tensor.empty() : \1", t)
        twin.write_text(t)
    return twin


def find_upstream(given: str | None) -> str | None:
    for cand in ([given] if given else UPSTREAM_CANDIDATES):
        p = cand if os.path.isabs(cand) else shutil.which(cand)
        if p and os.access(p, os.X_OK):
            return p
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--edits", type=int, default=50)
    ap.add_argument("--upstream-edits", type=int, default=4)
    ap.add_argument("--memory-edits", type=int, default=1000)
    ap.add_argument("--upstream")
    ap.add_argument("--no-upstream", action="store_true")
    args = ap.parse_args()

    path, _asserts = bench_check.generated("generated_50mb", generate.generate, 50_000_000)
    text = path.read_text()
    lines = text.split("\n")
    middle = len(lines) // 2
    assert_line = next(i for i in range(middle, len(lines)) if lines[i].lstrip().startswith("cf.assert"))
    uri = path.resolve().as_uri()
    print(f"file: {path.relative_to(ROOT)}, {len(text) / 1e6:.1f} MB, {len(lines):,} lines; "
          f"edit: comment line {assert_line + 1} (a cf.assert) out and in")

    parse = [bench_check.run_measured([str(BIN / "iree-opt"), str(path), "-o", os.devnull]).seconds
             for _ in range(args.runs)]
    parse_s = statistics.median(parse)
    print(f"iree-opt batch parse: median {parse_s:.2f} s over {args.runs} runs")

    ours = [session([str(BIN / "mlir-lsp")], uri, text, assert_line, args.edits,
                    args.memory_edits if r == 0 else 0) for r in range(args.runs)]
    opens = [o["open"] for o in ours]
    edits = [e for o in ours for e in o["edits"]]
    med_edit, p95_edit = statistics.median(edits), p95(edits)
    print(f"mlir-lsp: open -> diagnostics median {statistics.median(opens):.2f} s "
          f"(runs: {', '.join(f'{x:.2f}' for x in opens)}); ratio to iree-opt {statistics.median(opens) / parse_s:.2f} "
          f"[target < 1: {'ok' if statistics.median(opens) < parse_s else 'MISSED'}]")
    print(f"mlir-lsp: edit -> diagnostics median {med_edit * 1000:.1f} ms, p95 {p95_edit * 1000:.1f} ms, "
          f"max {max(edits) * 1000:.1f} ms over {len(edits)} edits [target p95 < 20 ms: "
          f"{'ok' if p95_edit < 0.020 else 'MISSED'}]")
    m = ours[0]
    if "rss_before_kib" in m:
        growth = m["rss_after_kib"] / m["rss_before_kib"] - 1
        print(f"mlir-lsp: resident memory {m['rss_before_kib'] / 1024:.0f} MiB -> {m['rss_after_kib'] / 1024:.0f} MiB "
              f"after {args.memory_edits} edits ({growth * 100:+.1f} %) [target < +20 %: {'ok' if growth < 0.2 else 'MISSED'}]")

    upstream = None if args.no_upstream else find_upstream(args.upstream)
    if upstream is None:
        print("mlir-lsp-server: not found (apt-get install mlir-22-tools); side-by-side figures skipped")
        return 0
    twin = upstream_twin(path, text)
    ttext = twin.read_text()
    tline = next(i for i, ln in enumerate(ttext.split("\n")) if i >= assert_line - 5000 and ln.lstrip().startswith("cf.assert"))
    turi = twin.resolve().as_uri()
    opt = bench_check.run_measured([UPSTREAM_OPT, str(twin), "-o", os.devnull]) if os.path.exists(UPSTREAM_OPT) else None
    print(f"side by side on {twin.relative_to(ROOT)} (util.global parameters replaced by tensor.empty, so that "
          f"upstream parses it{'' if opt is None else f'; mlir-opt-22 batch parse {opt.seconds:.2f} s, exit {opt.code}'})")
    mine = session([str(BIN / "mlir-lsp")], turi, ttext, tline, args.edits)
    theirs = [session([upstream], turi, ttext, tline, args.upstream_edits) for _ in range(max(1, args.runs - 1))]
    t_opens = [o["open"] for o in theirs]
    t_edits = [e for o in theirs for e in o["edits"]]
    t_med, m_med = statistics.median(t_edits), statistics.median(mine["edits"])
    print(f"  mlir-lsp:        open -> diagnostics {mine['open']:.2f} s; edit -> diagnostics median "
          f"{m_med * 1000:.1f} ms, p95 {p95(mine['edits']) * 1000:.1f} ms over {len(mine['edits'])} edits")
    sync_note = "; it takes whole texts (full sync), so each edit sends the 50 MB text, as an editor does" if theirs[0]["full_sync"] else ""
    print(f"  mlir-lsp-server: open -> diagnostics median {statistics.median(t_opens):.2f} s; edit -> diagnostics "
          f"median {t_med:.2f} s, p95 {p95(t_edits):.2f} s over {len(t_edits)} edits "
          f"({', '.join(f'{x:.2f}' for x in t_edits)} s; {upstream}{sync_note})")
    print(f"  edit speed-up, median: {t_med / m_med:.0f}x [target >= 100x: {'ok' if t_med / m_med >= 100 else 'MISSED'}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

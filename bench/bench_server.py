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


def open_timed(c: Client, uri: str, text: str) -> tuple[float, dict]:
    """`initialized`, then `didOpen`: seconds to the first publish for it, and that publish."""
    c.notify("initialized", {})
    mark = c.mark()
    t0 = c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "mlir", "version": 1,
                                                             "text": text}})
    t1, first = c.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                       and m["params"]["uri"] == uri, timeout=600, start=mark)
    return t1 - t0, first


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
    opened, _first = open_timed(c, uri, text)
    out = {"open": opened, "edits": [], "full_sync": full}
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


def peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def model_places(text: str) -> dict[str, tuple[int, int, str]]:
    """Where a user edits a model-shaped file: (line, character, text to insert and remove again),
    all deep in the one function (its last quarter), and its header."""
    lines = text.split("\n")
    deep = len(lines) * 3 // 4
    assert_line = next(i for i in range(deep, len(lines)) if lines[i].lstrip().startswith("cf.assert"))
    plain = next(i for i in range(deep, len(lines)) if lines[i].startswith("    %") and "{" not in lines[i])
    body = next(i for i in range(deep, len(lines)) if lines[i].lstrip().startswith("linalg.yield")
                and "cf.assert" not in lines[i - 1])
    header = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith(("util.func", "func.func"))
                  and len(ln) > 0 and ln.rstrip().endswith("{") and i < deep
                  and sum(len(x) for x in lines[i:i + 2000]) > 100_000)
    col = lines[header].index("(")
    return {
        "next to an assert (comment it out and in)": (assert_line, 0, "// "),
        "a plain line in the function": (plain, 4, "  "),
        "inside a linalg.generic body": (body, 0, "  "),
        "the function's header line": (header, col, "_x"),
    }


def model_session(argv: list[str], uri: str, text: str, edits: int) -> dict:
    """Open a model-shaped file, edit it at each place of `model_places`, ask for a code action on
    an assert deep in the function, hover on it and go to a definition from it; peak RSS."""
    c = Client(argv)
    # VS Code's and Neovim's way: code actions are listed without edits and resolved when chosen
    c.request("initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": {
        "textDocument": {"publishDiagnostics": {"versionSupport": True}, "codeAction": {
            "dataSupport": True, "resolveSupport": {"properties": ["edit"]},
            "codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "source"]}}}}},
        "initializationOptions": {"dispatch": {"enabled": False}}})
    opened, first = open_timed(c, uri, text)
    out = {"open": opened, "findings": sum(1 for d in first["params"]["diagnostics"] if d.get("code") == "MLA001"),
           "places": {}}
    version = 1
    for name, (line, col, ins) in model_places(text).items():
        times = []
        for k in range(edits):
            version += 1
            v = version
            rng = {"start": {"line": line, "character": col},
                   "end": {"line": line, "character": col + (0 if k % 2 == 0 else len(ins))}}
            mark = c.mark()
            change = {"range": rng, "text": ins if k % 2 == 0 else ""}
            t = c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": v},
                                                     "contentChanges": [change]})
            tp, _m = c.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == uri and m["params"].get("version") == v,  # noqa: B023 - waited for here
                            timeout=600, start=mark)
            times.append(tp - t)
        out["places"][name] = times
    lines = text.split("\n")
    aline = max(i for i, ln in enumerate(lines) if ln.lstrip().startswith("cf.assert"))
    cond = lines[aline].split("%", 1)[1].split(",", 1)[0]
    cmp_line = max(i for i in range(aline) if lines[i].lstrip().startswith(f"%{cond} = arith.cmpi"))
    const_col = lines[cmp_line].rindex("%")
    doc = {"uri": uri}

    def timed(method: str, params: dict) -> tuple[float, dict]:
        t = time.monotonic()
        r = c.request(method, params, timeout=120)
        return time.monotonic() - t, r

    def code_action() -> tuple[float, dict]:
        """Ctrl+. on the assert, then the preferred quick fix chosen: list + resolve."""
        t = time.monotonic()
        listed = c.request("textDocument/codeAction", {"textDocument": doc, "range": {
            "start": {"line": aline, "character": 6}, "end": {"line": aline, "character": 6}},
            "context": {"diagnostics": [], "only": ["quickfix"]}}, timeout=120)
        chosen = next((a for a in listed.get("result") or [] if a.get("isPreferred")), None)
        if chosen is None:
            return time.monotonic() - t, {"error": "no preferred quick fix"}
        resolved = c.request("codeAction/resolve", chosen, timeout=120)
        ok = bool((resolved.get("result") or {}).get("edit"))
        return time.monotonic() - t, resolved if ok else {"error": "no edit"}

    version += 1  # a fresh version: nothing of the piece's fixes is cached yet
    c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [
        {"range": {"start": {"line": aline, "character": 0}, "end": {"line": aline, "character": 0}}, "text": ""}]})
    out["code_action"] = [code_action() for _ in range(5)]
    out["hover"] = [timed("textDocument/hover", {"textDocument": doc, "position": {"line": aline, "character": 8}})
                    for _ in range(5)]
    out["definition"] = [timed("textDocument/definition", {"textDocument": doc, "position": {
        "line": cmp_line, "character": const_col + 2}}) for _ in range(5)]
    out["peak_rss_kib"] = peak_rss_kib(c.proc.pid)
    c.close()
    return out


def print_model(path: Path, text: str, runs: int, edits: int, parse_s: float) -> None:
    uri = path.resolve().as_uri()
    res = [model_session([str(BIN / "mlir-lsp")], uri, text, edits) for _ in range(runs)]
    opens = [r["open"] for r in res]
    print(f"mlir-lsp on the model-shaped file: open -> diagnostics median {statistics.median(opens):.2f} s "
          f"({res[0]['findings']} MLA001); ratio to iree-opt {statistics.median(opens) / parse_s:.2f} "
          f"[target < 1: {'ok' if statistics.median(opens) < parse_s else 'MISSED'}]")
    for name in res[0]["places"]:
        xs = [x for r in res for x in r["places"][name]]
        target = 0.200 if "header" in name else 0.020
        print(f"  edit {name}: p50 {statistics.median(xs) * 1000:.1f} ms, p95 {p95(xs) * 1000:.1f} ms over "
              f"{len(xs)} edits [target p95 < {target * 1000:.0f} ms: {'ok' if p95(xs) < target else 'MISSED'}]")
    for key, target in (("code_action", 0.100), ("hover", 0.050), ("definition", 0.050)):
        xs = [t for r in res for t, _m in r[key]]
        ok = all("error" not in m and m.get("result") for r in res for _t, m in r[key])
        label = "code action (list + resolve)" if key == "code_action" else key
        print(f"  {label} deep in the function: p50 {statistics.median(xs) * 1000:.1f} ms, "
              f"max {max(xs) * 1000:.1f} ms{'' if ok else ' (EMPTY OR ERROR ANSWER)'} "
              f"[target < {target * 1000:.0f} ms: {'ok' if max(xs) < target and ok else 'MISSED'}]")
    peak = max(r["peak_rss_kib"] for r in res) * 1024
    print(f"  peak RSS after open and {4 * edits} edits: {peak / 2**20:.0f} MiB = {peak / len(text):.1f}x the file "
          f"[target < 4x: {'ok' if peak < 4 * len(text) else 'MISSED'}]")


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
    # The client keeps every message it got; its own full collections (60-180 ms once a few
    # hundred publishes of 500 diagnostics are kept) would be timed as the server's latency.
    import gc

    gc.disable()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--edits", type=int, default=50)
    ap.add_argument("--upstream-edits", type=int, default=4)
    ap.add_argument("--memory-edits", type=int, default=1000)
    ap.add_argument("--upstream")
    ap.add_argument("--no-upstream", action="store_true")
    ap.add_argument("--model-edits", type=int, default=40, help="edits per place in the model-shaped file")
    ap.add_argument("--only", choices=["model", "spread"], help="run one of the two shapes only")
    args = ap.parse_args()

    if args.only != "spread":
        mpath, masserts = bench_check.generated("model_shaped_20x", lambda _n: generate.generate_model_shaped(20), 20)
        mtext = mpath.read_text()
        print(f"model-shaped file: {mpath.relative_to(ROOT)}, {len(mtext) / 1e6:.1f} MB, one function "
              f"(the prompt encoder's body 20x), {masserts} asserts")
        mparse = statistics.median(
            bench_check.run_measured([str(BIN / "iree-opt"), str(mpath), "-o", os.devnull]).seconds
            for _ in range(args.runs))
        print(f"iree-opt batch parse: median {mparse:.2f} s over {args.runs} runs")
        print_model(mpath, mtext, args.runs, args.model_edits, mparse)
        if args.only == "model":
            return 0

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
              f"after {args.memory_edits} edits ({growth * 100:+.1f} %) "
              f"[target < +20 %: {'ok' if growth < 0.2 else 'MISSED'}]")

    upstream = None if args.no_upstream else find_upstream(args.upstream)
    if upstream is None:
        print("mlir-lsp-server: not found (apt-get install mlir-22-tools); side-by-side figures skipped")
        return 0
    twin = upstream_twin(path, text)
    ttext = twin.read_text()
    tline = next(i for i, ln in enumerate(ttext.split("\n"))
                 if i >= assert_line - 5000 and ln.lstrip().startswith("cf.assert"))
    turi = twin.resolve().as_uri()
    opt = None
    if os.path.exists(UPSTREAM_OPT):
        opt = bench_check.run_measured([UPSTREAM_OPT, str(twin), "-o", os.devnull])
    opt_note = "" if opt is None else f"; mlir-opt-22 batch parse {opt.seconds:.2f} s, exit {opt.code}"
    print(f"side by side on {twin.relative_to(ROOT)} (util.global parameters replaced by tensor.empty, so that "
          f"upstream parses it{opt_note})")
    mine = session([str(BIN / "mlir-lsp")], turi, ttext, tline, args.edits)
    theirs = [session([upstream], turi, ttext, tline, args.upstream_edits) for _ in range(max(1, args.runs - 1))]
    t_opens = [o["open"] for o in theirs]
    t_edits = [e for o in theirs for e in o["edits"]]
    t_med, m_med = statistics.median(t_edits), statistics.median(mine["edits"])
    print(f"  mlir-lsp:        open -> diagnostics {mine['open']:.2f} s; edit -> diagnostics median "
          f"{m_med * 1000:.1f} ms, p95 {p95(mine['edits']) * 1000:.1f} ms over {len(mine['edits'])} edits")
    sync_note = ""
    if theirs[0]["full_sync"]:
        sync_note = "; it takes whole texts (full sync), so each edit sends the 50 MB text, as an editor does"
    print(f"  mlir-lsp-server: open -> diagnostics median {statistics.median(t_opens):.2f} s; edit -> diagnostics "
          f"median {t_med:.2f} s, p95 {p95(t_edits):.2f} s over {len(t_edits)} edits "
          f"({', '.join(f'{x:.2f}' for x in t_edits)} s; {upstream}{sync_note})")
    print(f"  edit speed-up, median: {t_med / m_med:.0f}x "
          f"[target >= 100x: {'ok' if t_med / m_med >= 100 else 'MISSED'}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

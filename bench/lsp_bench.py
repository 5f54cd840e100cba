"""The server benchmarks' LSP client over stdio (bench_server.py, its workspace section in
bench_workspace.py): messages written as the editors write them, the server's process figures
(/proc: CPU time, resident memory, children), and the figures printed with their targets."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_check  # noqa: E402

MLIR_LSP = bench_check.MLIR_LSP
RAW = "\0"


class Client:
    """A minimal LSP client over a child's stdio: enough to time notifications precisely."""

    def __init__(self, argv: list[str]):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=bench_check.child_env())
        self.next_id = 0
        self.lock = threading.Condition()
        self.send_lock = threading.Lock()  # the reader thread answers the server's requests
        self.messages: list[tuple[float, dict]] = []  # (when it was parsed, the message)
        self.received: list[float] = []  # when each message's last byte was read (before its parse)
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
            received = time.perf_counter()
            msg = json.loads(body)
            if "id" in msg and "method" in msg:  # a request from the server: answer null
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            with self.lock:
                self.messages.append((time.perf_counter(), msg))
                self.received.append(received)
                self.lock.notify_all()

    def _send(self, msg: dict) -> None:
        self.send_bytes(json.dumps(msg).encode())

    def send_bytes(self, data: bytes) -> float:
        """Writes one message whose JSON is `data` (not copied); returns the time it started."""
        with self.send_lock:
            t = time.perf_counter()
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data))
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        return t

    def notify(self, method: str, params) -> float:
        return self.send_bytes(encoded(method, params))

    def request(self, method: str, params, timeout: float = 60):
        self.next_id += 1
        rid = self.next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == rid and "method" not in m, timeout)[1]

    def wait(self, pred, timeout: float = 120, start: int = 0) -> tuple[float, dict]:
        _i, t, m = self.wait_index(pred, timeout, start)
        return t, m

    def wait_index(self, pred, timeout: float = 120, start: int = 0) -> tuple[int, float, dict]:
        """The first message from `start` on that `pred` accepts: its index, when it was parsed, it."""
        deadline = time.monotonic() + timeout
        with self.lock:
            i = start
            while True:
                while i < len(self.messages):
                    t, m = self.messages[i]
                    i += 1
                    if pred(m):
                        return i - 1, t, m
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


# A Python process that reads LSP frames from stdin as a server must (header lines, then the body
# in one read) and answers each with a notification: the floor under any Python server's open.
FLOOR_READER = """
import sys
i, o = sys.stdin.buffer, sys.stdout.buffer
while True:
    n, line = 0, b"-"
    while line not in (b"\\r\\n", b""):
        line = i.readline()
        if line.lower().startswith(b"content-length:"):
            n = int(line.split(b":")[1])
    if not line:
        break
    body = i.read(n)
    reply = b'{"jsonrpc": "2.0", "method": "read", "params": {"bytes": %d}}' % len(body)
    o.write(b"Content-Length: %d\\r\\n\\r\\n" % len(reply) + reply)
    o.flush()
"""


def pipe_floor(msg: bytes) -> float:
    """Seconds from writing `msg` as one frame into a pipe to a Python reader (FLOOR_READER) to
    its answer: what moving the bytes costs, measured beside the server's open."""
    c = Client([sys.executable, "-c", FLOOR_READER])
    try:
        mark = c.mark()
        t0 = c.send_bytes(msg)
        t1, m = c.wait(lambda m: m.get("method") == "read", timeout=600, start=mark)
        if m["params"]["bytes"] != len(msg):
            raise RuntimeError(f"the floor's reader got {m['params']['bytes']} of {len(msg)} bytes")
        return t1 - t0
    finally:
        c.proc.stdin.close()
        c.proc.wait(timeout=30)


def children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            pass
    return out


def has_children(pid: int) -> bool:
    return bool(children(pid))


def settle(pid: int, timeout: float = 120) -> None:
    """Wait until the server is idle: its background real-parser child (0.5 s after the last
    edit, ~10 s on 50 MB) has come and gone."""
    time.sleep(1.0)
    deadline = time.monotonic() + timeout
    while has_children(pid) and time.monotonic() < deadline:
        time.sleep(0.2)


def cpu_s(pid: int) -> float:
    """CPU time (user + system, all threads) the process has used: a machine loaded by other work
    stretches an edit's latency, much less the CPU it costs."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def encoded(method: str, params, raw: bytes = b"") -> bytes:
    """A notification's JSON; the string RAW in `params` stands for `raw`, a JSON value encoded
    once ahead of the clock (a big text, which a full-text client would otherwise encode again)."""
    body = json.dumps({"jsonrpc": "2.0", "method": method, "params": params}).encode()
    return body.replace(b'"\\u0000"', raw, 1) if raw else body


_LAST_OPEN: list = []  # [text, uri, message]: the last didOpen encoded, for the next run's


def did_open(uri: str, text: str) -> bytes:
    """The didOpen message of `text`, encoded before any clock starts (json.dumps of a 490 MB
    text takes the client seconds that are not the server's) and kept for the next run."""
    if _LAST_OPEN and _LAST_OPEN[0] is text and _LAST_OPEN[1] == uri:
        return _LAST_OPEN[2]
    _LAST_OPEN.clear()
    msg = encoded("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "mlir", "version": 1,
                                                             "text": text}})
    _LAST_OPEN.extend((text, uri, msg))
    return msg


def open_timed(c: Client, uri: str, text: str, versioned: bool = False) -> tuple[float, dict]:
    """`initialized`, then `didOpen`: seconds to the first publish for it, and that publish
    (`versioned`: of version 1, not a workspace scan's publish of the file on disk)."""
    msg = did_open(uri, text)
    c.notify("initialized", {})
    mark = c.mark()
    t0 = c.send_bytes(msg)
    t1, first = c.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
                       and (not versioned or m["params"].get("version") == 1), timeout=600, start=mark)
    return t1 - t0, first


def mla001(publish: dict) -> int:
    return sum(1 for d in publish["params"]["diagnostics"] if d.get("code") == "MLA001")


class AssertToggle:
    """Edits that comment a `cf.assert` line out and in again, each timed from its didChange to
    the publish of that version, parsed (`toggle`'s value); `received` keeps the times to the
    publish's last byte, before the client's `json.loads` of it (of a 428 KB publish: 3-8 ms of
    this client's own time). A full-sync server (upstream) gets whole texts, encoded ahead. A
    publish's diagnostics are let go once matched, as an editor drops the ones a publish replaces
    (the client would otherwise hold hundreds of 680-diagnostic lists, with its collector off)."""

    def __init__(self, c: Client, uri: str, line: int, full_text: str | None = None):
        self.c, self.uri, self.line, self.version, self.commented = c, uri, line, 1, False
        self.received: list[float] = []
        self.texts: tuple[bytes, bytes] | None = None
        if full_text is not None:
            at = sum(len(ln) + 1 for ln in full_text.split("\n", line)[:line])
            self.texts = (json.dumps(full_text).encode(), json.dumps(full_text[:at] + "// " + full_text[at:]).encode())

    def toggle(self) -> float:
        self.version += 1
        v, comment = self.version, not self.commented
        rng = {"start": {"line": self.line, "character": 0},
               "end": {"line": self.line, "character": 0 if comment else 3}}
        params = {"textDocument": {"uri": self.uri, "version": v},
                  "contentChanges": [{"range": rng, "text": "// " if comment else ""}]}
        if self.texts is not None:
            params["contentChanges"] = [{"text": RAW}]
        msg = encoded("textDocument/didChange", params, self.texts[comment] if self.texts else b"")
        mark = self.c.mark()
        t = self.c.send_bytes(msg)
        self.commented = comment
        # Upstream publishes without a version field when the client gives none back: match on
        # the first publish after the change for it.
        i, tp, m = self.c.wait_index(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == self.uri and m["params"].get("version", v) == v,
                            timeout=600, start=mark)
        with self.c.lock:
            self.received.append(self.c.received[i] - t)
            self.c.messages[i] = (tp, {"method": m["method"], "params": {"uri": self.uri, "version": v}})
        return tp - t


def peak_rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:  # gone meanwhile
        pass
    return 0


def children_peak_kib(pid: int) -> int:
    """The largest peak RSS (VmHWM) among the process's children now alive."""
    return max((peak_rss_kib(k) for k in children(pid)), default=0)


def p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def print_open(who: str, opens: list[float], parse_s: float, target: float, note: str = "") -> None:
    m = statistics.median(opens)
    print(f"{who}: open -> diagnostics median {m:.2f} s (runs: {', '.join(f'{x:.2f}' for x in opens)}){note}; "
          f"ratio to iree-opt {m / parse_s:.2f} [target < {target:g}: {verdict(m < target * parse_s)}]")


def print_edits(who: str, xs: list[float], what: str = "edit -> diagnostics", cpu: list[float] | None = None) -> None:
    spent = f"; server CPU {statistics.median(cpu) * 1000:.1f} ms an edit" if cpu else ""
    print(f"{who}: {what} median {statistics.median(xs) * 1000:.1f} ms, p95 {p95(xs) * 1000:.1f} ms, "
          f"max {max(xs) * 1000:.1f} ms over {len(xs)} edits{spent} [target p95 < 20 ms: {verdict(p95(xs) < 0.020)}]")


# V8's JSON.parse of one message, timed RUNS times in a fresh node: what VS Code's language client
# (vscode-languageclient, in the extension host) does with each message it reads.
V8_PARSE = """
const body = require("fs").readFileSync(process.argv[1], "utf8");
const xs = [];
for (let i = 0; i < Number(process.argv[2]); i++) {
  const t = process.hrtime.bigint(); JSON.parse(body); xs.push(Number(process.hrtime.bigint() - t) / 1e9);
}
console.log(JSON.stringify(xs));
"""


def v8_parse_s(message: dict, runs: int = 200) -> list[float] | None:
    """Seconds of each of `runs` V8 JSON.parse calls of `message` as the server sends it (compact
    JSON), the first 20 (the JIT's warm-up) left out; None when node is not on PATH."""
    node = shutil.which("node")
    if node is None:
        return None
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        f.write(json.dumps(message, separators=(",", ":")).encode())
        f.flush()
        out = subprocess.run([node, "-e", V8_PARSE, f.name, str(runs + 20)], capture_output=True, text=True,
                             timeout=120, check=True).stdout
    return json.loads(out)[20:]


def print_edits_8ms(prefix: str, edits: list[float], received: list[float], publish: dict, load: str,
                    cpu_ms: float | None = None) -> None:
    """The many-small-functions edit lines (issue 37: p95 <= 8 ms). The verdict is the server's
    part (didChange sent -> the publish's last byte read) plus an editor's parse of the publish
    (V8's JSON.parse), their two p95s added (the p95 of the sum when both rise together, a
    pessimistic estimate when they do not). This client's CPython
    `json.loads` of the same bytes is printed beside it and not judged: it takes 3-9 ms on a
    2-core VM with the server idle (the same parse in a loop moves between 3 and 5.4 ms at p50
    from one run of it to the next), so it would time the bench client, not the server. Without
    node the verdict falls back to the figure with the CPython parse."""
    spent = f"; server CPU {cpu_ms:.1f} ms an edit" if cpu_ms is not None else ""
    server_p95 = p95(received)
    print(f"{prefix}later edits next to an assert: the server's part (didChange -> the publish's last byte) "
          f"p50 {statistics.median(received) * 1e3:.1f} ms, p95 {server_p95 * 1e3:.1f} ms over {len(received)} "
          f"edits{spent} ({load})")
    size = len(json.dumps(publish, separators=(",", ":"))) / 1e3
    print(f"{prefix}  with this client's CPython json.loads of the {size:.0f} KB publish: p50 "
          f"{statistics.median(edits) * 1e3:.1f} ms, p95 {p95(edits) * 1e3:.1f} ms (not judged: the bench "
          f"client's own parse)")
    v8 = v8_parse_s(publish)
    if v8 is None:
        total = p95(edits)
        print(f"{prefix}  (node not found: judged with the CPython parse) p95 {total * 1e3:.1f} ms "
              f"[target p95 <= 8 ms: {verdict(total <= 0.008)}]")
    else:
        total = server_p95 + p95(v8)
        print(f"{prefix}  V8's JSON.parse of that publish (VS Code's client): p50 {statistics.median(v8) * 1e3:.1f} "
              f"ms, p95 {p95(v8) * 1e3:.1f} ms; the server's p95 + V8's p95 = {total * 1e3:.1f} ms "
              f"[target p95 <= 8 ms: {verdict(total <= 0.008)}]")

"""Our server's navigation against LLVM's mlir-lsp-server on the same text (issue 39).

Both servers are started once and talked to over stdio: each piece of `../shared/navigation` is
opened, every `%value`, `^label` and `@symbol` in it (outside comments and strings) is asked for
its definition, references and hover, the piece is asked for its document symbols, and it is
closed. `compare` scores our answers against upstream's per request kind and per position kind.

Run it alone for the figures: `python tests/navigation_diff.py [PIECE...]`.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parent
NAVIGATION = TESTS.parent.parent / "shared" / "navigation"
UPSTREAM = "mlir-lsp-server-22"
OURS = [sys.executable, "-m", "mlir_lsp_asserts", "--stdio"]
SLOW = 1.0  # a request slower than this many seconds is counted

# A position is a name outside comments and strings: `%v`, `%v#1`, `^bb1`, `@f` (each part of
# `@a::@b` its own).
_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|([%^@])([\w$.\-]+)')


@dataclass(frozen=True)
class Position:
    piece: str
    line: int
    col: int  # of the sigil (bytes = characters: the pieces are ASCII)
    sigil: str
    name: str
    line_text: str


def positions(piece: str, text: str) -> list[Position]:
    out = []
    for n, line in enumerate(text.split("\n")):
        for m in _TOKEN.finditer(line):
            if m.group(1):
                out.append(Position(piece, n, m.start(), m.group(1), m.group(2), line))
    return out


class Client:
    """A language server over stdio, one request at a time."""

    def __init__(self, cmd: list[str], cwd: str | None = None):
        env = dict(os.environ)
        env.pop("CI", None)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, cwd=cwd, env=env)
        self.next_id = 0
        self.buf = b""
        self.request("initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": {
            "textDocument": {"hover": {"contentFormat": ["markdown", "plaintext"]},
                             "documentSymbol": {"hierarchicalDocumentSymbolSupport": True}}}})
        self.notify("initialized", {})

    def _send(self, msg: dict) -> None:
        body = json.dumps(msg).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def _read(self, timeout: float) -> dict:
        out = self.proc.stdout
        assert out is not None
        end = time.monotonic() + timeout
        while True:
            head, sep, rest = self.buf.partition(b"\r\n\r\n")
            if sep:
                size = int(re.search(rb"Content-Length: *(\d+)", head, re.I).group(1))  # type: ignore[union-attr]
                if len(rest) >= size:
                    self.buf = rest[size:]
                    return json.loads(rest[:size])
            left = end - time.monotonic()
            if left <= 0 or not select.select([out], [], [], left)[0]:
                raise TimeoutError("no answer")
            chunk = os.read(out.fileno(), 1 << 16)
            if not chunk:
                raise EOFError("the server ended")
            self.buf += chunk

    def request(self, method: str, params, timeout: float = 60.0):
        self.next_id += 1
        rid = self.next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            msg = self._read(timeout)
            if "method" in msg and "id" in msg:  # a request of the server's: configuration, ...
                result = [None] * len(msg["params"].get("items", [])) if msg["method"] == \
                    "workspace/configuration" else None
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            elif msg.get("id") == rid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result")

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
            self.proc.wait(10)
        except Exception:
            self.proc.kill()
            self.proc.wait()


class Crash(Exception):
    """A server ended on a request (kind, position)."""


@dataclass
class Answers:
    """One server's answers on one piece: per position (line, col), and its symbols."""

    definition: dict = field(default_factory=dict)
    references: dict = field(default_factory=dict)
    hover: dict = field(default_factory=dict)
    symbols: list = field(default_factory=list)
    slow: list = field(default_factory=list)  # (request, position, seconds)
    errors: list = field(default_factory=list)


def _start(loc) -> tuple[int, int] | None:
    if isinstance(loc, list):
        loc = loc[0] if loc else None
    if not loc:
        return None
    s = (loc.get("targetSelectionRange") or loc.get("range"))["start"]
    return s["line"], s["character"]


def _symbols(items, depth: int = 0) -> list[tuple[int, str, int]]:
    """(depth, name, line of its selection) of document symbols, nested ones after their parent."""
    out = []
    for s in items or []:
        out.append((depth, s["name"], s.get("selectionRange", s.get("range", {}))["start"]["line"]
                    if "selectionRange" in s else s["location"]["range"]["start"]["line"]))
        out.extend(_symbols(s.get("children"), depth + 1))
    return out


def ask(client: Client, piece: Path, text: str, pos: list[Position]) -> Answers:
    uri = piece.resolve().as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "mlir", "version": 1, "text": text}})
    a = Answers()
    doc = {"uri": uri}

    def timed(kind, method, params, p):
        t = time.monotonic()
        try:
            r = client.request(method, params)
        except EOFError:
            raise Crash(kind, p) from None
        except (RuntimeError, TimeoutError) as e:
            a.errors.append((kind, p, str(e)[:200]))
            r = None
        dt = time.monotonic() - t
        if dt > SLOW:
            a.slow.append((kind, p, round(dt, 2)))
        return r

    a.symbols = _symbols(timed("documentSymbol", "textDocument/documentSymbol", {"textDocument": doc}, None))
    for p in pos:
        at = {"textDocument": doc, "position": {"line": p.line, "character": p.col + 1}}
        key = (p.line, p.col)
        a.definition[key] = _start(timed("definition", "textDocument/definition", at, p))
        refs = timed("references", "textDocument/references", {**at, "context": {"includeDeclaration": True}}, p)
        a.references[key] = frozenset((r["range"]["start"]["line"], r["range"]["start"]["character"])
                                      for r in refs or [])
        h = timed("hover", "textDocument/hover", at, p)
        a.hover[key] = (h or {}).get("contents") and json.dumps(h["contents"])[:2000]
    client.notify("textDocument/didClose", {"textDocument": doc})
    return a


def kind_of(p: Position, upstream_def: tuple[int, int] | None) -> str:
    """What the name at `p` is, for the figures: from the text and where upstream defines it."""
    if p.sigil == "@":
        return "symbol definition" if upstream_def == (p.line, p.col) or (
            upstream_def and upstream_def[0] == p.line and upstream_def[1] < p.col
            and "@" not in p.line_text[:p.col]) else "symbol use"
    before = p.line_text[:p.col]
    if p.sigil == "^":
        return "label" if before.strip() == "" else "label use"
    if upstream_def != (p.line, p.col):
        return "value use"
    if before.lstrip().startswith("^"):
        return "block argument"
    if re.search(r"@[\w$.\-\"]+\s*\(", before):
        return "function argument"
    if re.fullmatch(r"\s*(%[\w$.\-]+(:\d+)?\s*,\s*)*", before) and re.match(
            r"%[\w$.\-]+(:\d+)?\s*(,|=|$)", p.line_text[p.col:]):
        return "result"
    return "header definition"


@dataclass
class Score:
    agree: Counter = field(default_factory=Counter)
    total: Counter = field(default_factory=Counter)
    misses: list = field(default_factory=list)

    def add(self, kind: str, ok: bool, why=None) -> None:
        self.total[kind] += 1
        self.agree[kind] += ok
        if not ok:
            self.misses.append((kind, why))

    def ratio(self) -> float:
        t = sum(self.total.values())
        return sum(self.agree.values()) / t if t else 1.0


@dataclass
class Report:
    definition: Score = field(default_factory=Score)
    references: Score = field(default_factory=Score)
    hover: Score = field(default_factory=Score)
    symbols_equal: int = 0
    symbols_differ: list = field(default_factory=list)
    slow: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    # where upstream is judged wrong (upstream_wrong.tsv), and what was seen there: (why, differs)
    wrong: dict = field(default_factory=lambda: judged_wrong())
    judged: dict = field(default_factory=dict)
    crashes: list = field(default_factory=list)  # (server, piece, request, position)
    pieces: int = 0

    def table(self) -> str:
        kinds = sorted(set(self.definition.total) | set(self.hover.total))
        rows = [f"{'position kind':20} {'n':>5} {'definition':>11} {'references':>11} {'hover':>11}"]

        def cell(s: Score, k: str) -> str:
            return f"{100 * s.agree[k] / s.total[k]:10.1f}%" if s.total[k] else f"{'-':>11}"
        for k in kinds:
            rows.append(f"{k:20} {self.definition.total[k]:5} {cell(self.definition, k)} "
                        f"{cell(self.references, k)} {cell(self.hover, k)}")
        rows.append(f"{'all':20} {sum(self.definition.total.values()):5} {100 * self.definition.ratio():10.1f}% "
                    f"{100 * self.references.ratio():10.1f}% {100 * self.hover.ratio():10.1f}%")
        rows.append(f"document symbols equal on {self.symbols_equal} of {self.pieces} pieces; "
                    f"{len(self.slow)} requests over {SLOW} s; {len(self.errors)} errors; "
                    f"crashes: {[(w, n, k, p and (p.line + 1, p.col + 1)) for w, n, k, p in self.crashes]}; "
                    f"judged upstream wrong: {len(self.judged)} of {len(self.wrong)} listed")
        return "\n".join(rows)


UPSTREAM_WRONG = TESTS / "data" / "navigation" / "upstream_wrong.tsv"


def judged_wrong() -> dict[tuple[str, int, int, str], str]:
    """The positions where we judge upstream wrong: (file, line, column, request) -> why (lines
    and columns 1-based, as an editor shows them)."""
    out = {}
    for row in UPSTREAM_WRONG.read_text().splitlines()[1:]:
        if row.strip() and not row.startswith("#"):
            name, line, col, request, why = row.split("\t")
            out[(name, int(line) - 1, int(col) - 1, request)] = why
    return out


def compare(name: str, text: str, pos: list[Position], ours: Answers, theirs: Answers, report: Report) -> None:
    report.pieces += 1
    if ours.symbols == theirs.symbols:
        report.symbols_equal += 1
    else:
        report.symbols_differ.append((name, ours.symbols, theirs.symbols))
    report.slow.extend((name, *s) for s in ours.slow)
    report.errors.extend((name, *e) for e in ours.errors)

    def judge(request: str, p: Position, same: bool) -> bool:
        why = report.wrong.get((name, p.line, p.col, request))
        if why is None:
            return same
        report.judged[(name, p.line + 1, p.col + 1, request)] = (why, not same)
        return True

    for p in pos:
        key = (p.line, p.col)
        kind = kind_of(p, theirs.definition[key])
        td, od = theirs.definition[key], ours.definition[key]
        same = (td is None) == (od is None) and (td is None or td[0] == od[0])
        report.definition.add(kind, judge("definition", p, same), (name, p, od, td))
        tr, orf = theirs.references[key], ours.references[key]
        report.references.add(kind, judge("references", p, tr == orf), (name, p, sorted(orf), sorted(tr)))
        if theirs.hover[key]:
            report.hover.add(kind, judge("hover", p, bool(ours.hover[key])), (name, p))


def run(pieces: list[Path], ours_cmd=None, cwd: str | None = None) -> Report:
    report = Report()
    clients = {"upstream": Client([UPSTREAM]), "ours": Client(ours_cmd or OURS, cwd=cwd)}

    def answers(who: str, piece: Path, text: str, pos: list[Position]) -> Answers:
        while True:
            try:
                return ask(clients[who], piece, text, pos)
            except Crash as e:  # started again, the position left out of the comparison
                report.crashes.append((who, piece.name, *e.args))
                clients[who].close()
                clients[who] = Client([UPSTREAM] if who == "upstream" else ours_cmd or OURS, cwd=cwd)
                if e.args[1] is None:
                    raise
                pos.remove(e.args[1])
    try:
        for piece in pieces:
            text = piece.read_text()
            pos = positions(piece.name, text)
            theirs = answers("upstream", piece, text, pos)
            mine = answers("ours", piece, text, pos)
            compare(piece.name, text, pos, mine, theirs, report)
    finally:
        for c in clients.values():
            c.close()
    return report


def all_pieces() -> list[Path]:
    return sorted((NAVIGATION / "pieces").glob("*.mlir"))


if __name__ == "__main__":
    args = sys.argv[1:]
    show = "--misses" in args
    names = [a for a in args if not a.startswith("--")]
    chosen = [Path(n) if "/" in n else NAVIGATION / "pieces" / n for n in names] if names else all_pieces()
    t0 = time.monotonic()
    rep = run(chosen)
    print(rep.table())
    print(f"{time.monotonic() - t0:.1f} s")
    if show:
        for title, score in (("definition", rep.definition), ("references", rep.references), ("hover", rep.hover)):
            print(f"== {title}: {len(score.misses)} misses")
            by = defaultdict(list)
            for kind, why in score.misses:
                by[kind].append(why)
            for kind, whys in by.items():
                print(f"-- {kind}: {len(whys)}")
                for w in whys[:40]:
                    print("  ", w[0], w[1].line + 1, w[1].col, w[1].sigil + w[1].name, *w[2:],
                          "|", w[1].line_text.strip()[:100])
        for name, o, t in rep.symbols_differ[:30]:
            print("symbols", name, "\n  ours", o, "\n  them", t)

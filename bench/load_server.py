"""The real server under load: documents open, edits at a fixed rate, figures printed.

    .venv/bin/python bench/load_server.py [--seconds 60] [--rate 100] [--docs 10] [--big-mb 50]

Ten documents (the repro, and one generated module of --big-mb MB, bench/generate.py), edits at
--rate per second round-robin over them: each edit inserts a copy of an assert line before
itself, the next removes it, so the findings of every version are known in advance (base + 1
after an insertion, base after a removal). Checked:
- no stale diagnostics: every publish carries a version, versions only grow per document, and the
  findings it carries are those of that version; after the last edit, the last publish of every
  document is of its last version;
- no unbounded queue: the server catches up (all last versions published) within --drain s;
- memory bounded: the server's RSS (/proc) at the end is within --rss-growth-mb of after opening;
- latency: from an edit sent to the first publish of its version (or a later one), p50/p95/max.
`run()` is what tests/test_reliability_load.py (5 s) and bench/soak.py (60 s) call.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPRO = ROOT.parent / "shared" / "fixtures" / "repro" / "hoisted_gather.mlir"
ASSERT_CODES = ("MLA001", "MLA002", "MLA003")


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class Doc:
    def __init__(self, uri: str, text: str):
        self.uri, self.text = uri, text
        lines = text.split("\n")
        # the last assert line of the document: its copy goes right before it
        self.line = max(i for i, ln in enumerate(lines) if ln.lstrip().startswith("cf.assert %"))
        self.copy = lines[self.line] + "\n"
        self.version = 1
        self.base: int | None = None  # assert findings of the text as opened
        self.sent: dict[int, float] = {}  # version -> time sent
        self.published: list[tuple[int, int, float]] = []  # (version, assert findings, time)

    def expected(self, version: int) -> int:
        return self.base + (1 if version % 2 == 0 else 0)


async def _run(seconds: float, rate: float, ndocs: int, big_mb: float, drain: float, say) -> dict:
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient
    from pytest_lsp import client_capabilities

    tmp = Path(tempfile.mkdtemp(prefix="mlir-lsp-load-"))
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp / "cache"), TMPDIR=tempfile.gettempdir())
    env.pop("CI", None)
    lsp = LanguageClient("mlir-lsp-load", "1")
    docs: dict[str, Doc] = {}
    problems: list[str] = []

    @lsp.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _published(params: types.PublishDiagnosticsParams):
        d = docs.get(params.uri)
        if d is None:
            return
        n = sum(1 for x in params.diagnostics if x.source == "mlir-lsp" and x.code in ASSERT_CODES)
        d.published.append((params.version, n, time.monotonic()))

    await lsp.start_io(sys.executable, "-m", "mlir_lsp_asserts", "--stdio", env=env)
    pid = lsp._server.pid
    settings = {"mlirLsp": {"dispatch": {"enabled": False}, "parserDiagnostics": False}}

    @lsp.feature(types.WORKSPACE_CONFIGURATION)
    def _configuration(params):
        return [settings["mlirLsp"] for _ in params.items]

    await lsp.initialize_async(types.InitializeParams(capabilities=client_capabilities("visual-studio-code"),
                                                      initialization_options=settings))
    lsp.initialized(types.InitializedParams())
    rss0 = rss_mb(pid)
    open_s = await _open_all(lsp, docs, tmp, ndocs, big_mb, problems)
    rss_open = rss_mb(pid)
    say(f"   opened {len(docs)} documents ({big_mb:g} MB + {len(docs) - 1} small) in {open_s:.1f} s; "
        f"server RSS {rss0:.0f} MB -> {rss_open:.0f} MB")

    sent, achieved, rss_peak, t_end = await _edit_at_rate(lsp, docs, pid, seconds, rate, rss_open)
    drain_s, rss_peak = await _drain(docs, pid, drain, t_end, rss_peak, problems)
    await asyncio.sleep(0.5)  # anything published late (stale) would show now
    rss_end = rss_mb(pid)
    latencies, publishes, stale, wrong = _judged_publishes(docs, problems)
    try:
        await asyncio.wait_for(lsp.shutdown_async(None), 30)
        lsp.exit(None)
    except Exception:  # noqa: BLE001
        pass
    await lsp.stop()
    lat = sorted(latencies)

    def pct(p):
        return lat[min(len(lat) - 1, int(p * len(lat)))] * 1000 if lat else float("nan")

    fig = {"edits": sent, "rate": achieved, "publishes": publishes, "stale": stale, "wrong": wrong,
           "drain_s": drain_s, "rss_open": rss_open, "rss_peak": rss_peak, "rss_end": rss_end,
           "p50_ms": pct(0.5), "p95_ms": pct(0.95), "max_ms": lat[-1] * 1000 if lat else float("nan"),
           "mean_ms": statistics.mean(lat) * 1000 if lat else float("nan"), "problems": problems}
    say(f"   edits: {sent} in {seconds:g} s ({achieved:.0f}/s); publishes: {publishes}; stale: {stale}; "
        f"wrong findings for their version: {wrong}; caught up {drain_s:.2f} s after the last edit")
    say(f"   latency edit -> publish: p50 {fig['p50_ms']:.0f} ms, p95 {fig['p95_ms']:.0f} ms, "
        f"max {fig['max_ms']:.0f} ms (mean {fig['mean_ms']:.0f} ms)")
    say(f"   server RSS: {rss_open:.0f} MB after opening, peak {rss_peak:.0f} MB, {rss_end:.0f} MB at the end")
    for p in problems:
        say(f"   PROBLEM: {p}")
    return fig


async def _open_all(lsp, docs: dict[str, Doc], tmp: Path, ndocs: int, big_mb: float, problems: list[str]) -> float:
    """Open the documents (a big one first when `big_mb`) and wait for their first diagnostics;
    the seconds it took."""
    from lsprotocol import types

    sys.path.insert(0, str(ROOT / "bench"))
    from generate import generate

    texts = [REPRO.read_text()] * (ndocs - 1)
    if big_mb > 0:
        big, _n = generate(int(big_mb * 1_000_000))
        texts.insert(0, big)
    else:
        texts.append(REPRO.read_text())
    t_open = time.monotonic()
    for k, text in enumerate(texts):
        uri = (tmp / f"doc{k}.mlir").as_uri()
        docs[uri] = Doc(uri, text)
        lsp.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="mlir", version=1, text=text)))
    while any(not d.published for d in docs.values()):
        if time.monotonic() - t_open > 300:
            problems.append("documents not published within 300 s of opening")
            break
        await asyncio.sleep(0.05)
    open_s = time.monotonic() - t_open
    for d in docs.values():
        d.base = d.published[0][1] if d.published else 0
        d.published.clear()
        d.text = ""  # not needed any more (the big one is 50 MB)
    return open_s


async def _edit_at_rate(lsp, docs: dict[str, Doc], pid: int, seconds: float, rate: float,
                        rss_peak: float) -> tuple[int, float, float, float]:
    """Edits at `rate` per second for `seconds`, round the documents: (edits sent, the rate
    achieved, the server's peak RSS sampled meanwhile, when the last was sent)."""
    from lsprotocol import types

    order = list(docs.values())
    interval = 1.0 / rate
    t0 = time.monotonic()
    sent = 0
    next_sample = t0
    while time.monotonic() - t0 < seconds:
        d = order[sent % len(order)]
        v = d.version + 1
        pos = types.Position(d.line, 0)
        if v % 2 == 0:
            change = types.TextDocumentContentChangePartial(range=types.Range(pos, pos), text=d.copy)
        else:
            change = types.TextDocumentContentChangePartial(
                range=types.Range(pos, types.Position(d.line + 1, 0)), text="")
        d.version = v
        d.sent[v] = time.monotonic()
        lsp.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=d.uri, version=v), [change]))
        sent += 1
        now = time.monotonic()
        if now >= next_sample:
            rss_peak = max(rss_peak, rss_mb(pid))
            next_sample = now + 0.5
        delay = t0 + sent * interval - time.monotonic()
        await asyncio.sleep(max(0.0, delay))
    t_end = time.monotonic()
    achieved = sent / (t_end - t0)
    return sent, achieved, rss_peak, t_end


async def _drain(docs: dict[str, Doc], pid: int, drain: float, t_end: float, rss_peak: float,
                 problems: list[str]) -> tuple[float, float]:
    """Wait for every document's last version to be published: (seconds it took, the peak RSS)."""
    # drain: every document's last version published
    while any(not d.published or d.published[-1][0] != d.version for d in docs.values()):
        rss_peak = max(rss_peak, rss_mb(pid))
        if time.monotonic() - t_end > drain:
            late = [(Path(d.uri).name, d.version, d.published[-1][0] if d.published else None)
                    for d in docs.values() if not d.published or d.published[-1][0] != d.version]
            problems.append(f"not caught up {drain:g} s after the last edit "
                            f"(doc, last version, last published): {late}")
            break
        await asyncio.sleep(0.02)
    return time.monotonic() - t_end, rss_peak


def _judged_publishes(docs: dict[str, Doc], problems: list[str]) -> tuple[list[float], int, int, int]:
    """(the latency of each version sent, publishes, stale ones, ones with wrong findings for
    their version); what is wrong added to `problems`."""
    latencies, publishes, stale, wrong = [], 0, 0, 0
    for d in docs.values():
        last = 0
        for version, n, _at in d.published:
            publishes += 1
            if version is None or version < last:
                stale += 1
                if stale <= 3:
                    problems.append(f"{Path(d.uri).name}: publish of version {version} after version {last}")
                continue
            if n != d.expected(version):
                wrong += 1
                if wrong <= 3:
                    problems.append(f"{Path(d.uri).name}: version {version} published with {n} assert findings, "
                                    f"its text has {d.expected(version)}")
            last = version
        if d.published and d.published[-1][0] != d.version:
            problems.append(f"{Path(d.uri).name}: last publish is of version {d.published[-1][0]}, "
                            f"the document is at {d.version}")
        # latency of each version sent: first publish of it or a later version
        pubs = [(v, at) for v, _n, at in d.published if v is not None]
        j = 0
        for v in sorted(d.sent):
            while j < len(pubs) and pubs[j][0] < v:
                j += 1
            if j < len(pubs):
                latencies.append(pubs[j][1] - d.sent[v])
    return latencies, publishes, stale, wrong


def run(seconds: float = 60, say=print, rate: float = 100, docs: int = 10, big_mb: float = 50,
        drain: float = 30, rss_growth_mb: float = 400) -> list[str]:
    """The load section of `make soak`: returns the names of failed checks (empty when fine)."""
    say(f"== server under load: {docs} documents (one of {big_mb:g} MB), {rate:g} edits/s for {seconds:g} s")
    fig = asyncio.run(_run(seconds, rate, docs, big_mb, drain, say))
    failed = []
    if fig["problems"]:
        failed.append("load: stale or late diagnostics")
    if fig["rss_end"] - fig["rss_open"] > rss_growth_mb:
        say(f"   PROBLEM: RSS grew by {fig['rss_end'] - fig['rss_open']:.0f} MB (> {rss_growth_mb:g} MB)")
        failed.append("load: memory")
    return failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--rate", type=float, default=100)
    ap.add_argument("--docs", type=int, default=10)
    ap.add_argument("--big-mb", type=float, default=50)
    ap.add_argument("--drain", type=float, default=30)
    a = ap.parse_args()
    return 1 if run(a.seconds, print, a.rate, a.docs, a.big_mb, a.drain) else 0


if __name__ == "__main__":
    sys.exit(main())

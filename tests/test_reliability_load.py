"""The real server under load, sized for CI: 10 documents (one generated module of 5 MB), 100
edits per second for 5 s (bench/load_server.py; `make soak` runs a minute with 50 MB). No stale
diagnostics (each publish's findings are its version's, the last publish is the last version),
caught up at once after the last edit, memory bounded, latency figures printed (`-s`)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import load_server  # noqa: E402


def test_ten_documents_at_100_edits_per_second(capsys):
    lines = []
    fig = asyncio.run(load_server._run(seconds=5, rate=100, ndocs=10, big_mb=5, drain=15, say=lines.append))
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    assert fig["problems"] == [], fig["problems"]
    assert fig["stale"] == 0 and fig["wrong"] == 0
    assert fig["edits"] >= 400 and fig["publishes"] >= fig["edits"] // 2  # the server keeps up
    assert fig["drain_s"] < 5
    assert fig["rss_end"] - fig["rss_open"] < 200
    assert fig["p95_ms"] < 1000


@pytest.mark.slow
def test_a_fifty_megabyte_document_among_them():
    assert load_server.run(seconds=10, say=print, big_mb=50, drain=30) == []

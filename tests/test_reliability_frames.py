"""No frame ends the server: bodies that are not UTF-8, not JSON, not an object or not a message,
random bytes and mutated real messages, sent over a real stdio pipe between real requests. Each
real request is answered, each bad request with a readable id gets a JSON-RPC error, and the
server leaves only on `exit`. A text with bytes that are not UTF-8 is read with replacement
characters, and the document says so at the first one (MLS001)."""

from __future__ import annotations

import framefuzz


def test_bad_frames_between_real_requests_end_nothing(tmp_path):
    fig = framefuzz.session(tmp_path, frames=300, seed=11)
    assert fig.real_requests == 20 and fig.answered == fig.real_requests
    # params of the wrong type, a method that is not a string, another JSON-RPC version, no version
    assert fig.junk_errors == {"junk-0": -32602, "junk-1": -32602, "junk-2": -32602, "junk-3": -32600,
                               "junk-4": -32600, "junk-5": -32600, "junk-6": -32601}
    assert fig.alive_before_exit and fig.exit_status == 0


def test_text_with_bytes_that_are_not_utf8_is_read_and_said(tmp_path):
    fig = framefuzz.session(tmp_path, frames=2, seed=1, every=2)
    assert fig.answered == 1
    mls = [d for d in fig.latin1_diagnostics if d.get("code") == "MLS001"]
    assert len(mls) == 1, fig.latin1_diagnostics
    # `// caf\xe9`: the byte is character 6 of line 0, read as U+FFFD
    assert mls[0]["range"]["start"] == {"line": 0, "character": 6}
    assert "not UTF-8" in mls[0]["message"]
    assert fig.exit_status == 0

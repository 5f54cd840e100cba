"""The stdio stream's frames: header lines, then a body of `Content-Length` bytes.

Headers are read as the LSP spec and HTTP say: names in any case, optional blanks around the
value, a line ending in `\\r\\n` or a bare `\\n`; a `Content-Type` or any other header is ignored.
No header ends the server, and no bad one makes it deaf:

- a line that is not a header (junk, a body sent without its headers, a `Content-Length` that is
  no number) is logged and skipped, and the stream is found again at the next `Content-Length`
  line, also when it ends a line of junk (a body without a line end runs into the next header);
- a line longer than HEADER_LINE_BYTES is junk, read in pieces and dropped (only its end is
  kept, where a `Content-Length` may stand);
- a length above MAX_BODY_BYTES is refused with a logged error and its body read in chunks and
  dropped: never one allocation of a length the client names (`Content-Length: 99999999999999`
  ended the server with MemoryError).

MAX_BODY_BYTES is 2 GiB: four times the largest message the server is known to take (a 490 MB
export with its weights inline, opened whole by Neovim); a text that size is held two or three
times over by the server (the text, its pieces, a compile's copy), more memory than machines that
edit such files have; and VS Code's JSON cannot even build a message of 1 GiB (V8's longest string).
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import stat
from collections.abc import Callable
from typing import BinaryIO

log = logging.getLogger(__name__)
# A pipe on stdin gets this much kernel buffer (Linux allows up to /proc/sys/fs/pipe-max-size,
# 1 MiB by default, without privileges) instead of 64 KiB: see `widen_pipe`.
PIPE_BYTES = 1 << 20
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)

MAX_BODY_BYTES = 2 << 30
# A Content-Length of more digits is read as no number at all (a header line may be 64 KiB,
# and `int` refuses a string of more than 4,300 digits with a ValueError).
LENGTH_DIGITS = 18
HEADER_LINE_BYTES = 64 * 1024
# Bodies up to this size are read with one `read(n)` straight into their bytes; larger ones in
# chunks of CHUNK_BYTES (`read_body`), so a length that lies never allocates more than has arrived.
DIRECT_BYTES = 64 << 20
CHUNK_BYTES = 1 << 20
# `name: value` (HTTP's token characters in the name); the line end is removed first.
HEADER = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]*:[ \t]*(.*?)[ \t]*")
# A Content-Length header at the end of a line of junk: where the stream is found again.
LENGTH_AT_END = re.compile(rb"content-length[ \t]*:[ \t]*(\d+)[ \t]*\Z", re.I)
# What is kept of a line too long to be a header: enough for a Content-Length line.
KEPT_TAIL = 256
# The header of every message this server writes (the early start's and pygls's alike).
MESSAGE_HEADER = "Content-Length: {}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"


def write_all(stream: BinaryIO, data: bytes) -> None:
    """Write all of `data` to `stream`, then flush it. Under `python -u` or PYTHONUNBUFFERED
    (CI sets it) `sys.stdout.buffer` is the raw file, whose `write` of a large message to a pipe
    returns short when a signal arrives after part of it went out: the rest was lost, and the
    client read the next message from inside this one ("Invalid control character")."""
    view = memoryview(data)
    while view:
        n = stream.write(view)
        if n is None:  # a non-blocking stream that took nothing: wait until it can
            import select

            select.select([], [stream], [])
            continue
        view = view[n:]
    stream.flush()


def message_frame(body: str) -> bytes:
    """A message's bytes on the wire: the header (the body's length in bytes), then the body in UTF-8."""
    data = body.encode("utf-8")
    return MESSAGE_HEADER.format(len(data)).encode("ascii") + data


class FrameReader:
    """Reads one frame at a time from a binary stream (`frame`), in a thread of its own."""

    def __init__(self, stream: BinaryIO, on_length: Callable[[], None] = lambda: None):
        self.stream = stream
        self.on_length = on_length  # called when a frame's length is known (its body is coming)

    def frame(self) -> bytes | bytearray | None:
        """The next frame's body; None at the end of the stream."""
        length: int | None = None
        while True:
            line, skipped = self._line()
            if not line and not skipped:
                return None
            line = line.rstrip(b"\r\n")
            if not line and not skipped:
                if length is None:
                    continue  # a blank line where no header came: nothing to read
                if length > MAX_BODY_BYTES:
                    log.error("refused a message of %d bytes (above the %d MiB bound): its body is discarded",
                              length, MAX_BODY_BYTES >> 20)
                    if not self._discard(length):
                        return None
                    length = None
                    continue
                return self.read_body(length)
            length = self._header(line, skipped, length)

    def _header(self, line: bytes, skipped: int, length: int | None) -> int | None:
        """The frame's length after the header line `line` (not blank)."""
        m = None if skipped else HEADER.fullmatch(line)
        if m is not None:
            if m.group(1).lower() != b"content-length":
                return length  # Content-Type, or a header of no use to us
            if m.group(2).isdigit() and len(m.group(2)) <= LENGTH_DIGITS:
                self.on_length()
                return int(m.group(2))
            log.warning("skipped a header whose Content-Length is not a number: %.80r", line)
            return None
        if (at_end := LENGTH_AT_END.search(line)) is not None and len(at_end.group(1)) <= LENGTH_DIGITS:
            self.on_length()
            log.warning("skipped %d bytes that are not a header before a Content-Length: %.60r",
                        skipped + at_end.start(), line[:at_end.start()])
            return int(at_end.group(1))
        log.warning("skipped a line that is not a header (%d bytes): %.60r", skipped + len(line), line)
        return length

    def _line(self) -> tuple[bytes, int]:
        """(the next line, how many bytes before it were dropped): a line longer than
        HEADER_LINE_BYTES is read in pieces and only its last KEPT_TAIL bytes are kept."""
        line = self.stream.readline(HEADER_LINE_BYTES)
        skipped = 0
        while len(line) >= HEADER_LINE_BYTES and not line.endswith(b"\n"):
            skipped += len(line) - KEPT_TAIL
            line = line[-KEPT_TAIL:] + self.stream.readline(HEADER_LINE_BYTES)
        return line, skipped

    def read_body(self, length: int) -> bytes | bytearray | None:
        """`length` bytes (None: the stream ended first). Up to DIRECT_BYTES in one read; above,
        in chunks appended as they arrive."""
        if length <= DIRECT_BYTES:
            body = self.stream.read(length)
            return body if len(body) == length else None
        buf = bytearray()
        chunk = bytearray(CHUNK_BYTES)  # one small buffer, read into again and again (no fresh pages)
        view = memoryview(chunk)
        while len(buf) < length:
            n = self.stream.readinto(view[:min(CHUNK_BYTES, length - len(buf))])  # type: ignore[attr-defined]
            if not n:
                return None
            buf += view[:n]
        return buf

    def _discard(self, length: int) -> bool:
        """Read `length` bytes and drop them, a chunk at a time; False if the stream ended first."""
        chunk = bytearray(CHUNK_BYTES)
        view = memoryview(chunk)
        while length:
            n = self.stream.readinto(view[:min(length, len(chunk))])  # type: ignore[attr-defined]
            if not n:
                return False
            length -= n
        return True


def widen_pipe(stream) -> None:
    """Give a pipe on `stream` PIPE_BYTES of kernel buffer when the system allows it: a 490 MB
    didOpen is then read in ~470 reads instead of ~7,500, and each read that returns must take
    the interpreter back from any other thread of the server before the next one starts."""
    try:
        fd = stream.fileno()
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            fcntl.fcntl(fd, F_SETPIPE_SZ, PIPE_BYTES)
    except (OSError, ValueError, AttributeError):  # not a pipe, not Linux, or above the system's limit
        pass

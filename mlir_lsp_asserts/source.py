"""Turning bytes into text the reader can check: UTF-8 text, MLIR bytecode (through
`bytecode.py`, which also writes fixed text back as bytecode), or a clear error.

A text's trailing `{-# dialect_resources ... #-}` (an export's weights, hundreds of MB) is not
decoded: `Source.text` is the IR part before it and `Source.tail` says where the rest is
(syntax/resource_section.py); `read_source` finds it in a memory map without reading it. A
bytecode file is parsed in place by MLIR, its weights left out of the text. Callers that compile
the text (`weights=True`) get all of it."""

from __future__ import annotations

import errno
import mmap
import os
import stat

from .errors import SourceError
from .records import NamedTuple
from .syntax.resource_section import ResourceTail, tail_of_file, tail_of_text

__all__ = ["BYTECODE_MAGIC", "PIPE_LIMIT_BYTES", "Source", "SourceError", "decode", "is_bytecode_file", "read_source"]

BYTECODE_MAGIC = b"ML\xefR"
BOM = b"\xef\xbb\xbf"


class Source(NamedTuple):
    """A file as read for a check: its IR text, whether it was bytecode, its resource section."""

    text: str  # the IR part: the whole text, or the text before its resource section
    is_bytecode: bool = False
    # The file's opaque trailing `{-# ... #-}` (byte offsets in the file as read, BOM included).
    tail: ResourceTail | None = None
    bom: bool = False


def _position_of_byte(data, index: int) -> str:
    if not isinstance(data, bytes):  # an mmap: only the bytes up to the error
        data = data[:index + 1]
    line = data.count(b"\n", 0, index) + 1
    col = index - (data.rfind(b"\n", 0, index) + 1) + 1
    return f"line {line}, column {col}"


def decode(data: bytes, path: str | None = None, *, weights: bool = False) -> Source:
    """Bytes of a `.mlir` or `.mlirbc` file -> text to check: the IR part (see `Source`), or with
    `weights` (for the compiler, which needs them) the whole text. Bytecode is parsed from `path`
    (the file `data` was read from) when it is a regular file: MLIR then leaves its weights there."""
    if data.startswith(BYTECODE_MAGIC):
        from .bytecode import bytecode_to_text

        from_file = path is not None and os.path.isfile(path)
        return Source(bytecode_to_text(path if from_file else data, weights=weights), is_bytecode=True)
    tail = None if weights else tail_of_text(data)
    return _decode_ir(data, len(data) if tail is None else tail.start, tail)


def _decode_ir(buf, end: int, tail: ResourceTail | None) -> Source:
    """The IR part `buf[:end]` (bytes or mmap) as text, or a SourceError saying why not."""
    bom = buf[:3] == BOM
    start = 3 if bom else 0
    nul = buf.find(b"\x00", start, min(end, 1 << 16))
    if nul != -1:
        raise SourceError(f"binary data, not MLIR text or bytecode (NUL byte at {_position_of_byte(buf, nul)})")
    raw = buf[start:end]
    try:
        return Source(raw.decode("utf-8"), tail=tail, bom=bom)
    except UnicodeDecodeError as e:
        at = e.start + start
        raise SourceError(f"not valid UTF-8 at byte {at} ({_position_of_byte(buf, at)})") from None


def is_bytecode_file(path: str) -> bool:
    """Whether `path` is a regular file of MLIR bytecode (a pipe is not looked into: the bytes read
    would be gone)."""
    if not os.path.isfile(path):
        return False
    with open(path, "rb") as f:
        return f.read(len(BYTECODE_MAGIC)) == BYTECODE_MAGIC


# A pipe named on the command line (`mlir-lsp --check <(...)`) is read up to this, never without
# a bound (`<(cat /dev/zero)` is one line of error, not all the memory there is).
PIPE_LIMIT_BYTES = 2 << 30


def read_source(path: str, *, weights: bool = False, isolated: bool = False, max_bytes: int | None = None,
                regular_only: bool = False) -> Source:
    """A file -> text to check (`weights`: as for `decode`). Raises OSError or SourceError.

    A text file is mapped, not read: only its IR part is decoded, and its resource section is
    located without being read (a 490 MB export with its weights inline costs its 400 KB of IR).
    A bytecode file is never read into memory: MLIR maps it, and leaves its weights unread unless
    they are printed.

    The size is known before anything is read: with `max_bytes`, a text whose IR part (the whole
    text with `weights`) is larger is a SourceError, and nothing of it is decoded. A pipe is read
    as it comes, up to `max_bytes` (else PIPE_LIMIT_BYTES); with `regular_only` (the server's scan
    and watcher) a pipe is refused without waiting for a writer. A device or a socket is never
    read: SourceError `not a regular file (a character device)`."""
    _readable(path, os.stat(path), regular_only)  # a device is not even opened
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | (os.O_NONBLOCK if regular_only else 0))
    with open(fd, "rb", buffering=0) as f:
        st = os.fstat(fd)
        _readable(path, st, regular_only)  # what was opened: the name may lead elsewhere by now
        if stat.S_ISFIFO(st.st_mode):
            return decode(_read_at_most(f, max_bytes or PIPE_LIMIT_BYTES), weights=weights)
        if os.pread(fd, len(BYTECODE_MAGIC), 0) == BYTECODE_MAGIC:
            from .bytecode import bytecode_to_text, bytecode_to_text_in_child

            read = bytecode_to_text_in_child if isolated else bytecode_to_text
            return Source(read(path, weights=weights), is_bytecode=True)
        size = st.st_size
        if size == 0:
            return Source("")
        if weights:
            _within(size, max_bytes)
            return decode(_read_at_most(f, size, grown_ok=True), weights=True)
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mm:
            tail = tail_of_file(fd, mm, size)
            end = tail.start if tail else size
            _within(end, max_bytes)
            return _decode_ir(mm, end, tail)


def _readable(path: str, st: os.stat_result, regular_only: bool) -> None:
    mode = st.st_mode
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode) and not regular_only:
        return
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    kind = ("a pipe" if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a file")
    raise SourceError(f"not a regular file ({kind})")


def _within(n: int, max_bytes: int | None) -> None:
    if max_bytes is not None and n > max_bytes:
        raise SourceError(f"{_size(n)} of IR, above the limit of {_size(max_bytes)}; not read")


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MB" if n >= 1 << 20 else f"{n:,} bytes"


def _read_at_most(f, limit: int, grown_ok: bool = False) -> bytes:
    """The bytes of `f` to its end, or a SourceError once there are more than `limit` (with
    `grown_ok`, a file's size when it was opened: the first `limit` bytes of a file that grew)."""
    buf = bytearray()
    while len(buf) <= limit:
        chunk = f.read(min(1 << 24, limit + 1 - len(buf)))
        if not chunk:
            return bytes(buf)
        buf += chunk
    if grown_ok:
        return bytes(buf[:limit])
    raise SourceError(f"more than {_size(limit)} to read; not read")

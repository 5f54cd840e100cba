"""The `{-# ... #-}` file metadata at the end of a module: opaque, found in one C-speed search.

An export that does not externalize its parameters writes every weight as one hex string into
`{-# dialect_resources: { builtin: { NAME: "0x..." } } #-}` (BERT-base: 340 KB of IR, then 438 MB
of resources, a 94 MB single line among them). Nothing we check lives there, so everything reads
only the *IR part* before it and treats the rest as opaque: it is never decoded, split, copied or
held as Python text where that can be avoided.

The section starts at a line whose first non-blank characters are `{-#`: at the top level that is
the only thing `{-#` can begin (a string cannot hold a raw newline; a comment starts with `//`).
`str.find`/`bytes.find` stops at the first such line, so the cost is proportional to the IR part;
whether the section is closed is read off the last bytes of the file (a truncated export ends in
the middle of a blob). The IR part always ends at a line start, so its lines are the file's lines.
"""

from __future__ import annotations

import mmap
import os

from ..records import NamedTuple, Protocol

TYPE_CHECKING = False  # typing's, without importing typing (records.py)
if TYPE_CHECKING:
    from typing import TypeVar

    _S = TypeVar("_S", str, bytes)

OPEN = "{-#"
CLOSE = "#-}"
NOT_CLOSED = "'{-#' metadata is never closed"
# How much of a file's end is read to see whether its metadata is closed.
END_PROBE = 4096


class _Searchable(Protocol["_S"]):
    """What `ir_end` reads: `str` (with `_S` = str), `bytes` or an `mmap` (`_S` = bytes)."""

    def find(self, sub: _S, start: int = ..., /) -> int: ...
    def rfind(self, sub: _S, start: int, end: int, /) -> int: ...
    def __getitem__(self, key: slice, /) -> _S: ...
    def __len__(self) -> int: ...


def ir_end(text: str | bytes | mmap.mmap) -> int:
    """Offset of the line where the trailing `{-#` metadata starts, or len(text) without one.
    Works on `str`, `bytes` and `mmap` alike (each search is C code)."""
    if isinstance(text, str):
        return _section_line(text, OPEN, "\n")
    return _section_line(text, OPEN.encode(), b"\n")


def _section_line(text: _Searchable[_S], opener: _S, newline: _S) -> int:
    pos = text.find(opener)
    while pos != -1:
        line_start = text.rfind(newline, 0, pos) + 1
        if not text[line_start:pos].strip():
            return line_start
        pos = text.find(opener, pos + 3)
    return len(text)


def closed(tail_end: str | bytes) -> bool:
    """Whether the last bytes of a file end its metadata (`#-}` then only blanks)."""
    if isinstance(tail_end, str):
        return tail_end.rstrip().endswith(CLOSE)
    return tail_end.rstrip().endswith(CLOSE.encode())


class ResourceTail(NamedTuple):
    """The opaque rest of a file: bytes [start, end) of the file (or characters of a text)."""

    start: int
    end: int
    closed: bool

    @property
    def size(self) -> int:
        return self.end - self.start

    def describe(self) -> str:
        return f"{self.size / 1e6:.1f} MB of `{{-# ... #-}}` resources not read (opaque to the checker)"


def tail_of_text(text: str | bytes) -> ResourceTail | None:
    """The trailing metadata of a text (or its bytes) held in memory, or None."""
    end = ir_end(text)
    if end == len(text):
        return None
    return ResourceTail(end, len(text), closed(text[max(end, len(text) - END_PROBE):]))


def tail_of_file(fd: int, buf, size: int) -> ResourceTail | None:
    """The trailing metadata of a file, `buf` its bytes or an mmap of it: one search that stops
    at the IR part's end, and a read of the file's last bytes."""
    end = ir_end(buf)
    if end >= size:
        return None
    probe_at = max(end, size - END_PROBE)
    last = os.pread(fd, size - probe_at, probe_at)
    return ResourceTail(end, size, closed(last))

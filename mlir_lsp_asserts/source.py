"""Turning bytes into text the reader can check: UTF-8 text, MLIR bytecode (through
`bytecode.py`, which also writes fixed text back as bytecode), or a clear error.

A text's trailing `{-# dialect_resources ... #-}` (an export's weights, hundreds of MB) is not
decoded: `Source.text` is the IR part before it and `Source.tail` says where the rest is
(syntax/resource_section.py); `read_source` finds it in a memory map without reading it. A
bytecode file is parsed in place by MLIR, its weights left out of the text. Callers that compile
the text (`weights=True`) get all of it."""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass

from .errors import SourceError
from .syntax.resource_section import ResourceTail, tail_of_file, tail_of_text

__all__ = ["BYTECODE_MAGIC", "Source", "SourceError", "decode", "is_bytecode_file", "read_source"]

BYTECODE_MAGIC = b"ML\xefR"
BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Source:
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


def read_source(path: str, *, weights: bool = False, isolated: bool = False) -> Source:
    """A file -> text to check (`weights`: as for `decode`). Raises OSError or SourceError.

    A text file is mapped, not read: only its IR part is decoded, and its resource section is
    located without being read (a 490 MB export with its weights inline costs its 400 KB of IR).
    A bytecode file is never read into memory: MLIR maps it, and leaves its weights unread unless
    they are printed. A pipe is read as it comes."""
    if is_bytecode_file(path):
        from .bytecode import bytecode_to_text, bytecode_to_text_in_child

        read = bytecode_to_text_in_child if isolated else bytecode_to_text
        return Source(read(path, weights=weights), is_bytecode=True)
    if weights or not os.path.isfile(path):
        with open(path, "rb") as f:
            return decode(f.read(), weights=weights)
    with open(path, "rb", buffering=0) as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return Source("")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            tail = tail_of_file(f.fileno(), mm, size)
            return _decode_ir(mm, tail.start if tail else size, tail)

"""Turning bytes into text the reader can check: UTF-8 text, MLIR bytecode (through
`bytecode.py`, which also writes fixed text back as bytecode), or a clear error."""

from __future__ import annotations

import os
from dataclasses import dataclass

from .errors import SourceError

__all__ = ["BYTECODE_MAGIC", "Source", "SourceError", "decode", "is_bytecode_file", "read_source"]

BYTECODE_MAGIC = b"ML\xefR"


@dataclass(frozen=True)
class Source:
    text: str
    is_bytecode: bool = False


def _position_of_byte(data: bytes, index: int) -> str:
    line = data.count(b"\n", 0, index) + 1
    col = index - (data.rfind(b"\n", 0, index) + 1) + 1
    return f"line {line}, column {col}"


def decode(data: bytes, path: str | None = None, *, weights: bool = False) -> Source:
    """Bytes of a `.mlir` or `.mlirbc` file -> text to check. Bytecode is parsed from `path` (the
    file `data` was read from) when it is a regular file: MLIR then leaves its weights there. Its text
    leaves out the weights (dialect resources, huge dense literals) unless `weights` (for the
    compiler, which needs them)."""
    if data.startswith(BYTECODE_MAGIC):
        from .bytecode import bytecode_to_text

        from_file = path is not None and os.path.isfile(path)
        return Source(bytecode_to_text(path if from_file else data, weights=weights), is_bytecode=True)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    nul = data.find(b"\x00", 0, 1 << 16)
    if nul != -1:
        raise SourceError(f"binary data, not MLIR text or bytecode (NUL byte at {_position_of_byte(data, nul)})")
    try:
        return Source(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise SourceError(f"not valid UTF-8 at byte {e.start} ({_position_of_byte(data, e.start)})") from None


def is_bytecode_file(path: str) -> bool:
    """Whether `path` is a regular file of MLIR bytecode (a pipe is not looked into: the bytes read
    would be gone)."""
    if not os.path.isfile(path):
        return False
    with open(path, "rb") as f:
        return f.read(len(BYTECODE_MAGIC)) == BYTECODE_MAGIC


def read_source(path: str, *, weights: bool = False) -> Source:
    """A file -> text to check (`weights`: as for `decode`). A bytecode file is never read into
    memory: MLIR maps it, and leaves its weights unread unless they are printed."""
    if is_bytecode_file(path):
        from .bytecode import bytecode_to_text

        return Source(bytecode_to_text(path, weights=weights), is_bytecode=True)
    with open(path, "rb") as f:
        return decode(f.read())

"""Turning bytes into text the reader can check: UTF-8 text, MLIR bytecode, or a clear error."""

from __future__ import annotations

from dataclasses import dataclass

BYTECODE_MAGIC = b"ML\xefR"


class SourceError(Exception):
    """The input cannot be checked; the message says why in one line."""


@dataclass(frozen=True)
class Source:
    text: str
    is_bytecode: bool = False


def _position_of_byte(data: bytes, index: int) -> str:
    line = data.count(b"\n", 0, index) + 1
    col = index - (data.rfind(b"\n", 0, index) + 1) + 1
    return f"line {line}, column {col}"


def decode(data: bytes) -> Source:
    """Bytes of a `.mlir` or `.mlirbc` file -> text to check."""
    if data.startswith(BYTECODE_MAGIC):
        from .mlirbc import bytecode_to_text

        return Source(bytecode_to_text(data), is_bytecode=True)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    nul = data.find(b"\x00", 0, 1 << 16)
    if nul != -1:
        raise SourceError(f"binary data, not MLIR text or bytecode (NUL byte at {_position_of_byte(data, nul)})")
    try:
        return Source(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise SourceError(f"not valid UTF-8 at byte {e.start} ({_position_of_byte(data, e.start)})") from None

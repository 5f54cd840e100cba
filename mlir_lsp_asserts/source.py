"""Turning bytes into text the reader can check: UTF-8 text, MLIR bytecode, or a clear error;
and fixed text back into bytecode. Bytecode goes through the real parser of iree-base-compiler
(imported only when a bytecode file is read: it costs ~0.2 s).

A text's trailing `{-# dialect_resources ... #-}` (an export's weights, hundreds of MB) is not
decoded: `Source.text` is the IR part before it and `Source.tail` says where the rest is
(syntax/resource_section.py). `read_path` finds it in a memory map without reading it."""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass

from .syntax.resource_section import END_PROBE, ResourceTail, closed, ir_end, tail_of_file

BYTECODE_MAGIC = b"ML\xefR"
BOM = b"\xef\xbb\xbf"


class SourceError(Exception):
    """The input cannot be checked; the message says why in one line."""


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


def decode(data: bytes) -> Source:
    """Bytes of a `.mlir` or `.mlirbc` file -> text to check (the IR part, see `Source`)."""
    if data.startswith(BYTECODE_MAGIC):
        return Source(bytecode_to_text(data), is_bytecode=True)
    end = ir_end(data)
    tail = None
    if end < len(data):
        tail = ResourceTail(end, len(data), closed(data[max(end, len(data) - END_PROBE):]))
    return _decode_ir(data, end, tail)


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


def read_path(path: str) -> Source:
    """A file on disk -> text to check. A text file is mapped, not read: only its IR part is
    decoded, and its resource section is located without being read (a 490 MB export with its
    weights inline costs its 400 KB of IR). Raises OSError or SourceError."""
    with open(path, "rb", buffering=0) as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return Source("")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            if mm[:4] == BYTECODE_MAGIC:
                data = mm[:]
            else:
                return _decode_ir(mm, *_split(f.fileno(), mm, size))
    return Source(bytecode_to_text(data), is_bytecode=True)


def _split(fd: int, mm, size: int) -> tuple[int, ResourceTail | None]:
    tail = tail_of_file(fd, mm, size)
    return (tail.start if tail else size), tail


# -- MLIR bytecode (`.mlirbc`) <-> text -------------------------------------------------------
def _ir():
    from iree.compiler import ir

    return ir


def bytecode_to_text(data: bytes) -> str:
    """The textual form of a bytecode module, with its debug locations (`loc(...)`)."""
    ir = _ir()
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    try:
        module = ir.Module.parse(bytes(data), ctx)
    except Exception as e:  # MLIRError and friends: the parser's own message
        first = str(e).strip().splitlines()
        raise SourceError("cannot read MLIR bytecode: " + (" ".join(first[:3]) or type(e).__name__)) from None
    return module.operation.get_asm(enable_debug_info=True, assume_verified=True)


def text_to_bytecode(text: str) -> bytes:
    """Bytecode of a textual module (for writing fixed `.mlirbc` files back)."""
    import io

    ir = _ir()
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    try:
        module = ir.Module.parse(text, ctx)
    except Exception as e:
        raise SourceError("cannot turn the fixed text back into bytecode: " + str(e).strip().splitlines()[0]) from None
    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    return buf.getvalue()

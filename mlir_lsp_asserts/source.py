"""Turning bytes into text the reader can check: UTF-8 text, MLIR bytecode, or a clear error;
and fixed text back into bytecode. Bytecode goes through the real parser of iree-base-compiler
(imported only when a bytecode file is read: it costs ~0.2 s)."""

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

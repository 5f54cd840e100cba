"""MLIR bytecode (`.mlirbc`) <-> text through the real parser of iree-base-compiler."""

from __future__ import annotations

from .source import SourceError


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

"""The real parser (iree.compiler.ir) as the judge of fixed text."""

from __future__ import annotations


def real_parse_error(text: str) -> str | None:
    """None when IREE's parser (all IREE dialects registered) accepts `text`, else its message."""
    from iree.compiler import ir

    ctx = ir.Context()
    try:
        ir.Module.parse(text, ctx)
    except Exception as e:  # MLIRError: the diagnostics
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        msg = next((ln for ln in lines if "error" in ln and ln != lines[0]), lines[-1] if lines else type(e).__name__)
        return msg
    return None

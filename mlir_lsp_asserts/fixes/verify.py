"""The real parser (iree.compiler.ir) as the judge of fixed text: in this process, or in a
child (`real_parse_errors_in_child`), which keeps the parser's memory out of ours."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

CHILD_TIMEOUT = 600
# The parser's context: one per thread, multithreading off, replaced after this many parses
# (it keeps every type and attribute it has seen). A fresh context per parse, each with a thread
# pool, was the suspect of a native abort after ~25,000 parses (docs/reliability.md).
CONTEXT_PARSES = 500
_contexts = threading.local()


def parse_context():
    """The calling thread's `ir.Context` for one more parse (see CONTEXT_PARSES)."""
    from iree.compiler import ir

    used = getattr(_contexts, "used", CONTEXT_PARSES)
    if used >= CONTEXT_PARSES:
        _contexts.ctx = None  # the old one goes first
        _contexts.ctx = ir.Context()
        _contexts.ctx.enable_multithreading(False)
        used = 0
    _contexts.used = used + 1
    return _contexts.ctx


def real_parse_error(text: str) -> str | None:
    """None when IREE's parser (all IREE dialects registered) accepts `text`, else its message."""
    from iree.compiler import ir

    try:
        ir.Module.parse(text, parse_context())
    except Exception as e:  # MLIRError: the diagnostics
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        msg = next((ln for ln in lines if "error" in ln and ln != lines[0]), lines[-1] if lines else type(e).__name__)
        return msg
    return None


def real_parse_errors_in_child(texts: list[str], timeout: float = CHILD_TIMEOUT) -> list[str | None]:
    """`real_parse_error` of each text, run in a child Python process. Raises SourceError when the
    child fails (crash, timeout) with what it said."""
    from ..source import SourceError

    try:
        p = subprocess.run([sys.executable, "-m", "mlir_lsp_asserts.fixes.verify"], input=json.dumps(texts),
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SourceError(f"the real parser did not finish in {timeout:.0f} s") from None
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or [f"exit code {p.returncode}"])[-1]
        raise SourceError(f"the real parser's process failed ({last[:200]})")
    return json.loads(p.stdout)


if __name__ == "__main__":
    json.dump([real_parse_error(t) for t in json.load(sys.stdin)], sys.stdout)

"""The real parser (iree.compiler.ir) as the judge of fixed text: in this process, or in a
child (`real_parse_errors_in_child`), which keeps the parser's memory out of ours."""

from __future__ import annotations

import json
import subprocess
import sys

CHILD_TIMEOUT = 600


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

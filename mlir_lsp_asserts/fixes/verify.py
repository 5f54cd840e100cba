"""The real parser (iree.compiler.ir) as the judge of fixed text, never in this process: in a
worker child kept for WORKER_PARSES parses (`real_parse_error`), or in a child per batch
(`real_parse_errors_in_child`), which keeps the parser's memory out of ours.

Why not in this process: after some 10,000-25,000 parses of varied text in one process the
bindings' heap breaks down (`malloc(): unaligned tcache chunk detected`, SIGABRT), with a fresh
context per parse and with one reused context alike (docs/reliability.md, "The native abort").
A worker that dies on a parse is replaced and the parse tried once more."""

from __future__ import annotations

import atexit
import json
import subprocess
import sys
import threading

CHILD_TIMEOUT = 600
# Above this a fix is judged in a child of its own (`judge_fix`): the parser's memory (~10x the
# text) is never ours nor the worker's.
CHILD_VERIFY_CHARS = 8 * 1024 * 1024
# A worker parses this many texts, then a new one takes over (far below the ~10,000 parses after
# which the abort was seen).
WORKER_PARSES = 1000
# The parser's context in the process that parses: one per thread, multithreading off, replaced
# after this many parses (it keeps every type and attribute it has seen).
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


def parse_error_here(text: str) -> str | None:
    """None when IREE's parser (all IREE dialects registered) accepts `text`, else its message;
    in this process (the workers' and children's side)."""
    from iree.compiler import ir

    try:
        ir.Module.parse(text, parse_context())
    except Exception as e:  # MLIRError: the diagnostics
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        msg = next((ln for ln in lines if "error" in ln and ln != lines[0]), lines[-1] if lines else type(e).__name__)
        return msg
    return None


class ParseTimeout(ChildProcessError):
    """A parse that did not finish in CHILD_TIMEOUT: its worker was killed, and it is not tried again."""


class _Worker:
    """A child answering parses, one at a time: a length line and the UTF-8 text in, one JSON line out."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-m", "mlir_lsp_asserts.fixes.verify", "--serve"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.used = 0

    def ask(self, text: str) -> str | None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        data = text.encode("utf-8", "surrogatepass")
        self.used += 1
        # the bound the child per batch has (CHILD_TIMEOUT): a parse that hangs ends its worker
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            self.proc.kill()

        timer = threading.Timer(CHILD_TIMEOUT, expire)
        timer.start()
        try:
            self.proc.stdin.write(b"%d\n" % len(data) + data)
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except OSError:
            line = b""
        finally:
            timer.cancel()
        if not line:
            code = self.proc.wait()
            if expired.is_set():
                raise ParseTimeout(f"the real parser did not finish in {CHILD_TIMEOUT:.0f} s")
            raise ChildProcessError(f"the real parser's worker died (exit {code})")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()  # type: ignore[union-attr]
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


_worker: _Worker | None = None
_worker_lock = threading.Lock()


def _stop_worker() -> None:
    global _worker
    if _worker is not None:
        _worker.close()
        _worker = None


atexit.register(_stop_worker)


def worker_pid() -> int | None:
    """The process id of the running worker, if any."""
    w = _worker
    return w.proc.pid if w is not None and w.proc.poll() is None else None


def real_parse_error(text: str) -> str | None:
    """None when IREE's parser (all IREE dialects registered) accepts `text`, else its message.
    Parsed in the worker child; a text on which two workers in a row die gets that as its message."""
    global _worker
    with _worker_lock:
        for attempt in (1, 2):
            if _worker is None or _worker.used >= WORKER_PARSES:
                _stop_worker()
                _worker = _Worker()
            try:
                return _worker.ask(text)
            except ChildProcessError as e:
                _worker = None
                if attempt == 2 or isinstance(e, ParseTimeout):
                    return str(e)
    return None  # not reached


def _serve() -> None:
    """The worker's loop (`python -m mlir_lsp_asserts.fixes.verify --serve`), until stdin closes."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while line := stdin.readline():
        text = stdin.read(int(line)).decode("utf-8", "surrogatepass")
        stdout.write(json.dumps(parse_error_here(text)).encode() + b"\n")
        stdout.flush()


def judge_fix(text: str, fixed: str, *, in_child: bool = False) -> tuple[str | None, str | None]:
    """The real parser's word on a fix: (the original's error, the fixed text's error), each None
    when it parses; the fixed text's counts only when the original parses. In a child of its own
    when `in_child` or the text is above CHILD_VERIFY_CHARS (SourceError when that child fails),
    else in the worker."""
    if in_child or len(text) > CHILD_VERIFY_CHARS:
        before, after = real_parse_errors_in_child([text, fixed])
        return before, after
    before = real_parse_error(text)
    return before, (real_parse_error(fixed) if before is None else None)


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
    if sys.argv[1:] == ["--serve"]:
        _serve()
    else:
        json.dump([parse_error_here(t) for t in json.load(sys.stdin)], sys.stdout)

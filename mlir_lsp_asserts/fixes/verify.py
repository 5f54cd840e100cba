"""The real parser (iree.compiler.ir) as the judge of fixed text, never in this process: in a
worker child kept for WORKER_PARSES parses (`real_parse_error`), or in a child per text
(`real_parse_errors_in_child`), which keeps the parser's memory out of ours.

Why not in this process: MLIR's parser corrupts the heap of the process it runs in on some of its
error paths (a use-after-free when a `linalg.generic` body fails after another body used its block
argument: tests/data/parser_use_after_free.mlir), and a later parse or allocation then aborts
(`malloc(): unaligned tcache chunk detected`) or crashes; iree-opt itself does the same
(docs/reliability.md, "The native abort"). So no process parses again after a parse error: the
worker imports the parser once and forks the process that parses, which exits after its first
error (the next is forked from the clean worker in milliseconds); a child per text parses
only that text; and a worker that dies on a parse is replaced and the
parse tried once more."""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import threading

CHILD_TIMEOUT = 600
# Above this a fix is judged in a child of its own (`judge_fix`): the parser's memory (~10x the
# text) is never ours nor the worker's.
CHILD_VERIFY_CHARS = 8 * 1024 * 1024
# A worker parses this many texts (or up to its first parse error), then a new one takes over.
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
        # a session of its own: a kill takes the worker and the child it forked (`_kill`)
        self.proc = subprocess.Popen([sys.executable, "-m", "mlir_lsp_asserts.fixes.verify", "--serve"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        self.used = 0

    def ask(self, text: str) -> str | None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        data = text.encode("utf-8", "surrogatepass")
        self.used += 1
        # the bound the child per batch has (CHILD_TIMEOUT): a parse that hangs ends its worker
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            self._kill()

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

    def _kill(self) -> None:
        if not hasattr(os, "killpg"):  # Windows: no fork, the worker is the only process
            self.proc.kill()
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:  # already gone
            pass

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()  # type: ignore[union-attr]
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._kill()
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
            if _worker is None or _worker.used >= WORKER_PARSES or _worker.proc.poll() is not None:
                _stop_worker()
                _worker = _Worker()
            try:
                answer = _worker.ask(text)
            except ChildProcessError as e:
                _worker = None
                if attempt == 2 or isinstance(e, ParseTimeout):
                    return str(e)
                continue
            return answer
    return None  # not reached


def parser_pid() -> int | None:
    """The process id of the worker's child that parses now (Linux's /proc), if any."""
    pid = worker_pid()
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = f.read().split()
    except (OSError, TypeError):
        return None
    return int(kids[0]) if kids else None


_WARM_UP = ("func.func @f() {\n  return\n}\n", "func.func @f() {\n  retur\n}\n")
# How the worker's child ends: stdin closed (the worker ends too), or after a parse error (the
# worker forks the next child).
_CLOSED, _SPENT = 0, 3


def _serve() -> None:
    """The worker (`python -m mlir_lsp_asserts.fixes.verify --serve`): it imports the parser, then
    forks a child that answers parses (a length line and the UTF-8 text in, one JSON line out) until
    its first parse error, and forks the next; it ends when stdin closes. A child that dies ends
    the worker with its signal's code, so the parent sees the death. Where there is no fork
    (Windows), the worker parses itself and ends after its first error (the parent starts another)."""
    from iree.compiler import ir

    if not hasattr(os, "fork"):
        _answer_until_an_error_on_stdio(None)

    # the children's first context, made here once: every dialect loaded, no thread pool (a fork
    # keeps only the forking thread). One plain parse and one plain error warm what the bindings
    # set up at their first use (an error costs a fresh child ~10 ms more otherwise); neither
    # touches the error path that breaks the heap (no forward reference, no nested region).
    _contexts.ctx = ir.Context()
    _contexts.ctx.enable_multithreading(False)
    _contexts.ctx.load_all_available_dialects()
    for text in _WARM_UP:
        parse_error_here(text)
    _contexts.used = 0
    die_with_parent = _death_signal_setter()
    while True:
        pid = os.fork()
        if pid == 0:
            die_with_parent()
            _answer_until_an_error_on_stdio(os.getppid())
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code != _SPENT:
            os._exit(0 if code == _CLOSED else (128 - code if code < 0 else code))


def _death_signal_setter():
    """A function that makes the calling process die with its parent (Linux's PR_SET_PDEATHSIG);
    elsewhere one that does nothing (the worker's session is killed as a whole)."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None).prctl
    except (OSError, AttributeError, TypeError):
        return lambda: None
    return lambda: prctl(1, signal.SIGKILL)


def _answer_until_an_error_on_stdio(worker: int | None) -> None:
    """The worker's child: parses until a parse error, then leaves at once (`os._exit`: nothing
    runs on a heap the parser may have broken)."""
    if worker is not None and os.getppid() != worker:  # the worker died before the death signal was set
        os._exit(_CLOSED)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while line := stdin.readline():
        text = stdin.read(int(line)).decode("utf-8", "surrogatepass")
        verdict = parse_error_here(text)
        stdout.write(json.dumps(verdict).encode() + b"\n")
        stdout.flush()
        if verdict is not None:
            os._exit(_SPENT)
    os._exit(_CLOSED)


def judge_fix(text: str, fixed: str, *, in_child: bool = False) -> tuple[str | None, str | None]:
    """The real parser's word on a fix: (the original's error, the fixed text's error), each None
    when it parses; the fixed text's counts only when the original parses. In a child of its own
    when `in_child` or the text is above CHILD_VERIFY_CHARS (SourceError when it times out),
    else in the worker."""
    if in_child or len(text) > CHILD_VERIFY_CHARS:
        before, after = real_parse_errors_in_child([text, fixed])
        return before, after
    before = real_parse_error(text)
    return before, (real_parse_error(fixed) if before is None else None)


def real_parse_errors_in_child(texts: list[str], timeout: float = CHILD_TIMEOUT) -> list[str | None]:
    """`real_parse_error` of each text, each in a child Python process of its own (a parse error
    can break the heap of the process, and even the parse that breaks it can die of it when the
    heap held an earlier parse's memory); a child that dies is replaced once, and a text on which
    two children die gets that as its message. Raises SourceError on a timeout."""
    from ..source import SourceError

    verdicts: list[str | None] = []
    for text in texts:
        for attempt in (1, 2):
            try:
                p = subprocess.run([sys.executable, "-m", "mlir_lsp_asserts.fixes.verify"],
                                   input=json.dumps([text]), capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                raise SourceError(f"the real parser did not finish in {timeout:.0f} s") from None
            if p.returncode == 0:
                verdicts.extend(json.loads(p.stdout))
                break
            if attempt == 2:  # as `real_parse_error` does: the text gets that as its message
                last = (p.stderr.strip().splitlines() or [f"exit code {p.returncode}"])[-1]
                verdicts.append(f"the real parser's process failed twice on this text ({last[:200]})")
    return verdicts


def _answer_until_an_error(texts: list[str]) -> list[str | None]:
    """The batch child's verdicts: each text's, up to and including the first that does not parse."""
    out: list[str | None] = []
    for t in texts:
        out.append(parse_error_here(t))
        if out[-1] is not None:
            break
    return out


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        _serve()
    else:
        # the answer out, then away at once: the last parse may have broken the heap, and the
        # interpreter's own cleanup at exit would then abort (seen in CI)
        sys.stdout.write(json.dumps(_answer_until_an_error(json.load(sys.stdin))))
        sys.stdout.flush()
        os._exit(0)

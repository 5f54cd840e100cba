"""SIGTERM and SIGHUP on the command line do what Ctrl-C (SIGINT) does.

A CI runner or `timeout` cancels with SIGTERM, a closed terminal sends SIGHUP. Python's default
for both is to die at once: no `finally`, so the compiles kept running and the `mlir-lsp-*`
temporary folders stayed. Here each raises `Stopped` (a KeyboardInterrupt) in the main thread,
so every path that stops its compiles and removes its folders on Ctrl-C does the same; then
`stopped` prints one line and gives the shell's code for the signal (128 + its number: 143 for
SIGTERM, 129 for SIGHUP, 130 for SIGINT).

The language server installs its own handlers (server/lifecycle.py), which replace these.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable

HANDLED = (signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """Raised in the main thread by SIGTERM or SIGHUP."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _State:
    received: int | None = None


def _handler(signum, _frame) -> None:
    if _State.received is None:  # the first one: a second signal must not break the clean-up
        _State.received = signum
        raise Stopped(signum)


def run_stoppable(run: Callable[[], int]) -> int:
    """`run()` with SIGTERM and SIGHUP (and SIGINT) turned into one "stopped" line and the exit
    code 128 + the signal's number, after `run`'s own clean-up (its `except KeyboardInterrupt`
    and `finally` blocks) has stopped the compiles and removed the temporary folders."""
    _State.received = None
    # A signal ignored when we started stays ignored (`nohup mlir-lsp ...` ignores SIGHUP, a
    # shell's background job SIGINT: Python keeps that too): the caller asked for it.
    old = {s: signal.signal(s, _handler) for s in HANDLED if signal.getsignal(s) is not signal.SIG_IGN}
    try:
        code = run()
    except KeyboardInterrupt:  # SIGINT, or a signal that reached a path with no handler of its own
        code = 130
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    signum = _State.received or (signal.SIGINT if code == 130 else None)
    if signum is None:
        return code
    print(f"mlir-lsp: stopped ({signal.Signals(signum).name})", file=sys.stderr)
    return 128 + int(signum)

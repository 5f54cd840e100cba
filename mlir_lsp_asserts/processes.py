"""How a child process's end is named to the user (the compiler's and the parser's crashes)."""

from __future__ import annotations

import signal


def signal_name(num: int) -> str:
    """`SIGSEGV` for 11; `signal 99` for a number no signal has."""
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"

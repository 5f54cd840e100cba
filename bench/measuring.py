"""How the benchmarks measure one command: wall time, CPU time, peak RSS and exit code, from a
small waiter process (bench_check.py; bench_server.py and bench_dispatch.py through it)."""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
RUNS = 3


def child_env() -> dict[str, str]:
    """The measured commands' environment: this checkout's package first on PYTHONPATH (or the one
    in $BENCH_PACKAGE_DIR, to measure another revision: `git archive REV mlir_lsp_asserts | tar -x
    -C DIR`), no colours."""
    rest = os.environ.get("PYTHONPATH")
    first = os.environ.get("BENCH_PACKAGE_DIR") or str(ROOT)
    # PYTHONSAFEPATH: `-m` would otherwise put the working directory (maybe another checkout) first.
    return dict(os.environ, NO_COLOR="1", PYTHONSAFEPATH="1", PYTHONPATH=first + (os.pathsep + rest if rest else ""))


class Run:
    def __init__(self, seconds: float, cpu: float, maxrss_kib: int, code: int, stdout: bytes, stderr: bytes):
        self.seconds, self.cpu, self.maxrss_kib, self.code = seconds, cpu, maxrss_kib, code
        self.stdout, self.stderr = stdout, stderr


# Peak RSS must come from a small parent: at exec, Linux folds the pre-exec address space's
# high-water mark into the child's ru_maxrss, and a fork or posix_spawn of this script shares (or
# copies) the 50 MB module it generated or read. So a bare `python -S` waiter launches the command,
# times it and reports its wait4 rusage (floor: the waiter's own few MiB).
WAITER = r"""
import os, sys, time
t0 = time.monotonic()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)
_, status, ru = os.wait4(pid, 0)
os.write(3, b"%f %f %d %d" % (time.monotonic() - t0, ru.ru_utime + ru.ru_stime, ru.ru_maxrss,
                             os.waitstatus_to_exitcode(status)))
"""


def run_measured(argv: list[str]) -> Run:
    """Wall time, peak RSS (KiB) and exit code of one run of argv, with its output captured."""
    out_path, err_path, rep_path = OUT / "last_stdout", OUT / "last_stderr", OUT / "last_rusage"
    wr = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(out_path), wr, 0o644),
        (os.POSIX_SPAWN_OPEN, 2, str(err_path), wr, 0o644),
        (os.POSIX_SPAWN_OPEN, 3, str(rep_path), wr, 0o644),
    ]
    env = child_env()
    pid = os.posix_spawn(sys.executable, [sys.executable, "-S", "-c", WAITER, *argv], env, file_actions=actions)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"bench waiter failed for {argv}: {err_path.read_text(errors='replace')[-500:]}")
    secs, cpu, rss, code = rep_path.read_text().split()
    return Run(float(secs), float(cpu), int(rss), int(code), out_path.read_bytes(), err_path.read_bytes())


def measure(argv: list[str], n: int = RUNS) -> tuple[float, int, list[Run]]:
    runs = [run_measured(argv) for _ in range(n)]
    return statistics.median(r.seconds for r in runs), max(r.maxrss_kib for r in runs), runs


def fmt_times(runs: list[Run]) -> str:
    """Each run's wall time, and the median CPU time (user + system, all threads)."""
    return "/".join(f"{r.seconds:.2f}" for r in runs) + f"; cpu {cpu(runs):.2f} s"


def cpu(runs: list[Run]) -> float:
    return statistics.median(r.cpu for r in runs)


def med(runs: list[Run]) -> float:
    return statistics.median(r.seconds for r in runs)


def peak(runs: list[Run]) -> int:
    """Peak RSS in bytes over the runs."""
    return max(r.maxrss_kib for r in runs) * 1024

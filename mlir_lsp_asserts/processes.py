"""Child processes: how one's end is named to the user (the compiler's and the parser's crashes),
children that die with their parent however it dies, and temporary folders that the next server
start removes when the process that made them died without removing them."""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable


def signal_name(num: int) -> str:
    """`SIGSEGV` for 11; `signal 99` for a number no signal has."""
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


# -- children that die with us, and temporary folders a dead process leaves ---------------------
PR_SET_PDEATHSIG = 1  # linux/prctl.h
# Folders of `temp_folder`: `mlir-lsp-<pid>-<kind>-<random>` in the system's temporary folder.
OWNED_FOLDER = re.compile(r"mlir-lsp-(\d+)-")
PARENT_POLL_SECONDS = 0.25


@functools.cache
def _prctl():
    """libc's prctl, on Linux (None elsewhere, or where it cannot be loaded)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def death_signal() -> Callable[[], None] | None:
    """A `preexec_fn` for `subprocess.Popen` that has the child killed (SIGKILL) when this process
    dies, however it dies (Linux's PR_SET_PDEATHSIG); None where there is no such thing.

    The kernel sends it when the *thread* that started the child ends: use it only where that
    thread waits for its child (a compile, a parser child), never for a child that a short-lived
    thread starts and leaves running. It is kept across the child's exec, not given to the
    child's own children (a compiler wrapper that runs the compiler as its child rather than
    exec'ing it leaves that child to end on its own)."""
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def die_with_parent() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # it died before the prctl: no signal will come
            os._exit(1)

    return die_with_parent


def exit_with_parent(parent: int) -> None:
    """In a child: end it (os._exit) as soon as `parent` is no longer its parent (it died, and the
    child was given to init). A thread of the child's own asks every PARENT_POLL_SECONDS: unlike
    `death_signal`, it does not matter which of the parent's threads started the child."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def temp_folder(kind: str) -> str:
    """A new private temporary folder, `mlir-lsp-<this pid>-<kind>-*`: when this process dies
    before removing it (SIGKILL, an OOM kill, a crash), the next server start removes it
    (`remove_dead_temp_folders`)."""
    return tempfile.mkdtemp(prefix=f"mlir-lsp-{os.getpid()}-{kind}-")


def remove_dead_temp_folders(root: str | None = None) -> list[str]:
    """Remove the folders of `temp_folder` in `root` (the system's temporary folder) whose
    process is gone; returns them. Only this user's folders are looked at."""
    removed: list[str] = []
    try:
        entries = list(os.scandir(root or tempfile.gettempdir()))
    except OSError:
        return removed
    for entry in entries:
        m = OWNED_FOLDER.match(entry.name)
        try:
            mine = entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid == os.getuid()
        except OSError:
            continue
        if m is None or not mine:
            continue
        if not _alive(int(m.group(1))):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # gone, or no pid at all
        return False
    except PermissionError:  # another user's process
        return True
    return True

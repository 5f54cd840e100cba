"""Runs the real server (`mlir-lsp --stdio`) under a Python audit hook that logs, as JSON lines to
the file named by $MLIR_LSP_AUDIT_LOG, every process it starts (subprocess, os.system, exec,
spawn) and every file it opens for writing, renames, removes or creates a folder for.
tests/test_reliability_security.py reads the log: the server's runtime behaviour, not its source.
"""

from __future__ import annotations

import json
import os
import sys

_log = open(os.environ["MLIR_LSP_AUDIT_LOG"], "a", buffering=1, encoding="utf-8")  # noqa: SIM115
_busy = False
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
SPAWNS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "pty.spawn", "os.startfile"}
FILE_OPS = {"os.rename", "os.remove", "os.rmdir", "os.mkdir", "shutil.rmtree", "os.truncate", "os.link", "os.symlink",
            "shutil.move", "shutil.copyfile"}


def _record(kind: str, **data) -> None:
    global _busy
    _busy = True
    try:
        _log.write(json.dumps({"kind": kind, **data}, default=str) + "\n")
    finally:
        _busy = False


def _hook(event: str, args) -> None:
    if _busy:
        return
    if event in SPAWNS:
        if event == "subprocess.Popen":
            executable, argv, cwd, _env = args
            _record("spawn", event=event, executable=executable,
                    argv=list(argv) if isinstance(argv, (list, tuple)) else argv,
                    shell_string=isinstance(argv, (str, bytes)))
        else:
            _record("spawn", event=event, argv=[str(a) for a in args][:3])
    elif event == "open":
        path, mode, flags = args
        if isinstance(path, int):
            return
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                 (isinstance(flags, int) and flags & _WRITE_FLAGS)
        if writes:
            _record("write", path=os.fsdecode(path))
    elif event in FILE_OPS:
        paths = [os.fsdecode(a) for a in args if isinstance(a, (str, bytes, os.PathLike))]
        fds = [a for a in args if isinstance(a, int) and not isinstance(a, bool) and a >= 0]
        if fds and paths and not os.path.isabs(paths[0]):  # shutil.rmtree's fd-relative removals
            try:
                paths = [os.path.join(os.readlink(f"/proc/self/fd/{fds[0]}"), p) for p in paths]
            except OSError:
                pass
        _record("fileop", event=event, paths=paths)


sys.addaudithook(_hook)

from mlir_lsp_asserts.cli import main  # noqa: E402

sys.exit(main(["--stdio"]))

"""The shipped Emacs config (editors/emacs/mlir-lsp.el) in the real Emacs with eglot, in a
terminal: a pty, the keys a user types, the real server.

Emacs 29+ has eglot built in; Debian 12's Emacs 28 gets it from elpa-eglot (.ci/run installs
emacs-nox and elpa-eglot). tests/emacs_driver.el reports what the user would see."""

from __future__ import annotations

import fcntl
import os
import shutil
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

from conftest import REPO as ROOT
from conftest import SHARED

EMACS = shutil.which("emacs")


def _has_eglot() -> bool:
    if EMACS is None:
        return False
    p = subprocess.run([EMACS, "--batch", "--eval", "(progn (package-activate-all) (require 'eglot))"],
                       capture_output=True, text=True)
    return p.returncode == 0


class Terminal:
    """A program in a pty of 120x40; what it prints is kept (for failure messages)."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path):
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
                                     start_new_session=True, close_fds=True,
                                     preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(slave)
        self.screen = bytearray()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the program closed the terminal
                return
            if not chunk:
                return
            self.screen.extend(chunk)

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.reader.join(5)
        os.close(self.master)


def results(path: Path) -> list[tuple[str, str]]:
    if not path.exists():
        return []
    return [tuple(line.split("=", 1)) for line in path.read_text().split("\n") if "=" in line]


def wait_for(term: Terminal, path: Path, pred, what: str, limit: float = 90):
    """Wait until a result line satisfies pred (a guard against a hang, not a timing check)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        for k, v in results(path):
            if pred(k, v):
                return v
        if term.proc.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(f"no {what}: results {results(path)}, emacs exit {term.proc.poll()}, "
                         f"screen tail {bytes(term.screen[-1500:])!r}")


@pytest.mark.slow
@pytest.mark.skipif(EMACS is None, reason="emacs not installed (Debian: apt-get install emacs-nox elpa-eglot)")
def test_emacs_eglot_diagnostics_code_action_save_and_stop(tmp_path):
    assert _has_eglot(), "emacs has no eglot: Emacs 29+, or Debian's elpa-eglot for Emacs 28"
    f = tmp_path / "proj" / "hoisted_gather.mlir"
    f.parent.mkdir()
    shutil.copyfile(SHARED / "fixtures" / "repro" / "hoisted_gather.mlir", f)
    result = tmp_path / "result.txt"
    home = tmp_path / "home"
    (home / ".emacs.d").mkdir(parents=True)
    # No native compilation of the ELPA packages in the background (seconds of CPU on 2 cores).
    (home / ".emacs.d" / "early-init.el").write_text(
        "(setq native-comp-deferred-compilation nil native-comp-jit-compilation nil)\n")
    # The user's init file: the server command, a setting (MLA001 as an error), our config.
    cmd = " ".join(f'"{a}"' for a in (sys.executable, "-m", "mlir_lsp_asserts"))
    (home / ".emacs.d" / "init.el").write_text(
        f"(setq mlir-lsp-command '({cmd}))\n"
        "(setq mlir-lsp-settings '(:severity (:MLA001 \"error\")))\n"
        f'(load "{ROOT / "editors" / "emacs" / "mlir-lsp.el"}")\n'
        "(setq xterm-extra-capabilities nil)  ; no terminal queries to answer\n"
        f'(load "{ROOT / "tests" / "emacs_driver.el"}")\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "EMACS"))}
    env.update(HOME=str(home), TERM="xterm-256color", EMACS_RESULT=str(result), EMACS_FIXTURE=str(f))
    version = subprocess.run([EMACS, "--version"], capture_output=True, text=True, env=env).stdout.split("\n")[0]

    term = Terminal([EMACS, "-nw", str(f)], env, f.parent)
    try:
        wait_for(term, result, lambda k, v: k in ("ready", "error"), "diagnostics in Flymake")
        term.type("\x1bx")  # M-x
        wait_for(term, result, lambda k, v: k == "prompt" and "M-x" in v, "M-x prompt")
        term.type("eglot-code-actions\r")
        pick = wait_for(term, result, lambda k, v: k == "prompt" and "action" in v, "code action prompt")
        term.type("\r")  # the default: the preferred fix
        wait_for(term, result, lambda k, v: k in ("applied", "error"), "the fix in the buffer")
        term.type("\x18\x13")  # C-x C-s
        term.proc.wait(90)
    finally:
        term.close()
    got = dict(results(result))
    assert "error" not in got, got
    assert got["major_mode"] == "mlir-mode"
    assert "mlir-mode" in got["server"]
    assert got["diagnostics_on_open"] == "4"
    assert got["types_on_open"] == ",".join(["eglot-error"] * 4), (version, got)  # the setting arrived
    assert "[MLA001]" in got["message"] and "index must be smaller than dim size" in got["message"]
    assert "util.assume.int <umin = 0, umax = 76>" in pick, pick  # offered as the default
    assert got["applied"] == "true"
    assert got["saved"] == "1"
    assert got["diagnostics_after_fix"] == "2"
    assert got["types_after_fix"] == "eglot-error,eglot-error"
    assert got["stopped"] == "true"
    assert term.proc.returncode == 0
    text = f.read_text()
    assert "%assumed_5 = util.assume.int %5<umin = 0, umax = 76> : index" in text
    check = subprocess.run([sys.executable, "-m", "mlir_lsp_asserts", "--check", "--select", "MLA001", str(f)],
                           capture_output=True, text=True)
    assert check.stdout.count("MLA001") == 2  # the other gather is still there


@pytest.mark.skipif(EMACS is None, reason="emacs not installed (Debian: apt-get install emacs-nox elpa-eglot)")
def test_emacs_config_byte_compiles_without_warnings(tmp_path):
    src = tmp_path / "mlir-lsp.el"
    shutil.copyfile(ROOT / "editors" / "emacs" / "mlir-lsp.el", src)
    p = subprocess.run([EMACS, "--batch", "--eval", "(setq byte-compile-error-on-warn t)",
                        "-f", "batch-byte-compile", str(src)], capture_output=True, text=True)
    assert p.returncode == 0 and "Warning" not in p.stderr, p.stderr

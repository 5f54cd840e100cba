"""SIGTERM and SIGHUP on the command line do what Ctrl-C does (issue 38): a count stopped
mid-compile kills its compiles, removes its `mlir-lsp-*` folders, says "stopped" in one line and
exits 128 + the signal's number (what `timeout` and a CI runner's cancel send)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import MODELS

ENCODER = MODELS / "sdxl_prompt_encoder.input.mlir"


def _processes_under(folder: Path) -> list[str]:
    """Command lines of the processes that name `folder` (the count's compiles write there)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(folder) in cmd:
            found.append(cmd)
    return found


def _wait(pred, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def _count_of_the_encoder(env, ignored: tuple[int, ...] = ()) -> subprocess.Popen:
    """`mlir-lsp --dispatch-count --what-if` of the encoder, the signals as a terminal's command
    has them (a test runner started in the background has SIGINT ignored, and its children
    inherit that), but for `ignored`, as `nohup` does."""

    def dispositions() -> None:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN if s in ignored else signal.SIG_DFL)

    return subprocess.Popen([sys.executable, "-m", "mlir_lsp_asserts", "--dispatch-count", "--what-if", "--no-cache",
                             str(ENCODER)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=dispositions)


def _wait_for_both_compiles(proc: subprocess.Popen, tmp: Path) -> None:
    # mid-count: both compiles (the count and the what-if's) running, their folders made
    started = _wait(lambda: len(list(tmp.glob("mlir-lsp-*"))) >= 2 and len(_processes_under(tmp)) >= 2, 120)
    assert started and proc.poll() is None, "the count ended before it could be stopped"


@pytest.mark.slow
def test_a_sighup_ignored_by_nohup_stays_ignored(tmp_path):
    """`nohup mlir-lsp --dispatch-count ...`: the hang-up the user asked to ignore does not stop
    the count (SIGTERM still does)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp), XDG_CACHE_HOME=str(tmp_path / "cache"))
    proc = _count_of_the_encoder(env, ignored=(signal.SIGHUP,))
    try:
        _wait_for_both_compiles(proc, tmp)
        proc.send_signal(signal.SIGHUP)
        assert not _wait(lambda: proc.poll() is not None, 2.0), "SIGHUP stopped a count started under nohup"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 143 and err.decode().strip().splitlines()[-1] == "mlir-lsp: stopped (SIGTERM)"
    assert list(tmp.glob("mlir-lsp*")) == []


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_mid_count_stops_the_compiles_and_removes_the_folders(tmp_path, sig):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp), XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.pop("CI", None)
    proc = _count_of_the_encoder(env)
    try:
        _wait_for_both_compiles(proc, tmp)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    text = err.decode()
    assert proc.returncode == 128 + sig, text
    assert text.strip().splitlines()[-1] == f"mlir-lsp: stopped ({signal.Signals(sig).name})", text
    assert "Traceback" not in text
    assert out == b""
    assert list(tmp.glob("mlir-lsp*")) == []  # no folder, no partial dispatch-creation.mlir
    assert _processes_under(tmp) == []  # no iree-compile left

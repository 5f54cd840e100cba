"""Helpers for the fix tests (test_fix_golden.py, test_fix_cli.py, test_fix_compile.py).

Everything here drives the real tools: the `mlir-lsp` CLI as a subprocess, IREE's real parser
(`iree.compiler.ir`) and `iree-opt` / `iree-compile` from the venv.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
from itertools import pairwise
from pathlib import Path

from conftest import BIN, run_folder

# One `flow.dispatch.workgroups` op per dispatch at --compile-to=dispatch-creation; the op name is
# followed by its operand list `(`, a workload `[` or (never in practice) whitespace.
FLOW_DISPATCH = re.compile(r"(?<![\w.])flow\.dispatch\.workgroups[\s\[(]")
GFX942 = ("--iree-hal-target-device=hip", "--iree-rocm-target=gfx942")


def copy_to(src: Path, dirpath: Path, name: str | None = None, mode: int = 0o644) -> Path:
    """A writable copy (the shared fixtures are read-only, and copying keeps the bytes only)."""
    dst = dirpath / (name or src.name)
    shutil.copyfile(src, dst)
    os.chmod(dst, mode)
    return dst


def real_parse_error(text: str | bytes) -> str | None:
    """None when IREE's real parser accepts and verifies the text, else its diagnostic."""
    from iree.compiler import ir

    ctx = ir.Context()
    try:
        module = ir.Module.parse(text, ctx)
    except Exception as e:  # noqa: BLE001 - MLIRError; the message is what we want
        return str(e)
    if not module.operation.verify():
        return "verification failed"
    return None


def iree_opt(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "iree-opt"), str(path), *extra, "-o", os.devnull],
                          capture_output=True, text=True, timeout=300)


def iree_opt_print(path: Path) -> str:
    p = subprocess.run([str(BIN / "iree-opt"), str(path)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


def flow_dispatch_count(path: Path, workdir: Path, flags: tuple[str, ...] = GFX942) -> int:
    """`flow.dispatch.workgroups` ops after iree-compile (for gfx942) to dispatch-creation. The
    raw compiler runs once per run for a text and flags (the prompt encoder, fixed or not, is
    counted by several tests): the count is kept in the run's folder (conftest.run_folder), under
    a lock, so that the other xdist worker waits for it instead of compiling it too."""
    key = hashlib.sha256("\0".join(flags).encode() + b"\0" + path.read_bytes()).hexdigest()
    kept = run_folder() / "raw-flow-counts" / key
    kept.parent.mkdir(exist_ok=True)
    with open(kept.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if kept.exists():
            return int(kept.read_text())
        out = workdir / f"{path.name}.dispatch-creation.mlir"
        p = subprocess.run([str(BIN / "iree-compile"), str(path), *flags, "--compile-to=dispatch-creation",
                            "-o", str(out)], capture_output=True, text=True, timeout=900)
        assert p.returncode == 0, p.stderr[-3000:]
        n = len(FLOW_DISPATCH.findall(out.read_text(encoding="utf-8")))
        kept.write_text(str(n))
        return n


def lsp_offset(text: str, line: int, character: int) -> int:
    """Offset of an LSP position (0-based line, UTF-16 character) in `text`."""
    start = 0
    for _ in range(line):
        nl = text.find("\n", start)
        assert nl != -1, f"line {line} is past the end of the text"
        start = nl + 1
    end = text.find("\n", start)
    seg = text[start:len(text) if end == -1 else end]
    units = 0
    for i, ch in enumerate(seg):
        if units >= character:
            return start + i
        units += 2 if ord(ch) > 0xFFFF else 1
    assert units >= character, f"character {character} is past the end of line {line}"
    return start + len(seg)


def apply_lsp_edits(text: str, edits: list[dict]) -> str:
    """Apply one fix's JSON edits (`{"range", "newText"}`, LSP positions) like an editor would."""
    spans = []
    for e in edits:
        r = e["range"]
        a = lsp_offset(text, r["start"]["line"], r["start"]["character"])
        b = lsp_offset(text, r["end"]["line"], r["end"]["character"])
        assert a <= b, e
        spans.append((a, b, e["newText"]))
    spans.sort(key=lambda s: (s[0], s[1]))
    for (_a1, b1, _), (a2, _b2, _) in pairwise(spans):
        assert b1 <= a2, f"overlapping edits in one fix: {spans}"
    for a, b, new in reversed(spans):
        text = text[:a] + new + text[b:]
    return text

"""What the compatibility suite needs of the IREE release installed in this venv: its own tools
(iree-compile, iree-opt), its own parser, its own flag names. Nothing here knows another
release's numbers: every expected count comes from a raw run of this release's iree-compile."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
IREE_COMPILE = BIN / "iree-compile"
IREE_OPT = BIN / "iree-opt"
WORKGROUPS = re.compile(r"^\s*(?:%[\w#:]+(?:, %[\w#:]+)* = )?flow\.dispatch\.workgroups\b", re.M)


def iree_version() -> str:
    out = subprocess.run([str(IREE_COMPILE), "--version"], capture_output=True, text=True, timeout=60, check=True)
    m = re.search(r"compiler version (\S+)", out.stdout)
    assert m, out.stdout
    return m.group(1)


def known_flags() -> str:
    return subprocess.run([str(IREE_COMPILE), "--help-list-hidden"], capture_output=True, text=True,
                          timeout=60, check=True).stdout


def gfx942_flags() -> list[str]:
    """gfx942 as this release names it (3.13: --iree-rocm-target; 3.3 and 3.8: --iree-hip-target)."""
    name = "iree-rocm-target" if re.search(r"^\s+--iree-rocm-target=", known_flags(), re.M) else "iree-hip-target"
    return ["--iree-hal-target-device=hip", f"--{name}=gfx942"]


def raw_dispatches(src: Path, flags: list[str], tmp: Path) -> int | str:
    """`flow.dispatch.workgroups` ops in this release's own `--compile-to=dispatch-creation` output,
    or the compiler's first error line when it fails."""
    out = tmp / (src.stem + ".dispatch-creation.mlir")
    p = subprocess.run([str(IREE_COMPILE), str(src), *flags, "--compile-to=dispatch-creation", "-o", str(out)],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return next((ln for ln in p.stderr.splitlines() if "error:" in ln), p.stderr.strip()[:300])
    return len(WORKGROUPS.findall(out.read_text()))


def parse_error(path: Path) -> str | None:
    """None when this release's iree-opt reads `path`, else its first error line."""
    p = subprocess.run([str(IREE_OPT), str(path), "-o", "/dev/null"], capture_output=True, text=True, timeout=300)
    if p.returncode == 0:
        return None
    return next((ln.strip() for ln in p.stderr.splitlines() if "error:" in ln), p.stderr.strip()[:300])


def readable_or_skip(path: Path) -> Path:
    """`path` when this release's parser reads it; else the test is skipped with the parser's reason
    (a fixture printed by a newer release, e.g. 3.13's `iree_linalg_ext.attention` form)."""
    err = parse_error(path)
    if err:
        pytest.skip(f"iree-compile {iree_version()} cannot read {path.name}: {err}")
    return path

"""The action's first step: mlir-lsp installed into a venv of its own ($RUNNER_TEMP/mlir-lsp-action),
with the IREE release asked for pinned beside it; the venv's bin/ added to $GITHUB_PATH, so that
later steps of the job can run `mlir-lsp` too.

Inputs, from the environment only (action.yml): INPUT_VERSION (empty: the action's own checkout,
$GITHUB_ACTION_PATH; a version: mlir-lsp-asserts==VERSION; else one pip requirement),
INPUT_IREE_VERSION (empty, or a release: 3.8.0, 3.8.*). Nothing here goes through a shell.
Exit 2 with one `::error::` line when the inputs are bad or pip fails.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

RELEASE = re.compile(r"\d+(\.\d+){0,2}(\.\*)?")
VERSION = re.compile(r"\d+(\.\d+)*([a-z]+\d*)?(\.post\d+|\.dev\d+)?")


def fail(message: str) -> int:
    print(f"::error title=mlir-lsp action::{escape(message)}")
    return 2


def escape(text: str) -> str:
    """A workflow command's message: %, CR and LF escaped as the runner reads them."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def venv_dir() -> Path:
    return Path(os.environ.get("RUNNER_TEMP") or tempfile.gettempdir()) / "mlir-lsp-action"


def requirement(version: str, action_path: str) -> str | None:
    if not version:
        return action_path or None
    if VERSION.fullmatch(version):
        return f"mlir-lsp-asserts=={version}"
    return version


def pinned(asked: str, got: str) -> bool:
    """Whether the release pip installed is the one `iree-base-compiler==asked` pins, as PEP 440
    compares: `3.8.*` is any 3.8 release, and `3.8` is 3.8.0 (the shorter release padded with
    zeros), so `3.13` is met by 3.13.0."""
    if asked.endswith(".*"):
        return got.startswith(asked[:-1])
    if not re.fullmatch(r"\d+(\.\d+)*", got):
        return False
    a, g = ([int(x) for x in v.split(".")] for v in (asked, got))
    width = max(len(a), len(g))
    return a + [0] * (width - len(a)) == g + [0] * (width - len(g))


def main() -> int:
    version = os.environ.get("INPUT_VERSION", "").strip()
    iree = os.environ.get("INPUT_IREE_VERSION", "").strip()
    action_path = os.environ.get("GITHUB_ACTION_PATH", "")
    if iree and not RELEASE.fullmatch(iree):
        return fail(f"iree-version: {iree!r} is not a release number (3.8.0, 3.8.*)")
    req = requirement(version, action_path)
    if req is None:
        return fail("version is empty and GITHUB_ACTION_PATH is not set: nothing to install")
    if req.startswith("-"):  # one requirement, never an option of pip's
        return fail(f"version: {version!r} is not a version or a requirement")
    venv = venv_dir()
    shutil.rmtree(venv, ignore_errors=True)
    made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
    if made.returncode != 0:  # no venv module (Debian's python3 without python3-venv), a bad RUNNER_TEMP
        why = (made.stderr.strip() or made.stdout.strip() or f"exit {made.returncode}").splitlines()[-1]
        return fail(f"could not make a venv in {venv}: {why}")
    py = str(venv / "bin" / "python")
    pins = [f"iree-base-compiler=={iree}"] if iree else []
    pip = [py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input"]
    print(f"mlir-lsp action: pip install {req} {' '.join(pins)} into {venv}", flush=True)
    if pins and subprocess.run([*pip, *pins]).returncode != 0:  # the pinned release first, as a project has it
        return fail(f"pip could not install {pins[0]}")
    if subprocess.run([*pip, req, *pins]).returncode != 0:
        return fail(f"pip could not install {req}")
    if iree:
        got = subprocess.run([py, "-c", "from importlib.metadata import version; print(version('iree-base-compiler'))"],
                             capture_output=True, text=True).stdout.strip()
        if not pinned(iree, got):
            return fail(f"pip installed iree-base-compiler {got}, not the {iree} asked for")
    path_file = os.environ.get("GITHUB_PATH")
    if path_file:
        with open(path_file, "a", encoding="utf-8") as f:
            f.write(f"{venv / 'bin'}\n")
    return subprocess.run([str(venv / "bin" / "mlir-lsp"), "--version"]).returncode


if __name__ == "__main__":
    sys.exit(main())

"""The VS Code extension finds its server with no setting (issue 36, item 3), in code-server:
(a) a folder whose `.venv` holds the package shows the example's 4 findings; (b) a folder whose
`venv` lacks it gets the offer to install it (mlirLsp.server.installSpec names a wheel file in the
folder), pip runs, then the findings show; (c) in Restricted Mode neither venv is run and the
extension says why it waits, until the folder is trusted.

The venvs: the package's wheel (dist/'s when `make dist` wrote one, else built from a copy of the
sources into a temporary folder) installed with `--no-deps` into a fresh venv (pip's own, from
ensurepip). Its dependencies come from this checkout's .venv through a .pth file naming a folder
of links to that venv's site-packages, without mlir-lsp itself (its editable install) and pip:
the venv sees iree-base-compiler, pygls... as installed and not the package (and links to
iree-compile and iree-opt in its bin/, where their install puts them). code-server runs
with PATH holding no mlir-lsp. Screenshots go to tests/artifacts/vscode-find-server-*/ (ignored).
Same set-up as tests/test_vscode_e2e.py (`make vscode-setup`, Debian's chromium)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import REPO
from tests.test_vscode_e2e import drive, tools  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.vscode, pytest.mark.e2e]

EXAMPLE = REPO / "examples" / "hoisted_gather.mlir"
ARTIFACTS = REPO / "tests" / "artifacts"
# What code-server's extension host sees on PATH besides node: the system's, no mlir-lsp in it.
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
# No mlirLsp setting at all (the harness's server path and trace left out); the workspace scan off
# would be a setting too, so it stays on (the folder holds one .mlir file).
NO_SETTINGS = {"mlirLsp.server.path": None, "mlirLsp.trace.server": None}
NOT_OURS = ("mlir_lsp_asserts", "__editable__", "pip", "setuptools", "_distutils_hack", "distutils-precedence.pth")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The package's wheel: the release's (dist/) or one built from a copy of the sources."""
    released = sorted((REPO / "dist").glob("mlir_lsp_asserts-*.whl"))
    if released:
        return released[-1]
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(REPO / name, src / name)
    shutil.copytree(REPO / "mlir_lsp_asserts", src / "mlir_lsp_asserts",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    str(src), "-w", str(tmp / "out")], check=True, capture_output=True, timeout=300)
    (built,) = (tmp / "out").glob("mlir_lsp_asserts-*.whl")
    return built


@pytest.fixture(scope="module")
def deps(tmp_path_factory) -> Path:
    """A folder of links to this venv's site-packages, mlir-lsp and pip left out."""
    farm = tmp_path_factory.mktemp("deps")
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():
        if not entry.name.startswith(NOT_OURS) and entry.suffix != ".pth":
            (farm / entry.name).symlink_to(entry)
    return farm


def make_venv(where: Path, deps: Path, wheel: Path | None = None, marker: Path | None = None) -> Path:
    """A venv at `where` with `deps` on its path and, given `wheel`, the package; given `marker`,
    its python leaves a line there each time it is run. Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, capture_output=True, timeout=300)
    python = where / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    (Path(site) / "_mlir_lsp_test_deps.pth").write_text(f"{deps}\n")
    for tool in ("iree-compile", "iree-opt"):  # where iree-base-compiler's install puts them
        (where / "bin" / tool).symlink_to(Path(sys.executable).parent / tool)
    if wheel is not None:
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--disable-pip-version-check",
                        str(wheel)], check=True, capture_output=True, timeout=300)
    if marker is not None:
        # python-real keeps the venv's link: run by that name, Python still finds the venv's pyvenv.cfg.
        python.rename(where / "bin" / "python-real")
        python.write_text(f'#!/bin/sh\necho "$0 $*" >> "{marker}"\nexec "$(dirname "$0")/python-real" "$@"\n')
        python.chmod(0o755)
    return python


def imports_package(python: Path, cwd: Path) -> bool:
    return subprocess.run([str(python), "-c", "import mlir_lsp_asserts"], cwd=cwd, capture_output=True).returncode == 0


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copyfile(EXAMPLE, ws / EXAMPLE.name)
    return ws


def test_a_venv_holding_the_package_with_no_settings(tools, wheel, deps, tmp_path):  # noqa: F811
    ws = workspace(tmp_path)
    python = make_venv(ws / ".venv", deps, wheel)
    assert imports_package(python, ws) and shutil.which("mlir-lsp", path=SYSTEM_PATH) is None
    artifacts = ARTIFACTS / "vscode-find-server-venv"
    seen, _ = drive(tmp_path, ws, artifacts, NO_SETTINGS, {"scenario": "findServer", "file": str(ws / EXAMPLE.name)},
                    path=SYSTEM_PATH)

    assert len(seen["problems"]) == 4, seen["problems"]
    log = "\n".join(seen["log"])
    # Each step of the lookup is in the log: no Python extension here, then the workspace's .venv.
    no_python_extension = "the Python extension (ms-python.python) is not installed"
    assert f"[server lookup] the Python extension's interpreter: {no_python_extension}" in log, log
    assert f"[server] {python} -m mlir_lsp_asserts (from the workspace's .venv)" in log, log
    # The language status item says so too.
    assert "mlir-lsp: running, from the workspace's .venv" in seen.get("languageStatus", ""), seen
    assert (artifacts / "1-venv-findings.png").stat().st_size > 10_000


def test_b_venv_without_the_package_gets_the_install_offer(tools, wheel, deps, tmp_path):  # noqa: F811
    ws = workspace(tmp_path)
    python = make_venv(ws / "venv", deps)
    assert not imports_package(python, ws)
    # The team's setting: install this wheel file (a path in the folder).
    (ws / "wheels").mkdir()
    shutil.copyfile(wheel, ws / "wheels" / wheel.name)
    (ws / ".vscode").mkdir()
    (ws / ".vscode" / "settings.json").write_text(f'{{"mlirLsp.server.installSpec": "wheels/{wheel.name}"}}')
    artifacts = ARTIFACTS / "vscode-find-server-install"
    seen, _ = drive(tmp_path, ws, artifacts, NO_SETTINGS, {"scenario": "findServer", "file": str(ws / EXAMPLE.name),
                                                           "offer": True}, path=SYSTEM_PATH)

    assert f"the workspace's venv ({python}) does not have the mlir-lsp-asserts package" in seen["offer"], seen["offer"]
    assert f"Install wheels/{wheel.name} there with pip?" in seen["offer"], seen["offer"]
    log = "\n".join(seen["log"])
    assert f"[install] {python} -m pip install --disable-pip-version-check {ws / 'wheels' / wheel.name}" in log, log
    assert "[install] Successfully installed mlir-lsp-asserts" in log, log
    assert f"[server] {python} -m mlir_lsp_asserts (from the workspace's venv)" in log, log
    assert imports_package(python, ws)
    assert len(seen["problems"]) == 4, seen["problems"]
    for name in ("1-install-offer", "3-installed-findings"):
        assert (artifacts / f"{name}.png").stat().st_size > 10_000


def test_c_restricted_mode_runs_neither_venv(tools, wheel, deps, tmp_path):  # noqa: F811
    ws = workspace(tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()
    with_pkg = make_venv(ws / ".venv", deps, wheel, marker=marks / "dot-venv-was-run")
    without = make_venv(ws / "venv", deps, marker=marks / "venv-was-run")
    (marks / "dot-venv-was-run").unlink(missing_ok=True)  # (pip's run at set-up)
    artifacts = ARTIFACTS / "vscode-find-server-restricted"
    seen, _ = drive(tmp_path, ws, artifacts, NO_SETTINGS,
                    {"scenario": "findServer", "file": str(ws / EXAMPLE.name), "restricted": True,
                     "markers": [str(marks / "dot-venv-was-run"), str(marks / "venv-was-run")]},
                    restricted=True, path=SYSTEM_PATH)

    # Untrusted: the lookup ended without running either venv, and the extension said why it waits.
    assert seen["markersUntrusted"] == [], seen["markersUntrusted"]
    assert f"waiting for this folder to be trusted: its {with_pkg} and {without} are run only in a trusted folder" \
        in seen["waitingNotice"], seen["waitingNotice"]
    assert any("not run in Restricted Mode" in line for line in seen["logUntrusted"]), seen["logUntrusted"]
    # Trusted: the .venv (the first found, with the package) runs the server; the findings show.
    assert seen["markers"] == [str(marks / "dot-venv-was-run")], seen["markers"]
    assert len(seen["problems"]) == 4, seen["problems"]
    for name in ("1-restricted-mode-waits", "2-trusted-findings"):
        assert (artifacts / f"{name}.png").stat().st_size > 10_000

"""What a release needs of the checkout: `mlir-lsp --version` as a bug report's first lines, one
version number for the wheel, the sdist and the .vsix, and the `budget` of a count's JSON that the
GitHub Action's summary reads. (`make dist` and `make smoke` test the artifacts themselves.)"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import mlir_lsp_asserts
from conftest import BIN, REPRO, run_cli, write

ROOT = Path(__file__).resolve().parents[1]


def test_version_names_the_compiler_its_release_and_the_python():
    r = run_cli("--version")
    assert r.returncode == 0 and r.stderr == ""
    lines = r.stdout.splitlines()
    assert lines[0] == f"mlir-lsp {mlir_lsp_asserts.__version__}"
    m = re.fullmatch(r"iree-compile: (\S+) \((\S+)\)", lines[1])
    assert m, lines[1]
    raw = subprocess.run([m.group(1), "--version"], capture_output=True, text=True, timeout=60).stdout
    assert f"compiler version {m.group(2)}" in raw  # the binary it names reports that release
    assert re.fullmatch(r"iree-base-compiler \(bindings\): 3\.\d+\.\d+", lines[2])
    assert lines[3] == f"python: {sys.version.split()[0]} ({sys.executable})"


def test_version_without_any_compiler_says_not_found(tmp_path):
    """A Python with no iree-compile beside it and none on PATH: a line, exit 0, no traceback."""
    python = tmp_path / "bin" / "python3"
    python.parent.mkdir()
    python.symlink_to(os.path.realpath(sys.executable))
    env = {"PATH": str(python.parent) + os.pathsep + "/usr/bin:/bin", "PYTHONNOUSERSITE": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]]),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    assert shutil.which("iree-compile", path=env["PATH"]) is None
    p = subprocess.run([str(python), "-m", "mlir_lsp_asserts", "--version"], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=60)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    lines = p.stdout.splitlines()
    assert lines[1].startswith("iree-compile: not found (tried: ") and str(python.parent / "iree-compile") in lines[1]
    assert lines[3] == f"python: {sys.version.split()[0]} ({python})"
    configured = run_cli("--version", "--compiler", tmp_path / "nope")
    assert configured.returncode == 0
    assert configured.stdout.splitlines()[1] == f"iree-compile: not found at the configured path {tmp_path / 'nope'}"


def test_one_version_for_the_wheel_the_sdist_and_the_vsix():
    """pyproject.toml has no version of its own (it reads the package's), and the .vsix is built
    with that version given to vsce (Makefile: dist), not package.json's."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "mlir_lsp_asserts.__version__"}
    made = subprocess.run(["make", "-s", "-n", "dist"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    version = mlir_lsp_asserts.__version__
    assert f"package -- {version} --no-git-tag-version --no-update-package-json" in made.stdout, made.stdout
    assert f"dist/mlir-lsp-{version}.vsix" in made.stdout
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## [{version}] - " in changelog


def test_count_json_says_the_budget_the_change_and_the_new_dispatches(tmp_path):
    """A baseline made from the fixed repro (3 dispatches, with its attribution), the unfixed one
    counted against it: +1, over, and the new dispatch named."""
    model = write(tmp_path, "model.mlir", REPRO.read_text())
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    assert run_cli("--check", "--fix", "-q", model, cwd=tmp_path, env=env).returncode in (0, 1)
    base = tmp_path / "base.json"
    made = run_cli("--dispatch-count", "--baseline", base, "--update-baseline", "model.mlir", cwd=tmp_path, env=env)
    assert made.returncode == 0, made.stderr
    model.write_text(REPRO.read_text())
    r = run_cli("--dispatch-count", "--output-format", "json", "--baseline", base, "--max-dispatches", "9",
                "model.mlir", cwd=tmp_path, env=env)
    assert r.returncode == 1
    (item,) = json.loads(r.stdout)
    assert item["budget"] == {"passed": False, "max_dispatches": 9, "new_dispatches": ["_initializer_1_dispatch_0"],
                              "baseline": {"file": str(base), "level": "flow", "count": 3, "change": 1}}
    plain = run_cli("--dispatch-count", "--output-format", "json", "model.mlir", cwd=tmp_path, env=env)
    assert json.loads(plain.stdout)[0]["budget"] == {"passed": True, "max_dispatches": None, "baseline": None,
                                                     "new_dispatches": None}


def test_console_script_reports_the_same_version():
    p = subprocess.run([str(BIN / "mlir-lsp"), "--version"], capture_output=True, text=True, timeout=60)
    assert p.stdout.splitlines()[0] == f"mlir-lsp {mlir_lsp_asserts.__version__}"

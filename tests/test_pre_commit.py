"""The hooks of .pre-commit-hooks.yaml, run by the real pre-commit on a temporary git repository.

pre-commit clones this checkout (a snapshot of the working tree, committed in a temporary
repository, so uncommitted changes are what is tested) and builds the hooks' virtualenv from
pyproject.toml with pip, iree-base-compiler included: ~30 s once for the module (see the
README's "Pre-commit" section for the figures), then about a second per hook run: the tests
that use it are slow. The `language: system` variant of the README runs the mlir-lsp of this
venv and needs no build.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

BAD = (REPO / "examples" / "hoisted_gather.mlir").read_text()
CLEAN = """\
func.func @double(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
"""
PRE_COMMIT = [sys.executable, "-m", "pre_commit"]
# one worker for the module: its hook install (the module's fixtures) is made once
# e2e: pre-commit builds its hook environment, pip-installing this package (~25 s)
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("pre-commit")]


def asserts(text: str) -> int:
    return len(re.findall(r"^\s*cf\.assert ", text, re.M))


def _git(cwd: Path, *args: str, env: dict) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    home = tmp_path_factory.mktemp("pre-commit-home")
    e = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    e.pop("CI", None)
    e.update(PRE_COMMIT_HOME=str(home / "cache"), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(home / "gitconfig"),
             GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
             GIT_COMMITTER_EMAIL="t@example.com")
    # the hooks must find their own mlir-lsp, not this venv's
    e["PATH"] = os.pathsep.join(p for p in e["PATH"].split(os.pathsep) if Path(p) != Path(sys.executable).parent)
    (home / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    return e


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory, env) -> tuple[Path, str]:
    """This checkout's working tree (tracked files and untracked ones git does not ignore),
    committed in a repository of its own: (path, commit)."""
    dst = tmp_path_factory.mktemp("hook-repo")
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                           capture_output=True, text=True).stdout.split("\0")
    for rel in filter(None, files):
        src = REPO / rel
        if src.is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)
    _git(dst, "init", "-q", env=env)
    _git(dst, "add", "-A", env=env)
    _git(dst, "commit", "-q", "-m", "snapshot", env=env)
    repo = dst, _git(dst, "rev-parse", "HEAD", env=env).strip()
    # The hooks' virtualenv, built once here (pre-commit keeps it by repository and commit).
    proj = make_project(tmp_path_factory.mktemp("install"), repo, env, "mlir-lsp-check", "mlir-lsp-fix")
    r = subprocess.run([*PRE_COMMIT, "install-hooks"], cwd=proj, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    return repo


def make_project(tmp_path: Path, hook_repo, env, *hook_ids: str, args: list[str] | None = None) -> Path:
    """A git repository whose .pre-commit-config.yaml uses these hooks of `hook_repo`."""
    proj = tmp_path / "project"
    proj.mkdir()
    _git(proj, "init", "-q", env=env)
    repo, rev = hook_repo
    lines = ["repos:", f"- repo: {repo}", f"  rev: {rev}", "  hooks:"]
    for hook_id in hook_ids:
        lines.append(f"  - id: {hook_id}")
        if args:
            lines.append(f"    args: [{', '.join(args)}]")
    (proj / ".pre-commit-config.yaml").write_text("\n".join(lines) + "\n")
    _git(proj, "add", ".pre-commit-config.yaml", env=env)
    return proj


def run(proj: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*PRE_COMMIT, "run", *args], cwd=proj, env=env, capture_output=True, text=True,
                          timeout=900)


def stage(proj: Path, env: dict, name: str, text: str) -> Path:
    p = proj / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    _git(proj, "add", name, env=env)
    return p


@pytest.mark.slow
def test_check_hook_fails_on_an_assert_in_a_linalg_body(tmp_path, hook_repo, env):
    proj = make_project(tmp_path, hook_repo, env, "mlir-lsp-check")
    stage(proj, env, "model/gather.mlir", BAD)
    r = run(proj, env, "mlir-lsp-check")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "mlir lsp check" in r.stdout.replace("-", " ").lower() and "Failed" in r.stdout
    assert "model/gather.mlir:18:5: MLA001 cf.assert inside a `linalg.generic` region" in r.stdout
    assert r.stdout.count(": MLA001 ") == 4
    assert (proj / "model" / "gather.mlir").read_text() == BAD  # the check writes nothing


@pytest.mark.slow
def test_fix_hook_rewrites_then_passes(tmp_path, hook_repo, env):
    proj = make_project(tmp_path, hook_repo, env, "mlir-lsp-fix")
    f = stage(proj, env, "gather.mlir", BAD)
    first = run(proj, env, "mlir-lsp-fix")
    assert first.returncode == 1, first.stdout + first.stderr
    assert "files were modified by this hook" in first.stdout
    fixed = f.read_text()
    assert asserts(BAD) == 4 and asserts(fixed) == 0 and fixed.count("linalg.generic") == 2
    assert "tensor.extract %w1[%5, %6]" in fixed  # the gather itself is kept
    _git(proj, "add", "gather.mlir", env=env)  # what a user does after a fixing hook
    second = run(proj, env, "mlir-lsp-fix")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "Passed" in second.stdout and f.read_text() == fixed


@pytest.mark.slow
def test_fix_hook_takes_the_assume_mode_as_an_argument(tmp_path, hook_repo, env):
    proj = make_project(tmp_path, hook_repo, env, "mlir-lsp-fix", args=["--fix-mode=assume"])
    f = stage(proj, env, "gather.mlir", BAD)
    r = run(proj, env, "mlir-lsp-fix")
    assert r.returncode == 1 and "files were modified by this hook" in r.stdout
    text = f.read_text()
    assert asserts(text) == 0 and "util.assume.int" in text and "<umin = 0, umax = 76>" in text


@pytest.mark.slow
def test_clean_files_pass_and_other_files_are_skipped(tmp_path, hook_repo, env):
    proj = make_project(tmp_path, hook_repo, env, "mlir-lsp-check", "mlir-lsp-fix")
    stage(proj, env, "notes.txt", "cf.assert in a text file is not MLIR\n")
    skipped = run(proj, env)
    assert skipped.returncode == 0 and skipped.stdout.count("(no files to check)Skipped") == 2, skipped.stdout
    f = stage(proj, env, "double.mlir", CLEAN)
    ok = run(proj, env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.count("Passed") == 2 and f.read_text() == CLEAN


@pytest.mark.slow
def test_the_configs_exclude_applies_to_staged_files(tmp_path, hook_repo, env):
    """pre-commit names every staged file; the config's exclude still keeps vendored IR out."""
    proj = make_project(tmp_path, hook_repo, env, "mlir-lsp-check")
    stage(proj, env, "mlir-lsp.toml", 'exclude = ["third_party/*"]\n')
    stage(proj, env, "third_party/vendored.mlir", BAD)
    r = run(proj, env, "mlir-lsp-check")
    assert r.returncode == 0 and "Passed" in r.stdout, r.stdout + r.stderr
    stage(proj, env, "model/gather.mlir", BAD)
    r = run(proj, env, "mlir-lsp-check")
    assert r.returncode == 1 and "model/gather.mlir:18:5: MLA001" in r.stdout and "third_party" not in r.stdout


@pytest.mark.slow
def test_installed_hook_blocks_the_commit(tmp_path, hook_repo, env):
    """`pre-commit install`, then plain `git commit`: refused with the finding shown, accepted
    once the file is clean."""
    proj = make_project(tmp_path, hook_repo, env, "mlir-lsp-check")
    subprocess.run([*PRE_COMMIT, "install"], cwd=proj, env=env, check=True, capture_output=True)
    stage(proj, env, "gather.mlir", BAD)
    refused = subprocess.run(["git", "commit", "-m", "add gather"], cwd=proj, env=env, capture_output=True, text=True)
    assert refused.returncode == 1
    assert "gather.mlir:20:5: MLA001" in refused.stdout + refused.stderr
    assert subprocess.run(["git", "rev-parse", "--verify", "HEAD"], cwd=proj, env=env,
                          capture_output=True).returncode != 0  # nothing was committed
    stage(proj, env, "gather.mlir", CLEAN)
    done = subprocess.run(["git", "commit", "-m", "add gather"], cwd=proj, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "add gather" in _git(proj, "log", "--oneline", env=env)


def test_local_system_hook_uses_the_installed_mlir_lsp(tmp_path, env):
    """The README's `repo: local` variant: the mlir-lsp already on PATH, no virtualenv built."""
    proj = tmp_path / "project"
    proj.mkdir()
    _git(proj, "init", "-q", env=env)
    (proj / ".pre-commit-config.yaml").write_text(LOCAL_CONFIG)
    _git(proj, "add", ".pre-commit-config.yaml", env=env)
    stage(proj, env, "gather.mlir", BAD)
    own = dict(env, PATH=os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]]))
    r = run(proj, own)
    assert r.returncode == 1 and "gather.mlir:29:5: MLA001" in r.stdout, r.stdout + r.stderr
    stage(proj, env, "gather.mlir", CLEAN)
    assert run(proj, own).returncode == 0


LOCAL_CONFIG = """\
repos:
- repo: local
  hooks:
  - id: mlir-lsp-check
    name: mlir-lsp check
    entry: mlir-lsp --check --force-exclude
    language: system
    files: \\.mlir(bc)?$
    require_serial: true
"""

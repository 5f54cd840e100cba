"""Configuration (`[tool.mlir-lsp]` in pyproject.toml, `mlir-lsp.toml`, found by walking up from
the checked file; CLI flags over it) and suppression comments (`// mlir-lsp: ignore[...]`)."""

from __future__ import annotations

import json
import os

import pytest

from conftest import REPRO, run_cli, write
from mlir_lsp_asserts.checker import check_text

HOST = """func.func @mm(%a: index, %b: index) {
  %0 = arith.cmpi eq, %a, %b : index
  cf.assert %0, "mismatching contracting dimension for aten.mm"
  return
}
"""


@pytest.fixture
def project(tmp_path):
    """tmp/proj/src/deep/model.mlir with 4 MLA001 (repro) and 1 MLA003 (HOST)."""
    f = write(tmp_path, "proj/src/deep/model.mlir", REPRO.read_text() + "\n" + HOST)
    return tmp_path / "proj", f


def codes(res) -> list[str]:
    return [m["code"] for m in res.concise()]


def test_no_config_reports_everything(project):
    _, f = project
    assert codes(run_cli("--check", f)) == ["MLA001"] * 4 + ["MLA003"]


def test_pyproject_tool_table_found_walking_up(project):
    root, f = project
    write(root, "pyproject.toml", '[project]\nname = "x"\n\n[tool.mlir-lsp]\nignore = ["MLA001"]\n')
    r = run_cli("--check", f)
    assert codes(r) == ["MLA003"] and r.returncode == 1
    # also when run from elsewhere with a relative path
    r = run_cli("--check", "src/deep/model.mlir", cwd=root)
    assert codes(r) == ["MLA003"]


def test_mlir_lsp_toml_found_walking_up(project):
    root, f = project
    write(root, "src/mlir-lsp.toml", 'select = ["MLA001"]\n')
    assert codes(run_cli("--check", f)) == ["MLA001"] * 4


def test_pyproject_without_our_table_is_passed_over(project):
    root, f = project
    write(root, "mlir-lsp.toml", 'ignore = ["MLA003"]\n')
    write(root, "src/pyproject.toml", '[project]\nname = "unrelated"\n')
    assert codes(run_cli("--check", f)) == ["MLA001"] * 4


def test_nearest_config_wins_and_mlir_lsp_toml_beats_pyproject(project):
    root, f = project
    write(root, "mlir-lsp.toml", 'ignore = ["MLA003"]\n')
    write(root, "src/pyproject.toml", '[tool.mlir-lsp]\nignore = ["MLA001"]\n')
    assert codes(run_cli("--check", f)) == ["MLA003"]  # the nearer pyproject wins
    write(root, "src/mlir-lsp.toml", 'select = ["MLA001"]\n')
    assert codes(run_cli("--check", f)) == ["MLA001"] * 4  # same folder: mlir-lsp.toml wins


def test_severity_override(project):
    root, f = project
    write(root, "mlir-lsp.toml", '[severity]\nMLA003 = "error"\nMLA001 = "info"\n')
    data = json.loads(run_cli("--check", "--output-format", "json", f).stdout)
    assert [(d["code"], d["severity"]) for d in data] == [("MLA001", "information")] * 4 + [("MLA003", "error")]
    gh = run_cli("--check", "--output-format", "github", f).stdout.splitlines()
    assert gh[-1].startswith("::error ") and gh[0].startswith("::notice ")


def test_cli_flags_override_the_config(project):
    root, f = project
    write(root, "mlir-lsp.toml", 'ignore = ["MLA001"]\n')
    assert codes(run_cli("--check", f)) == ["MLA003"]
    # --select on the command line re-enables what the file ignores (as in ruff)
    assert codes(run_cli("--check", "--select", "MLA001", f)) == ["MLA001"] * 4
    assert codes(run_cli("--check", "--extend-select", "MLA001", f)) == ["MLA001"] * 4 + ["MLA003"]
    write(root, "mlir-lsp.toml", 'select = ["MLA003"]\n')
    r = run_cli("--check", "--ignore", "MLA003", f)
    assert codes(r) == [] and r.returncode == 0


def test_explicit_config_file(project, tmp_path):
    root, f = project
    write(root, "mlir-lsp.toml", 'ignore = ["MLA003"]\n')
    other = write(tmp_path, "elsewhere/strict.toml", 'select = ["MLA003"]\n')
    other = other.rename(other.with_name("mlir-lsp.toml"))
    assert codes(run_cli("--check", "--config", other, f)) == ["MLA003"]


@pytest.mark.parametrize("name,content,words", [
    ("mlir-lsp.toml", "select = [\n", ["invalid TOML"]),
    ("mlir-lsp.toml", 'selec = ["MLA001"]\n', ["unknown setting", "selec"]),
    ("mlir-lsp.toml", 'select = ["XYZ001"]\n', ["XYZ001"]),
    ("mlir-lsp.toml", '[severity]\nMLA001 = "loud"\n', ["severity", "loud"]),
    ("mlir-lsp.toml", 'fix-mode = "burn"\n', ["fix-mode", "burn"]),
    ("pyproject.toml", '[tool.mlir-lsp]\nignore = 3\n', ["ignore"]),
    # these raised AttributeError or RecursionError (a traceback, exit 1) or were skipped
    ("pyproject.toml", '[tool]\nmlir-lsp = 5\n', ["tool.mlir-lsp must be a table", "int"]),
    ("pyproject.toml", '[tool]\nmlir-lsp = ["x"]\n', ["tool.mlir-lsp must be a table", "list"]),
    ("pyproject.toml", '[tool.mlir-lsp]\nignore = ["MLA001"\n', ["invalid TOML"]),
    ("pyproject.toml", "[tool.mlir-lsp]\nselect = " + "[" * 5000 + "]" * 5000 + "\n", ["nested too deeply"]),
    ("mlir-lsp.toml", "select = " + "[" * 5000 + "]" * 5000 + "\n", ["nested too deeply"]),
    # every diagnostic's link, opened by the editor: no `command:` URI from a cloned repository
    ("mlir-lsp.toml", 'docs-base-url = "command:workbench.action.terminal.new"\n', ["docs-base-url", "command:"]),
    ("mlir-lsp.toml", 'docs-base-url = "https://x.org/a b"\n', ["docs-base-url", "without spaces"]),
])
def test_bad_config_is_one_clear_line_and_exit_2(project, name, content, words):
    root, f = project
    cfg = write(root, name, content)
    r = run_cli("--check", "--quiet", f)
    assert r.returncode == 2
    assert r.stdout == ""
    (err,) = r.error_lines()
    assert str(cfg) in err
    for w in words:
        assert w in err
    assert r.stderr.strip() == err  # nothing else: one line


# --- suppression comments ----------------------------------------------------------------------

# Blank lines keep each case from being "the line above" of the next one.
SUPPRESSED = """func.func @f(%c: i1) {
  cf.assert %c, "same line" // mlir-lsp: ignore[MLA003]
  // mlir-lsp: ignore[MLA003]
  cf.assert %c, "line above"
  cf.assert %c, "bare ignore" // mlir-lsp: ignore

  // mlir-lsp: ignore[MLA003]

  cf.assert %c, "comment two lines up: reported"
  cf.assert %c, "by rule name" // mlir-lsp: ignore[assert-on-host]

  cf.assert %c, "lower case" //mlir-lsp:ignore[mla003]

  cf.assert %c, "list" // mlir-lsp: ignore[MLA001, MLA003]

  cf.assert %c, "other code: reported" // mlir-lsp: ignore[MLA001]
  cf.assert %c, "plain: reported"
  return
}
"""


def test_suppression_comments():
    result = check_text(SUPPRESSED)
    assert [f.assert_message for f in result.findings] == [
        "comment two lines up: reported", "other code: reported", "plain: reported"]
    assert result.suppressed == 6


def test_suppression_in_linalg_region(repro_text):
    text = repro_text.replace('cf.assert %7, "index must be smaller than dim size"',
                              '// mlir-lsp: ignore[MLA001]\n    cf.assert %7, "index must be smaller than dim size"', 1)
    text = text.replace('cf.assert %8, "index must be larger or equal to 0"',
                        'cf.assert %8, "index must be larger or equal to 0" // mlir-lsp: ignore[MLA002]', 1)
    fs = check_text(text).findings
    assert [f.assert_message for f in fs] == [
        "index must be larger or equal to 0",  # wrong code: not suppressed
        "index must be smaller than dim size", "index must be larger or equal to 0"]


def test_suppression_through_the_cli(tmp_path):
    f = write(tmp_path, "s.mlir", HOST.replace('"mismatching contracting dimension for aten.mm"',
                                               '"m" // mlir-lsp: ignore[MLA003]'))
    r = run_cli("--check", f)
    assert r.returncode == 0 and r.stdout == ""


def test_trailing_suppression_does_not_leak_to_the_next_op():
    text = """func.func @f(%c: i1) {
  cf.assert %c, "suppressed" // mlir-lsp: ignore
  cf.assert %c, "must be reported"
  return
}
"""
    assert [f.assert_message for f in check_text(text).findings] == ["must be reported"]


@pytest.mark.parametrize("pattern", ["gen", "gen/", "./gen/*", "gen/*", "*/gen", "*/gen/*", "vendor", "*/vendor/*",
                                     "b.mlir", "*.mlir", "gen/deep/*", "nothing/*", "ABS/gen/*"])
def test_the_servers_exclude_is_the_cli_walks(tmp_path, monkeypatch, pattern):
    """The server's scan leaves out what `mlir-lsp --check .` run in the config's folder leaves
    out (files.excluded_by_config against files.discover), for every form of pattern the walk
    reads: a folder's name at any depth, a trailing slash, `./`, `*/`, a file name, an absolute
    pattern (as under `--check $PWD`)."""
    from mlir_lsp_asserts.files import discover, excluded_by_config

    root = tmp_path / "repo"
    files = ["a.mlir", "gen/b.mlir", "gen/deep/c.mlir", "src/vendor/d.mlir", "src/e.mlir"]
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("func.func @f() {\n  return\n}\n")
    config = root / "mlir-lsp.toml"
    pattern = pattern.replace("ABS", str(root))
    monkeypatch.chdir(root)
    top = str(root) if pattern.startswith(str(root)) else "."  # an absolute pattern: `--check $PWD`
    walked = {os.path.relpath(f, top) for f in discover([top], (pattern,))[0]}
    served = {name for name in files if not excluded_by_config(str(root / name), str(config), (pattern,))}
    assert served == walked
    assert len(walked) < len(files) or pattern == "nothing/*"  # each pattern but one leaves something out


def test_a_vendored_project_with_its_own_config_is_still_excluded_by_the_repositorys(tmp_path):
    """CI runs `mlir-lsp --check .` at the repository's root, whose exclude holds for a vendored
    project below with a config of its own; the server read only the nearest config."""
    from mlir_lsp_asserts.config import excludes_for
    from mlir_lsp_asserts.files import excluded_by_config

    write(tmp_path, "mlir-lsp.toml", 'exclude = ["third_party/*"]\n')
    write(tmp_path, "third_party/lib/mlir-lsp.toml", 'ignore = ["MLA003"]\n')
    vendored = write(tmp_path, "third_party/lib/e.mlir", "func.func @f() {\n  return\n}\n")
    own = write(tmp_path, "src/f.mlir", "func.func @f() {\n  return\n}\n")
    configs = excludes_for(str(vendored))
    assert [os.path.relpath(c, tmp_path) for c, _ in configs] == ["third_party/lib/mlir-lsp.toml", "mlir-lsp.toml"]
    assert any(excluded_by_config(str(vendored), c, ex) for c, ex in configs)
    assert not any(excluded_by_config(str(own), c, ex) for c, ex in excludes_for(str(own)))

"""Each mode imports what it uses and no more (issue 37): a fresh interpreter runs the command
line's entry with real arguments, then says which modules it loaded. A pre-commit `--check` of a
small file, `--version` or `--explain` must not pay for lark, pygls, the IREE bindings, the
dispatch counter or a TOML reader it does not use."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO, REPRO

# What no mode below uses: the LSP stack, the IREE bindings, the compiler and its counting, the
# workspace watcher, the grammar of single ops (the checker reads the usual forms itself).
NEVER = ("lark", "pygls", "lsprotocol", "iree", "watchdog", "mlir_lsp_asserts.dispatch", "mlir_lsp_asserts.server",
         "mlir_lsp_asserts.cli.dispatch", "mlir_lsp_asserts.cli.measured", "mlir_lsp_asserts.fixes.verify",
         "mlir_lsp_asserts.bytecode", "concurrent.futures.process", "multiprocessing")
# The checker and what only a check needs.
CHECKER = ("mlir_lsp_asserts.checker", "mlir_lsp_asserts.file_job", "mlir_lsp_asserts.fixes", "mlir_lsp_asserts.config")

_PROBE = textwrap.dedent("""
    import sys
    started = []  # processes started (forked, spawned, executed), seen by an audit hook
    sys.addaudithook(lambda ev, args: started.append(ev) if ev in (
        "subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "os.spawn", "os.system") else None)
    from mlir_lsp_asserts.cli import main
    try:
        code = main(sys.argv[1:])
    except SystemExit as e:  # --version and --help exit through argparse
        code = e.code
    sys.stdout.flush()
    modules = sorted(sys.modules)
    import json
    print("\\n@@" + json.dumps({"code": code, "modules": modules, "started": started}))
""")


def probe(*args: str, cwd) -> dict:
    """`mlir-lsp ARGS` run in a fresh interpreter in `cwd`: its exit code, stdout, the modules it
    loaded and the processes it started."""
    proc = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    out, _, tail = proc.stdout.rpartition("\n@@")
    return {**json.loads(tail), "stdout": out}


def loaded(*args: str, cwd) -> tuple[int, set[str], str]:
    """(exit code, modules loaded, stdout) of `mlir-lsp ARGS` run in a fresh interpreter in `cwd`."""
    got = probe(*args, cwd=cwd)
    return got["code"], set(got["modules"]), got["stdout"]


def offenders(modules: set[str], banned: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == b or m.startswith(b + ".") for b in banned))


@pytest.fixture
def project(tmp_path):
    """A folder with the example and no config file above it that names mlir-lsp."""
    (tmp_path / "model.mlir").write_text(REPRO.read_text(encoding="utf-8"), encoding="utf-8")
    return tmp_path


def test_check_of_mlir_text_loads_no_grammar_no_lsp_no_iree_no_toml(project):
    code, modules, out = loaded("--check", "--output-format", "json", "model.mlir", cwd=project)
    assert code == 1 and len(json.loads(out)) == 4  # the four asserts of the example, with their fixes
    assert all(f["fixes"] for f in json.loads(out))
    assert offenders(modules, NEVER + ("tomllib",)) == []


def test_a_check_of_many_small_files_starts_no_process(project):
    for i in range(12):  # more than the files that may go to worker processes, but small
        (project / f"f{i:02d}.mlir").write_text(REPRO.read_text(encoding="utf-8"), encoding="utf-8")
    got = probe("--check", "--output-format", "json", ".", cwd=project)
    assert got["code"] == 1 and len(json.loads(got["stdout"])) == 13 * 4
    assert got["started"] == []
    asked = probe("--check", "-j", "2", ".", cwd=project)  # worker processes when asked for
    assert asked["code"] == 1 and "os.fork" in asked["started"]


# What a concise check writes no JSON, no file and no help text for: json, tempfile (and shutil,
# random), and shutil through argparse's formatter (cli/main.py asks the terminal's width itself).
# Nor does it need dataclasses (with inspect, ast, dis: records.py makes its classes) or pathlib
# (with urllib.parse and ipaddress: config.py and files.py walk paths with os.path): ~18 ms.
# `--check PATH` builds no argparse parser (cli/plain_check.py; gettext and locale with it), and
# no module imports typing (records.py's NamedTuple and Protocol).
NOT_IN_A_CONCISE_CHECK = ("json", "tempfile", "shutil", "random", "importlib.metadata", "dataclasses", "inspect",
                          "pathlib", "urllib", "argparse", "gettext", "locale", "typing")


def test_a_concise_check_computes_no_fix(project):
    """The default output shows no fix: the fixes' code is not imported (the JSON output, above,
    shows them)."""
    code, modules, out = loaded("--check", "model.mlir", cwd=project)
    assert code == 1 and len(out.splitlines()) == 4
    assert offenders(modules, NEVER + ("tomllib", "mlir_lsp_asserts.fixes", "mlir_lsp_asserts.syntax.scope")) == []
    assert offenders(modules, NOT_IN_A_CONCISE_CHECK) == []
    code, modules, out = loaded("--check", "--statistics", "model.mlir", cwd=project)
    assert code == 1 and "[*]" in out and "mlir_lsp_asserts.fixes" in modules  # fixable, so computed


def test_a_pyproject_that_names_mlir_lsp_elsewhere_is_not_read_as_toml(project):
    """A project's pyproject.toml names mlir-lsp as a script or a dependency, not as our table:
    no TOML reader is loaded for it (config.py's `_MAYBE_OUR_TABLE`)."""
    (project / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["mlir-lsp-asserts"]\n\n'
                                            '[project.scripts]\nmlir-lsp = "x.cli:main"\n', encoding="utf-8")
    code, modules, out = loaded("--check", "model.mlir", cwd=project)
    assert code == 1 and len(out.splitlines()) == 4
    assert offenders(modules, ("tomllib",)) == []


@pytest.mark.parametrize("table", ['[tool.mlir-lsp]\nignore = ["MLA001"]', '[tool."mlir-lsp"]\nignore = ["MLA001"]',
                                   "[ tool . 'mlir-lsp' ]\nignore = ['MLA001']", 'tool.mlir-lsp.ignore = ["MLA001"]',
                                   '[tool]\nmlir-lsp = { ignore = ["MLA001"] }',
                                   'tool = { mlir-lsp = { ignore = ["MLA001"] } }',
                                   '[tool."mlir\\u002dlsp"]\nignore = ["MLA001"]'])
def test_every_way_of_writing_our_pyproject_table_is_read(project, table):
    (project / "pyproject.toml").write_text(f'{table}\n\n[project]\nname = "x"\n', encoding="utf-8")
    code, modules, out = loaded("--check", "model.mlir", cwd=project)
    assert code == 0 and out == ""  # MLA001 ignored: the table was read
    assert "tomllib" in modules


def test_check_reads_toml_when_a_config_file_is_there(project):
    (project / "mlir-lsp.toml").write_text('ignore = ["MLA001"]\n', encoding="utf-8")
    code, modules, _ = loaded("--check", "model.mlir", cwd=project)
    assert code == 0 and "tomllib" in modules
    assert offenders(modules, NEVER) == []


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("--explain", "MLA001"),
                                  ("--explain", "MLA001", "--output-format", "json")])
def test_version_help_and_explain_load_almost_nothing(project, args):
    if args[0] == "--version":
        loaded(*args, cwd=project)  # the compiler's release read once (its `--version` run), then cached
    code, modules, out = loaded(*args, cwd=project)
    assert code == 0 and out.strip()
    never = NEVER
    if args[0] == "--version":  # it names the iree-compile a count would run: the compiler finder, no bindings
        assert "iree-compile" in out and offenders(modules, ("iree.compiler",)) == []
        finder = {"iree", "mlir_lsp_asserts.dispatch", "mlir_lsp_asserts.dispatch.compiler_lookup",
                  "mlir_lsp_asserts.dispatch.cache_folder"}
        never = tuple(b for b in NEVER if b not in ("iree", "mlir_lsp_asserts.dispatch"))
        assert offenders(modules - finder, ("mlir_lsp_asserts.dispatch",)) == []
        # a cached release: no process started, nothing of the compiles' machinery
        assert offenders(modules, ("subprocess", "pathlib", "shutil", "tempfile", "json", "platform")) == []
    assert offenders(modules, never + CHECKER + ("tomllib",)) == []
    assert offenders(modules, ("mlir_lsp_asserts.syntax",)) == []  # a rule's page needs no reader
    if args[0] != "--explain":
        assert offenders(modules, ("mlir_lsp_asserts.rules",)) == []
    # the bindings' release is read from their dist-info, not through importlib.metadata (email, zipfile ...);
    # the rules, the flag profiles and the compiler's finder are built without dataclasses (and inspect)
    assert offenders(modules, ("importlib.metadata", "email", "dataclasses", "inspect")) == []
    if args in (("--version",), ("--explain", "MLA001")):  # the whole command line: no parser is built
        assert offenders(modules, ("argparse",)) == []
    if args == ("--explain", "MLA001"):  # a rule's page: not even typing or re
        assert offenders(modules, ("typing", "re", "contextlib")) == []
    if args == ("--version",):  # nor the release: no typing, re, enum, signal (no handler to install), hashlib
        assert offenders(modules, ("typing", "re", "enum", "signal", "hashlib", "_hashlib")) == []


def test_list_profiles_loads_no_compiler(project):
    code, modules, out = loaded("--list-profiles", cwd=project)
    assert code == 0 and "gfx942" in out
    assert offenders(modules, NEVER + ("mlir_lsp_asserts.checker", "mlir_lsp_asserts.fixes", "tomllib")) == []


def test_the_package_and_its_api_names_load_nothing_of_the_checker():
    proc = subprocess.run([sys.executable, "-c", "import sys, mlir_lsp_asserts as m; m.__all__; "
                           "print(sorted(k for k in sys.modules if k.startswith('mlir_lsp_asserts')))"],
                          capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.stdout.strip() == "['mlir_lsp_asserts']", proc.stdout + proc.stderr


def test_the_editable_install_is_a_path_not_an_import_hook():
    """`pip install -e .` (make setup) puts this checkout on sys.path through a plain `.pth` line
    (pyproject's `package-dir`), not setuptools' import hook that every start of the venv would
    run (pathlib, importlib.util ...). A wheel install has no such file: nothing to check then."""
    import sysconfig
    from pathlib import Path

    pths = sorted(Path(sysconfig.get_paths()["purelib"]).glob("__editable__*mlir_lsp_asserts*.pth"))
    if not pths:
        pytest.skip("mlir-lsp is not installed editable in this Python")
    lines = [ln for p in pths for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]
    assert [Path(ln).resolve() for ln in lines] == [REPO.resolve()], lines
    proc = subprocess.run([sys.executable, "-c", "import sys; print(sorted(sys.modules))"], capture_output=True,
                          text=True, timeout=60)
    assert "pathlib" not in json.loads(proc.stdout.replace("'", '"'))


@pytest.mark.parametrize("text", ["3.13.0", "3.3.0rc20250320", "IREE compiler version 3.13.0rc20261016 @ abc", "3.8",
                                  "v12.34.56.78", "1.", "1..2", "a1b2.3c", "12", "", "x3.x4.5", "3.13.", "3.13.x",
                                  "\u0663.\u0664.\u0665", "9\u00b2.1", "0003.010", "...5.6", "7.8.9.10.11",
                                  "1.2.3rc1.4"])
def test_a_release_is_read_as_the_pattern_read_it(text):
    """`parse_release` (a version string's `N.N[.N]`) no longer uses `re`, which `--version`
    would import for it: it reads each of these as the pattern did."""
    import re

    from mlir_lsp_asserts.iree_release import parse_release

    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    want = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None
    assert (tuple(parse_release(text)) if parse_release(text) else None) == want


@pytest.mark.parametrize("argv", [["--check", "model.mlir"], ["--check", "--force-exclude", "a.mlir", "b.mlirbc"],
                                  ["--check", "--quiet", "--no-progress", "--exit-zero", "--statistics", "x"],
                                  ["--check", "--fix", "--force-exclude", "a.mlir"], ["--check", "--diff", "dir/"],
                                  ["--check", "--check", "a b.mlir", ""], ["--check", "--fix", "--fix", "x=y.mlir"]])
def test_a_plain_check_line_reads_as_argparse_reads_it(argv):
    """`--check [switches] PATH...` skips argparse (start-up); what it gives is argparse's namespace."""
    from mlir_lsp_asserts.cli.arguments import build_parser
    from mlir_lsp_asserts.cli.plain_check import plain_check

    assert vars(plain_check(argv)) == vars(build_parser().parse_args(argv))


@pytest.mark.parametrize("argv", [[], ["--check"], ["--check", "-"], ["--check", "a", "--quiet", "b"], ["a", "--check"],
                                  ["--check", "--", "a"], ["--check", "--ch", "a"], ["--check", "-j", "2", "a"],
                                  ["--check", "--output-format", "json", "a"], ["--check", "--select=MLA001", "a"],
                                  ["--fix", "--check", "a"], ["--check", "-q", "a"]])
def test_any_other_line_goes_to_argparse(argv):
    from mlir_lsp_asserts.cli.plain_check import plain_check

    assert plain_check(argv) is None


def test_the_plain_checks_defaults_are_the_parsers():
    """An option added to the parser (cli/arguments.py) must be added to cli/plain_check.py too."""
    from mlir_lsp_asserts.cli.arguments import build_parser
    from mlir_lsp_asserts.cli.plain_check import OTHER_DEFAULTS, SWITCHES, VALUED

    mine = {**dict.fromkeys(SWITCHES, False), **dict.fromkeys(VALUED), **OTHER_DEFAULTS}
    assert mine == vars(build_parser().parse_args([]))


def test_the_compilers_cached_release_is_asked_again_when_the_binary_changes(tmp_path):
    """`--version` reads the compiler's release from a cache file named after the binary (its
    path's checksums, size and mtime, without hashlib): another binary, or the same one rebuilt
    or touched, gets a cache file of its own, so its release is asked again."""
    import os

    from mlir_lsp_asserts.dispatch.compiler_lookup import binary_cache_file

    first, second = tmp_path / "a" / "iree-compile", tmp_path / "b" / "iree-compile"
    for binary in (first, second):
        binary.parent.mkdir()
        binary.write_bytes(b"\x7fELF same bytes")
    name = binary_cache_file(str(first), "version")
    assert name is not None and name == binary_cache_file(str(first), "version")
    assert binary_cache_file(str(second), "version") != name  # same size and bytes, another path
    os.utime(first, ns=(1, 1))
    touched = binary_cache_file(str(first), "version")
    assert touched != name
    first.write_bytes(b"\x7fELF other bytes!")
    os.utime(first, ns=(1, 1))
    assert binary_cache_file(str(first), "version") not in (name, touched)  # rebuilt: another size
    assert binary_cache_file(str(tmp_path / "missing"), "version") is None

"""The package as users install it: run against an installed wheel (a venv with its IREE release
pinned first, or a `pipx` / `uv tool` install), from a folder outside the checkout.

Not part of `make test` (the files are `smoke_*.py`): `tests/smoke/run.py` (`make smoke`) copies
this folder out of the checkout, installs `dist/`'s wheel and runs it with
    SMOKE_MLIR_LSP   the `mlir-lsp` under test (the install's console script)
    SMOKE_PYTHON     the Python of that install (the Python API is run in it)
    SMOKE_VERSION    the version `make dist` built
    SMOKE_IREE       the iree-base-compiler release pinned beside it (3.3.0, 3.8.0, 3.13.*)
    SMOKE_CHECKOUT   the checkout, of which nothing may be imported
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import default_feature

HERE = Path(__file__).resolve().parent
EXE = os.environ["SMOKE_MLIR_LSP"]
PYTHON = os.environ["SMOKE_PYTHON"]
VERSION = os.environ["SMOKE_VERSION"]
IREE = os.environ["SMOKE_IREE"]
CHECKOUT = Path(os.environ["SMOKE_CHECKOUT"]).resolve()
EXAMPLE_TEXT = (HERE / "hoisted_gather.mlir").read_text(encoding="utf-8")
ASSERT_LINES = [18, 20, 29, 31]  # the example's four gather asserts (1-based)


@pytest.fixture
def example(tmp_path) -> Path:
    """A fresh copy of the example (examples/hoisted_gather.mlir), outside the checkout."""
    p = tmp_path / "hoisted_gather.mlir"
    p.write_text(EXAMPLE_TEXT, encoding="utf-8")
    return p


def cli(*args, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([EXE, *map(str, args)], capture_output=True, text=True, timeout=600, cwd=cwd)


def iree_minor() -> str:
    return ".".join(IREE.split(".")[:2])


def test_the_package_comes_from_the_install_not_the_checkout(tmp_path):
    code = "import mlir_lsp_asserts as m, sys; print(m.__file__); print(m.__version__)"
    out = subprocess.run([PYTHON, "-I", "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    where, version = out.stdout.split("\n")[:2]
    assert "site-packages" in Path(where).parts, where
    assert not Path(where).resolve().is_relative_to(CHECKOUT), where
    assert version == VERSION


def test_version_names_the_compiler_its_release_and_the_python(tmp_path):
    r = cli("--version", cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == ""
    lines = r.stdout.splitlines()
    assert lines[0] == f"mlir-lsp {VERSION}"
    m = re.fullmatch(r"iree-compile: (\S+) \((\S+)\)", lines[1])
    assert m, lines[1]
    assert m.group(2).startswith(iree_minor() + "."), f"{m.group(2)} is not the pinned {IREE}"
    assert Path(m.group(1)).is_file()
    assert lines[2].startswith(f"iree-base-compiler (bindings): {iree_minor()}.")
    assert re.fullmatch(r"python: 3\.\d+\.\d+ \(.+\)", lines[3]) and Path(PYTHON).parent.as_posix() in lines[3]


def test_check_reports_the_four_asserts(example):
    r = cli("--check", example, cwd=example.parent)
    assert r.returncode == 1, r.stderr
    found = re.findall(r"^\S+:(\d+):5: MLA001 ", r.stdout, re.M)
    assert [int(x) for x in found] == ASSERT_LINES, r.stdout


def test_fix_diff_shows_the_fix_and_writes_nothing(example):
    r = cli("--check", "--fix", "--fix-mode", "assume", "--diff", example, cwd=example.parent)
    assert r.returncode in (0, 1), r.stderr
    removed = [ln for ln in r.stdout.splitlines() if ln.startswith("-") and "cf.assert" in ln]
    added = [ln for ln in r.stdout.splitlines() if ln.startswith("+") and "util.assume.int" in ln]
    assert len(removed) == 4 and len(added) == 2, r.stdout
    assert example.read_text(encoding="utf-8") == EXAMPLE_TEXT


def test_explain_prints_the_rule_page_installed_with_the_package(tmp_path):
    r = cli("--explain", "MLA001", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "assert-in-linalg-region" in r.stdout and "util.assume.int" in r.stdout


def test_dispatch_count_and_what_if_with_the_pinned_compiler(example):
    # 3.3's const-eval cannot read the example's parameter global (docs/compatibility.md): the
    # flag its one-line error names
    flags = ["--flags=--iree-opt-const-eval=false"] if iree_minor() == "3.3" else []
    r = cli("--dispatch-count", "--what-if", *flags, example, cwd=example.parent)
    assert r.returncode == 0, r.stderr
    assert re.search(r"hoisted_gather\.mlir: 4 dispatches, 3 with the asserts removed", r.stdout), r.stdout
    assert f"iree-compile {iree_minor()}." in r.stdout


def test_python_api_in_the_installed_python(example):
    code = ("import sys, mlir_lsp_asserts as mla\n"
            "r = mla.check(sys.argv[1])\n"
            "print(r.by_code())\n"
            "f = mla.fix(sys.argv[1], mode='assume')\n"
            "print(f.asserts_fixed, f.assumed)\n")
    out = subprocess.run([PYTHON, "-I", "-c", code, str(example)], capture_output=True, text=True,
                         cwd=example.parent, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["{'MLA001': 4}", "4 4"]


@default_feature(types.CLIENT_REGISTER_CAPABILITY)
def register_capability(ls, params):
    """Answered as VS Code does (the server registers its config-file watchers): pytest-lsp's
    client has no handler of its own."""


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[EXE, "--stdio"]))
async def client(lsp_client: LanguageClient):
    params = types.InitializeParams(capabilities=client_capabilities("visual-studio-code"))
    result = await lsp_client.initialize_session(params)
    assert result.server_info is not None and result.server_info.version == VERSION
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio(loop_scope="function")
async def test_server_over_stdio_shows_the_findings_and_a_quick_fix(client: LanguageClient, example):
    uri = example.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="mlir", version=1, text=EXAMPLE_TEXT)))
    while True:
        params = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        mla = [d for d in params.diagnostics if d.code == "MLA001"]
        if params.uri == uri and mla:
            break
    assert [d.range.start.line + 1 for d in mla] == ASSERT_LINES
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri), range=mla[0].range,
        context=types.CodeActionContext(diagnostics=[mla[0]])))
    fix = next(a for a in actions if isinstance(a, types.CodeAction) and a.is_preferred)
    if fix.edit is None:  # resolved lazily when the client says it can
        fix = await client.code_action_resolve_async(fix)
    assert fix.edit is not None and "util.assume.int" in fix.title

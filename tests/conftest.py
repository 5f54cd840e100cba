"""Shared paths and helpers for the test suite.

The real data lives in `../shared` beside the repository (the corpus and the fixtures); tests
read it in place and write only under pytest's `tmp_path` or the ignored `tests/artifacts/`
(screenshots): a run leaves `git status` as it was. The screenshots the docs show are copied to
`docs/images/` only on purpose: `MLIR_LSP_DOC_IMAGES=1 make test test-e2e` (see keep_doc_image;
the VS Code ones come from `make test-e2e`).

Under pytest-xdist (`make test` runs `-n 2 --dist loadgroup`) the tests that drive a browser
(chromium for code-server or Model Explorer) share one worker, one after another
(pytest_collection_modifyitems): two at once on two cores would starve each other.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus"
FIXTURES = SHARED / "fixtures"
SEED = FIXTURES / "seed" / "sdxl_clip_extra_dispatches.mlir"
REPRO = FIXTURES / "repro" / "hoisted_gather.mlir"
MODELS = FIXTURES / "models"
DATA = Path(__file__).resolve().parent / "data"
DOCS_IMAGES = REPO / "docs" / "images"
UPDATE_DOC_IMAGES = "MLIR_LSP_DOC_IMAGES"
# Test files whose tests start headless chromium (with the `vscode` marker: code-server's tests).
BROWSER_FILES = frozenset({"test_dispatch_graph.py", "test_vscode_e2e.py"})


def _answer_capability_registrations() -> None:
    """pytest-lsp's client answers `client/registerCapability` as VS Code and Neovim do (it
    declares VS Code's and Neovim's capabilities, dynamic registration included, but has no
    handler: the server's registration of its config-file watchers would fail every LSP test).
    The registrations are kept on the client (`client.registrations`)."""
    from lsprotocol import types
    from pytest_lsp.client import default_feature

    @default_feature(types.CLIENT_REGISTER_CAPABILITY)
    def register_capability(ls, params):  # `ls`: pygls passes the client first by that name
        ls.registrations = [*getattr(ls, "registrations", []), *params.registrations]


_answer_capability_registrations()


def pytest_sessionstart(session):
    """Every test module takes its data from SHARED (defined here only): without it, say so once."""
    if not FIXTURES.is_dir():
        pytest.exit(f"the shared fixtures are not beside the checkout: {SHARED} (clone the repository next to "
                    "../shared, as CI does)", returncode=4)


RUN_FOLDER = "MLIR_LSP_TEST_RUN_FOLDER"


def pytest_configure(config):
    """Under xdist each worker's tmp_path is a folder deeper (`popen-gwN/`): the run's base is a
    short folder of its own instead, so paths are no longer than without xdist (messages that
    name a path are cut at 100 characters, as a lens cuts a baseline error). Removed when all
    passed; kept (and named) when a test failed. The run's folder (`run_folder`), shared by the
    workers, is made here too (the workers inherit its name)."""
    if hasattr(config, "workerinput"):
        return
    if getattr(config.option, "numprocesses", None) and not config.option.basetemp:
        config.option.basetemp = config._mlir_lsp_basetemp = tempfile.mkdtemp(prefix="mlt-")
    os.environ[RUN_FOLDER] = config._mlir_lsp_run_folder = tempfile.mkdtemp(prefix="mlt-run-")


def run_folder() -> Path:
    """A folder of this test run, the same for every xdist worker (removed at the end)."""
    return Path(os.environ[RUN_FOLDER])


def pytest_sessionfinish(session, exitstatus):
    run = getattr(session.config, "_mlir_lsp_run_folder", None)
    if run:
        shutil.rmtree(run, ignore_errors=True)
    base = getattr(session.config, "_mlir_lsp_basetemp", None)
    if base and exitstatus == 0:
        shutil.rmtree(base, ignore_errors=True)
    elif base:
        print(f"\ntest folders kept in {base}")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """One xdist group for the browser tests (`--dist loadgroup` runs a group on one worker); the
    slow tests first (in their order), so the two workers end together instead of one of them
    starting a minute-long test when the other has nothing left."""
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue  # its own group (the prompt encoder's tests of a browser file start no browser)
        if item.get_closest_marker("vscode") or item.path.name in BROWSER_FILES:
            item.add_marker(pytest.mark.xdist_group("browser"))
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    if hasattr(config, "workerinput") and config.getvalue("loadgroup"):
        groups = {item.nodeid: _xdist_group(item) for item in items if item.get_closest_marker("xdist_group")}
        (run_folder() / f"xdist-groups-{config.workerinput['workerid']}.json").write_text(json.dumps(groups))


def _xdist_group(item) -> str:
    """The item's group, named as pytest-xdist names it (its xdist_group marks' names, joined)."""
    return "_".join(sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                            for m in item.iter_markers("xdist_group")}))


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` with the groups the workers wrote at collection (above). pytest-xdist 3.8
    tells the controller a test's group by appending `@group` to the test's id on the worker, which
    pytest 9.2's structured node ids ignore: every group was spread over the workers (two browsers
    at once, the prompt encoder compiled once per worker, test_action's install made twice);
    pytest-dev/pytest-xdist#1386. A test id the workers did not name keeps xdist's own rule."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class MarkedGroupScheduling(LoadGroupScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # first called by schedule(), when every worker has collected
                self.groups = {}
                for path in run_folder().glob("xdist-groups-*.json"):
                    self.groups.update(json.loads(path.read_text()))
            return self.groups.get(nodeid) or super()._split_scope(nodeid)

    return MarkedGroupScheduling(config, log)


def keep_doc_image(shot: Path, name: str) -> None:
    """A screenshot the docs show (docs/images/NAME, tracked) is replaced by this run's `shot`
    only when MLIR_LSP_DOC_IMAGES=1; otherwise it stays where the test wrote it (ignored)."""
    if os.environ.get(UPDATE_DOC_IMAGES) == "1":
        shutil.copyfile(shot, DOCS_IMAGES / name)


BIN = Path(sys.executable).parent  # the venv's bin/ (mlir-lsp, iree-opt)

# `path:line:col: CODE message`
CONCISE_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>ML[AS]\d{3}) (?P<msg>.+)$")

DISPATCH_OPS = frozenset({"flow.dispatch.workgroups", "flow.dispatch.region", "flow.executable",
                          "stream.executable", "hal.executable"})
LINALG_DIALECTS = ("linalg", "iree_linalg_ext")


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str

    def concise(self) -> list[re.Match]:
        """The concise-format finding lines of stdout, parsed (every line must be one)."""
        out = []
        for line in self.stdout.splitlines():
            m = CONCISE_LINE.match(line)
            assert m, f"not a concise finding line: {line!r}"
            out.append(m)
        return out

    def error_lines(self) -> list[str]:
        return [ln for ln in self.stderr.splitlines() if ln.startswith("mlir-lsp: error:")]


def run_cli(*args: str | os.PathLike, input: bytes | str | None = None, cwd: str | os.PathLike | None = None,
            timeout: float = 120, env: dict | None = None, check_traceback: bool = True) -> CliResult:
    """Run `mlir-lsp` as a real subprocess (`python -m mlir_lsp_asserts`, the same entry point
    as the console script). A Python traceback on stderr is always a failure."""
    cmd = [sys.executable, "-m", "mlir_lsp_asserts", *map(str, args)]
    if isinstance(input, str):
        input = input.encode("utf-8")
    full_env = dict(os.environ)
    full_env.pop("CI", None)  # behave the same on a developer machine and in CI
    if env:
        full_env.update(env)
    proc = subprocess.run(cmd, input=input if input is not None else b"", capture_output=True,
                          cwd=cwd, timeout=timeout, env=full_env)
    res = CliResult(proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"))
    if check_traceback:
        assert "Traceback" not in res.stderr, res.stderr[-3000:]
    return res


def write(dirpath: Path, name: str, text: str | bytes) -> Path:
    p = dirpath / name
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


_LOC = re.compile(r'^loc\("-":(\d+):(\d+)\)$')


def real_asserts(text: str | bytes) -> list[tuple[int, int, list[str]]]:
    """Every `cf.assert` the real MLIR parser sees: (1-based line, 1-based col, ancestor op names,
    innermost first); line and col are None for an op with an explicit non-file `loc(...)`.
    Raises if the parser rejects the text."""
    from iree.compiler import ir

    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    module = ir.Module.parse(text, ctx)
    found = []

    def visit(op):
        if op.name == "cf.assert":
            anc, p = [], op.parent
            while p is not None:
                anc.append(p.name)
                p = p.parent
            m = _LOC.match(str(op.location))
            found.append((int(m.group(1)), int(m.group(2)), anc) if m else (None, None, anc))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def expected_code(ancestors: list[str]) -> str:
    """The rule a cf.assert with these ancestors belongs to (the issue's definition)."""
    if any(a.split(".", 1)[0] in LINALG_DIALECTS for a in ancestors):
        return "MLA001"
    if any(a in DISPATCH_OPS for a in ancestors):
        return "MLA002"
    return "MLA003"


def assert_spans_inside(text: str, findings) -> None:
    """Every finding's range (and its related ranges) lies inside the text and is well-formed."""
    from mlir_lsp_asserts.syntax.lines import LineIndex

    li = LineIndex(text)
    for f in findings:
        spans = [f.span] + [r.span for r in f.related]
        for s in spans:
            assert 0 <= s.start <= s.end <= len(text), (f.code, f.message, s)
            assert (s.start_pos.line, s.start_pos.character) == li.position(s.start), (f.code, s)
            assert (s.end_pos.line, s.end_pos.character) == li.position(s.end), (f.code, s)
            assert 0 <= s.start_pos.line < li.line_count and 0 <= s.end_pos.line < li.line_count


# The tests that compile the SDXL prompt encoder (10-40 s a compile): two xdist groups, each run
# one test after another on one worker with `encoder_cache`, so that the same text with the same
# flags is compiled once per run (the cache's key is the text, the compiler and the flags, not the
# file's path; a compile with debug info, --attribution's, serves the plain count too). The input
# IR's tests and the torch export's share no compile (other texts: the export lowers to another
# input IR), so the two groups run on the two workers at once. A test in one of them is in no
# other group (`_xdist_group` would join the names into a third).
ENCODER_GROUP = pytest.mark.xdist_group("encoder")  # sdxl_prompt_encoder.input.mlir
ENCODER_TORCH_GROUP = pytest.mark.xdist_group("encoder-torch")  # sdxl_prompt_encoder.torch.mlir


@pytest.fixture(scope="session")
def encoder_cache(tmp_path_factory) -> Path:
    """One count cache (an XDG_CACHE_HOME) for the ENCODER_GROUP and ENCODER_TORCH_GROUP tests of
    a worker: the first of them compiles the prompt encoder for real, the next take its counts
    from the cache, as a user's second run does."""
    return tmp_path_factory.mktemp("encoder-cache")


@pytest.fixture(scope="session")
def encoder_torch_counted(encoder_cache) -> Path:
    """`encoder_cache` holding the torch export's count with --what-if and --attribution (the
    command test_dispatch_attribution's [torch] case runs, which then finds it cached; or its
    cached answer when that case ran first): the export compiled with debug info and lowered to
    input IR. For a test that needs the plain count and the lowering but runs first in its
    group (`--compile`'s: a plain compile would not serve the count with debug info)."""
    torch = MODELS / "sdxl_prompt_encoder.torch.mlir"
    r = run_cli("--dispatch-count", "--what-if", "--attribution", "--output-format", "json", torch,
                env={"XDG_CACHE_HOME": str(encoder_cache)}, timeout=1800)
    assert r.returncode in (0, 1), r.stderr  # as test_dispatch_count.counts accepts it
    return encoder_cache


@pytest.fixture(scope="session")
def seed_text() -> str:
    return SEED.read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def repro_text() -> str:
    return REPRO.read_text(encoding="utf-8")

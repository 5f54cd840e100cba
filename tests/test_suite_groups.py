"""How the suite is cut up. The xdist groups that let the prompt encoder's tests share their
compiles (tests/conftest.py): each test that reads `encoder_cache` is in one of the two encoder
groups and in no other, so it runs on the worker (and with the cache) of the tests that compile
the same texts. The make targets CI calls (`make test`, `make test-e2e`): together they run every
test, each once."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from _pytest.mark.expression import Expression  # pytest's reading of `-m` (private)

from conftest import REPO

# both tests read one collection of the whole suite (~10 s): one worker for the module
pytestmark = pytest.mark.xdist_group("suite-groups")


@pytest.fixture(scope="module")
def collected(tmp_path_factory) -> dict[str, list]:
    """Each test of the suite: [its xdist group, whether it uses `encoder_cache`, its markers]."""
    out = tmp_path_factory.mktemp("collected") / "groups.json"
    env = dict(os.environ, MLIR_LSP_GROUPS_OUT=str(out), PYTHONPATH=str(REPO / "tests"))
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                        "-p", "xdist_groups_dump", "tests"], cwd=REPO, env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    groups = json.loads(out.read_text())
    assert len(groups) >= 800, len(groups)
    return groups


def test_every_test_of_the_encoder_cache_is_in_one_encoder_group(collected):
    groups = collected
    cached = {nodeid: group for nodeid, (group, uses_cache, _markers) in groups.items() if uses_cache}
    assert {group for group in cached.values()} == {"encoder", "encoder-torch"}, cached
    # the graph against its fixed self: a browser file's test, in the encoder group (not "browser_encoder")
    assert cached["tests/test_dispatch_graph.py::test_prompt_encoder_against_its_fixed_self"] == "encoder"
    assert groups["tests/test_dispatch_graph.py::test_open_shows_the_new_dispatch_selected_in_model_explorer"][0] == \
        "browser"
    assert cached["tests/test_dispatch_attribution.py::test_prompt_encoder_extra_dispatches_are_the_hoisted_gathers"
                  "[torch]"] == "encoder-torch"
    assert len(cached) >= 17, sorted(cached)  # the 17 of 2026-12-07


def ci_test_selections() -> dict[str, str]:
    """The pytest marker expression of each `make` target that .ci/run calls and that runs pytest
    over the whole suite (tests/compat's own target runs tests/compat alone, per IREE release).
    Such a recipe may hold nothing after the workers but `-m EXPR` and `--durations=N`: a `-k`, a
    path or a `--deselect` would leave tests out that the marker check below cannot see."""
    ci = (REPO / ".ci" / "run").read_text()
    called = set(re.findall(r"^make ([\w-]+)", ci, re.M))
    makefile = (REPO / "Makefile").read_text()
    selections = {}
    for target, recipe in re.findall(r"^([\w-]+): [^\n]*\n((?:\t[^\n]*\n)+)", makefile, re.M):
        if target in called and (m := re.search(r"-m pytest -q \$\(PYTEST_XDIST\)(.*)$", recipe, re.M)):
            rest = re.fullmatch(r'(?: -m ("[^"]+"|\S+))?(?: --durations=\d+)?', m.group(1))
            assert rest, f"make {target} runs pytest with more than a marker expression: {m.group(1)!r}"
            selections[target] = (rest.group(1) or "").strip('"')
    return selections


def test_ci_runs_every_test_and_make_test_needs_no_code_server(collected):
    """`make test` leaves the costly end-to-end tests (marker `e2e`) to `make test-e2e`; CI calls
    both, so no test is left out of CI, and `make test` runs no test that needs code-server."""
    selections = ci_test_selections()
    assert set(selections) == {"test", "test-e2e"}, selections
    markers = {nodeid: set(names) for nodeid, (_g, _c, names) in collected.items()}
    chosen = {target: {nodeid for nodeid, names in markers.items()
                       if not expr or Expression.compile(expr).evaluate(lambda name, names=names: name in names)}
              for target, expr in selections.items()}
    left_out = set(markers) - chosen["test"] - chosen["test-e2e"]
    assert not left_out, sorted(left_out)[:10]
    assert not chosen["test"] & chosen["test-e2e"], sorted(chosen["test"] & chosen["test-e2e"])[:10]
    vscode = {nodeid for nodeid, names in markers.items() if "vscode" in names}
    assert vscode and vscode <= chosen["test-e2e"], sorted(vscode - chosen["test-e2e"])

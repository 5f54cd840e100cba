"""The GitHub Action (action.yml) run as GitHub runs a composite action: each `run:` step with its
`env:` and `shell:`, the `${{ }}` expressions substituted into env values and run lines before the
shell sees them, the GITHUB_* files in a temporary folder, GITHUB_PATH added to PATH for later
steps, a failing step ending the action, the action's outputs read from its steps' outputs.

The install step runs once for the module (a real venv, the action's own checkout installed with
pip, iree-base-compiler pinned beside it); the check-and-count step then runs per test."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from conftest import REPRO, write

ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
SHELLS = {"bash": ["bash", "--noprofile", "--norc", "-eo", "pipefail", "{0}"], "sh": ["sh", "-e", "{0}"]}
HOSTILE = ["$(touch pwned)", "`touch pwned`", '"; rm -rf x', "'; touch pwned; '", "x; touch pwned"]

# one worker for the module: its install (the module's fixture) is made once
# e2e: the action installs iree-base-compiler from PyPI (a minute)
pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.xdist_group("action")]


@dataclass
class Run:
    """What a run of the action left: its exit code (of the first failing step, else 0), the log
    (stdout, where the runner reads annotations), the job summary, the action's outputs."""

    returncode: int
    log: str
    summary: str
    outputs: dict[str, str]
    steps_run: list[str] = field(default_factory=list)

    def annotations(self) -> list[dict]:
        out = []
        for line in self.log.splitlines():
            m = re.match(r"^::(error|warning|notice)(?: ([^:]*))?::(.*)$", line)
            if m:
                props = dict(p.split("=", 1) for p in m.group(2).split(",")) if m.group(2) else {}
                out.append({"level": m.group(1), **props, "message": m.group(3)})
        return out


def evaluate(text: str, inputs: dict[str, str], steps: dict[str, dict[str, str]]) -> str:
    """`${{ }}` expressions substituted as GitHub does, textually, before any shell runs."""

    def value(m: re.Match) -> str:
        expr = m.group(1)
        if expr.startswith("inputs."):
            return inputs[expr.removeprefix("inputs.")]
        if expr.startswith("steps."):
            step_id, kind, name = expr.removeprefix("steps.").split(".", 2)
            assert kind == "outputs", expr
            return steps.get(step_id, {}).get(name, "")
        if expr == "github.action_path":
            return str(ROOT)
        raise AssertionError(f"an expression the test runner does not know: {expr}")

    return EXPRESSION.sub(value, text)


def read_outputs(path: Path) -> dict[str, str]:
    """A GITHUB_OUTPUT file: `name=value` lines and `name<<DELIM` ... `DELIM` blocks."""
    out: dict[str, str] = {}
    lines = path.read_text().splitlines() if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            j = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1:j])
            i = j + 1
            continue
        name, val = line.split("=", 1)
        out[name] = val
        i += 1
    return out


def run_action(given: dict[str, str], workspace: Path, runner_temp: Path, only: str | None = None) -> Run:
    """The action's steps (or only the step named `only`) with `given` inputs, in `workspace`."""
    declared = ACTION["inputs"]
    assert set(given) <= set(declared), set(given) - set(declared)
    inputs = {k: given.get(k, str(v.get("default", ""))) for k, v in declared.items()}
    files = runner_temp.parent / "github-files"
    files.mkdir(exist_ok=True)
    summary_file = files / "step_summary.md"
    summary_file.write_text("")
    path_file = files / "path"
    if only is None:
        path_file.write_text("")
    steps: dict[str, dict[str, str]] = {}
    log, code, ran = [], 0, []
    for n, step in enumerate(ACTION["runs"]["steps"]):
        if only is not None and step["name"] != only:
            continue
        assert "uses" not in step and "if" not in step, "the runner here runs plain `run:` steps"
        out_file = files / f"output-{n}"
        out_file.write_text("")
        extra_path = [p for p in path_file.read_text().splitlines() if p] if path_file.exists() else []
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_", "RUNNER_"))}
        env.pop("CI", None)
        env.update({"PATH": os.pathsep.join([*reversed(extra_path), *BASE_PATH]),
                    "GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_ACTION_PATH": str(ROOT),
                    "GITHUB_WORKSPACE": str(workspace), "RUNNER_TEMP": str(runner_temp),
                    "GITHUB_OUTPUT": str(out_file), "GITHUB_STEP_SUMMARY": str(summary_file),
                    "GITHUB_PATH": str(path_file), "GITHUB_ENV": str(files / "env"),
                    "XDG_CACHE_HOME": str(runner_temp.parent / "cache"), "HOME": str(runner_temp.parent)})
        env.update({k: evaluate(str(v), inputs, steps) for k, v in step.get("env", {}).items()})
        script = runner_temp.parent / f"step-{n}.sh"
        script.write_text(evaluate(step["run"], inputs, steps))
        argv = [a.replace("{0}", str(script)) for a in SHELLS[step["shell"]]]
        p = subprocess.run(argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=1200)
        log.append(p.stdout + p.stderr)
        ran.append(step["name"])
        steps[step.get("id", f"step{n}")] = read_outputs(out_file)
        if p.returncode != 0:
            code = p.returncode
            break
    outputs = {k: evaluate(v["value"], inputs, steps) for k, v in ACTION.get("outputs", {}).items()}
    return Run(code, "".join(log), summary_file.read_text(), outputs, ran)


# The runner's PATH: this one without the checkout's venv (nothing of the checkout is installed there).
BASE_PATH = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and not Path(p).is_relative_to(ROOT)]
INSTALL, CHECK = (s["name"] for s in ACTION["runs"]["steps"])


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The whole action run once, for real: the install step puts the action's checkout and
    iree-base-compiler 3.13.0 in a venv under RUNNER_TEMP, the check step finds the repro's asserts
    and the action's outputs say so. Its RUNNER_TEMP, for the tests that run the check step again."""
    base = tmp_path_factory.mktemp("action")
    runner_temp = base / "runner-temp"
    runner_temp.mkdir()
    workspace = base / "workspace"
    write(workspace, "model.mlir", REPRO.read_text())
    r = run_action({"paths": "model.mlir", "iree-version": "3.13.0"}, workspace, runner_temp)
    assert r.steps_run == [INSTALL, CHECK] and r.returncode == 1, r.log[-3000:]
    assert re.search(r"^mlir-lsp \d+\.\d+\.\d+$", r.log, re.M)
    assert re.search(r"^iree-compile: \S+ \(3\.13\.", r.log, re.M)
    assert (base / "github-files" / "path").read_text().strip() == str(runner_temp / "mlir-lsp-action" / "bin")
    assert r.outputs == {"findings": "4", "dispatches": ""}  # no budget input: no count
    return runner_temp


@pytest.fixture
def workspace(tmp_path) -> Path:
    ws = tmp_path / "workspace"
    write(ws, "models/model.mlir", REPRO.read_text())
    write(ws, "models/clean.mlir", "func.func @f(%a: i32) -> i32 {\n  return %a : i32\n}\n")
    (ws / "x").mkdir()  # what `rm -rf x` would remove
    return ws


def test_no_input_is_written_into_a_run_line():
    for step in ACTION["runs"]["steps"]:
        assert "inputs." not in step["run"] and "${{" not in step["run"], step["run"]
        assert all(k.startswith("INPUT_") for k in step.get("env", {}))


def test_annotations_summary_and_outputs(installed, workspace):
    r = run_action({"paths": "models/", "dispatch-paths": "models/model.mlir"}, workspace, installed, only=CHECK)
    assert r.returncode == 1, r.log  # findings
    warnings = [a for a in r.annotations() if a["level"] == "warning"]
    assert [(a["file"], a["line"], a["title"].split()[0]) for a in warnings] == [
        ("models/model.mlir", str(n), "MLA001") for n in (18, 20, 29, 31)]
    assert r.outputs == {"findings": "4", "dispatches": "4"}
    assert "| file | findings | by rule | dispatches | what-if | against the baseline | new dispatches |" in r.summary
    assert "| models/model.mlir | 4 | MLA001 × 4 | 4 (default) | 3 without the asserts (1 saved) |  |  |" in r.summary
    assert "4 findings in 1 file; 4 dispatches in 1 file." in r.summary


def test_a_clean_run_exits_0_and_says_so(installed, workspace):
    r = run_action({"paths": "models/clean.mlir"}, workspace, installed, only=CHECK)
    assert r.returncode == 0, r.log
    assert r.annotations() == [] and r.outputs == {"findings": "0", "dispatches": ""}
    assert "No findings." in r.summary


def test_over_the_baseline_fails_and_names_the_new_dispatch(installed, workspace, tmp_path):
    """The baseline made from the fixed model (3 dispatches, with attribution), as a project would
    commit it; the unfixed model counted against it."""
    model = workspace / "models" / "model.mlir"
    mlir_lsp = installed / "mlir-lsp-action" / "bin" / "mlir-lsp"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    (workspace / "ci").mkdir()
    subprocess.run([mlir_lsp, "--check", "--fix", "-q", "models/model.mlir"], cwd=workspace, env=env)
    subprocess.run([mlir_lsp, "--dispatch-count", "--baseline", "ci/base.json", "--update-baseline",
                    "models/model.mlir"], cwd=workspace, env=env, check=True, capture_output=True)
    model.write_text(REPRO.read_text())
    r = run_action({"paths": "models/model.mlir", "args": "--exit-zero", "dispatch-baseline": "ci/base.json"},
                   workspace, installed, only=CHECK)
    assert r.returncode == 1, r.log  # the check passed (--exit-zero); the count is over its baseline
    errors = [a for a in r.annotations() if a["level"] == "error"]
    assert any("4 dispatches with profile 'default', above the baseline 3 (+1)" in a["message"] for a in errors), errors
    assert "| +1 against 3 ❌ | _initializer_1_dispatch_0 |" in r.summary
    assert r.outputs == {"findings": "4", "dispatches": "4"}
    under = run_action({"paths": "models/model.mlir", "args": "--exit-zero", "max-dispatches": "4"},
                       workspace, installed, only=CHECK)
    assert under.returncode == 0 and under.outputs["dispatches"] == "4", under.log
    over = run_action({"paths": "models/model.mlir", "check": "false", "max-dispatches": "3"},
                      workspace, installed, only=CHECK)
    assert over.returncode == 1 and "over the cap 3 ❌" in over.summary
    assert over.outputs == {"findings": "", "dispatches": "4"}


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_inputs_run_nothing(installed, workspace, hostile):
    r = run_action({"paths": f"models/model.mlir {hostile}", "args": f"--select MLA001 --ignore {hostile}",
                    "dispatch-paths": hostile, "dispatch-profile": hostile}, workspace, installed, only=CHECK)
    assert r.returncode == 2, r.log  # bad paths and a bad profile are errors, said, never run
    assert (workspace / "x").is_dir()
    assert not list(workspace.rglob("pwned")) and not (installed.parent / "pwned").exists()
    assert "Traceback" not in r.log


def test_hostile_install_inputs_run_nothing(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "x").mkdir()
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    for hostile in HOSTILE:
        r = run_action({"iree-version": hostile}, ws, temp, only=INSTALL)
        assert r.returncode == 2 and "is not a release number" in r.log, r.log
        r = run_action({"python": hostile}, ws, temp, only=INSTALL)
        assert r.returncode == 127, r.log  # no such program: bash says so, and runs nothing else
    # one requirement for pip, which refuses it ("invalid requirement"; each try makes a venv: one will do)
    r = run_action({"version": HOSTILE[0]}, ws, temp, only=INSTALL)
    assert r.returncode == 2 and "pip could not install" in r.log, r.log
    assert (ws / "x").is_dir() and not list(tmp_path.rglob("pwned"))


def test_a_release_given_as_major_minor_is_installed_and_accepted(tmp_path):
    """`iree-version: "3.13"` passes the input's check, and pip's `==3.13` installs 3.13.0 (PEP 440
    pads the release with zeros): the action must accept what pip installed, not fail the job."""
    ws = tmp_path / "ws"
    ws.mkdir()
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    r = run_action({"iree-version": "3.13"}, ws, temp, only=INSTALL)
    assert r.returncode == 0, r.log[-3000:]
    assert re.search(r"^iree-compile: \S+ \(3\.13\.0", r.log, re.M), r.log[-3000:]


def test_a_venv_that_cannot_be_made_is_one_error_line(tmp_path):
    """RUNNER_TEMP unusable (here a file, not a folder): the install step says so in one
    `::error::` line and exits 2, no Python traceback in the job's log."""
    ws = tmp_path / "ws"
    ws.mkdir()
    temp = tmp_path / "runner-temp"
    temp.write_text("not a folder")
    r = run_action({}, ws, temp, only=INSTALL)
    assert r.returncode == 2, r.log
    assert "Traceback" not in r.log, r.log
    errors = [a["message"] for a in r.annotations() if a["level"] == "error"]
    assert len(errors) == 1 and errors[0].startswith(f"could not make a venv in {temp / 'mlir-lsp-action'}: "), r.log

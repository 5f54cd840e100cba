"""`mlir-lsp --check` as a user runs it: a real subprocess, every output format, the options and
the exit codes (0 no findings, 1 findings, 2 usage error / unreadable file / internal error)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from conftest import BIN, DATA, FIXTURES, REPRO, SEED, run_cli, write

REPRO_LINES = [18, 20, 29, 31]
ASSERT_MSGS = ["index must be smaller than dim size", "index must be larger or equal to 0"] * 2

HOST = """func.func @mm(%a: index, %b: index) {
  %0 = arith.cmpi eq, %a, %b : index
  cf.assert %0, "mismatching contracting dimension for aten.mm"
  return
}
"""
CLEAN = """func.func @clean(%a: i32) -> i32 {
  return %a : i32
}
"""


@pytest.fixture(scope="module")
def sarif_schema():
    return json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))


@pytest.fixture
def mixed(tmp_path):
    """One file with an MLA001 (repro's first gather, 2 asserts) and one MLA003."""
    return write(tmp_path, "mixed.mlir", REPRO.read_text() + "\n" + HOST)


def test_console_script_is_installed():
    exe = BIN / "mlir-lsp"
    assert exe.exists(), "the package's console script `mlir-lsp` is not installed in the venv"
    proc = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert re.match(r"mlir-lsp \d+\.\d+", proc.stdout)
    proc = subprocess.run([str(exe), "--check", str(REPRO)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout.count("MLA001") == 4


def test_concise_is_the_default_and_one_based():
    r = run_cli("--check", REPRO)
    assert r.returncode == 1
    ms = r.concise()
    assert [(m["path"], int(m["line"]), int(m["col"]), m["code"]) for m in ms] == [
        (str(REPRO), line, 5, "MLA001") for line in REPRO_LINES]
    for m, msg in zip(ms, ASSERT_MSGS, strict=True):
        assert f'"{msg}"' in m["msg"]
    assert re.search(r"Found 4 findings in 1 file", r.stderr)


def test_full_shows_source_line_and_caret_under_the_op():
    r = run_cli("--check", "--output-format", "full", REPRO)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    src = REPRO.read_text().split("\n")
    heads = [i for i, ln in enumerate(lines) if re.match(rf"{re.escape(str(REPRO))}:\d+:\d+: MLA001 \[warning\] ", ln)]
    assert len(heads) == 4
    for i, line_no in zip(heads, REPRO_LINES, strict=True):
        assert lines[i].startswith(f"{REPRO}:{line_no}:5: ")
        gutter_line, caret_line = lines[i + 1], lines[i + 2]
        assert gutter_line.endswith(src[line_no - 1])
        assert re.match(rf"\s*{line_no} \| ", gutter_line)
        op = src[line_no - 1].strip()
        start = gutter_line.index(op)
        assert caret_line.index("^") == start and caret_line.strip() == "^" * len(op)
    assert "enclosing `linalg.generic` at line 13" in r.stdout
    (link,) = set(re.findall(r"= help: (\S+)", r.stdout))
    assert link.startswith("file://") and link.endswith("/rules/docs/MLA001.md")
    from urllib.parse import unquote, urlparse

    assert "# MLA001 assert-in-linalg-region" in Path(unquote(urlparse(link).path)).read_text()


def test_docs_base_url_moves_every_rule_link(mixed, tmp_path):
    """--docs-base-url (or docs-base-url in the config file) points full, json and sarif links at a
    site of the user's; with neither, the links are file:// URIs of the installed pages."""
    base = "https://docs.example.org/mlir-lsp/rules/"
    full = run_cli("--check", "--output-format", "full", "--docs-base-url", base, mixed)
    assert set(re.findall(r"= help: (\S+)", full.stdout)) == {base + "MLA001.md", base + "MLA003.md"}
    items = json.loads(run_cli("--check", "--output-format", "json", "--docs-base-url", base, mixed).stdout)
    assert {f["url"] for f in items} == {base + "MLA001.md", base + "MLA003.md"}
    cfg = tmp_path / "mlir-lsp.toml"
    cfg.write_text(f'docs-base-url = "{base}"\n')
    sarif = json.loads(run_cli("--check", "--output-format", "sarif", "--config", str(cfg), mixed).stdout)
    uris = {r["id"]: r["helpUri"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert uris["MLA001"] == base + "MLA001.md" and uris["MLA003"] == base + "MLA003.md"
    assert uris["MLA002"].startswith("file://")  # no finding of it here: the installed page
    assert "github.com/mlir-lsp" not in json.dumps(sarif)


def test_explain_prints_the_rule_page_by_code_or_name():
    by_code = run_cli("--explain", "mla001")
    assert by_code.returncode == 0 and by_code.stdout.startswith("# MLA001 assert-in-linalg-region\n")
    assert "## Fixes" in by_code.stdout
    assert run_cli("--explain", "assert-in-linalg-region").stdout == by_code.stdout
    as_json = json.loads(run_cli("--explain", "MLS001", "--output-format", "json").stdout)
    assert as_json["code"] == "MLS001" and as_json["name"] == "syntax-error"
    assert as_json["explanation"].startswith("# MLS001") and as_json["url"].startswith("file://")
    bad = run_cli("--explain", "MLA999")
    assert bad.returncode == 2 and "unknown rule 'MLA999'" in bad.stderr and "MLA004" in bad.stderr


def test_json_schema_and_zero_based(mixed):
    r = run_cli("--check", "--output-format", "json", mixed)
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert isinstance(data, list) and len(data) == 5
    for item in data:
        assert {"path", "code", "name", "severity", "message", "range", "fixes"} <= set(item)
        assert item["path"] == str(mixed)
        assert isinstance(item["fixes"], list)
        rng = item["range"]
        for end in ("start", "end"):
            assert set(rng[end]) == {"line", "character"}
    first = data[0]
    assert (first["code"], first["name"], first["severity"]) == ("MLA001", "assert-in-linalg-region", "warning")
    line = REPRO.read_text().split("\n")[17]
    assert first["range"] == {"start": {"line": 17, "character": 4},
                              "end": {"line": 17, "character": 4 + len(line.strip())}}
    host = data[-1]
    assert (host["code"], host["name"], host["severity"]) == ("MLA003", "assert-on-host", "information")
    assert host["range"]["start"]["line"] == len(REPRO.read_text().split("\n")) + 2
    assert "mismatching contracting dimension for aten.mm" in host["message"]


def test_json_of_clean_file_is_an_empty_list(tmp_path):
    r = run_cli("--check", "--output-format", "json", write(tmp_path, "c.mlir", CLEAN))
    assert r.returncode == 0
    assert json.loads(r.stdout) == []


def test_json_lines(mixed):
    r = run_cli("--check", "--output-format", "json-lines", mixed)
    items = [json.loads(ln) for ln in r.stdout.splitlines()]
    assert [i["code"] for i in items] == ["MLA001"] * 4 + ["MLA003"]


def test_github_annotations(mixed):
    r = run_cli("--check", "--output-format", "github", mixed)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert len(lines) == 5
    for ln, n in zip(lines[:4], REPRO_LINES, strict=True):
        assert ln.startswith(f"::warning file={mixed},line={n},col=5,endLine={n},endColumn=")
        assert "title=MLA001 assert-in-linalg-region::MLA001 " in ln
    assert lines[4].startswith("::notice file=")  # information -> notice
    assert "aten.mm" in lines[4]


def test_sarif_is_valid_2_1_0(mixed, tmp_path, sarif_schema):
    syntax = write(tmp_path, "broken.mlir", "func.func @f(%c: i1) {\n  cf.assert %c, \"x\"\n")
    r = run_cli("--check", "--output-format", "sarif", mixed, syntax)
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    jsonschema.Draft4Validator(sarif_schema).validate(doc)
    assert doc["version"] == "2.1.0"
    (run,) = doc["runs"]
    assert run["tool"]["driver"]["name"] == "mlir-lsp"
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert {"MLA001", "MLA002", "MLA003"} <= set(rule_ids)
    results = run["results"]
    mla001 = [x for x in results if x["ruleId"] == "MLA001"]
    assert [x["locations"][0]["physicalLocation"]["region"]["startLine"] for x in mla001] == REPRO_LINES
    assert all(x["level"] == "warning" for x in mla001)
    assert [x["level"] for x in results if x["ruleId"] == "MLA003"] == ["note"] * 2
    assert any(x["ruleId"] == "MLS001" and x["level"] == "error" for x in results)
    for x in results:
        assert rule_ids[x["ruleIndex"]] == x["ruleId"]
    # and a clean run is a valid log with no results
    clean = run_cli("--check", "--output-format", "sarif", write(tmp_path, "c.mlir", CLEAN))
    doc = json.loads(clean.stdout)
    jsonschema.Draft4Validator(sarif_schema).validate(doc)
    assert doc["runs"][0]["results"] == [] and clean.returncode == 0


def test_the_sarif_schema_rejects_broken_logs(sarif_schema):
    # the vendored schema really checks something
    v = jsonschema.Draft4Validator(sarif_schema)
    assert not v.is_valid({"version": "2.1.0", "runs": [{"results": []}]})  # no tool
    assert not v.is_valid({"version": "2.0.0", "runs": []})


def test_junit_parses(mixed, tmp_path):
    clean = write(tmp_path, "c.mlir", CLEAN)
    r = run_cli("--check", "--output-format", "junit", mixed, clean)
    assert r.returncode == 1
    root = ET.fromstring(r.stdout)
    assert root.tag == "testsuites" and root.get("failures") == "5"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {str(mixed), str(clean)}
    fails = suites[str(mixed)].findall("testcase/failure")
    assert [f.get("type") for f in fails] == ["MLA001"] * 4 + ["MLA003"]
    assert "aten.mm" in fails[-1].get("message")
    assert suites[str(clean)].findall("testcase") and not suites[str(clean)].findall("testcase/failure")


def test_select_and_ignore(mixed):
    r = run_cli("--check", "--select", "MLA003", mixed)
    assert [m["code"] for m in r.concise()] == ["MLA003"] and r.returncode == 1
    r = run_cli("--check", "--ignore", "MLA001", mixed)
    assert [m["code"] for m in r.concise()] == ["MLA003"]
    r = run_cli("--check", "--select", "MLA001,MLA003", "--ignore", "MLA003", mixed)
    assert [m["code"] for m in r.concise()] == ["MLA001"] * 4
    r = run_cli("--check", "--select", "assert-on-host", mixed)  # a rule name works too
    assert [m["code"] for m in r.concise()] == ["MLA003"]
    r = run_cli("--check", "--ignore", "MLA", mixed)  # a prefix
    assert r.stdout == "" and r.returncode == 0


def test_statistics(mixed):
    r = run_cli("--check", "--statistics", mixed)
    stats = [ln for ln in r.stdout.splitlines() if not ln.startswith(str(mixed))]
    # `count<TAB>code<TAB>name`, most frequent first (` [*]` may follow: a fix is available)
    rows = [ln.split("\t") for ln in stats]
    assert [(int(n), code, name.split(" ")[0]) for n, code, name in rows] == [
        (4, "MLA001", "assert-in-linalg-region"), (1, "MLA003", "assert-on-host")]
    # with a machine format, stdout stays machine-readable and the counts go to stderr
    r = run_cli("--check", "--statistics", "--output-format", "json", mixed)
    assert len(json.loads(r.stdout)) == 5
    assert re.search(r"4\tMLA001", r.stderr)


def test_exit_zero_and_quiet(mixed):
    r = run_cli("--check", "--exit-zero", mixed)
    assert r.returncode == 0 and len(r.concise()) == 5
    r = run_cli("--check", "--quiet", mixed)
    assert r.returncode == 1 and len(r.concise()) == 5
    assert "Found" not in r.stderr and r.stderr.strip() == ""


@pytest.mark.parametrize("args", [
    ["--check"],  # no path
    ["--check", "--output-format", "xml", str(REPRO)],
    ["--check", "--select", "NOPE", str(REPRO)],
    ["--check", "--definitely-not-an-option", str(REPRO)],
    [str(REPRO)],  # a path without --check
])
def test_usage_errors_exit_2(args):
    r = run_cli(*args)
    assert r.returncode == 2
    assert r.stdout == ""
    assert "error" in r.stderr
    assert len([ln for ln in r.stderr.splitlines() if "error" in ln]) == 1


def test_exit_codes_0_and_1(tmp_path):
    assert run_cli("--check", write(tmp_path, "c.mlir", CLEAN)).returncode == 0
    assert run_cli("--check", write(tmp_path, "h.mlir", HOST)).returncode == 1


def test_stdin(tmp_path):
    r = run_cli("--check", "-", "--stdin-filename", "model/gather.mlir", input=REPRO.read_bytes())
    assert r.returncode == 1
    assert [(m["path"], int(m["line"])) for m in r.concise()] == [("model/gather.mlir", n) for n in REPRO_LINES]
    r = run_cli("--check", "--output-format", "json", "-", input=HOST)
    assert [(d["path"], d["code"]) for d in json.loads(r.stdout)] == [("-", "MLA003")]
    r = run_cli("--check", "-", input=CLEAN)
    assert r.returncode == 0 and r.stdout == ""


def test_directories_recurse(tmp_path):
    shutil.copy(REPRO, write(tmp_path, "a/one.mlir", ""))
    write(tmp_path, "a/b/c/two.mlir", HOST)
    write(tmp_path, "a/b/notes.txt", HOST)  # not MLIR: not checked
    write(tmp_path, "a/b/clean.mlir", CLEAN)
    r = run_cli("--check", "--output-format", "json", tmp_path / "a")
    data = json.loads(r.stdout)
    assert sorted({d["path"] for d in data}) == sorted([str(tmp_path / "a/b/c/two.mlir"), str(tmp_path / "a/one.mlir")])
    assert len(data) == 5 and r.returncode == 1


def test_exclude_walks_always_and_named_files_with_force_exclude(tmp_path):
    write(tmp_path, "mlir-lsp.toml", 'exclude = ["third_party/*"]\n')
    write(tmp_path, "third_party/vendored.mlir", HOST)
    write(tmp_path, "model/own.mlir", HOST)
    walked = run_cli("--check", "--output-format", "json", ".", cwd=tmp_path)
    assert {d["path"] for d in json.loads(walked.stdout)} == {"./model/own.mlir"}
    named = run_cli("--check", "-q", "third_party/vendored.mlir", cwd=tmp_path)
    assert named.returncode == 1  # named on purpose: checked, as ruff does
    for form in ("third_party/vendored.mlir", "./third_party/vendored.mlir"):
        forced = run_cli("--check", "--force-exclude", form, "model/own.mlir", cwd=tmp_path)
        assert forced.returncode == 1 and [m["path"] for m in forced.concise()] == ["model/own.mlir"], form
    alone = run_cli("--check", "--force-exclude", "./third_party/vendored.mlir", cwd=tmp_path)
    assert alone.returncode == 0 and alone.stdout == ""


def test_shared_fixtures_directory():
    r = run_cli("--check", "-q", FIXTURES)
    assert r.returncode == 1
    by_file = {}
    for m in r.concise():
        by_file[m["path"].rsplit("/", 1)[-1]] = by_file.get(m["path"].rsplit("/", 1)[-1], 0) + 1
    assert by_file == {"sdxl_clip_extra_dispatches.mlir": 4, "hoisted_gather.mlir": 4,
                       "sdxl_prompt_encoder.input.mlir": 16, "clip_l.input.mlir": 4,
                       # torch IR: MLA004 found by lowering it to input (issue 38)
                       "sdxl_prompt_encoder.torch.mlir": 8, "clip_l.torch.mlir": 2}


def test_directory_without_mlir_warns(tmp_path):
    write(tmp_path, "empty/readme.txt", "nothing here")
    r = run_cli("--check", tmp_path / "empty")
    assert r.returncode == 0
    assert r.stdout == ""
    warning = [ln for ln in r.stderr.splitlines() if "warning" in ln]
    assert len(warning) == 1 and str(tmp_path / "empty") in warning[0] and ".mlir" in warning[0]


def test_missing_path_exits_2_and_still_checks_the_others(tmp_path):
    missing = tmp_path / "nope.mlir"
    r = run_cli("--check", missing, REPRO)
    assert r.returncode == 2
    assert [int(m["line"]) for m in r.concise()] == REPRO_LINES  # the other file was checked
    (err,) = r.error_lines()
    assert str(missing) in err and "no such file" in err


def test_many_files_in_parallel_match_serial(tmp_path):
    texts = [REPRO.read_text(), HOST, CLEAN, SEED.read_text()]
    for i in range(12):
        write(tmp_path, f"d/f{i:02d}.mlir", texts[i % len(texts)])
    par = run_cli("--check", "--output-format", "json", "-j", "2", tmp_path / "d")
    ser = run_cli("--check", "--output-format", "json", "-j", "1", tmp_path / "d")
    assert par.returncode == ser.returncode == 1
    assert par.stdout == ser.stdout
    data = json.loads(par.stdout)
    assert len({d["path"] for d in data}) == 9  # 3 of the 12 are clean
    assert len(data) == 3 * 4 + 3 * 1 + 3 * 4
    # and file order is stable: sorted like the directory walk
    paths = [d["path"] for d in data]
    assert paths == sorted(paths)

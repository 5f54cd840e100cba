"""The rules on the shared fixtures and on small hand-written inputs.

Where the real parser accepts an input, the asserts it sees (and their ancestors) are the
expected findings; the seed file (IREE of Nov 2024 syntax, which 3.13 cannot parse) is checked
against its known lines.
"""

from __future__ import annotations

import pytest

from conftest import MODELS, REPO, assert_spans_inside, expected_code, real_asserts
from mlir_lsp_asserts.checker import check_text
from mlir_lsp_asserts.config import Settings
from mlir_lsp_asserts.rules import RULES, RULES_BY_CODE, Severity
from mlir_lsp_asserts.rules.base import DOCS_DIR


def findings(text: str, codes=("MLA001", "MLA002", "MLA003")):
    return [f for f in check_text(text).findings if f.code in codes]


def summary(text: str):
    """(1-based line, code, assert message) of every finding, syntax errors included."""
    return [(f.span.start_pos.line + 1, f.code, f.assert_message) for f in check_text(text).findings]


def agrees_with_real_parser(text: str) -> None:
    """Our assert findings are exactly the real parser's cf.asserts, with the right rule (an op
    with an explicit `loc(...)` has no position in this text: there only the rule is compared)."""
    real = real_asserts(text)
    result = check_text(text)
    got = sorted((f.span.start_pos.line + 1, f.span.start_pos.character + 1, f.code) for f in result.findings)
    placed = sorted((line, col, expected_code(anc)) for line, col, anc in real if line is not None)
    unplaced = sorted(expected_code(anc) for line, _, anc in real if line is None)
    assert [g for g in got if g in placed] == placed
    assert sorted(g[2] for g in got if g not in placed) == unplaced
    assert_spans_inside(text, result.findings)


# --- the shared fixtures -----------------------------------------------------------------------

def test_seed_gives_four_mla001_on_its_assert_lines(seed_text):
    fs = check_text(seed_text).findings
    assert [(f.code, f.span.start_pos.line + 1, f.span.start_pos.character + 1) for f in fs] == [
        ("MLA001", 24, 9), ("MLA001", 26, 9), ("MLA001", 55, 9), ("MLA001", 57, 9)]
    lines = seed_text.split("\n")
    generic_lines = [19, 50]  # the two `linalg.generic`s (1-based)
    for f, gen_line in zip(fs, [19, 19, 50, 50], strict=True):
        # the range is the whole `cf.assert` op, nothing more
        assert seed_text[f.span.start:f.span.end] == lines[f.span.start_pos.line].strip()
        assert seed_text[f.span.start:f.span.end].startswith("cf.assert %")
        assert f.severity is Severity.WARNING
        assert f.name == "assert-in-linalg-region"
        assert f.doc_url and f.doc_url.startswith("file://") and f.doc_url.endswith("/rules/docs/MLA001.md")
        # related information points at the enclosing linalg.generic
        (rel,) = f.related
        assert rel.span.start_pos.line + 1 == gen_line
        assert seed_text[rel.span.start:rel.span.end] == "linalg.generic"
        assert "linalg.generic" in rel.message
        # the message says why it matters and quotes the assert
        assert f.assert_message in ("index must be smaller than dim size", "index must be larger or equal to 0")
        assert f'"{f.assert_message}"' in f.message
        assert "CSE" in f.message and "dispatch" in f.message
    assert sorted(generic_lines) == generic_lines


@pytest.mark.parametrize("name,count", [
    ("sdxl_prompt_encoder.input.mlir", 16),
    ("clip_l.input.mlir", 4),
    ("sdxl_prompt_encoder.torch.mlir", 0),
    ("clip_l.torch.mlir", 0),
])
def test_model_fixtures(name, count):
    text = (MODELS / name).read_text(encoding="utf-8")
    result = check_text(text)
    assert [f.code for f in result.findings] == ["MLA001"] * count
    for f in result.findings:
        assert f.assert_message in ("index must be smaller than dim size", "index must be larger or equal to 0")
        assert text[f.span.start:f.span.end].startswith("cf.assert ")
        assert [r.message for r in f.related] == ["enclosing `linalg.generic`"]
    # and they are the real parser's asserts, in the same places
    agrees_with_real_parser(text)


def test_repro_gives_four_mla001(repro_text):
    fs = check_text(repro_text).findings
    assert [(f.code, f.span.start_pos.line + 1) for f in fs] == [
        ("MLA001", 18), ("MLA001", 20), ("MLA001", 29), ("MLA001", 31)]
    assert [f.related[0].span.start_pos.line + 1 for f in fs] == [13, 13, 24, 24]
    agrees_with_real_parser(repro_text)


def test_rules_have_codes_names_severities_and_doc_links():
    assert [(r.code, r.name, r.severity) for r in RULES] == [
        ("MLA001", "assert-in-linalg-region", Severity.WARNING),
        ("MLA002", "assert-in-dispatch", Severity.WARNING),
        ("MLA003", "assert-on-host", Severity.INFORMATION),
        ("MLA004", "torch-op-lowers-to-assert", Severity.INFORMATION),
    ]
    for r in RULES:
        assert r.doc_url == (DOCS_DIR / f"{r.code}.md").as_uri()


@pytest.mark.parametrize("path", ["/opt/venv/lib/python3.11/site-packages/mlir_lsp_asserts/rules/docs/MLA001.md",
                                  "/home/a b/100% (copy)/#x?y&z=1;[]@!$'*+,=:~_.-/MLA002.md",
                                  "/home/\u00e9l\u00e8ve/\u6a21\u578b/\U0001f600.md", "/tmp/bad\udcffbyte.md", "/"])
def test_doc_links_are_the_uris_pathlib_makes(path):
    """The rules' doc links are built without pathlib (start-up); editors open them, so each byte
    is quoted as `Path.as_uri` quotes it, unusual install folders included."""
    from pathlib import Path

    from mlir_lsp_asserts.rules.base import file_uri

    assert file_uri(path) == Path(path).as_uri()


def test_every_rule_has_its_doc_page():
    for r in RULES:
        page = DOCS_DIR / f"{r.code}.md"
        assert page.is_file(), page
        assert r.code in page.read_text(encoding="utf-8")


# --- hand-written inputs -----------------------------------------------------------------------

DISPATCH_WORKGROUPS = """util.func @f(%arg: i1) {
  %0 = flow.dispatch.workgroups(%arg) : (i1) -> tensor<4xf32> = (%a: i1, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4xf32>>) {
    cf.assert %a, "in dispatch"
    flow.return
  }
  util.return
}
"""

DISPATCH_GENERIC_FORM = """util.func @f(%arg: i1) {
  %0 = flow.dispatch.workgroups(%arg) : (i1) -> tensor<4xf32> = (%a: i1, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4xf32>>) {
    "cf.assert"(%a) <{msg = "m"}> : (i1) -> ()
    flow.return
  }
  util.return
}
"""

HOST_CUSTOM = """func.func @mm(%a: index, %b: index) {
  %0 = arith.cmpi eq, %a, %b : index
  cf.assert %0, "mismatching contracting dimension for aten.mm"
  return
}
"""

HOST_GENERIC = """func.func @g(%a: i1) {
  "cf.assert"(%a) <{msg = "m"}> : (i1) -> ()
  return
}
"""

LINALG_GENERIC_FORM = """#map = affine_map<(d0) -> (d0)>
func.func @g(%x: tensor<4xi64>, %c: i1) -> tensor<4xi64> {
  %0 = "linalg.generic"(%x, %x) <{indexing_maps = [#map, #map], iterator_types = [#linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 1, 1>}> ({
  ^bb0(%in: i64, %out: i64):
    "cf.assert"(%c) <{msg = "generic in generic"}> : (i1) -> ()
    "linalg.yield"(%in) : (i64) -> ()
  }) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}
"""

SCATTER = """func.func @s(%u: tensor<3xf32>, %i: tensor<3x1xi32>, %o: tensor<8xf32>, %c: i1) -> tensor<8xf32> {
  %0 = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true) ins(%u, %i : tensor<3xf32>, tensor<3x1xi32>) outs(%o : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32):
    cf.assert %c, "scatter"
    iree_linalg_ext.yield %a : f32
  } -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
"""

LINALG_MAP = """func.func @m(%x: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %0 = linalg.map ins(%x : tensor<4xf32>) outs(%x : tensor<4xf32>)
    (%in: f32, %out: f32) {
      cf.assert %c, "map"
      linalg.yield %in : f32
    }
  return %0 : tensor<4xf32>
}
"""

LINALG_REDUCE_NESTED = """func.func @r(%x: tensor<4xf32>, %i: tensor<f32>, %c: i1) -> tensor<f32> {
  %0 = linalg.reduce ins(%x : tensor<4xf32>) outs(%i : tensor<f32>) dimensions = [0]
    (%in: f32, %init: f32) {
      scf.if %c {
        cf.assert %c, "deep"
      }
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  return %0 : tensor<f32>
}
"""

LINALG_IN_DISPATCH = """util.func @d(%x: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %0 = flow.dispatch.region -> (tensor<4xf32>) {
    cf.assert %c, "dispatch level"
    %1 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%x : tensor<4xf32>) {
    ^bb0(%out: f32):
      cf.assert %c, "linalg level"
      linalg.yield %out : f32
    } -> tensor<4xf32>
    flow.return %1 : tensor<4xf32>
  }
  util.return %0 : tensor<4xf32>
}
"""

EXECUTABLES = """hal.executable private @hex {
  hal.executable.variant public @v target(#hal.executable.target<"llvm-cpu", "embedded-elf-x86_64">) {
    builtin.module {
      func.func @k(%a: i1) {
        cf.assert %a, "hal exe"
        return
      }
    }
  }
}
stream.executable private @sex {
  stream.executable.export public @k workgroups() -> (index, index, index) {
    %c1 = arith.constant 1 : index
    stream.return %c1, %c1, %c1 : index, index, index
  }
  builtin.module {
    func.func @k(%c: i1) {
      cf.assert %c, "stream exe"
      return
    }
  }
}
flow.executable private @fex {
  flow.executable.export public @k
  builtin.module {
    func.func @k(%c: i1) {
      cf.assert %c, "flow exe"
      return
    }
  }
}
"""

COMMENTS_AND_STRINGS = """// CHECK: cf.assert %0, "x"
// CHECK-LABEL: func.func @f
func.func @f(%a: i1) attributes {note = "{ not a region }", n = {a = 1}} {
  // cf.assert %a, "commented out"
  %s = "foo.bar"() {s = "cf.assert %a, \\"}{\\"", t = "}"} : () -> i1
  %k = "foo.baz"() {k = {x = "}"}} : () -> i1
  cf.assert %a, "real { with a brace"
  cf.assert %a, "quote \\" brace } and \\\\"
  return
}
"""

UNREGISTERED = """func.func @u(%c: i1) {
  "my.op"() ({
    ^bb0:
    "cf.assert"(%c) {msg = "unreg"} : (i1) -> ()
    "my.term"() : () -> ()
  }) : () -> ()
  "my.linalgish"() ({
    "cf.assert"(%c) {msg = "x"} : (i1) -> ()
  }) : () -> ()
  return
}
"""

LOCATIONS_AND_ALIASES = """#map = affine_map<(d0) -> (d0)>
#loc1 = loc("model.py":12:3)
!t = tensor<4xi64>
func.func @l(%x: !t, %c: i1) -> !t {
  cf.assert %c, "with loc" loc(#loc1)
  %0 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : !t) outs(%x : !t) {
  ^bb0(%in: i64, %out: i64):
    cf.assert %c, "with inline loc" loc("x.py":1:2)
    linalg.yield %in : i64
  } -> !t loc("y.py":3:4)
  return %0 : !t
} loc(unknown)
"""

BLOCKS = """func.func @b(%c: i1) {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  cf.assert %c, "in bb1"
  cf.br ^bb2
^bb2:
  return
}
"""

MODULES = """module attributes {torch.debug_module_name = "M"} {
  module @inner {
    func.func @f(%c: i1) {
      cf.assert %c, "nested module"
      return
    }
  }
}
"""


@pytest.mark.parametrize("text,expected", [
    (DISPATCH_WORKGROUPS, [(3, "MLA002", "in dispatch")]),
    (DISPATCH_GENERIC_FORM, [(3, "MLA002", "m")]),
    (HOST_CUSTOM, [(3, "MLA003", "mismatching contracting dimension for aten.mm")]),
    (HOST_GENERIC, [(2, "MLA003", "m")]),
    (LINALG_GENERIC_FORM, [(5, "MLA001", "generic in generic")]),
    (SCATTER, [(4, "MLA001", "scatter")]),
    (LINALG_MAP, [(4, "MLA001", "map")]),
    (LINALG_REDUCE_NESTED, [(5, "MLA001", "deep")]),
    (LINALG_IN_DISPATCH, [(3, "MLA002", "dispatch level"), (6, "MLA001", "linalg level")]),
    (EXECUTABLES, [(5, "MLA002", "hal exe"), (18, "MLA002", "stream exe"), (27, "MLA002", "flow exe")]),
    (COMMENTS_AND_STRINGS, [(7, "MLA003", "real { with a brace"), (8, "MLA003", 'quote " brace } and \\')]),
    (UNREGISTERED, [(4, "MLA003", "unreg"), (8, "MLA003", "x")]),
    (LOCATIONS_AND_ALIASES, [(5, "MLA003", "with loc"), (8, "MLA001", "with inline loc")]),
    (BLOCKS, [(4, "MLA003", "in bb1")]),
    (MODULES, [(4, "MLA003", "nested module")]),
], ids=["dispatch-workgroups", "dispatch-generic-form", "host", "host-generic-form", "linalg-generic-form",
        "scatter", "linalg-map", "linalg-reduce-nested-scf", "linalg-in-dispatch", "executables",
        "comments-and-strings", "unregistered", "locations-and-aliases", "blocks", "modules"])
def test_hand_written(text, expected):
    assert summary(text) == expected
    agrees_with_real_parser(text)


def test_related_and_severity_per_rule():
    fs = findings(LINALG_IN_DISPATCH)
    by = {f.code: f for f in fs}
    assert by["MLA002"].severity is Severity.WARNING
    assert [r.message for r in by["MLA002"].related] == ["enclosing `flow.dispatch.region`"]
    assert LINALG_IN_DISPATCH[by["MLA002"].related[0].span.start:].startswith("flow.dispatch.region")
    assert [r.message for r in by["MLA001"].related] == ["enclosing `linalg.generic`"]
    host = findings(HOST_CUSTOM)[0]
    assert host.severity is Severity.INFORMATION and host.related == ()
    assert "runtime" in host.message
    # generic-form ranges cover the whole op too
    g = findings(HOST_GENERIC)[0]
    assert HOST_GENERIC[g.span.start:g.span.end] == '"cf.assert"(%a) <{msg = "m"}> : (i1) -> ()'
    sc = findings(SCATTER)[0]
    assert [r.message for r in sc.related] == ["enclosing `iree_linalg_ext.scatter`"]


def test_seed_syntax_of_older_iree_still_understood(seed_text):
    # !flow.dispatch.tensor and a bare `flow.dispatch.workgroup_count_from_slice` (no parentheses)
    assert "!flow.dispatch.tensor" in seed_text
    result = check_text(seed_text)
    assert not result.parsed.issues
    newer = seed_text.replace("!flow.dispatch.tensor", "!iree_tensor_ext.dispatch.tensor").replace(
        "flow.dispatch.tensor.", "iree_tensor_ext.dispatch.tensor.").replace(
        "flow.dispatch.workgroup_count_from_slice ", "iree_tensor_ext.dispatch.workgroup_count_from_slice()")
    assert summary(newer) == summary(seed_text)


def test_split_files_are_read_chunk_by_chunk():
    text = """func.func @a(%a: i1) {
  cf.assert %a, "one"
  return
}
// -----
func.func @b(%a: i1) {
  linalg.generic {indexing_maps = [], iterator_types = []} {
    cf.assert %a, "two"
  }
  return
// -----
func.func @c(%a: i1) {
  cf.assert %a, "three"
  return
}
"""
    got = summary(text)
    # the unclosed `{` of chunk 2 is reported there and does not swallow chunk 3
    assert (2, "MLA003", "one") in got
    assert (8, "MLA001", "two") in got
    assert (13, "MLA003", "three") in got
    syntax = [s for s in got if s[1] == "MLS001"]
    assert syntax and all(6 <= line <= 10 for line, _, _ in syntax)
    assert_spans_inside(text, check_text(text).findings)


def test_select_and_ignore_in_settings():
    text = LINALG_IN_DISPATCH + HOST_CUSTOM
    all_codes = [f.code for f in check_text(text).findings]
    assert sorted(all_codes) == ["MLA001", "MLA002", "MLA003"]
    only1 = Settings(select=frozenset({"MLA001"}))
    assert [f.code for f in check_text(text, only1).findings] == ["MLA001"]
    no3 = Settings(ignore=frozenset({"MLA003"}))
    assert sorted(f.code for f in check_text(text, no3).findings) == ["MLA001", "MLA002"]
    loud = Settings(severity=(("MLA003", Severity.ERROR),))
    assert [f.severity for f in check_text(text, loud).findings if f.code == "MLA003"] == [Severity.ERROR]
    assert RULES_BY_CODE["MLA003"].severity is Severity.INFORMATION  # the default did not change


def test_two_ops_on_one_line():
    text = 'func.func @f(%c: i1) {\n  %0 = arith.constant 1 : i32 cf.assert %c, "a"\n  return\n}\n'
    assert summary(text) == [(2, "MLA003", "a")]


@pytest.mark.slow
def test_the_rule_pages_ship_in_the_wheel(tmp_path):
    """Links and --explain read the pages installed with the package: a wheel must carry them."""
    import subprocess
    import sys
    import zipfile

    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                        "-w", str(tmp_path), str(REPO)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    (wheel,) = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for code in [r.code for r in RULES] + ["MLS001"]:
        assert f"mlir_lsp_asserts/rules/docs/{code}.md" in names, code

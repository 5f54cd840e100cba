"""The reader splits a text into `// -----` chunks exactly where `iree-opt --split-input-file`
(MLIR's `splitAndProcessBuffer`) does, so findings, fixes and the parser check see the same chunks
as the real tool: a marker in the middle of a line splits there, text after a marker on its line
starts the next chunk, and near misses (`// -----0`, a marker that ends the text) do not split.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import BIN
from fixhelpers import real_parse_error
from fuzzlib import check_fixes, parse_chunks
from mlir_lsp_asserts.checker import check_text
from mlir_lsp_asserts.fixes import fix_text
from mlir_lsp_asserts.fixes.plan import apply_edits
from mlir_lsp_asserts.syntax.parsed_text import split_chunks

A = "func.func @a() { return }"
B = "func.func @b() { return }"
# name -> (text, the chunks upstream makes of it)
PROBES = {
    "midline": (f"{A}// -----\n{B}\n", [A, f"\n{B}\n"]),
    "text after the marker": (f"{A}\n// ----- {B}\n", [f"{A}\n", f" {B}\n"]),
    "marker then newline": (f"{A}\n// -----\n{B}\n", [f"{A}\n", f"\n{B}\n"]),
    "six dashes": (f"{A}\n// ------\n{B}\n", [f"{A}\n", f"-\n{B}\n"]),
    "near miss 0": (f"{A}\n// -----0\n{B}\n", [f"{A}\n// -----0\n{B}\n"]),
    "near miss at the end": (f"{A}\n// -----", [f"{A}\n// -----"]),
    "a marker and a near miss": (f"{A}\n// -----// -----\n{B}\n", [f"{A}\n// -----", f"\n{B}\n"]),
    "in a string": (f'{A}\n"x// -----"\n{B}\n', [f'{A}\n"x', f'"\n{B}\n']),
    "short prefix": (f"{A}\n// --- x\n{B}\n", [f"{A}\n// --- x\n{B}\n"]),
}

# The saved input of the fixes soak: the marker ends a line inside `arith.cmpi`.
MIDLINE_CMPI = """\
func.func @mm(%a: tensor<4x?xf32>, %b: tensor<?x8xf32>) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = tensor.dim %a, %c1 : tensor<4x?xf32>
  %d1 = tensor.dim %b, %c0 : tensor<?x8xf32>
  %eq = arith.cmpi// -----
 eq, %d0, %d1 : index
  cf.assert %eq, "mismatching contracting dimension for aten.mm"
  return %d0 : index
}
"""

# Valid under the tool's split: markers after a closing brace and before an op on their line.
SPLIT_ASSERTS = """\
func.func @a(%p: i1) {
  cf.assert %p, "a"
  return
}// -----
func.func @b(%p: i1) {
  cf.assert %p, "b"
  return
}
// ----- func.func @c(%x: index, %y: index) {
  %eq = arith.cmpi eq, %x, %y : index
  cf.assert %eq, "c"
  return
}
"""


def split_input_file(text: str, tmp_path) -> subprocess.CompletedProcess:
    f = tmp_path / "in.mlir"
    f.write_text(text, encoding="utf-8")
    return subprocess.run([str(BIN / "iree-opt"), "--split-input-file", str(f)],
                          capture_output=True, text=True, timeout=300)


def funcs_per_chunk_of_the_tool(text: str, tmp_path) -> list[list[str]]:
    """The functions iree-opt prints for each chunk it made (none for a chunk it rejected)."""
    out = split_input_file(text, tmp_path).stdout
    return [re.findall(r"func\.func @(\w+)", part) for part in re.split(r"^// -----$", out, flags=re.M)]


@pytest.mark.parametrize("name", list(PROBES))
def test_chunks_are_where_split_input_file_splits(name, tmp_path):
    text, expected = PROBES[name]
    chunks = [text[s:e] for s, e in split_chunks(text)]
    assert chunks == expected
    ours = [re.findall(r"func\.func @(\w+)", c) if real_parse_error(c) is None else [] for c in chunks]
    assert ours == funcs_per_chunk_of_the_tool(text, tmp_path)


def test_a_file_that_starts_with_a_marker_reads_as_its_ops(tmp_path):
    """The one deliberate difference from the tool: it leaves the `--` of a first marker in the
    first chunk (a syntax error at line 1); the reader drops the marker, so such a file (and one of
    markers only) reads as its ops, as it did before, instead of an MLS001 on a comment line."""
    text = f"// -----\n{B}\n"
    assert [text[s:e] for s, e in split_chunks(text)] == [f"\n{B}\n"]
    assert split_input_file(text, tmp_path).returncode != 0
    assert not [f for f in check_text("// -----\n// -----\n").findings]


def test_an_input_with_a_midline_marker_is_judged_like_split_input_file(tmp_path):
    assert [MIDLINE_CMPI[s:e] for s, e in split_chunks(MIDLINE_CMPI)] == MIDLINE_CMPI.split("// -----")
    assert split_input_file(MIDLINE_CMPI, tmp_path).returncode != 0
    assert parse_chunks(MIDLINE_CMPI) is not None  # the fixes oracle agrees: not valid input
    assert check_fixes(MIDLINE_CMPI) == {"parsed": 0, "fixes": 0}


def test_fixes_across_midline_markers_are_accepted_by_split_input_file(tmp_path):
    assert split_input_file(SPLIT_ASSERTS, tmp_path).returncode == 0
    result = check_text(SPLIT_ASSERTS)
    findings = [f for f in result.findings if f.code.startswith("MLA")]
    assert sorted(f.message.rsplit('"', 2)[1] for f in findings) == ["a", "b", "c"]
    fixed = {fix.title: apply_edits(SPLIT_ASSERTS, list(fix.edits)) for f in findings for fix in f.fixes}
    for mode in ("strip", "assume"):
        fixed[f"fix all ({mode})"] = fix_text(result, mode, unsafe=True).text
    assert len(fixed) == 5
    for title, after in fixed.items():
        p = split_input_file(after, tmp_path)
        assert p.returncode == 0, (title, after, p.stderr)
    assert check_fixes(SPLIT_ASSERTS) == {"parsed": 1, "fixes": len(fixed)}

"""The weights of the IR handed between compiles (dispatch/resources.py, issue 38): an
intermediate that refers to blobs it does not hold gets the source's section back, and a
reference the source cannot answer is refused, never guessed. The release that needs it (3.8)
is run by tests/compat/test_compat_torch_inline.py; here, the repair on 3.13's own lowering."""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import BIN, DATA
from mlir_lsp_asserts.dispatch.resources import ResourcesLost, kept, missing, section_keys
from mlir_lsp_asserts.syntax.resource_section import ir_end

EXPORT = DATA / "torch_inline" / "position_twice.torch.mlir"


def _lowered(tmp_path) -> str:
    out = tmp_path / "in.mlir"
    subprocess.run([str(BIN / "iree-compile"), str(EXPORT), "--iree-hal-target-device=hip", "--iree-rocm-target=gfx942",
                    "--compile-to=input",
                    "-o", str(out)], check=True, timeout=300)
    return out.read_text()


def test_a_lowering_without_its_section_gets_the_inputs_and_compiles_on(tmp_path):
    lowered = _lowered(tmp_path)  # 3.13 prints the section: cut it, as 3.8 does
    as_38 = lowered[:ir_end(lowered)]
    source = EXPORT.read_text()
    assert missing(as_38) == {"torch_tensor_1_77_torch.int64", "torch_tensor_64_torch.float32",
                              "__auto.constant_100_64_torch.float32", "__auto.constant_77_64_torch.float32",
                              "__auto.constant_64_64_torch.float32"}
    repaired = kept(as_38, source)
    assert missing(repaired) == set() and repaired.endswith(source[ir_end(source):])
    f = tmp_path / "repaired.mlir"
    f.write_text(repaired)
    p = subprocess.run([str(BIN / "iree-compile"), str(f), "--compile-from=input", "--iree-hal-target-device=hip",
                        "--iree-rocm-target=gfx942",
                        "--compile-to=dispatch-creation", "-o", str(tmp_path / "dc.mlir")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert kept(lowered, source) is lowered  # a release that keeps the section: left as it is


def test_a_reference_the_input_does_not_hold_is_refused():
    source = EXPORT.read_text()
    lowered = source[:ir_end(source)] + 'util.global private @g = dense_resource<made_by_a_pass> : tensor<2xf32>\n'
    with pytest.raises(ResourcesLost, match=r"1 resource\(s\) that the input does not hold \(made_by_a_pass\)"):
        kept(lowered, source)


def test_section_keys_reads_bare_and_quoted_keys():
    section = '{-#\n  dialect_resources: {\n    builtin: {\n      a.b_1: "0x04000000",\n' \
              '      "with space": "0x08000000"\n    }\n  }\n#-}\n'
    assert section_keys(section) == {"a.b_1", "with space"}
    assert re.search("builtin", section) and "builtin" not in section_keys(section)

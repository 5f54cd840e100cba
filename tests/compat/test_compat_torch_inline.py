"""A weights-inline torch export beside this venv's IREE release (issue 38): its count, what-if and
compile with the fix equal this release's own raw iree-compile, and where this release's runtime
is installed, the fixed module computes what torch computed.

The export (tests/data/torch_inline/, made once by make_torch_inline.py with the project's torch
and iree-turbine) looks up the same position embedding of a constant `arange(77)` twice, plus a
token embedding and a linear, every weight a `dense_resource` blob in the file. IREE 3.8's
`--compile-to=input` prints the blobs' references without their data: an intermediate handed
to the next compile as 3.8 printed it fails ("resource data missing in input IR").

The raw what-if is this release's own route with nothing of ours in between but the fix: the
lowering written as bytecode (`--emit-mlir-bytecode` keeps the blobs), printed by this release's
`iree-opt`, fixed by `mlir-lsp --fix`, compiled with `--compile-from=input`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from compat_helpers import IREE_COMPILE, IREE_OPT, gfx942_flags, iree_version, raw_dispatches

from conftest import DATA, run_cli
from mlir_lsp_asserts.iree_release import bindings_release

pytestmark = pytest.mark.compat

EXPORT = DATA / "torch_inline" / "position_twice.torch.mlir"


def _lowered_by_this_release(tmp: Path, flags: list[str]) -> Path:
    """The export at `input`, through bytecode, as this release's iree-opt prints it."""
    bc, text = tmp / "raw.input.mlirbc", tmp / "raw.input.mlir"
    subprocess.run([str(IREE_COMPILE), str(EXPORT), *flags, "--compile-to=input", "--emit-mlir-bytecode",
                    "-o", str(bc)], check=True, timeout=300, capture_output=True)
    subprocess.run([str(IREE_OPT), str(bc), "-o", str(text)], check=True, timeout=300, capture_output=True)
    return text


def _raw_fixed(tmp: Path, flags: list[str], mode: str) -> int | str:
    lowered = _lowered_by_this_release(tmp, flags)
    r = run_cli("--check", "--fix", "--fix-mode", mode, lowered)
    assert r.returncode == 0, r.stderr
    return raw_dispatches(lowered, ["--compile-from=input", *flags], tmp)


def _count(*args: str | Path, flags: list[str]) -> tuple[int, dict]:
    r = run_cli("--dispatch-count", "--output-format", "json", "--no-cache", "--flags", " ".join(flags), *args,
                timeout=600)
    return r.returncode, (json.loads(r.stdout)[0] if r.returncode in (0, 1) else {"stderr": r.stderr})


@pytest.mark.parametrize("mode", ["strip", "assume"])
def test_count_and_what_if_equal_this_releases_raw_compile(tmp_path, mode):
    flags = gfx942_flags()
    raw = raw_dispatches(EXPORT, flags, tmp_path)
    raw_fixed = _raw_fixed(tmp_path, flags, mode)
    assert isinstance(raw, int) and isinstance(raw_fixed, int) and raw > 0, (raw, raw_fixed)
    code, item = _count("--what-if-mode", mode, EXPORT, flags=flags)
    assert code == 0, item
    assert item["flow_dispatches"] == raw
    assert item["what_if"]["mode"] == mode and item["what_if"]["flow_dispatches"] == raw_fixed
    assert item["what_if"]["asserts_fixed"] == 6  # two per gather: three torch.aten.embedding
    print(f"iree-compile {iree_version()}: what-if ({mode}) {raw} -> {raw_fixed}")


def test_the_bytecode_of_the_export_counts_as_its_text(tmp_path):
    bc = tmp_path / "export.mlirbc"
    subprocess.run([str(IREE_OPT), str(EXPORT), "--emit-bytecode", "-o", str(bc)], check=True, timeout=120)
    flags = gfx942_flags()
    code, item = _count("--what-if-mode", "assume", bc, flags=flags)
    assert code == 0, item
    assert item["flow_dispatches"] == raw_dispatches(EXPORT, flags, tmp_path)
    assert item["what_if"]["flow_dispatches"] == _raw_fixed(tmp_path, flags, "assume")


def test_compile_with_the_fix_writes_a_module(tmp_path):
    flags = gfx942_flags()
    out = tmp_path / "fixed.vmfb"
    r = run_cli("--compile", EXPORT, "-o", out, "--fix-mode", "assume", "--no-cache", "--output-format", "json",
                "--flags", " ".join(flags), timeout=900)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["asserts_fixed"] == 6 and got["output"] == str(out)
    assert got["unfixed_flow_dispatches"] == raw_dispatches(EXPORT, flags, tmp_path)
    assert got["flow_dispatches"] == _raw_fixed(tmp_path, flags, "assume")
    assert out.stat().st_size > 1000


def _runtime():
    """This release's runtime, when it is installed beside its compiler (`make compat-venvs`
    installs iree-base-runtime of the same release where pip has it)."""
    rt = pytest.importorskip("iree.runtime", reason="no iree-base-runtime in this venv")
    from importlib.metadata import version

    from mlir_lsp_asserts.iree_release import parse_release

    if parse_release(version("iree-base-runtime")) != bindings_release():
        pytest.skip(f"iree-base-runtime {version('iree-base-runtime')} is not this compiler's release")
    return rt


@pytest.mark.parametrize("mode", ["assume", "strip"])
def test_the_fixed_module_computes_what_torch_computed(tmp_path, mode):
    rt = _runtime()
    import numpy as np

    out = tmp_path / "fixed.vmfb"
    r = run_cli("--compile", EXPORT, "-o", out, "--fix-mode", mode, "--no-cache", "--profile", "cpu-host",
                timeout=900)
    assert r.returncode == 0, r.stderr
    tokens = np.load(EXPORT.parent / "tokens.npy")
    expected = np.load(EXPORT.parent / "expected.npy")
    inst = rt.VmInstance()
    dev = rt.get_device("local-task")
    main = rt.VmModule.copy_buffer(inst, out.read_bytes())
    ctx = rt.VmContext(inst, modules=[rt.create_hal_module(inst, dev), main])
    got = rt.FunctionInvoker(ctx, dev, main.lookup_function("main"))(tokens)
    np.testing.assert_allclose(got.to_host(), expected, rtol=1e-5, atol=1e-5)

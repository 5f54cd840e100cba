"""The fixed model computes the same: a model exported here with iree-turbine's `aot.export` and the
repro, compiled with and without the fix, run with iree-base-runtime on the CPU (llvm-cpu,
`local-task`): equal outputs, and equal to torch's (numpy's for the repro) within tolerance.
Also the dispatch counts of the export with the fix (gfx942, default flags), measured: fewer
with the parameters externalized, none saved with the weights inline (and the tool says so).

Needs the `export` extra (torch CPU wheel, iree-turbine, iree-base-runtime): `make setup`."""

from __future__ import annotations

import numpy as np
import pytest

import mlir_lsp_asserts as mla
from conftest import REPRO, run_cli
from mlir_lsp_asserts.iree_flags.flags import TARGET_CPU_HOST

torch = pytest.importorskip("torch")
aot = pytest.importorskip("iree.turbine.aot")
rt = pytest.importorskip("iree.runtime")


class PositionTwice(torch.nn.Module):
    """The SDXL effect in small: the same position-embedding lookup of constant ids, twice."""

    def __init__(self):
        super().__init__()
        self.pos = torch.nn.Embedding(77, 64)

    def forward(self, x):
        ids = torch.arange(77).unsqueeze(0)
        return x + self.pos(ids), x * self.pos(ids)


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return PositionTwice().eval()


def _export(externalize: bool):
    m = _model()
    if externalize:
        aot.externalize_module_parameters(m)
    return aot.export(m, args=(torch.zeros(1, 77, 64),))


def run_vmfb(vmfb: bytes, params: dict[str, np.ndarray], *args: np.ndarray) -> list[np.ndarray]:
    """`main` of a module run on the CPU, its parameters (scope `model`) given from memory."""
    inst = rt.VmInstance()
    dev = rt.get_device("local-task")
    index = rt.ParameterIndex()
    for name, value in params.items():
        index.add_buffer(name, np.ascontiguousarray(value).tobytes())
    params_module = rt.create_io_parameters_module(inst, index.create_provider(scope="model"))
    main = rt.VmModule.copy_buffer(inst, vmfb)
    ctx = rt.VmContext(inst, modules=[rt.create_hal_module(inst, dev), params_module, main])
    out = rt.FunctionInvoker(ctx, dev, main.lookup_function("main"))(*args)
    return [o.to_host() for o in (out if isinstance(out, (list, tuple)) else [out])]


def plain_vmfb(text: str) -> bytes:
    """The module compiled as it is, by IREE's own Python compiler API (not ours)."""
    from iree.compiler import compile_str

    return compile_str(text, extra_args=list(TARGET_CPU_HOST))


def test_the_export_with_the_fix_has_fewer_dispatches_on_gfx942():
    exported = _export(externalize=True)
    r = mla.compile_fixed(exported, fix_mode="assume", cache=False)  # gfx942, default flags
    print(f"export, parameters externalized, gfx942: {r.unfixed_dispatches} -> {r.fixed_dispatches} "
          f"({r.seconds} s)")
    assert r.unfixed_dispatches is not None and r.fixed_dispatches < r.unfixed_dispatches
    assert r.saved == r.unfixed_dispatches - r.fixed_dispatches and f"saved {r.saved}" in r.summary()
    assert r.asserts_fixed == 4 and r.fixed_by_code == {"MLA001": 4}
    assert r.vmfb is not None and len(r.vmfb) > 1000
    plain = mla.count_dispatches(exported, what_if="assume", cache=False)
    assert plain.flow_dispatches == r.unfixed_dispatches
    assert plain.what_if is not None and plain.what_if.flow_dispatches == r.fixed_dispatches


def test_with_the_weights_inline_the_fix_saves_nothing_and_says_so():
    r = mla.compile_fixed(_export(externalize=False), fix_mode="assume", cache=False)
    print(f"export, weights inline, gfx942: {r.unfixed_dispatches} -> {r.fixed_dispatches}")
    assert r.saved == 0
    assert f"the fix saves no dispatch here ({r.fixed_dispatches} with and without)" in r.summary()


@pytest.mark.parametrize("mode", ["assume", "strip"])
def test_the_fixed_export_computes_what_the_unfixed_one_and_torch_compute(mode):
    exported = _export(externalize=True)
    fixed = mla.compile_fixed(exported, fix_mode=mode, profile="cpu-host", cache=False)
    assert fixed.asserts_fixed == 4 and fixed.vmfb is not None
    plain = plain_vmfb(str(exported.mlir_module))
    model = _model()
    params = {"pos.weight": model.pos.weight.detach().numpy()}
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.standard_normal((1, 77, 64), dtype=np.float32)
        with torch.no_grad():
            expected = [t.numpy() for t in model(torch.from_numpy(x))]
        got_fixed = run_vmfb(fixed.vmfb, params, x)
        got_plain = run_vmfb(plain, params, x)
        assert len(got_fixed) == len(got_plain) == 2
        for a, b, e in zip(got_fixed, got_plain, expected, strict=True):
            assert np.array_equal(a, b)
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("front_end", ["api", "cli"])
def test_the_fixed_repro_computes_what_the_unfixed_one_computes(front_end, tmp_path):
    text = REPRO.read_text()
    if front_end == "api":
        fixed = mla.compile_fixed(text, fix_mode="assume", profile="cpu-host", cache=False)
        assert (fixed.unfixed_dispatches, fixed.fixed_dispatches) == (4, 3)
        assert fixed.vmfb is not None
        vmfb = fixed.vmfb
    else:
        out = tmp_path / "repro.vmfb"
        r = run_cli("--compile", REPRO, "-o", out, "--fix-mode", "assume", "--profile", "cpu-host", "--no-cache")
        assert r.returncode == 0 and "4 -> 3 dispatches (saved 1)" in r.stdout, r.stderr
        vmfb = out.read_bytes()
    plain = plain_vmfb(text)
    rng = np.random.default_rng(2)
    w1 = rng.standard_normal((77, 768)).astype(np.float16)
    x = rng.standard_normal((64, 768)).astype(np.float16)
    got_fixed = run_vmfb(vmfb, {"w1": w1}, x)
    got_plain = run_vmfb(plain, {"w1": w1}, x)
    assert len(got_fixed) == len(got_plain) == 2
    for a, b in zip(got_fixed, got_plain, strict=True):
        assert np.array_equal(a, b)
    rows = w1[:64]  # ids 0..63 of the repro's constant
    np.testing.assert_allclose(got_fixed[0], rows + x, rtol=1e-3)
    np.testing.assert_allclose(got_fixed[1], rows * x, rtol=1e-3)


def test_check_and_fix_take_an_export_and_say_its_asserts_come_with_lowering():
    exported = _export(externalize=True)
    # torch IR: the asserts exist only after --compile-to=input, which check lowers it to
    found = mla.check(exported)
    assert [(f.code, f.line) for f in found.findings] == [("MLA004", f.line) for f in found.findings]
    assert len(found.findings) == 2 and found.notes == ()
    unlowered = mla.check(exported, lower=False)
    assert unlowered.findings == () and unlowered.notes == (
        "torch IR: its asserts appear when it is lowered; not lowered (lower=False)",)
    r = mla.fix(exported, mode="assume")
    assert not r.changed and r.text.count("torch.aten.embedding") == 2
    assert any("compile_fixed lowers, fixes and compiles it" in n for n in r.notes)

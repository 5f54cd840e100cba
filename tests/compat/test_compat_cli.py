"""The package beside this venv's IREE release (docs/compatibility.md): check, fixes that this
release's parser accepts, `.mlirbc` read and written back, and dispatch counts equal to this
release's own raw iree-compile. CI runs it in a venv per supported release (`make test-compat`);
it passes in the main venv too."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from importlib.metadata import version

import pytest
from compat_helpers import IREE_OPT, gfx942_flags, iree_version, parse_error, raw_dispatches, readable_or_skip

from conftest import MODELS, REPRO, run_cli, write
from mlir_lsp_asserts.iree_release import bindings_release, compiler_message, parse_release, unsupported_message

pytestmark = pytest.mark.compat

ASSERT_LINES = [18, 20, 29, 31]
ASSERT_OP = re.compile(r"^\s*cf\.assert ", re.M)
# The repro with a weight inline, as an export without externalized parameters holds it.
BLOB = "0x040000000000803F000000400000404000008040"  # alignment 4, then f32 1, 2, 3, 4
RESOURCE = ("util.global private @w2 = dense_resource<w_blob> : tensor<4xf32>\n"
            "{-#\n  dialect_resources: {\n    builtin: {\n      w_blob: \"" + BLOB + "\"\n    }\n  }\n#-}\n")


DISPATCH_TENSOR = """func.func @f(%a: !{dialect}.dispatch.tensor<readonly:tensor<4xf32>>, %i: index) {{
  %c = arith.constant 4 : index
  %k = arith.cmpi ult, %i, %c : index
  cf.assert %k, "in range"
  return
}}
"""


def test_this_venv_runs_one_supported_release():
    """The bindings, iree-compile and what mlir-lsp reports are this venv's one release."""
    release = bindings_release()
    assert release == parse_release(version("iree-base-compiler"))
    assert unsupported_message(release) is None
    assert parse_release(iree_version()) == release
    flags = " ".join([*gfx942_flags(), "--iree-opt-const-eval=false"])
    r = run_cli("--dispatch-count", "--output-format", "json", "--flags", flags, REPRO)
    assert parse_release(json.loads(r.stdout)[0]["compiler_version"]) == release


def test_check_finds_the_four_asserts():
    r = run_cli("--check", REPRO)
    assert r.returncode == 1
    assert [(int(m["line"]), m["code"]) for m in r.concise()] == [(n, "MLA001") for n in ASSERT_LINES]


@pytest.mark.parametrize("mode", ["strip", "assume"])
def test_fix_is_read_by_this_releases_parser(tmp_path, mode):
    f = write(tmp_path, "repro.mlir", REPRO.read_text())
    r = run_cli("--check", "--fix", "--fix-mode", mode, f)
    assert r.returncode == 0, r.stderr
    fixed = f.read_text()
    assert not ASSERT_OP.search(fixed)
    assert bool(re.search(r"= util\.assume\.int ", fixed)) == (mode == "assume")
    p = subprocess.run([str(IREE_OPT), str(f), "-o", "/dev/null"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr  # this release's parser and verifier accept the fix


def test_model_fix_is_read_by_this_releases_parser(tmp_path):
    """A real export's input IR (printed by 3.13): fixed and re-parsed, or skipped with the
    parser's reason where this release cannot read it."""
    src = readable_or_skip(MODELS / "clip_l.input.mlir")
    f = tmp_path / src.name
    shutil.copy(src, f)
    f.chmod(0o644)
    assert [m["code"] for m in run_cli("--check", "-q", f).concise()] == ["MLA001"] * 4
    assert run_cli("--check", "--fix", "--fix-mode", "assume", f).returncode == 0
    p = subprocess.run([str(IREE_OPT), str(f), "-o", "/dev/null"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr


def test_bytecode_read_and_written_back_with_its_weights(tmp_path):
    src = write(tmp_path, "exported.mlir", REPRO.read_text() + RESOURCE)
    bc = tmp_path / "exported.mlirbc"
    subprocess.run([str(IREE_OPT), str(src), "--emit-bytecode", "-o", str(bc)], check=True, timeout=120)
    r = run_cli("--check", bc)
    assert r.returncode == 1 and [m["code"] for m in r.concise()] == ["MLA001"] * 4
    r = run_cli("--check", "--fix", "--fix-mode", "assume", bc)
    assert r.returncode == 0 and "fixed 4" in r.stderr, r.stderr
    assert bc.read_bytes().startswith(b"ML\xefR")
    back = subprocess.run([str(IREE_OPT), str(bc)], capture_output=True, text=True, check=True, timeout=120).stdout
    assert not ASSERT_OP.search(back) and back.count("util.assume.int") == 2
    assert f'w_blob: "{BLOB}"' in back  # the weight, byte for byte
    assert run_cli("--check", bc).returncode == 0


def _count(*args, flags: list[str]) -> tuple[int, dict]:
    r = run_cli("--dispatch-count", "--output-format", "json", "--flags", " ".join(flags), *args, timeout=600)
    return r.returncode, (json.loads(r.stdout)[0] if r.returncode in (0, 1) else {"stderr": r.stderr})


@pytest.mark.parametrize("mode", ["strip", "assume"])
def test_count_and_what_if_equal_this_releases_raw_compile(tmp_path, mode):
    flags = [*gfx942_flags(), "--iree-opt-const-eval=false"]
    fixed = write(tmp_path, "fixed.mlir", REPRO.read_text())
    assert run_cli("--check", "--fix", "--fix-mode", mode, fixed).returncode == 0
    raw, raw_fixed = raw_dispatches(REPRO, flags, tmp_path), raw_dispatches(fixed, flags, tmp_path)
    assert isinstance(raw, int) and isinstance(raw_fixed, int) and raw > 0, (raw, raw_fixed)
    code, item = _count("--what-if-mode", mode, REPRO, flags=flags)
    assert code == 0, item
    assert item["flow_dispatches"] == raw
    assert sum(item["per_function"].values()) == raw
    assert item["what_if"]["mode"] == mode and item["what_if"]["flow_dispatches"] == raw_fixed


def test_default_profile_counts_or_says_why_in_one_line(tmp_path):
    """The built-in profile, whose flag names are 3.13's: translated for this release; where this
    release's own compile of the same flags fails, one clear line instead of a count."""
    raw = raw_dispatches(REPRO, gfx942_flags(), tmp_path)
    r = run_cli("--dispatch-count", "--output-format", "json", REPRO, timeout=600)
    if isinstance(raw, int):
        assert r.returncode == 0 and json.loads(r.stdout)[0]["flow_dispatches"] == raw
    else:  # e.g. 3.3: its const-eval cannot read parameter globals
        assert r.returncode == 2
        (line,) = r.error_lines()
        assert "const-eval" in line and "--iree-opt-const-eval=false" in line


def test_a_file_in_the_other_dispatch_tensor_syntax_is_said_once(tmp_path):
    """`!flow.dispatch.tensor` (IREE up to 3.3) became `!iree_tensor_ext.dispatch.tensor`: a
    file in the form this release does not know still gets our own findings, and the count
    equals this release's raw compile or is one line naming this compiler's release."""
    forms = {}
    for dialect in ("flow", "iree_tensor_ext"):
        forms[dialect] = write(tmp_path, f"{dialect}.mlir", DISPATCH_TENSOR.format(dialect=dialect))
    unreadable = [f for f in forms.values() if parse_error(f)]
    assert len(unreadable) == 1  # each release knows exactly one of the two names
    (f,) = unreadable
    assert [m["code"] for m in run_cli("--check", f).concise()] == ["MLA003"]
    raw = raw_dispatches(f, gfx942_flags(), tmp_path)
    r = run_cli("--dispatch-count", "--output-format", "json", f, timeout=600)
    if isinstance(raw, int):  # 3.3's iree-compile takes the newer type as an unregistered dialect's
        assert r.returncode == 0 and json.loads(r.stdout)[0]["flow_dispatches"] == raw
    else:
        assert r.returncode == 2
        (line,) = r.error_lines()
        assert re.search(r"iree-compile 3\.\d+\S* cannot read this file's IREE syntax", line), line


@pytest.mark.parametrize("reported, problem", [
    ("3.3.0rc20250320", None),  # what 3.3.0's iree-compile --version says
    ("3.8.0rc20251010", None),
    ("3.13.0", None),
    ("3.2.0", "iree-compile 3.2.0 is older than 3.3, the oldest release mlir-lsp supports"),
    ("2.9.0", "iree-compile 2.9.0 is older than 3.3, the oldest release mlir-lsp supports"),
    ("custom-build", None),  # no release in it: a development build is not refused
])
def test_which_compiler_releases_are_refused(reported, problem):
    msg = compiler_message(reported)
    assert (msg.split(" (")[0] if msg else None) == problem

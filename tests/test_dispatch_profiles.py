"""The built-in dispatch profiles beyond gfx942: each one compiled for real on the repro, and
`mlir-lsp --list-profiles`."""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest

from conftest import BIN, REPRO, run_cli
from mlir_lsp_asserts.iree_flags.flags import BUILTIN_PROFILES

# profile -> what its executables' target looks like in the dispatch-creation output
TARGETS = {
    "rocm-gfx90a": '#hal.executable.target<"rocm", "rocm-hsaco-fb", {abi = "hip"',
    "rocm-gfx1100": '#hal.executable.target<"rocm", "rocm-hsaco-fb", {abi = "hip"',
    "cuda-sm80": '#hal.executable.target<"cuda", "cuda-nvptx-fb", {',
    "cuda-sm90": '#hal.executable.target<"cuda", "cuda-nvptx-fb">',  # no configuration: see below
    "cpu-host": '#hal.executable.target<"llvm-cpu", "embedded-elf-',
}
ARCH = {"rocm-gfx90a": 'arch = "gfx90a"', "rocm-gfx1100": 'arch = "gfx1100"', "cuda-sm80": 'arch = "sm_80"',
        "cuda-sm90": None, "cpu-host": "cpu = "}
NO_DETAILS = "knows no details of the chip these flags name"


def count(tmp_path, *args):
    r = run_cli("--dispatch-count", "--output-format", "json", *args, REPRO, env={"XDG_CACHE_HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    (item,) = json.loads(r.stdout)
    return item, r.stderr


def test_the_contract_names_keep_their_flags():
    assert BUILTIN_PROFILES["default"] == ("--iree-hal-target-device=hip", "--iree-rocm-target=gfx942")
    assert BUILTIN_PROFILES["sdxl"][:2] == BUILTIN_PROFILES["default"] and len(BUILTIN_PROFILES["sdxl"]) == 13
    assert set(TARGETS) | {"default", "sdxl"} == set(BUILTIN_PROFILES)


@pytest.mark.parametrize("profile", sorted(TARGETS))
def test_profile_counts_the_repro_like_gfx942(tmp_path, profile):
    """The repro's count does not depend on the target: 4 dispatches, 3 with the asserts removed,
    3 at stream level, as for gfx942 (test_dispatch_count.py); the compile is for that target."""
    item, stderr = count(tmp_path, "--profile", profile, "--what-if", "--stream")
    assert item["profile"] == profile
    assert item["flow_dispatches"] == 4 and item["stream_dispatches"] == 3
    assert item["per_function"] == {"@main": 2, "util.initializer#1": 1, "util.initializer#2": 1}
    assert item["what_if"]["flow_dispatches"] == 3 and item["what_if"]["saved"] == 1
    outputs = list((tmp_path / "mlir-lsp" / "dispatch" / "ir").glob("*.mlir"))
    assert len(outputs) == 2  # the count and the what-if
    for out in outputs:
        ir = out.read_text()
        assert TARGETS[profile] in ir
        if ARCH[profile]:
            assert ARCH[profile] in ir
    if profile == "cuda-sm90":
        assert item["warnings"] == [w for w in item["warnings"] if NO_DETAILS in w and "cuda sm_90" in w]
        assert len(item["warnings"]) == 1 and NO_DETAILS in stderr
    else:
        assert item["warnings"] == [] and "warning" not in stderr


def test_sm90_warning_is_true_a_full_compile_fails(tmp_path):
    """IREE 3.13 has no sm_90 in its table of GPU details; when a release adds it, this fails and
    the warning of cuda-sm90 goes away by itself (it reads the compiler's output)."""
    p = subprocess.run([str(BIN / "iree-compile"), str(REPRO), *BUILTIN_PROFILES["cuda-sm90"],
                        "-o", str(tmp_path / "out.vmfb")], capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "missing GPU target" in p.stderr


def test_a_mistyped_cuda_chip_is_warned_about(tmp_path):
    """CUDA accepts any chip name until codegen; the count warns, naming the last one given."""
    item, stderr = count(tmp_path, "--profile", "cuda-sm80", "--flags=--iree-cuda-target=sm_9999")
    assert item["flow_dispatches"] == 4
    assert NO_DETAILS in stderr and "(cuda sm_9999;" in stderr


def test_a_mistyped_rocm_chip_fails_the_count(tmp_path):
    r = run_cli("--dispatch-count", "--profile", "rocm-gfx90a", "--flags=--iree-rocm-target=gfx9999", REPRO,
                env={"XDG_CACHE_HOME": str(tmp_path)})
    assert r.returncode == 2 and "Unknown ROCM target 'gfx9999'" in r.stderr


def test_unknown_profile_names_the_known_ones(tmp_path):
    r = run_cli("--dispatch-count", "--profile", "gfx90a", REPRO, env={"XDG_CACHE_HOME": str(tmp_path)})
    assert r.returncode == 2
    assert "unknown dispatch profile 'gfx90a'" in r.stderr
    for name in BUILTIN_PROFILES:
        assert name in r.stderr


def test_list_profiles(tmp_path):
    (tmp_path / "mlir-lsp.toml").write_text(
        '[profiles.mi300-o3]\n'
        'flags = ["--iree-hal-target-device=hip", "--iree-rocm-target=gfx942", "--iree-opt-level=O3"]\n'
        '[profiles.cpu-host]\nflags = ["--iree-hal-target-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=znver4"]\n')
    r = run_cli("--list-profiles", cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == ""
    rows = {}
    for line in r.stdout.splitlines():
        name, rest = line.split(None, 1)
        rows[name] = rest
    assert list(rows)[:2] == ["default", "sdxl"]
    assert set(rows) == set(BUILTIN_PROFILES) | {"mi300-o3"}
    assert rows["default"].split() == ["hip", "gfx942", *BUILTIN_PROFILES["default"]]
    assert rows["cuda-sm90"].split() == ["cuda", "sm_90", "--iree-hal-target-device=cuda", "--iree-cuda-target=sm_90"]
    # sdxl's pipeline flag has braces and parentheses: the flags are quoted for a shell
    assert shlex.split(rows["sdxl"])[2:] == list(BUILTIN_PROFILES["sdxl"])
    assert rows["mi300-o3"].startswith("(config)") and rows["mi300-o3"].endswith("--iree-opt-level=O3")
    # a config profile with a built-in's name wins, and is listed as the config's
    assert rows["cpu-host"].split() == ["(config)", "llvm-cpu", "znver4", "--iree-hal-target-backends=llvm-cpu",
                                        "--iree-llvmcpu-target-cpu=znver4"]

    j = run_cli("--list-profiles", "--output-format", "json", cwd=tmp_path)
    assert j.returncode == 0
    listed = json.loads(j.stdout)
    by_name = {p["name"]: p for p in listed}
    assert [p["name"] for p in listed][:len(BUILTIN_PROFILES)] == list(BUILTIN_PROFILES)
    assert by_name["rocm-gfx1100"] == {"name": "rocm-gfx1100", "source": "builtin", "target": "hip gfx1100",
                                       "flags": ["--iree-hal-target-device=hip", "--iree-rocm-target=gfx1100"]}
    assert by_name["cpu-host"]["source"] == "config"
    assert by_name["mi300-o3"]["target"] == "hip gfx942"
    for p in listed:
        if p["source"] == "builtin":
            assert p["flags"] == list(BUILTIN_PROFILES[p["name"]])


def test_listed_config_profile_is_the_one_counted(tmp_path):
    """What --list-profiles shows for a config profile is what --dispatch-count compiles with."""
    cfg = tmp_path / "mlir-lsp.toml"
    cfg.write_text('[profiles.gfx90a-o1]\nflags = ["--iree-hal-target-device=hip", "--iree-rocm-target=gfx90a", '
                   '"--iree-opt-level=O1"]\n')
    listed = json.loads(run_cli("--list-profiles", "--output-format", "json", "--config", cfg).stdout)
    assert {"name": "gfx90a-o1", "source": "config", "target": "hip gfx90a",
            "flags": ["--iree-hal-target-device=hip", "--iree-rocm-target=gfx90a", "--iree-opt-level=O1"]} in listed
    item, _ = count(tmp_path, "--config", cfg, "--profile", "gfx90a-o1")
    # O1 strips the asserts (--iree-opt-strip-assertions, see FACTS): 3, not 4
    assert item["flow_dispatches"] == 3


def test_a_config_that_cannot_be_read_is_an_error_not_missing_profiles(tmp_path):
    """A broken config names its problem; its profiles do not silently vanish from the list or
    turn into "unknown profile"."""
    cfg = tmp_path / "mlir-lsp.toml"
    cfg.write_text("[profiles.mine]\nflags = 3\n")
    for args in (("--list-profiles", "--config", cfg),
                 ("--dispatch-count", "--config", cfg, "--profile", "mine", REPRO),
                 ("--dispatch-diff", "--config", cfg, "--against-profile", "mine", REPRO)):
        r = run_cli(*args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "profiles.mine.flags must be a list of strings" in r.stderr and "unknown profile" not in r.stderr
        assert not r.stdout.strip()


def test_flags_are_translated_both_ways_between_releases():
    """Old names for a new compiler, and 3.13's names for an older one (IREE 3.3 knows only
    `--iree-hip-*`); a flag neither knows is dropped with a warning."""
    from mlir_lsp_asserts.iree_flags.flags import translate

    new = frozenset({"iree-hal-target-device", "iree-rocm-target", "iree-rocm-waves-per-eu"})
    old = frozenset({"iree-hal-target-device", "iree-hip-target", "iree-hip-waves-per-eu"})
    assert translate(["--iree-hip-target=gfx942", "--iree-hip-waves-per-eu=2"], new).flags == [
        "--iree-rocm-target=gfx942", "--iree-rocm-waves-per-eu=2"]
    rep = translate(["--iree-hal-target-device=hip", "--iree-rocm-target=gfx942", "--iree-rocm-waves-per-eu=2",
                     "--iree-opt-level=O3"], old)
    assert rep.flags == ["--iree-hal-target-device=hip", "--iree-hip-target=gfx942", "--iree-hip-waves-per-eu=2"]
    assert "translated --iree-rocm-target=gfx942 -> --iree-hip-target=gfx942" in rep.notes
    assert rep.warnings == ["dropped --iree-opt-level=O3: this iree-compile has no such flag"]

"""Flag profiles and compatibility across IREE releases.

Before a run the flags are checked against the installed compiler's `--help-list-hidden`:
known renames are translated (with a note), and flags the compiler no longer has are dropped
(with a warning naming them) instead of failing the run.
"""

from __future__ import annotations

from ..records import field, record

# Targets, as IREE 3.13 names them (each checked by a compile of the repro in the tests).
TARGET_GFX942 = ("--iree-hal-target-device=hip", "--iree-rocm-target=gfx942")
TARGET_GFX90A = ("--iree-hal-target-device=hip", "--iree-rocm-target=gfx90a")
TARGET_GFX1100 = ("--iree-hal-target-device=hip", "--iree-rocm-target=gfx1100")
TARGET_SM80 = ("--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80")
# IREE 3.13's table of GPU details has no sm_90: dispatches are formed without them and a full
# compile fails ("missing GPU target"); the count says so (count.untargeted_executables).
TARGET_SM90 = ("--iree-hal-target-device=cuda", "--iree-cuda-target=sm_90")
# `host`: the CPU of the machine that compiles, so a count may differ between machines.
TARGET_CPU_HOST = ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
                   "--iree-llvmcpu-target-cpu=host")

# The SDXL CLIP flag set of IREE's SDXL report/test (clip_rocm.json) as it exists in IREE 3.13.
SDXL_FLAGS = (
    "--iree-opt-const-eval=false",
    "--iree-global-opt-propagate-transposes=true",
    "--iree-dispatch-creation-enable-aggressive-fusion=true",
    "--iree-opt-aggressively-propagate-transposes=true",
    "--iree-opt-outer-dim-concat=true",
    "--iree-opt-data-tiling=false",
    "--iree-execution-model=async-external",
    "--iree-dispatch-creation-enable-fuse-horizontal-contractions=true",
    "--iree-rocm-waves-per-eu=2",
    "--iree-codegen-llvmgpu-use-vector-distribution=true",
    "--iree-preprocessing-pass-pipeline=builtin.module(iree-preprocessing-transpose-convolution-pipeline,"
    "iree-preprocessing-pad-to-intrinsics{pad-target-type=conv})",
)

# The names `default` and `sdxl` are a contract (settings, baselines); new targets get new names.
BUILTIN_PROFILES: dict[str, tuple[str, ...]] = {
    "default": TARGET_GFX942,
    "sdxl": TARGET_GFX942 + SDXL_FLAGS,
    "rocm-gfx90a": TARGET_GFX90A,
    "rocm-gfx1100": TARGET_GFX1100,
    "cuda-sm80": TARGET_SM80,
    "cuda-sm90": TARGET_SM90,
    "cpu-host": TARGET_CPU_HOST,
}

# Whole-flag renames (old `name=value` -> new), then prefix renames.
EXACT_RENAMES = {
    "--iree-hal-target-backends=rocm": "--iree-hal-target-device=hip",
}
NAME_RENAMES = {
    "iree-rocm-target-chip": "iree-rocm-target",
    "iree-hip-target": "iree-rocm-target",
}
PREFIX_RENAMES = (("iree-hip-", "iree-rocm-"),)

# Flags that select what the engine itself controls; users' copies are dropped with a note.
ENGINE_FLAGS = ("compile-to", "compile-from", "o", "output-format", "iree-scheduling-dump-statistics-format",
                "iree-scheduling-dump-statistics-file", "mlir-print-debuginfo")


@record
class FlagReport:
    """The flags a compiler gets, and what was translated or dropped on the way."""

    flags: list[str]
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def split_flags(text: str | list[str] | tuple[str, ...]) -> list[str]:
    """Flags given as one string (shell quoting) or as a list of strings; ValueError for
    anything else (a setting of `5` or `[1]`), which callers report as a bad setting."""
    if isinstance(text, (list, tuple)):
        if not all(isinstance(f, str) for f in text):
            raise ValueError("the flags must be strings, not " + ", ".join(
                sorted({type(f).__name__ for f in text if not isinstance(f, str)})))
        return list(text)
    if not isinstance(text, str):
        raise ValueError(f"the flags must be one string or a list of strings, not {type(text).__name__}")
    try:
        import shlex

        return shlex.split(text)
    except ValueError as e:
        raise ValueError(f"cannot split the flags: {e}") from None


def _name(flag: str) -> str:
    return flag.lstrip("-").split("=", 1)[0]


def _renames(name: str) -> list[str]:
    """Other releases' names of a flag: newer ones (for a flag from an older release) first,
    then older ones (3.13's names given to an older compiler, e.g. 3.3's `--iree-hip-target`)."""
    out = [NAME_RENAMES[name]] if name in NAME_RENAMES else []
    out += [old for old, new in NAME_RENAMES.items() if new == name]
    for old, new in PREFIX_RENAMES:
        if name.startswith(old):
            out.append(new + name[len(old):])
        if name.startswith(new):
            out.append(old + name[len(new):])
    return out


def translate(flags: list[str], known: frozenset[str]) -> FlagReport:
    """Translate renamed flags and drop unknown ones for a compiler that knows `known`."""
    rep = FlagReport([])
    seen_target_device = False
    for flag in flags:
        if not flag.startswith("-"):
            rep.warnings.append(f"ignored {flag!r}: not a flag (inputs are given separately)")
            continue
        name = _name(flag)
        if name in ENGINE_FLAGS:
            rep.notes.append(f"ignored {flag}: mlir-lsp sets this itself")
            continue
        new = EXACT_RENAMES.get(flag, flag)
        name = _name(new)
        if name not in known:
            renamed = next((r for r in _renames(name) if r in known), None)
            if renamed:
                dashes = new[: len(new) - len(new.lstrip("-"))]
                new = dashes + renamed + new[len(dashes) + len(name):]
        if new != flag:
            rep.notes.append(f"translated {flag} -> {new}")
        nname = _name(new)
        if nname not in known:
            rep.warnings.append(f"dropped {flag}: this iree-compile has no such flag")
            continue
        if nname == "iree-hal-target-device":
            if seen_target_device and new in rep.flags:
                continue
            seen_target_device = True
        if new in rep.flags:  # a repeat: it goes where it was last given, as iree-compile reads the
            rep.flags.remove(new)  # last of a flag (`O0 O3 O0` must stay O0: strip_assertions.py)
        rep.flags.append(new)
    return rep


def profile_flags(profile: str, user_profiles: dict[str, list[str]] | None = None) -> list[str]:
    if user_profiles and profile in user_profiles:
        return list(user_profiles[profile])
    if profile in BUILTIN_PROFILES:
        return list(BUILTIN_PROFILES[profile])
    known = sorted(set(BUILTIN_PROFILES) | set(user_profiles or {}))
    raise ValueError(f"unknown dispatch profile {profile!r} (known: {', '.join(known)})")


# Flags that name the target, in the order a target is described.
_TARGET_FLAGS = ("iree-hal-target-device", "iree-hal-target-backends", "iree-hal-local-target-device-backends",
                 "iree-rocm-target", "iree-hip-target", "iree-rocm-target-chip", "iree-cuda-target",
                 "iree-llvmcpu-target-cpu", "iree-llvmcpu-target-triple")


def target_of(flags: list[str] | tuple[str, ...]) -> str:
    """The target that `flags` name, e.g. `hip gfx942`, `local llvm-cpu host` (or `?`)."""
    values = {}
    for flag in flags:
        name = _name(flag)
        if name in _TARGET_FLAGS and "=" in flag:
            values[name] = flag.split("=", 1)[1]  # the last one wins, as in iree-compile
    return " ".join(values[n] for n in _TARGET_FLAGS if n in values) or "?"


def list_profiles(user_profiles: dict[str, list[str]] | None = None) -> list[dict]:
    """Every profile a run can name: the built-in ones, then the config's (which win by name)."""
    user = user_profiles or {}
    names = list(BUILTIN_PROFILES) + sorted(set(user) - set(BUILTIN_PROFILES))
    return [{"name": n, "source": "config" if n in user else "builtin", "target": target_of(profile_flags(n, user)),
             "flags": profile_flags(n, user)} for n in names]

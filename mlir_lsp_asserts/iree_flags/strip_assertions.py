"""Whether IREE strips `cf.assert`s itself with a given set of iree-compile flags.

IREE's `--iree-opt-strip-assertions` runs a pass (StripDebugOps) early in global optimization,
before dispatch creation, on every function and initializer: it erases every `cf.assert` there,
in linalg regions, in `flow.dispatch.workgroups` bodies and on the host alike (those inside a
`flow/stream/hal.executable` are not in a function it visits). Measured with IREE 3.13
(`tests/test_strip_assertions.py`), the precedence is:

1. `--iree-opt-strip-assertions[=true|false|1|0]` given explicitly decides (the last one wins);
2. else the global-optimization pipeline's level decides: `--iree-global-optimization-opt-level`
   when given (it wins over the global level for that pipeline), else `--iree-opt-level`;
3. O0 (the default) keeps the asserts, O1, O2 and O3 strip them.

Like LLVM's option parser, the last occurrence of a flag wins; a value iree-compile would reject
(`--iree-opt-level=3`, `--iree-opt-strip-assertions=yes`) decides nothing here (the compile
itself fails with it).

    d = asserts_stripped(["--iree-hal-target-device=hip", "--iree-opt-level=O3"])
    d.stripped, d.by        # True, "--iree-opt-level=O3"
    d.phrase                # "at --iree-opt-level=O3 (--iree-opt-strip-assertions)"
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..records import record

STRIP_FLAG = "iree-opt-strip-assertions"
LEVEL_FLAGS = ("iree-global-optimization-opt-level", "iree-opt-level")  # the pipeline's own first
LEVELS = ("O0", "O1", "O2", "O3")
_BOOLS = {"true": True, "1": True, "false": False, "0": False}

# Ops whose bodies the strip pass does not visit (an executable's inner module: no function of
# the program). An assert inside one stays whatever the flags.
NOT_STRIPPED_INSIDE = frozenset({"flow.executable", "stream.executable", "hal.executable"})


@record(frozen=True, slots=True)
class StripDecision:
    """Whether iree-compile strips the asserts itself with a set of flags, and which flag says so."""

    stripped: bool
    # The flag that decides, as written (`--iree-opt-level=O3`), or "" when none does (O0).
    by: str

    @property
    def phrase(self) -> str:
        """How a message says where the strip comes from: `at --iree-opt-level=O3
        (--iree-opt-strip-assertions)`, `with --iree-opt-strip-assertions`."""
        if not self.by:
            return "at the default --iree-opt-level=O0"
        name = self.by.lstrip("-").split("=", 1)[0]
        if name == STRIP_FLAG:
            return f"with {self.by}"
        return f"at {self.by} ({'--' + STRIP_FLAG if self.stripped else 'which keeps them'})"


KEPT = StripDecision(False, "")


def _occurrences(flags: Sequence[str]) -> Iterable[tuple[str, str | None, str]]:
    """(name, value or None, the flag as written) of each flag; a value-taking level flag may
    take its value from the next word (`--iree-opt-level O3`), as LLVM's parser allows."""
    i = 0
    while i < len(flags):
        flag = flags[i]
        i += 1
        if not flag.startswith("-"):
            continue
        name, eq, value = flag.lstrip("-").partition("=")
        if not eq and name in LEVEL_FLAGS and i < len(flags) and not flags[i].startswith("-"):
            value, flag = flags[i], f"{flag}={flags[i]}"
            i += 1
            eq = "="
        yield name, (value if eq else None), flag


def asserts_stripped(flags: Sequence[str]) -> StripDecision:
    """Whether iree-compile with `flags` strips the asserts before dispatch creation, and which
    flag says so."""
    explicit: StripDecision | None = None
    levels: dict[str, StripDecision] = {}
    for name, value, written in _occurrences(list(flags)):
        if name == STRIP_FLAG:
            on = True if value is None else _BOOLS.get(value)
            if on is not None:
                explicit = StripDecision(on, written)
        elif name in LEVEL_FLAGS and value in LEVELS:
            levels[name] = StripDecision(value != "O0", written)
    if explicit is not None:
        return explicit
    for name in LEVEL_FLAGS:
        if name in levels:
            return levels[name]
    return KEPT


def reaches(ancestor_names: Iterable[str]) -> bool:
    """Whether the strip pass visits an assert with these enclosing ops (not in an executable)."""
    return not any(n in NOT_STRIPPED_INSIDE for n in ancestor_names)

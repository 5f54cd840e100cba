"""Compile with the fix: lower to `input`, fix the asserts there, compile on from `input`.

    job = FixedCompile(compiler)
    result = job.run(text, flags, fix_mode="assume", output="model.vmfb")

The three steps MLA004's page describes, done at once: `--compile-to=input` (a torch export's
asserts exist only after it), the fixes (the safe ones: the asserts IREE never checks; a host
assert, MLA003, is a real runtime check and stays), judged by the real parser, then
`--compile-from=input` with the user's flags into the output, written atomically. Beside it,
the flow-level dispatch counts (dispatch-creation) of the input as it is and of the fixed input,
so the result says how many dispatches the fix saved, or that it saved none.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..errors import FixError
from ..files import check_writable, written_whole
from ..findings import FixMode
from .compiler import Compiler, CompilerError, Run, first_error, parse_diagnostics
from .count import Counts, DispatchCounter

HOST_ASSERT = "MLA003"


@dataclass(frozen=True)
class CompileFixedResult:
    """What a compile with the fix did. Counts are flow-level (`flow.dispatch.workgroups` at
    dispatch-creation); `unfixed_dispatches` is None when the plain count was not asked for."""

    output: str | None  # the file written (None: nothing built)
    fix_mode: str
    compiler_version: str
    flags: tuple[str, ...]  # as given to iree-compile (translated for its release)
    asserts_fixed: int  # removed or rewritten
    assumed: int  # of which rewritten to util.assume.int
    fixed_by_code: dict[str, int]  # rule code -> asserts fixed
    host_asserts_kept: int  # MLA003: real runtime checks, never touched
    fixed_dispatches: int
    unfixed_dispatches: int | None
    per_function: dict[str, int]  # of the fixed compile
    unfixed_per_function: dict[str, int] | None
    seconds: float
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    vmfb: bytes | None = field(default=None, repr=False)  # the module, when built in memory (the API)

    @property
    def saved(self) -> int | None:
        """Dispatches the fix saved (None when the plain count was not made)."""
        return None if self.unfixed_dispatches is None else self.unfixed_dispatches - self.fixed_dispatches

    def summary(self) -> str:
        """One line: what changed and what it saved (or that it saved nothing)."""
        done = "rewritten to util.assume.int" if self.fix_mode == FixMode.ASSUME else "stripped"
        what = f"{self.asserts_fixed} assert{'s' if self.asserts_fixed != 1 else ''} {done}"
        if self.fix_mode == FixMode.ASSUME and self.assumed != self.asserts_fixed:
            what += f" ({self.assumed} rewritten, {self.asserts_fixed - self.assumed} stripped)"
        if self.host_asserts_kept:
            what += f", {self.host_asserts_kept} host assert{'s' if self.host_asserts_kept != 1 else ''} (MLA003) kept"
        saved = self.saved
        if saved is None:
            cost = f"{self.fixed_dispatches} dispatches"
        elif saved > 0:
            cost = f"{self.unfixed_dispatches} -> {self.fixed_dispatches} dispatches (saved {saved})"
        elif saved == 0:
            cost = f"the fix saves no dispatch here ({self.fixed_dispatches} with and without)"
        else:
            cost = f"{self.unfixed_dispatches} -> {self.fixed_dispatches} dispatches ({-saved} more with the fix)"
        return f"{what}; {cost}"

    def as_json(self) -> dict:
        return {"output": self.output, "fix_mode": self.fix_mode, "compiler_version": self.compiler_version,
                "flags": list(self.flags), "asserts_fixed": self.asserts_fixed, "assumed": self.assumed,
                "fixed_by_code": dict(self.fixed_by_code), "host_asserts_kept": self.host_asserts_kept,
                "flow_dispatches": self.fixed_dispatches, "unfixed_flow_dispatches": self.unfixed_dispatches,
                "saved": self.saved, "per_function": dict(self.per_function),
                "unfixed_per_function": None if self.unfixed_per_function is None else dict(self.unfixed_per_function),
                "seconds": self.seconds, "notes": list(self.notes), "warnings": list(self.warnings)}


@dataclass
class AppliedFixes:
    """The fixed text, how many asserts were fixed (by rule code), the host asserts kept."""

    text: str
    fixed: int
    assumed: int
    by_code: dict[str, int]
    host_kept: int
    notes: list[str] = field(default_factory=list)


def apply_fixes(lowered: str, mode: str) -> AppliedFixes:
    """The safe fixes of a text applied (host asserts, MLA003, kept), judged by the real parser:
    FixError when the fixed text does not parse though the text did."""
    from ..checker import check_text
    from ..fixes import fix_text

    before = check_text(lowered, with_fixes=False)  # fix_text plans its own edits
    fo = fix_text(before, mode, unsafe=False)
    after = check_text(fo.text, with_fixes=False) if fo.fixed else before
    left = Counter(f.code for f in after.findings)
    by_code = {c: n - left.get(c, 0) for c, n in Counter(f.code for f in before.findings).items() if n > left.get(c, 0)}
    out = AppliedFixes(fo.text, fo.fixed, fo.assumed, by_code, left.get(HOST_ASSERT, 0))
    if fo.fixed:
        out.notes.extend(_judged(lowered, fo.text))
    return out


def _judged(text: str, fixed: str) -> list[str]:
    from ..fixes.verify import judge_fix

    before, after = judge_fix(text, fixed)
    if before is None and after is not None:
        raise FixError(f"the fixed text does not parse ({after}); nothing changed")
    if before is not None:
        return [f"the real parser cannot read the text ({before}); fixed on the structural reader's word"]
    return []


class FixedCompile:
    """One compile with the fix; `cancel()` (from another thread) stops every compiler it runs."""

    def __init__(self, compiler: Compiler, *, timeout: float = 900.0, disk_cache: bool = True,
                 counter: DispatchCounter | None = None):
        self.counter = counter or DispatchCounter(compiler, timeout=timeout, disk_cache=disk_cache)
        self.compiler = self.counter.compiler
        self.timeout = timeout
        self._build: Run | None = None
        self._cancelled = False

    def cancel(self) -> None:
        self._cancelled = True
        self.counter.cancel_all()
        if self._build is not None:
            self._build.cancel()

    def run(self, text: str, flags: list[str], *, fix_mode: str = FixMode.ASSUME, output: str | None = None,
            count_unfixed: bool = True, input_path: str | None = None) -> CompileFixedResult:
        """`text` (torch IR, input IR, or bytecode's text with its weights) compiled with the fix
        into `output` (None: counts only). `input_path`: a file holding exactly `text`.
        Raises CompilerError (a compile failed or was cancelled), FixError, SourceError."""
        if fix_mode not in (FixMode.ASSUME, FixMode.STRIP):
            raise ValueError(f"unknown fix mode {fix_mode!r} (assume or strip)")
        if output is not None:
            check_output(output)  # before any compile
        t0 = time.monotonic()
        rep = self.counter.prepare_flags(flags)
        fl = rep.flags
        workers = 2 if count_unfixed and (os.cpu_count() or 1) > 1 else 1
        with ThreadPoolExecutor(max_workers=workers) as pool:
            plain = pool.submit(self.counter.count, text, fl, input_path=input_path) if count_unfixed else None
            try:
                fixed, counts = self._fixed_side(text, fl, fix_mode, output, input_path)
                unfixed = plain.result() if plain is not None else None
            except BaseException:
                self.cancel()
                raise
        notes = [*rep.notes, *fixed.notes]
        if not fixed.fixed:
            notes.append("no assert to fix: compiled as lowered")
        return CompileFixedResult(
            output, str(fix_mode), self.compiler.version, tuple(fl), fixed.fixed, fixed.assumed, fixed.by_code,
            fixed.host_kept, counts.flow_dispatches, unfixed.flow_dispatches if unfixed else None,
            counts.per_function, unfixed.per_function if unfixed else None, round(time.monotonic() - t0, 3),
            tuple(notes), tuple(rep.warnings))

    def _fixed_side(self, text: str, fl: list[str], mode: str, output: str | None,
                    input_path: str | None) -> tuple[AppliedFixes, Counts]:
        lowered = self.counter.lower_to_input(text, fl, input_path=input_path)
        fixed = apply_fixes(lowered, mode)
        counts = self.counter.count(fixed.text, fl, compile_from="input")
        if output is not None:
            self.build(fixed.text, fl, output)
        return fixed, counts

    def build(self, input_text: str, flags: list[str], output: str) -> None:
        """`--compile-from=input` of `input_text` with `flags` into `output`, atomically: the
        compiler writes a hidden file beside it, renamed over `output` once complete (a failed or
        cancelled build leaves no file, and an old `output` whole). The module gets the mode a
        plain `open()` gives, or an old `output`'s own (`files.written_whole`)."""
        if self._cancelled:
            raise CompilerError("cancelled")
        check_output(output)
        try:
            with written_whole(output) as part:
                self._compile_into(input_text, flags, part)
        except OSError as e:
            raise CompilerError(f"cannot write {output}: {e.strerror or e}") from None

    def _compile_into(self, input_text: str, flags: list[str], part: str) -> None:
        try:
            with tempfile.TemporaryDirectory(prefix="mlir-lsp-build-") as tmp:
                src = os.path.join(tmp, "fixed.input.mlir")
                with open(src, "w", encoding="utf-8") as f:
                    f.write(input_text)
                run = self._build = Run([self.compiler.path, src, "--compile-from=input", *flags, "-o", part],
                                        self.timeout)
                code, err = run.run()
        except OSError as e:
            raise CompilerError(f"cannot write the compiler's input in {tempfile.gettempdir()}: {e.strerror or e}") \
                from None
        finally:
            self._build = None
        if code != 0:
            diags = parse_diagnostics(err, {src: None})
            first = next((d for d in diags if d["severity"] == "error"), None)
            raise CompilerError(f"iree-compile failed (exit {code}): "
                                f"{first['message'] if first else first_error(err) or 'no message'}", diags)


def check_output(output: str) -> None:
    """CompilerError naming `output` when the module could not be written there (its folder is
    missing or cannot be written in, or it is a folder): asked before any compile, so that the
    error comes at once and names the path that failed."""
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder):
        raise CompilerError(f"cannot write {output}: no such folder {folder}")
    try:
        check_writable(output)
    except OSError as e:
        raise CompilerError(f"cannot write {output}: {e.strerror or e}") from None

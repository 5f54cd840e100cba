"""The four functions of the Python API: a thin front end over checker.py, fixes/ and dispatch/.

Every error is an `MlirLspError` (errors.py) whose message is the line the CLI prints after
`mlir-lsp: error: `.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import replace

from ..errors import CompileError, FixError, SourceError, UsageError
from ..findings import FixMode
from .inputs import Input, Src, read_input
from .results import CheckResult, CompileFixedResult, DispatchCount, Finding, FixResult, WhatIfCount

Flags = str | Sequence[str]
FIX_MODES = ("assume", "strip")


@contextlib.contextmanager
def _errors(inp: Input | None = None) -> Iterator[None]:
    """The core's errors as the API's, each with the message the CLI prints."""
    from ..dispatch.compiler import CompilerError

    where = inp.where if inp is not None else (lambda m: m)
    try:
        yield
    except CompilerError as e:
        raise CompileError(where(str(e)), e.diagnostics) from None
    except (FixError, SourceError) as e:
        raise type(e)(where(str(e))) from None
    except OSError as e:
        raise SourceError(where(f"{e.strerror or e}")) from None


def _mode(mode: str) -> FixMode:
    if mode not in FIX_MODES:
        raise UsageError(f"unknown fix mode {mode!r} (assume or strip)")
    return FixMode(mode)


def check(src: Src, *, lower: bool = True) -> CheckResult:
    """The findings of `src`: a path, MLIR text, bytes (text or `.mlirbc`), an
    `iree.compiler.ir` Module or Operation, or an iree-turbine `ExportOutput`. Torch IR is
    lowered to `input` (iree-compile, default profile) for its MLA004 findings; `lower=False`, or
    no compiler: a note says its asserts appear when it is lowered.

    >>> import mlir_lsp_asserts as mla
    >>> result = mla.check("model.mlir")                          # doctest: +SKIP
    >>> [(f.line, f.code) for f in result.findings]                # doctest: +SKIP
    [(16, 'MLA001'), (18, 'MLA001')]
    """
    from ..checker import check_text

    inp = read_input(src, weights=False)
    with _errors(inp):
        r = check_text(inp.text, is_bytecode=inp.is_bytecode)
        from ..dispatch.torch_check import check_lowered  # torch IR: MLA004 by lowering it

        def whole():
            w = read_input(src, weights=True) if inp.kind in ("path", "bytes") or inp.is_bytecode else inp
            return w.text, w.path
        t = check_lowered(inp.text, r.parsed.lines, whole, lower=lower)
    findings = sorted([*r.findings, *(t.findings if t else [])], key=lambda f: (f.span.start, f.code))
    return CheckResult(inp.name, tuple(Finding.of(f) for f in findings), inp.is_bytecode, r.suppressed,
                       (t.note,) if t and t.note else ())


def fix(src: Src, mode: str = "assume") -> FixResult:
    """`src` with its safe fixes applied: asserts IREE never checks rewritten to `util.assume.int`
    (`mode="assume"`, where the range is known, else stripped) or stripped (`mode="strip"`); host
    asserts (MLA003, real runtime checks) kept. The real parser judges the fixed text (FixError
    when it rejects it). Nothing is written: `result.text`, or `result.module()` to parse it.

    Torch IR has no asserts yet (they appear when it is lowered): use `compile_fixed`.

    >>> fixed = mla.fix("model.mlir", mode="assume")               # doctest: +SKIP
    >>> fixed.asserts_fixed, fixed.fixed_by_code                   # doctest: +SKIP
    (4, {'MLA001': 4})
    >>> module = fixed.module()                                    # doctest: +SKIP
    """
    from ..checker import check_text
    from ..dispatch.compile_fixed import apply_fixes
    from ..dispatch.count import is_torch_input

    fm = _mode(mode)
    inp = read_input(src, weights=True)
    with _errors(inp):
        done = apply_fixes(inp.text, fm)
        left = check_text(done.text, is_bytecode=inp.is_bytecode) if done.fixed else None
        if left is None:
            left = check_text(inp.text, is_bytecode=inp.is_bytecode)
    notes = list(done.notes)
    if is_torch_input(inp.text):
        notes.append("torch IR: its asserts appear only when it is lowered (--compile-to=input); "
                     "compile_fixed lowers, fixes and compiles it")
    return FixResult(inp.name, done.text, done.fixed > 0, done.fixed, done.assumed, done.by_code, done.host_kept,
                     tuple(Finding.of(f) for f in left.findings), tuple(notes))


def _request(profile: str, flags: Flags, compiler: str | None, timeout: float, cache: bool, *,
             what_if: str | None = None, stream: bool = False):
    """The count request, built as the CLI and the server build theirs (`dispatch.request.count_request`
    over the settings: the profile's flags, then the extra ones), with the API's errors."""
    from ..config import Settings
    from ..dispatch.compiler import CompilerError
    from ..dispatch.request import count_request
    from ..iree_flags.flags import split_flags

    try:
        extra = split_flags(flags if isinstance(flags, str) else list(flags))
        return count_request(Settings(profile=profile, flags=tuple(extra)), compiler=compiler, timeout=timeout,
                             what_if=what_if, stream=stream, cache=cache)
    except CompilerError as e:
        raise CompileError(str(e)) from None
    except ValueError as e:
        raise UsageError(str(e)) from None


def count_dispatches(src: Src, profile: str = "default", what_if: str | None = None, *, flags: Flags = (),
                     stream: bool = False, compiler: str | None = None, timeout: float = 900.0,
                     cache: bool = True) -> DispatchCount:
    """The flow-level dispatch count of `src` with the real `iree-compile` (profile `default`:
    gfx942), per function; with `what_if="strip"|"assume"` also the count with the safe fixes
    applied (torch IR is lowered and fixed at `input`, as `compile_fixed` does). `flags`: extra
    iree-compile flags (a string, shell-quoted, or a list); `stream`: also the stream-level count.

    >>> n = mla.count_dispatches("model.mlir", what_if="assume")   # doctest: +SKIP
    >>> n.flow_dispatches, n.what_if.flow_dispatches, n.what_if.saved   # doctest: +SKIP
    (4, 3, 1)
    """
    from ..dispatch.count import DispatchCounter
    from ..dispatch.preview import initializer_split, preview

    mode = _mode(what_if).value if what_if is not None else None
    req = _request(profile, flags, compiler, timeout, cache, what_if=mode, stream=stream)
    inp = read_input(src, weights=True)
    counter = DispatchCounter(req.compiler, timeout=req.timeout, disk_cache=req.cache)
    with _errors(inp):
        pv = preview(counter, inp.name, inp.text, req.profile, list(req.flags), what_if=req.what_if,
                     stream=req.stream, input_path=inp.path)
    wi = pv.what_if
    init, funcs = initializer_split(pv.per_function)
    return DispatchCount(inp.name, profile, pv.compiler_version, pv.flow_dispatches, dict(pv.per_function), init, funcs,
                         pv.stream_dispatches,
                         None if wi is None else WhatIfCount(wi.mode, wi.flow_dispatches, dict(wi.per_function),
                                                             wi.asserts_fixed, wi.saved, wi.stream_dispatches),
                         tuple(pv.notes), tuple(pv.warnings), pv.seconds)


def compile_fixed(src: Src, fix_mode: str = "assume", *, output_file: str | os.PathLike[str] | None = None,
                  profile: str = "default", flags: Flags = (), compiler: str | None = None,
                  timeout: float = 900.0, count_unfixed: bool = True, cache: bool = True) -> CompileFixedResult:
    """Compile `src` (torch IR as `aot.export` gives it, input IR, or bytecode) with the fix:
    lowered to `input`, its safe fixes applied there (`fix_mode` assume or strip; host asserts,
    MLA003, kept) and judged by the real parser, compiled on with `--compile-from=input`,
    `profile`'s flags and `flags`. The module goes to `output_file` (written whole or not at
    all), else into `result.vmfb`. With `count_unfixed` the result says how many dispatches
    the fix saved (`result.saved`, `result.summary()`), or that it saved none.

    >>> r = mla.compile_fixed(exported, fix_mode="assume", profile="cpu-host")   # doctest: +SKIP
    >>> r.unfixed_dispatches, r.fixed_dispatches, len(r.vmfb)     # doctest: +SKIP
    (5, 4, 25120)
    """
    from ..dispatch.compile_fixed import FixedCompile, check_output
    from ..dispatch.compiler import CompilerError

    fm = _mode(fix_mode)
    req = _request(profile, flags, compiler, timeout, cache)
    if output_file is not None:
        try:
            check_output(os.fspath(output_file))  # before the work: the error names the output
        except CompilerError as e:
            raise CompileError(str(e)) from None
    fl = list(req.flags)
    inp = read_input(src, weights=True)
    job = FixedCompile(req.compiler, timeout=req.timeout, disk_cache=req.cache)
    with _errors(inp):
        if output_file is not None:
            return job.run(inp.text, fl, fix_mode=fm, output=os.fspath(output_file), count_unfixed=count_unfixed,
                           input_path=inp.path)
        with tempfile.TemporaryDirectory(prefix="mlir-lsp-api-") as tmp:
            out = os.path.join(tmp, "module.vmfb")
            r = job.run(inp.text, fl, fix_mode=fm, output=out, count_unfixed=count_unfixed, input_path=inp.path)
            with open(out, "rb") as f:
                return replace(r, output=None, vmfb=f.read())

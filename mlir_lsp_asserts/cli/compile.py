"""`mlir-lsp --compile FILE -o OUT.vmfb`: compile with the fix (the front end of
`dispatch/compile_fixed.py`).

    mlir-lsp --compile model.torch.mlir -o model.vmfb --fix-mode assume --profile default --flags "..."

FILE is torch IR (an iree-turbine export), input IR or bytecode; it is lowered to `input`, its
safe fixes applied (host asserts kept) and judged by the real parser, then compiled on with the
profile's flags and `--flags`. Prints what changed and the dispatches it saved; exit 0, or 2 with
one line on error (OUT is then left as it was).
"""

from __future__ import annotations

import json
import sys

from ..dispatch.compile_fixed import FixedCompile, check_output
from ..dispatch.compiler import CompilerError
from ..errors import FixError
from ..source import SourceError, read_source
from .dispatch import Spinner, failure_lines, request_of


def run_compile(args) -> int:
    if len(args.paths) != 1:
        return _error("--compile needs exactly one FILE")
    if not args.output:
        return _error("--compile needs -o OUT.vmfb")
    path = args.paths[0]
    try:
        check_output(args.output)  # before the work: the error names the output, not FILE
        req = request_of(args)  # the profile (the config's too), --flags, the compiler: as a count's
    except (ValueError, CompilerError) as e:
        return _error(str(e))
    flags, compiler = list(req.flags), req.compiler
    job = FixedCompile(compiler, timeout=req.timeout, disk_cache=not args.no_cache)
    try:
        src = read_source(path, weights=True)
        with Spinner(path, sys.stderr.isatty()):
            r = job.run(src.text, flags, fix_mode=args.fix_mode or "assume", output=args.output,
                        input_path=None if src.is_bytecode else path)
    except KeyboardInterrupt:
        job.cancel()
        return 130
    except FileNotFoundError:
        return _error(f"{path}: no such file or directory")
    except CompilerError as e:
        for line in failure_lines(path, e, compiler.version):
            print(line, file=sys.stderr)
        return 2
    except (OSError, SourceError, FixError) as e:
        return _error(f"{path}: {getattr(e, 'strerror', None) or e}")
    for w in r.warnings:
        print(f"mlir-lsp: warning: {path}: {w}", file=sys.stderr)
    if not args.quiet:
        for n in r.notes:
            print(f"mlir-lsp: note: {path}: {n}", file=sys.stderr)
    if (args.output_format or "concise") == "json":
        print(json.dumps({"path": path, **r.as_json()}, indent=2))
    else:
        print(f"{path}: wrote {args.output}: {r.summary()}")
    return 0


def _error(msg: str) -> int:
    print(f"mlir-lsp: error: {msg}", file=sys.stderr)
    return 2

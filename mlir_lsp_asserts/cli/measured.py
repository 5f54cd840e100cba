"""`mlir-lsp --check --what-if`: each MLA001 finding with what the what-if measured.

Torch input has no `cf.assert` yet: its what-if lowers it, and the torch ops whose lowering put
asserts into linalg regions become MLA004 findings, measured the same way.

For every checked file with an MLA001 finding, the what-if of `--profile`/`--flags` runs with
attribution (as `--dispatch-count --what-if --attribution` does, sharing its cache), and each
finding gets the dispatch its assert ends up in, whether that dispatch exists only because of
asserts, and how many dispatches removing the file's asserts saves. `--measured-severity` (config
`measured-severity`) puts MLA001 at information severity in files where that is none.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from ..dispatch.compiler import CompilerError
from ..dispatch.count import DispatchCounter
from ..dispatch.measured_cost import MEASURED_CODES, Measurement
from ..dispatch.preview import preview
from ..rules import mla004_torch_op_lowers_to_assert as mla004
from ..source import SourceError
from .dispatch import Spinner, request_of


@dataclass
class Measurer:
    counter: DispatchCounter
    profile: str
    flags: list[str]  # the profile's and --flags
    extra_flags: list[str]  # --flags alone (named in the notes)
    mode: str

    def measure(self, outcomes, quiet: bool = False) -> list[str]:
        """Annotate the findings of `outcomes` in place; returns warnings (files not measured)."""
        warnings = []
        for oc in outcomes:
            if oc.error or not (oc.torch_rule is not None or any(f.code in MEASURED_CODES for f in oc.findings)):
                continue
            try:
                # bytecode, or a file with its weights in a resource section: the text the compiler
                # compiles (the weights in; bytecode's debug locations out, so the attribution
                # finds its lines); the same lines
                text = oc.compile_text()
                with Spinner(oc.path, sys.stderr.isatty() and not quiet):
                    pv = preview(self.counter, oc.path, text, self.profile, self.flags, what_if=self.mode,
                                 attribution=True, input_path=oc.text_file)
            except (CompilerError, OSError, SourceError) as e:
                warnings.append(f"{oc.path}: not measured: {e}")
                continue
            if oc.torch_rule is not None and oc.lines is not None:  # the torch ops the lowering traced
                traced = [mla004.finding(src, oc.lines, *oc.torch_rule) for src in pv.assert_sources]
                oc.findings = sorted([*oc.findings, *traced], key=lambda f: (f.span.start, f.code))
            m = Measurement.of(pv, self.extra_flags)
            if m is not None:
                oc.findings = m.annotate(oc.findings, lower=oc.measured_severity)
        return warnings


def prepare(args) -> Measurer:
    """The compiler and flags the measurement uses; ValueError or CompilerError when unusable."""
    if args.fix or args.diff:
        raise ValueError("--what-if with --check measures the findings as they are; it cannot be combined "
                         "with --fix or --diff")
    req = request_of(args)
    counter = DispatchCounter(req.compiler, timeout=req.timeout, disk_cache=not args.no_cache)
    return Measurer(counter, req.profile, list(req.flags), list(req.extra_flags), req.what_if or "strip")

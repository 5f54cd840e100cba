"""`mlir-lsp --check --what-if`: each MLA001 finding with what the what-if measured.

For every checked file with an MLA001 finding, the what-if of `--profile`/`--flags` runs with
attribution (as `--dispatch-count --what-if --attribution` does, sharing its cache), and each
finding gets the dispatch its assert ends up in, whether that dispatch exists only because of
asserts, and how many dispatches removing the file's asserts saves. `--measured-severity` (config
`measured-severity`) puts MLA001 at information severity in files where that is none.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from ..bytecode import weights_left_out
from ..dispatch.compiler import CompilerError, find_compiler
from ..dispatch.count import DispatchCounter
from ..dispatch.flags import profile_flags, split_flags
from ..dispatch.measured_cost import MEASURED_CODES, Measurement
from ..dispatch.preview import preview
from ..source import SourceError, read_source
from .dispatch import Spinner, user_profiles


def add_arguments(group) -> None:
    group.add_argument("--measured-severity", action="store_true",
                       help="with --what-if (implied): MLA001 at information severity in files whose what-if saves "
                            "no dispatch (config: measured-severity)")


def wanted(args) -> bool:
    return bool(args.what_if or args.what_if_mode or args.measured_severity)


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
            if oc.error or not any(f.code in MEASURED_CODES for f in oc.findings):
                continue
            try:
                text = oc.text
                if oc.path != "-" and ((oc.text_file is None and weights_left_out(text)) or oc.resources):
                    text = read_source(oc.path, weights=True).text  # the compiler needs them; same lines
                with Spinner(oc.path, sys.stderr.isatty() and not quiet):
                    pv = preview(self.counter, oc.path, text, self.profile, self.flags, what_if=self.mode,
                                 attribution=True, input_path=oc.text_file)
            except (CompilerError, OSError, SourceError) as e:
                warnings.append(f"{oc.path}: not measured: {e}")
                continue
            m = Measurement.of(pv, self.extra_flags)
            if m is not None:
                oc.findings = m.annotate(oc.findings, lower=oc.measured_severity)
        return warnings


def prepare(args) -> Measurer:
    """The compiler and flags the measurement uses; ValueError or CompilerError when unusable."""
    if args.fix or args.diff:
        raise ValueError("--what-if with --check measures the findings as they are; it cannot be combined "
                         "with --fix or --diff")
    extra = split_flags(args.flags) if args.flags else []
    flags = profile_flags(args.profile, user_profiles(args)) + extra
    counter = DispatchCounter(find_compiler(args.compiler), timeout=args.timeout, disk_cache=not args.no_cache)
    return Measurer(counter, args.profile, flags, extra, args.what_if_mode or "strip")

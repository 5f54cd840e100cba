"""`mlir-lsp --check` on torch IR: MLA004 findings by lowering each torch file to `input` only
(the core is dispatch/torch_check.py; `--check --what-if` does this inside its what-if).

The compiler and flags are the count's (`--profile`/`--flags`, `--compiler`, the config's), found
only when a torch file is checked. `--no-lower` (config `lower-torch = false`) keeps the check
text-only; then, and when the file cannot be lowered, each torch file gets one line saying so.
"""

from __future__ import annotations

import sys

from ..records import field, record
from ..source import SourceError

TYPE_CHECKING = False  # typing's, without importing typing (records.py)
if TYPE_CHECKING:
    from ..dispatch.torch_check import TorchLowering


@record
class TorchChecker:
    """Adds the MLA004 findings of the torch files among a check's outcomes (`measure`, as
    cli/measured.py's Measurer does for the what-if)."""

    args: object
    _lowering: TorchLowering | None = field(default=None, init=False)

    def lowering(self) -> TorchLowering:
        if self._lowering is None:
            self._lowering = _lowering_of(self.args)
        return self._lowering

    def measure(self, outcomes, quiet: bool = False) -> list[str]:
        warnings: list[str] = []
        for oc in outcomes:
            if oc.error or oc.torch_rule is None or oc.lines is None:
                continue
            from .dispatch import Spinner  # the compiler's code, loaded only when a torch file is checked

            lowering = self.lowering()
            try:
                text = oc.compile_text()
                with Spinner(oc.path, sys.stderr.isatty() and not quiet and lowering.counter is not None):
                    got = lowering.lower(text, oc.lines, oc.torch_rule, input_path=oc.text_file)
            except (OSError, SourceError) as e:
                warnings.append(f"{oc.path}: not lowered: {getattr(e, 'strerror', None) or e}")
                continue
            if got.note:
                oc.notes.append(got.note)
            oc.findings = sorted([*oc.findings, *got.findings], key=lambda f: (f.span.start, f.code))
        return warnings


def _lowering_of(args) -> TorchLowering:
    from ..dispatch.compiler import CompilerError
    from ..dispatch.count import DispatchCounter
    from ..dispatch.torch_check import OFF, TorchLowering
    from .dispatch import config_settings, request_of

    try:
        if args.no_lower or not config_settings(args).lower_torch:
            return TorchLowering(None, [], OFF)
        req = request_of(args)
        counter = DispatchCounter(req.compiler, timeout=req.timeout, disk_cache=not args.no_cache)
        return TorchLowering(counter, counter.prepare_flags(list(req.flags)).flags)
    except (ValueError, CompilerError) as e:  # no iree-compile, an unknown profile, a bad config
        return TorchLowering(None, [], f"not lowered: {e}")


def prepare(args) -> TorchChecker | None:
    """The checker of torch files for `--check` without `--what-if` (None with `--diff`)."""
    return None if args.diff else TorchChecker(args)

"""One dispatch count's set-up, built once from the settings: the inputs, the profile and its
flags, the compiler, the timeout, what is counted (the what-if, the stream level, the .vmfb's
size), and the baseline or the iree-test-suites compstat goldens the counts are judged against.
The command line (`--dispatch-count`, `--check --what-if`, `--dispatch-diff`) and the server
(`mlirLsp/dispatchCount`, the dispatch IR, the graph) build it with `count_request` the same way,
from a `config.Settings` whose `profile` and `flags` are the ones asked for; the core takes it and
does the rest.

    req = count_request(settings, compiler=None, timeout=900.0, what_if="strip")
    req.flags            # the profile's flags, then the extra ones (an unknown profile: ValueError)
    req.compiler         # the iree-compile found (CompilerError when there is none)
    count_files.count_files(req)   # --dispatch-count: its inputs counted, judged, the baseline updated
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..config import Settings, config_folder, settings_for
from ..iree_flags.flags import target_of
from .baselines import Baseline, load_baseline
from .compiler import Compiler, find_compiler
from .compstat import CompstatFile, load_compstat_files, load_sidecar, match_inputs


@dataclass(frozen=True)
class CompstatRun:
    """A baseline of iree-test-suites compstat files: each input's file, and what matching them said."""

    files: dict[str, CompstatFile]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class CountRequest:
    profile: str
    flags: tuple[str, ...]  # what iree-compile gets: the profile's flags, then the extra ones
    extra_flags: tuple[str, ...]  # the extra ones alone (`--flags`, `dispatch.flags`)
    compiler: Compiler
    timeout: float
    what_if: str | None  # the what-if's fix (strip or assume); None: no what-if
    baseline_file: str | None = None
    baseline: Baseline | None = None  # our own baseline format, read (None: none, or compstat)
    compstat: CompstatRun | None = None  # the baseline was compstat files: matched to the inputs
    max_dispatches: int | None = None  # a budget: a count above it fails
    update_baseline: bool = False  # the counts (and their attribution) are to be written into the baseline
    attribution: bool = False  # the attribution asked for in the output (not only by a baseline)
    stream: bool = False  # the stream-level count asked for (a compstat baseline asks for it too)
    binary_size: bool = False  # each input also compiled to a .vmfb, its size reported
    cache: bool = True  # the on-disk count cache read and written
    inputs: tuple[str, ...] = ()  # the files counted (with a shard: that shard's)

    @property
    def counts_stream(self) -> bool:
        """Whether the stream-level count is made: asked for, or judged (compstat goldens)."""
        return self.stream or self.compstat is not None

    @property
    def needs_attribution(self) -> bool:
        """Whether the inputs are compiled with attribution: asked for, or for a baseline that can
        explain a count over it, or for the baseline `update_baseline` writes (it stores it)."""
        return self.attribution or self.explainable(self.inputs) or bool(self.update_baseline and self.baseline_file)

    def explainable(self, paths: Sequence[str]) -> bool:
        """Whether a baseline stores attribution for the inputs, which can explain a count over it."""
        if self.compstat is not None:
            return any(load_sidecar(f.path).get(self.profile) for f in self.compstat.files.values())
        return self.baseline is not None and any(self.baseline.stored(p, self.profile) for p in paths)


def count_request(settings: Settings, *, compiler: str | None = None, timeout: float = 900.0,
                  what_if: str | None = None, baseline: str | None = None, inputs: Sequence[str] = (),
                  config_given: bool = False, update_baseline: bool = False, max_dispatches: int | None = None,
                  attribution: bool = False, stream: bool = False, binary_size: bool = False,
                  cache: bool = True) -> CountRequest:
    """The request from `settings` (their `profile`, `flags` and `profiles`; the config's
    `compstat` table) and the front end's own options; `inputs`: the files to count. `baseline` is
    read here: compstat files matched to the inputs (`config_given`: their table is the given
    config's, else the config seen from the files), or our own format unless it is about to be
    written (`update_baseline`).
    Raises ValueError (an unknown profile, bad flags, a bad config), CompilerError (no compiler)
    and BaselineError (an unreadable baseline)."""
    flags = settings.dispatch_flags()
    profile = settings.dispatch_profile
    found = find_compiler(compiler)
    compstat = _compstat(settings, baseline, inputs, profile, flags, config_given) if baseline else None
    ours = load_baseline(baseline) if baseline and not update_baseline and compstat is None else None
    return CountRequest(profile, tuple(flags), settings.flags, found, timeout, what_if, baseline, ours, compstat,
                        max_dispatches, update_baseline, attribution, stream, binary_size, cache, tuple(inputs))


def _compstat(settings: Settings, baseline: str, inputs: Sequence[str], profile: str, flags: list[str],
              config_given: bool) -> CompstatRun | None:
    """The compstat files of `baseline` matched to the inputs (None: our own baseline format)."""
    files = load_compstat_files(baseline)
    if files is None:
        return None
    s = settings
    if not s.compstat and not config_given:  # else the config seen from the compstat files
        s = settings_for(Path(baseline))
    matched, warnings = match_inputs(list(inputs), files, s.compstat, config_folder(s), profile,
                                     target_of(flags), baseline)
    return CompstatRun(matched, tuple(warnings))

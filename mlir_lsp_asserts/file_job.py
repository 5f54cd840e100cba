"""One file's job: read it, check it, and with `fix`/`diff` fix it. The CLI runs it in worker
processes (it is picklable); the server runs it for files it checks from disk.

A file is read with `source.read_source`: a text file's resource section (an export's weights
inline) is located, never read, so a 490 MB export costs its few hundred KB of IR."""

from __future__ import annotations

import sys

from .checker import check_text
from .config import ConfigError, Settings, settings_for
from .files import file_stamp
from .findings import Finding, Severity
from .iree_flags.strip_assertions import StripDecision
from .records import field, record, replace
from .source import SourceError, decode, read_source
from .syntax.asserts import is_torch_input


@record
class JobOptions:
    """What a file's job does beyond the check (fix, diff), and where its settings come from."""

    settings_override: dict | None = None  # CLI flags over the config file
    config_file: str | None = None
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False
    fix_mode: str | None = None
    verify_with_parser: bool = True
    settings: Settings | None = None  # instead of the config file's (the server's, config.editor_settings_for)
    isolated: bool = False  # bytecode read in a child process (a server: see source.read_source)
    with_fixes: bool = True  # the findings' fixes (False: an output that shows none; --fix and --diff make them)


@record
class FileOutcome:
    """One file's check (and fix): its findings, text and notes, or the error that stopped it."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    text: str | None = None
    lines: object = None
    error: str | None = None
    write_error: str | None = None  # --fix could not write; the findings are still reported
    notes: list[str] = field(default_factory=list)
    diff: str | None = None
    changed: bool = False
    fixed_count: int = 0
    stdout_text: str | None = None  # stdin + --fix: the fixed text
    text_file: str | None = None  # the file on disk that holds exactly `text` (None: stdin, bytecode)
    measured_severity: bool = False  # the file's setting (see cli/measured.py)
    resources: str | None = None  # what was not read: the size of the file's resource section
    # Torch input with MLA004 selected: (its severity, the docs base URL, whether the flags strip
    # the asserts) for the findings a what-if's lowering traces (see cli/measured.py); None: not
    # torch input, or not selected.
    torch_rule: tuple[Severity, str | None, StripDecision] | None = None
    # The file to read again for a compile (bytecode, or weights in a resource section: the text
    # checked is not the text compiled; same lines); None: `text` is what the compiler gets.
    compile_path: str | None = None
    # stdin holding weights (a resource section) or bytecode: its bytes, `compile_path`'s stand-in
    stdin_bytes: bytes | None = field(default=None, repr=False)

    def compile_text(self) -> str:
        """The text a compile of this file gets: its whole text (the weights in, bytecode as text),
        read again from `compile_path` or decoded from `stdin_bytes`; else `text` (the same lines).
        Raises OSError, SourceError."""
        if self.compile_path is not None:
            return read_source(self.compile_path, weights=True).text
        if self.stdin_bytes is not None:
            return decode(self.stdin_bytes, weights=True).text
        return self.text or ""


def _settings(path: str, opts: JobOptions) -> Settings:
    from .config import settings_from_mapping

    if opts.settings is not None:
        base = opts.settings
    else:
        base = settings_for(None if path == "-" else path, opts.config_file or None)
    if opts.settings_override:
        base = settings_from_mapping(opts.settings_override, "command line", base)
    if opts.fix_mode:
        base = replace(base, fix_mode=opts.fix_mode)
    return base


def run_file(path: str, opts: JobOptions, stdin_data: bytes | None = None) -> FileOutcome:
    out = FileOutcome(path)
    try:
        settings = _settings(path, opts)
    except ConfigError as e:
        out.error = str(e)
        return out
    stamp = raw = None
    try:
        if path == "-":
            raw = stdin_data if stdin_data is not None else sys.stdin.buffer.read()
            source = decode(raw)
        else:
            stamp = file_stamp(path)
            source = read_source(path, isolated=opts.isolated)
    except OSError as e:
        out.error = f"cannot read: {e.strerror or e}"
        return out
    except SourceError as e:
        out.error = str(e)
        return out
    except MemoryError:
        out.error = "out of memory while reading the file"
        return out
    text = source.text
    try:
        result = check_text(text, settings, is_bytecode=source.is_bytecode, tail=source.tail,
                            with_fixes=opts.with_fixes or opts.fix or opts.diff)
    except MemoryError:
        out.error = "out of memory while checking the file"
        return out
    except Exception as e:  # noqa: BLE001 - a bug of ours: one line naming the file, go on with the others
        out.error = f"internal error while checking ({type(e).__name__}: {str(e)[:200]}); please report it"
        return out
    out.text = text
    out.text_file = None if path == "-" or source.is_bytecode else path  # its IR part is `text`
    out.measured_severity = settings.measured_severity
    if settings.enabled("MLA004") and is_torch_input(text):
        out.torch_rule = (settings.severity_of("MLA004"), settings.docs_base_url, settings.strip_decision)
    out.lines = result.parsed.lines
    out.findings = result.findings
    if source.is_bytecode:
        out.notes.append("read from MLIR bytecode: positions refer to its textual form")
    if source.tail is not None:
        out.resources = source.tail.describe()
    if source.is_bytecode or source.tail is not None:
        if path != "-":
            out.compile_path = path
        else:
            out.stdin_bytes = raw
    if opts.fix or opts.diff:
        from .file_fix import fix_file_outcome

        fix_file_outcome(out, result, settings, opts, source, stamp, raw)
    return out


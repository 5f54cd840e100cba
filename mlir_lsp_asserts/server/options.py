"""The server's settings (section `mlirLsp`) as one typed tree, read in one place.

    options = read_options(mapping, current, warn)   # from initializationOptions or
                                                      # workspace/configuration
    defaults_json()                                   # what `mlir-lsp --show-settings` prints

Every setting is a field of a dataclass below, with its camelCase key; a bad value gets a
warning and keeps what was there. Keys a client does not send keep their current value, except
the rule settings (select, ignore, severity, fixMode, profiles), which are read whole each time
as a config file is. Editor integrations (the VS Code extension's package.json) are checked
against `defaults_json()` by the tests, so this module is the one source of truth.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import NamedTuple

from ..config import ConfigError, Settings, settings_from_mapping
from ..findings import FixMode
from ..iree_flags.flags import split_flags
from ..records import replace as replace_record

SECTION = "mlirLsp"
RULE_KEYS = ("select", "ignore", "severity", "fixMode", "fix-mode", "fix_mode", "profiles", "docsBaseUrl",
             "measuredSeverity")
# The rule keys, select before ignore (as settings_from_mapping applies them; the rest are independent).
RULE_ORDER = ("select", "ignore", "severity", "fix-mode", "profiles", "docs-base-url", "measured-severity")
TRIGGERS = ("save", "idle", "manual")
WHAT_IF_MODES = tuple(FixMode)
MB = 1024 * 1024


def _key(name: str, default):
    return field(default=default, metadata={"key": name})


@dataclass(frozen=True)
class DispatchOptions:
    """`dispatch.*`: the background dispatch-count preview."""

    enabled: bool = _key("enabled", default=True)
    trigger: str = _key("trigger", default="save")  # save, idle (after idle_ms of no typing), manual
    idle_ms: int = _key("idleMs", default=1500)
    timeout: float = _key("timeout", default=900.0)
    # Past this size counts start only on request (the lens, the command): a 50 MB module
    # compiles for many minutes, which should not start on every open or save.
    auto_max_mb: float = _key("autoMaxMegabytes", default=16.0)
    attribution: bool = _key("attribution", default=True)  # debug info costs little (bench_dispatch.py)
    profile: str = _key("profile", default="default")
    extra_flags: tuple[str, ...] = _key("flags", default=())
    what_if: str = _key("whatIf", default="strip")
    compiler_path: str | None = _key("compilerPath", default=None)
    # A baseline file (`--update-baseline`; relative: to the workspace folder): the lenses say
    # what differs from it and which dispatches are new.
    baseline: str | None = _key("baseline", default=None)


@dataclass(frozen=True)
class WorkspaceOptions:
    """`workspace.*`: files that are not open, checked and watched on disk."""

    watch: bool = _key("watch", default=True)
    max_files: int = _key("maxFiles", default=5000)
    max_file_megabytes: float = _key("maxFileMegabytes", default=512.0)  # of IR: resources do not count

    @property
    def max_bytes(self) -> int:
        return int(self.max_file_megabytes * MB)


@dataclass(frozen=True)
class ServerOptions:
    # select, ignore, severity, fixMode, profiles, docsBaseUrl, measuredSeverity
    rules: Settings = field(default_factory=Settings)
    parser_diagnostics: bool = _key("parserDiagnostics", default=True)
    dispatch: DispatchOptions = field(default_factory=DispatchOptions)
    workspace: WorkspaceOptions = field(default_factory=WorkspaceOptions)


def keys(cls) -> dict[str, str]:
    """Settings key -> field name of one options dataclass."""
    return {f.metadata["key"]: f.name for f in fields(cls) if "key" in f.metadata}


def read_options(options, current: ServerOptions, warn: Callable[[str], None],
                 refuse_compiler: Callable[[object], str | None] = lambda _v: None) -> ServerOptions | None:
    """The options after applying a client's `mlirLsp` settings to `current`; None when the
    client sent nothing usable. `refuse_compiler(value)` says why a compilerPath may not be used
    (see `guards`); a refused one is ignored with a warning."""
    if not isinstance(options, dict):
        if options not in ([], None, ""):
            warn(f"settings must be an object, not {type(options).__name__}; using defaults")
        return None
    opts = _section(options)
    if opts is None:
        return None
    if not isinstance(opts, dict):  # e.g. an empty Lua table arrives as []
        if opts not in ([], None, ""):
            warn(f"settings must be an object, not {type(opts).__name__}; using defaults")
        return None
    parser = current.parser_diagnostics
    if isinstance(opts.get("parserDiagnostics"), bool):
        parser = opts["parserDiagnostics"]
    elif opts.get("parserDiagnostics") is not None:
        warn("parserDiagnostics must be true or false; default kept")
    dispatch = _dispatch(opts, current.dispatch, warn, refuse_compiler)
    # The dispatch count's profile and flags are what the project compiles with: they tell the
    # checker whether IREE strips the asserts (MLA001 at information severity from O1 up).
    rules = replace_record(_rules(opts, warn), profile=dispatch.profile, flags=dispatch.extra_flags)
    return ServerOptions(rules=rules, parser_diagnostics=parser, dispatch=dispatch,
                         workspace=_workspace(opts, current.workspace, warn))


def _top_level_keys() -> frozenset[str]:
    return frozenset(RULE_KEYS) | frozenset(defaults_json())


def _section(options: dict):
    """The `mlirLsp` settings in `options`: its `mlirLsp` entry, else the options themselves when
    they are the section (a pulled section, flat initializationOptions); None when they hold
    nothing for us: Eglot's `{}` right after connecting, or only other servers' sections. Those
    must not reset the settings that came with initialize."""
    if SECTION in options:
        return options[SECTION]
    return options if _top_level_keys() & set(options) else None


def _rules(opts: dict, warn) -> Settings:
    rules = {k: v for k, v in opts.items() if k in RULE_KEYS}
    if "fixMode" in rules:
        rules["fix-mode"] = rules.pop("fixMode")
    if "docsBaseUrl" in rules:
        rules["docs-base-url"] = rules.pop("docsBaseUrl")
    if "measuredSeverity" in rules:
        rules["measured-severity"] = rules.pop("measuredSeverity")
    # One key at a time, in the order `settings_from_mapping` applies them (select, then ignore):
    # a bad value (a typo in one severity's code) keeps that setting's default and no other.
    s = settings_from_mapping({}, "mlirLsp settings")
    norm = {k.replace("_", "-"): v for k, v in rules.items()}
    for key in RULE_ORDER:
        if key in norm:
            try:
                s = settings_from_mapping({key: norm[key]}, "mlirLsp settings", base=s)
            except ConfigError as e:
                warn(f"{e}; default kept")
    return s


def _dispatch(opts: dict, cur: DispatchOptions, warn, refuse_compiler) -> DispatchOptions:
    d = opts.get("dispatch", {})
    if d is None:
        return cur
    if not isinstance(d, dict):
        warn("dispatch settings must be an object; default kept")
        return cur
    # null is a key not sent (it keeps the current value), bar the two whose null means "none"
    d = {k: v for k, v in d.items() if v is not None or k in ("compilerPath", "baseline")}
    new: dict = {}
    for key in ("enabled", "attribution"):
        if key in d:
            if isinstance(d[key], bool):
                new[key] = d[key]
            else:  # bool("false") is True
                warn(f"dispatch.{key} must be true or false, not {d[key]!r}; default kept")
    if d.get("trigger") in TRIGGERS:
        new["trigger"] = d["trigger"]
    elif "trigger" in d:
        warn(f"dispatch.trigger must be save, idle or manual, not {d['trigger']!r}; default kept")
    for key, name, bounds in (("idleMs", "idle_ms", IDLE_MS), ("timeout", "timeout", TIMEOUT_S),
                              ("autoMaxMegabytes", "auto_max_mb", AUTO_MAX_MB)):
        if key in d and (value := _number(d[key], f"dispatch.{key}", bounds, warn)) is not None:
            new[name] = value
    if isinstance(d.get("profile"), str):
        new["profile"] = d["profile"]
    elif "profile" in d:
        warn(f"dispatch.profile must be a profile's name, not {d['profile']!r}; default kept")
    if "flags" in d:
        try:
            new["extra_flags"] = tuple(split_flags(d["flags"]))
        except ValueError as e:
            warn(f"dispatch.flags: {e}; default kept")
    if isinstance(d.get("whatIf"), str) and d["whatIf"] in WHAT_IF_MODES:
        new["what_if"] = d["whatIf"]
    elif "whatIf" in d:
        warn(f"dispatch.whatIf must be one of {', '.join(WHAT_IF_MODES)}, not {d['whatIf']!r}; default kept")
    if "compilerPath" in d:
        # Only a compiler binary is ever run, as an argument list; never a shell.
        problem = refuse_compiler(d["compilerPath"])
        if problem:
            warn(f"{problem}; setting ignored")
        else:
            new["compiler_path"] = str(d["compilerPath"]) if d["compilerPath"] else None
    if "baseline" in d:
        if d["baseline"] is None or isinstance(d["baseline"], str):
            new["baseline"] = d["baseline"] or None
        else:
            warn("dispatch.baseline must be a file path or null; default kept")
    return replace(cur, **new)


def _workspace(opts: dict, cur: WorkspaceOptions, warn) -> WorkspaceOptions:
    w = opts.get("workspace")
    if w is None:
        return cur
    if not isinstance(w, dict):
        warn("workspace settings must be an object; defaults kept")
        return cur
    w = {k: v for k, v in w.items() if v is not None}  # null: not sent
    new: dict = {}
    if "watch" in w:
        if isinstance(w["watch"], bool):
            new["watch"] = w["watch"]
        else:
            warn("workspace.watch must be true or false; default kept")
    for key, name, bounds in (("maxFiles", "max_files", MAX_FILES), ("maxFileMegabytes", "max_file_megabytes",
                                                                      MAX_FILE_MB)):
        if key in w and (value := _number(w[key], f"workspace.{key}", bounds, warn)) is not None:
            new[name] = value
    return replace(cur, **new)


class Bounds(NamedTuple):
    """A numeric setting's type and range (both ends included)."""

    kind: type
    low: float
    high: float


IDLE_MS = Bounds(int, 0, 3_600_000)  # up to an hour
TIMEOUT_S = Bounds(float, 0.001, 7 * 86_400)  # up to a week (a timer's wait above ~1e9 s raises)
AUTO_MAX_MB = Bounds(float, 0, 1 << 30)
MAX_FILES = Bounds(int, 1, 10_000_000)
MAX_FILE_MB = Bounds(float, 0.001, 1 << 30)


def _number(value, name: str, bounds: Bounds, warn) -> int | float | None:
    """`value` as the setting's number (a JSON number, or a string of one), or None with a warning:
    a bool, NaN, an infinity (JSON's 1e400), a fraction where a count is asked, out of range."""
    number: int | float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = float(value)
    # ints are compared as they are: math.isfinite and float() overflow above 1e308 (a JSON
    # integer of 400 digits), and Python compares an int with a float exactly
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    if number is None or isinstance(number, float) and (
            not math.isfinite(number) or bounds.kind is int and not number.is_integer()):
        warn(f"{name} must be {'a whole number' if bounds.kind is int else 'a number'}, not {shown}; default kept")
        return None
    if not bounds.low <= number <= bounds.high:
        warn(f"{name} must be between {bounds.low:g} and {bounds.high:g}, not {shown}; default kept")
        return None
    return bounds.kind(number)


def _plain(value):
    return list(value) if isinstance(value, (list, tuple)) else value


def defaults_json() -> dict:
    """The defaults, keyed as the settings section uses them (`mlir-lsp --show-settings`)."""
    return as_json(ServerOptions())


def as_json(o: ServerOptions) -> dict:
    """Options keyed as the settings section uses them."""
    from ..rules import resolve_code

    s = o.rules
    every = frozenset(resolve_code("ALL"))
    return {
        "select": ["ALL"] if s.select == every else sorted(s.select),
        "ignore": sorted(s.ignore),
        "severity": {code: sev.value for code, sev in s.severity},
        "fixMode": s.fix_mode,
        "profiles": {name: {"flags": list(flags)} for name, flags in s.profiles},
        "docsBaseUrl": s.docs_base_url,
        "measuredSeverity": s.measured_severity,
        "parserDiagnostics": o.parser_diagnostics,
        "dispatch": {key: _plain(getattr(o.dispatch, name)) for key, name in keys(DispatchOptions).items()},
        "workspace": {key: getattr(o.workspace, name) for key, name in keys(WorkspaceOptions).items()},
    }


def show_settings() -> int:
    print(json.dumps(defaults_json(), indent=2, sort_keys=True))
    return 0

"""Typed settings shared by the CLI and the server, and the config-file loader.

Configuration lives in `mlir-lsp.toml` (top-level keys) or `pyproject.toml` under
`[tool.mlir-lsp]`, found by walking up from the checked file; the nearest file wins and, in one
folder, `mlir-lsp.toml` wins over `pyproject.toml` (like ruff.toml over pyproject.toml).
Command-line flags override it.
"""

from __future__ import annotations

import functools
import os
import re

from .findings import FixMode, Severity
from .iree_flags.flags import profile_flags, split_flags
from .iree_flags.strip_assertions import StripDecision, asserts_stripped
from .records import field, record, replace
from .rules import RULES, RULES_BY_CODE, resolve_code

TYPE_CHECKING = False  # typing's, without importing typing
if TYPE_CHECKING:
    from pathlib import Path

FIX_MODES = tuple(FixMode)


class ConfigError(ValueError):
    """A setting that cannot be used; the message names the file and the key."""


@record(frozen=True)
class Settings:
    """The rule and compile settings of a file: the defaults, a config file's, the command line's, the editor's."""

    select: frozenset[str] = field(default_factory=lambda: frozenset(r.code for r in RULES))
    """Rule codes that are reported (default: all)."""
    ignore: frozenset[str] = frozenset()
    """Rule codes that are never reported (wins over select)."""
    severity: tuple[tuple[str, Severity], ...] = ()
    """Per-rule severity overrides, e.g. (("MLA003", Severity.WARNING),)."""
    fix_mode: str = FixMode.STRIP
    """Preferred fix: "strip" deletes asserts, "assume" rewrites them to util.assume.int."""
    exclude: tuple[str, ...] = ()
    """Glob patterns of paths skipped when walking directories."""
    profiles: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """User dispatch profiles: name -> iree-compile flags (target included)."""
    docs_base_url: str | None = None
    """Where rule links point (`{base}/MLA001.md`); None: the pages installed with the package."""
    measured_severity: bool = False
    """MLA001 at information severity in a file whose measured what-if saves no dispatch."""
    lower_torch: bool = True
    """`--check` lowers torch IR to `input` for its MLA004 findings (false: text only; CLI `--no-lower`)."""
    compstat: tuple[tuple[str, tuple[tuple[str, str | None], ...]], ...] = ()
    """iree-test-suites compstat files per input: input path -> ((compstat file, profile or
    None), ...), both as written in the config (relative to its folder, see `config_folder`)."""
    source: str | None = None
    """The config file these settings came from (None: defaults)."""
    profile: str | None = None
    """The dispatch profile the project compiles with (None: `default`); CLI `--profile`."""
    flags: tuple[str, ...] = ()
    """Extra iree-compile flags the project compiles with; CLI `--flags`."""

    def dispatch_flags(self) -> list[str]:
        """The profile's flags and `flags`: what the project compiles with, as a dispatch count
        compiles (the CLI's and the server's alike). An unknown profile raises ValueError (its
        one-line message names the known ones)."""
        table = _table_of(self.profiles)
        return profile_flags(self.dispatch_profile, table) + list(self.flags)

    @property
    def dispatch_profile(self) -> str:
        return self.profile if self.profile is not None else "default"

    @functools.cached_property
    def compile_flags(self) -> list[str]:
        """`dispatch_flags` for the checks' strip decision: an unknown profile, reported where a
        count uses it, counts as none here."""
        try:
            return profile_flags(self.profile or "default", _table_of(self.profiles)) + list(self.flags)
        except ValueError:
            return list(self.flags)

    @functools.cached_property
    def strip_decision(self) -> StripDecision:
        """Whether IREE strips the asserts with `compile_flags` (`--iree-opt-level=O1` and up)."""
        return asserts_stripped(self.compile_flags)

    def severity_overridden(self, code: str) -> bool:
        return any(c == code for c, _sev in self.severity)

    def enabled(self, code: str) -> bool:
        return code in self.select and code not in self.ignore

    def severity_of(self, code: str) -> Severity:
        for c, sev in self.severity:
            if c == code:
                return sev
        return RULES_BY_CODE[code].severity


def _codes(values, where: str) -> frozenset[str]:
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, list):
        raise ConfigError(f"{where}: expected a list of rule codes")
    out: set[str] = set()
    for v in values:
        try:
            out.update(resolve_code(str(v)))
        except ValueError as e:
            raise ConfigError(f"{where}: {e}") from None
    return frozenset(out)


# What a docs-base-url may be (rule links in every diagnostic, opened by the editor on a click).
DOCS_URL_SCHEMES = ("http://", "https://", "file://")
DOCS_URL_CHARS = 2048


def settings_from_mapping(data: dict, source: str = "<settings>", base: Settings | None = None) -> Settings:
    """Build settings from a TOML table or LSP options (keys with `-` or `_` both accepted)."""
    s = base or Settings()
    norm = {str(k).replace("_", "-"): v for k, v in data.items()}
    known = {"select", "ignore", "extend-select", "severity", "fix-mode", "exclude", "profiles", "docs-base-url",
             "measured-severity", "compstat", "profile", "flags", "lower-torch"}
    unknown = sorted(set(norm) - known)
    if unknown:
        raise ConfigError(f"{source}: unknown setting(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    # A layer's select/extend-select beats the ignore of the layers below it (the command line
    # over the config file, as in ruff); within one layer, ignore wins over select.
    if "select" in norm:
        s = replace(s, select=_codes(norm["select"], f"{source}: select"), ignore=frozenset())
    if "extend-select" in norm:
        extra = _codes(norm["extend-select"], f"{source}: extend-select")
        s = replace(s, select=s.select | extra, ignore=s.ignore - extra)
    if "ignore" in norm:
        s = replace(s, ignore=_codes(norm["ignore"], f"{source}: ignore"))
    if "severity" in norm:
        pairs = dict(s.severity)
        for k, v in _table(norm, "severity", f"{source}: severity must be a table like {{MLA003 = \"warning\"}}"):
            try:
                sev = Severity.parse(str(v))
            except ValueError:
                raise ConfigError(f"{source}: severity.{k}: {v!r} is not error/warning/information/hint") from None
            for code in _codes([k], f"{source}: severity"):
                pairs[code] = sev
        s = replace(s, severity=tuple(sorted(pairs.items())))
    if "fix-mode" in norm:
        mode = str(norm["fix-mode"])
        if mode not in FIX_MODES:
            raise ConfigError(f"{source}: fix-mode must be one of {', '.join(FIX_MODES)}, not {mode!r}")
        s = replace(s, fix_mode=FixMode(mode))
    if "exclude" in norm:
        ex = norm["exclude"]
        if not isinstance(ex, list):
            raise ConfigError(f"{source}: exclude must be a list of glob patterns")
        s = replace(s, exclude=tuple(str(e) for e in ex))
    if "docs-base-url" in norm:
        base = norm["docs-base-url"]
        if base is not None and not isinstance(base, str):
            raise ConfigError(f"{source}: docs-base-url must be a URL string")
        if base and (not base.lower().startswith(DOCS_URL_SCHEMES) or len(base) > DOCS_URL_CHARS
                     or any(c.isspace() or ord(c) < 32 for c in base)):
            # it is every diagnostic's link, shown and opened by the editor: a cloned repository's
            # config must not make it a `command:` URI or anything else an editor would run
            raise ConfigError(f"{source}: docs-base-url must be an http://, https:// or file:// URL of at most "
                              f"{DOCS_URL_CHARS} characters without spaces, not {base[:80]!r}")
        s = replace(s, docs_base_url=base or None)
    if "measured-severity" in norm:
        if not isinstance(norm["measured-severity"], bool):
            raise ConfigError(f"{source}: measured-severity must be true or false")
        s = replace(s, measured_severity=norm["measured-severity"])
    if "lower-torch" in norm:
        if not isinstance(norm["lower-torch"], bool):
            raise ConfigError(f"{source}: lower-torch must be true or false")
        s = replace(s, lower_torch=norm["lower-torch"])
    if "compstat" in norm:
        s = replace(s, compstat=_compstat(norm, source))
    if "profiles" in norm:
        profs = dict(s.profiles)
        for name, spec in _table(norm, "profiles", f"{source}: profiles must be a table of name = {{flags = [...]}}"):
            flags = spec.get("flags") if isinstance(spec, dict) else spec
            if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
                raise ConfigError(f"{source}: profiles.{name}.flags must be a list of strings")
            profs[str(name)] = tuple(flags)
        s = replace(s, profiles=tuple(sorted(profs.items())))
    s = _compile_settings(norm, source, s)
    return replace(s, source=source)


def _table_of(profiles: tuple[tuple[str, tuple[str, ...]], ...]) -> dict[str, list[str]]:
    return {name: list(flags) for name, flags in profiles}


def _compile_settings(norm: dict, source: str, s: Settings) -> Settings:
    """`profile` and `flags`: what the project compiles with (the dispatch count's defaults, and
    what tells whether IREE strips the asserts)."""
    if "flags" in norm:
        raw = norm["flags"]
        if not (isinstance(raw, str) or isinstance(raw, list) and all(isinstance(f, str) for f in raw)):
            raise ConfigError(f"{source}: flags must be a list of strings (or one string, shell quoting)")
        try:
            flags = split_flags(raw)
        except ValueError as e:
            raise ConfigError(f"{source}: flags: {e}") from None
        s = replace(s, flags=tuple(flags))
    if "profile" in norm:
        if not isinstance(norm["profile"], str):
            raise ConfigError(f"{source}: profile must be a profile name")
        s = replace(s, profile=norm["profile"])
    if s.profile is not None:
        try:
            profile_flags(s.profile, _table_of(s.profiles))
        except ValueError as e:
            raise ConfigError(f"{source}: profile: {e}") from None
    return s


def _compstat(norm: dict, source: str) -> tuple[tuple[str, tuple[tuple[str, str | None], ...]], ...]:
    """`[compstat]`: `"INPUT" = "FILE.json"`, a list of such files, or of tables
    `{file = "FILE.json", profile = "NAME"}` (the profile the file's golden is counted with)."""
    problem = (f"{source}: compstat must be a table of \"INPUT.mlir\" = \"COMPSTAT.json\" (or a list of them, "
               "or of {file = \"COMPSTAT.json\", profile = \"NAME\"})")
    out = []
    for name, spec in _table(norm, "compstat", problem):
        entries = []
        for item in spec if isinstance(spec, list) else [spec]:
            if isinstance(item, str):
                entries.append((item, None))
            elif (isinstance(item, dict) and isinstance(item.get("file"), str)
                  and isinstance(item.get("profile", ""), str) and set(item) <= {"file", "profile"}):
                entries.append((item["file"], item.get("profile") or None))
            else:
                raise ConfigError(f"{problem}; compstat.{name!r} is {item!r}")
        out.append((str(name), tuple(entries)))
    return tuple(sorted(out))


def config_folder(s: Settings) -> Path:
    """The folder relative paths of the config are relative to: the config file's, else the
    current one (settings from the command line or the defaults)."""
    from pathlib import Path

    src = Path(s.source) if s.source else None
    return src.parent if src is not None and src.is_file() else Path.cwd()


def _table(norm: dict, key: str, problem: str) -> list[tuple[str, object]]:
    """The entries of the config table `key`, or a ConfigError saying `problem`."""
    table = norm[key]
    if not isinstance(table, dict):
        raise ConfigError(problem)
    return list(table.items())


def find_config_file(start: str | os.PathLike[str]) -> str | None:
    """The config file that holds for `start` (a file or a folder): the nearest `mlir-lsp.toml`,
    or `pyproject.toml` with our table, in its folder or one above (a real path), or None. The
    config's paths are plain strings walked with os.path (pathlib's import, with urllib.parse and
    ipaddress, was ~6 ms of a small file's `--check`); str and PathLike are both accepted."""
    start = os.fspath(start)
    folder = os.path.realpath(start if os.path.isdir(start) else os.path.dirname(start) or ".")
    while True:
        own = os.path.join(folder, "mlir-lsp.toml")
        if os.path.isfile(own):
            return own
        py = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(py) and _has_tool_table(py):
            return py
        up = os.path.dirname(folder)
        if up == folder:
            return None
        folder = up


# Where a pyproject.toml can name our table: `[tool.mlir-lsp]` or a dotted `tool.mlir-lsp.KEY`
# (spaces and quotes allowed), or inside a `[tool]` table or a `tool = {...}` inline table. A
# pyproject that names `mlir-lsp` elsewhere only (a script, a dependency) is not read as TOML.
_MAYBE_OUR_TABLE = re.compile(r"""\btool["']?\s*\.\s*["']?mlir-lsp\b"""  # [tool.mlir-lsp], tool."mlir-lsp".ignore
                              r"""|^\s*\[\s*["']?tool["']?\s*\]|^\s*["']?tool["']?\s*=""", re.M)  # [tool], tool = {


def _has_tool_table(py: str) -> bool:
    """Does this pyproject.toml have a `[tool.mlir-lsp]` table? Read again when the file changes
    (size or mtime): a server lives through edits to it."""
    try:
        st = os.stat(py)
    except OSError:
        return False
    return _has_tool_table_as_of(py, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=256)
def _has_tool_table_as_of(py: str, _mtime_ns: int, _size: int) -> bool:
    try:
        text = _read_text(py)
    except (OSError, UnicodeDecodeError):
        return False
    if "\\u" not in text and "\\U" not in text and (text.find("mlir-lsp") < 0 or not _MAYBE_OUR_TABLE.search(text)):
        return False  # no `tool.mlir-lsp` key can be written there (bar an escaped one): no TOML reader to load
    import tomllib

    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        # a pyproject.toml that does not read: ours to report when our table is seen in it (named:
        # a bare `[tool]` in a broken file is no sign of ours)
        return "mlir-lsp" in text and _MAYBE_OUR_TABLE.search(text) is not None
    tool = data.get("tool")
    return isinstance(tool, dict) and "mlir-lsp" in tool


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def load_config_file(path: str | os.PathLike[str]) -> Settings:
    """The settings of the config file at `path` (ConfigError: it cannot be read or used)."""
    return _load_config(os.fspath(path))


@functools.lru_cache(maxsize=256)
def _load_config(path: str) -> Settings:
    import tomllib  # here, when there is a config file to read (0.01 s of every start-up otherwise)

    try:
        data = tomllib.loads(_read_text(path))
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: arrays or tables nested too deeply") from None
    if os.path.basename(path) == "pyproject.toml":
        tool = data.get("tool", {})
        data = tool.get("mlir-lsp", {}) if isinstance(tool, dict) else {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: tool.mlir-lsp must be a table ([tool.mlir-lsp]), not {type(data).__name__}")
    try:
        return settings_from_mapping(data, str(path))
    except RecursionError:
        raise ConfigError(f"{path}: a setting's value is nested too deeply") from None


def editor_settings_for(path: str | os.PathLike[str] | None, editor: Settings) -> tuple[Settings, str | None]:
    """The rule settings of a file checked in an editor, open or not (the server's one order):
    the file's config file, found as `settings_for` finds it, when it has one; else the editor's
    settings (`editor`, themselves over the defaults). The config file wins because it is what
    `mlir-lsp --check` reads in CI: the editor shows what CI will say, and an editor that sends
    every setting with its default (VS Code) does not hide a project's config. Returns (settings,
    None), or (the editor's settings, the error) for a config file that cannot be used. A config
    file is read again when it changes (size or mtime), as a server lives through edits to it."""
    found = find_config_file(path if path is not None else os.getcwd())
    if found is None:
        return editor, None
    try:
        return _load_current(found), None
    except OSError as e:
        return editor, f"{found}: cannot read: {e.strerror or e}"
    except ConfigError as e:
        return editor, str(e)


def excludes_for(path: str) -> list[tuple[str, tuple[str, ...]]]:
    """The config files above `path`, the nearest first, each with its `exclude` patterns, read
    again when they change (as `editor_settings_for`): CI may run `mlir-lsp --check .` in any of
    their folders (a repository's root above a vendored project with a config of its own). A
    config that cannot be read or used excludes nothing here."""
    out = []
    start = path
    while (found := find_config_file(start)) is not None:
        try:
            out.append((found, _load_current(found).exclude))
        except (OSError, ConfigError):
            pass
        folder = os.path.dirname(os.path.realpath(found))
        start = os.path.dirname(folder)
        if start == folder:
            break
    return out


def _load_current(found: str) -> Settings:
    """The config file's settings as it is now: read again when its size or mtime changed."""
    st = os.stat(found)
    return _load_config_as_of(os.path.realpath(found), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=64)
def _load_config_as_of(path: str, _mtime_ns: int, _size: int) -> Settings:
    return _load_config.__wrapped__(path)


def settings_for(path: str | os.PathLike[str] | None,
                 explicit_config: str | os.PathLike[str] | None = None) -> Settings:
    """A file's settings (or a folder's): the `explicit_config` file's when given (`--config`),
    else the config file found from `path` (None: the current folder), else the defaults."""
    if explicit_config is not None:
        return load_config_file(os.path.realpath(explicit_config))
    found = find_config_file(path if path is not None else os.getcwd())
    return load_config_file(found) if found else Settings()

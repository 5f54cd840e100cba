"""The VS Code extension's settings (vscode-client/package.json) against the server's own
defaults (`mlir-lsp --show-settings`): one source of truth, no node needed."""

from __future__ import annotations

import inspect
import json
import re

import pytest

from conftest import REPO, run_cli

CLIENT_ONLY = ("server.", "trace.", "statusBar.", "bytecode.", "dispatchGraph.")
LEAF_TABLES = ("severity", "profiles")  # free-form objects: one setting each


def _flatten(obj: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and key not in LEAF_TABLES:
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def test_show_settings_prints_the_server_defaults_as_json():
    r = run_cli("--show-settings")
    assert r.returncode == 0, r.stderr
    shown = json.loads(r.stdout)
    assert shown["select"] == ["ALL"] and shown["fixMode"] == "strip"
    assert shown["dispatch"]["profile"] == "default" and shown["dispatch"]["trigger"] == "save"


def _declared_settings() -> dict:
    """The settings vscode-client/package.json declares, by full name."""
    manifest = json.loads((REPO / "vscode-client" / "package.json").read_text())
    return manifest["contributes"]["configuration"]["properties"]


def test_package_json_declares_every_server_setting_with_the_server_default():
    shown = _flatten(json.loads(run_cli("--show-settings").stdout))
    props = _declared_settings()
    declared = {k.removeprefix("mlirLsp."): p for k, p in props.items()
                if not k.removeprefix("mlirLsp.").startswith(CLIENT_ONLY)}
    assert sorted(declared) == sorted(shown)
    for key, value in shown.items():
        assert declared[key]["default"] == value, key
        assert len(declared[key].get("markdownDescription") or declared[key].get("description", "")) > 20, key
        if "enum" in declared[key]:
            assert value in declared[key]["enum"], key


def _keys_read(fn, var: str) -> set[str]:
    """The setting keys a configure function reads from the dict named var."""
    src = inspect.getsource(fn)
    pats = (rf'"(\w+)" in {var}\b', rf'\b{var}\.get\("(\w+)"', rf'\b{var}\["(\w+)"\]',
            r'\("(\w+)", "\w+", (?!")')  # the last: (key, attribute, type or scale) tables
    return {m for p in pats for m in re.findall(p, src)}


def test_show_settings_lists_every_key_the_server_reads():
    """A setting read by the server but missing from its options tree (and so from
    --show-settings and package.json) fails here."""
    from mlir_lsp_asserts.server import options

    shown = options.defaults_json()
    assert _keys_read(options._dispatch, "d") <= set(shown["dispatch"])
    assert _keys_read(options._workspace, "w") <= set(shown["workspace"])
    top = _keys_read(options.read_options, "opts") | set(options.RULE_KEYS)
    top -= {"fix-mode", "fix_mode"}  # spellings of fixMode
    assert top <= set(shown), sorted(top - set(shown))


CHANGED = {"select": ["MLA001"], "ignore": ["MLA003"], "severity": {"MLA001": "error"}, "fixMode": "assume",
           "profiles": {"mine": {"flags": ["--iree-opt-level=O0"]}}, "parserDiagnostics": False,
           "docsBaseUrl": "https://example.org/mlir-lsp/rules", "measuredSeverity": True,
           "dispatch.enabled": False, "dispatch.trigger": "idle", "dispatch.idleMs": 10, "dispatch.timeout": 5,
           "dispatch.autoMaxMegabytes": 1, "dispatch.attribution": False, "dispatch.profile": "mine",
           "dispatch.flags": ["--x"], "dispatch.whatIf": "assume", "dispatch.compilerPath": "/opt/iree-compile",
           "dispatch.baseline": "ci/dispatch-baseline.json",
           "workspace.watch": False, "workspace.maxFiles": 3, "workspace.maxFileMegabytes": 1}


def test_every_shown_setting_takes_effect():
    """Each setting --show-settings lists, sent with another value, changes what the server uses."""
    from mlir_lsp_asserts.server import options

    shown = _flatten(options.defaults_json())
    assert sorted(CHANGED) == sorted(shown)
    default = options.ServerOptions()
    for key, value in CHANGED.items():
        head, _, leaf = key.partition(".")
        sent = {head: {leaf: value}} if leaf else {key: value}
        warnings = []
        got = options.read_options({"mlirLsp": sent}, default, warnings.append)
        assert not warnings, (key, warnings)
        assert got != default, key
        assert _flatten(options.as_json(got))[key] != shown[key], key


@pytest.mark.parametrize("flags", [5, [1], ["--x", None], {"a": 1}])
def test_flags_of_the_wrong_type_are_refused_with_a_warning_and_the_default_kept(flags):
    """`dispatch.flags: 5` raised out of the settings' reading (the server's `initialize` failed
    with -32603), and `[1]` was taken and made every later check fail with an AttributeError."""
    from mlir_lsp_asserts.server import options

    default = options.ServerOptions()
    warnings: list[str] = []
    got = options.read_options({"mlirLsp": {"dispatch": {"flags": flags}}}, default, warnings.append)
    assert got == options.read_options({"mlirLsp": {"dispatch": {}}}, default, warnings.append)  # no flags
    assert len(warnings) == 1 and warnings[0].startswith("dispatch.flags: the flags must be"), warnings


def test_no_settings_a_client_may_send_make_their_reading_raise():
    """The early start answers `initialize` before it reads the settings (server/early_start.py):
    a reading that raised would fail the pygls server's `initialize` after the client was told
    it succeeded. Random settings of every key, each with values of every JSON type."""
    import random

    from mlir_lsp_asserts.server import options

    keys = sorted(_flatten(options.defaults_json()))
    values = [None, True, 0, -1, 2**70, 10**400, 1.5, 1e308, float("inf"), float("nan"), "", "x", "nan", "false",
              "1e400", "save", "assume", "MLA001", "--x", "/a\0b/iree-compile", [], [1], ["a"], [None], [[1]], {},
              {"a": 1}, {"MLA001": "hint"}, {"MLA001": 5}, {"mine": 5}, {"mine": {"flags": [1]}},
              {"mine": {"flags": "--x"}}]
    rng = random.Random(37)
    read = 0
    for _ in range(3000):
        sent: dict = {}
        for key in rng.sample(keys, rng.randint(1, 4)):
            head, _, leaf = key.partition(".")
            if leaf:
                sent.setdefault(head, {})[leaf] = rng.choice(values)
            else:
                sent[key] = rng.choice(values)
        if rng.random() < 0.1:
            sent[rng.choice(["dispatch", "workspace", "severity", "profiles"])] = rng.choice(values)
        options.read_options({"mlirLsp": sent}, options.ServerOptions(), lambda _message: None)
        read += 1
    assert read == 3000


@pytest.mark.parametrize("sent, field", [
    ({"dispatch": {"idleMs": float("inf")}}, "dispatch.idle_ms"),  # JSON's 1e400: int(inf) raised
    ({"dispatch": {"idleMs": 2.5}}, "dispatch.idle_ms"),
    ({"dispatch": {"idleMs": 10**400}}, "dispatch.idle_ms"),  # a 401-digit JSON integer: isfinite overflowed
    ({"dispatch": {"timeout": 10**400}}, "dispatch.timeout"),
    ({"dispatch": {"timeout": "nan"}}, "dispatch.timeout"),  # every compile was stopped at once
    ({"dispatch": {"timeout": 1e300}}, "dispatch.timeout"),  # the timer's thread died: no timeout
    ({"dispatch": {"timeout": True}}, "dispatch.timeout"),  # was 1 s
    ({"dispatch": {"autoMaxMegabytes": "nan"}}, "dispatch.auto_max_mb"),  # turned the size guard off
    ({"dispatch": {"enabled": "false"}}, "dispatch.enabled"),  # was True
    ({"dispatch": {"attribution": 0}}, "dispatch.attribution"),
    ({"dispatch": {"whatIf": ["assume"]}}, "dispatch.what_if"),  # was dropped without a word
    ({"dispatch": {"profile": 5}}, "dispatch.profile"),
    ({"workspace": {"maxFiles": 0.5}}, "workspace.max_files"),  # was 0
    ({"workspace": {"maxFiles": float("inf")}}, "workspace.max_files"),
    ({"workspace": {"maxFileMegabytes": 1e308}}, "workspace.max_file_megabytes"),  # max_bytes overflowed
])
def test_a_setting_of_the_wrong_type_or_out_of_range_is_refused_with_a_warning(sent, field):
    from mlir_lsp_asserts.server import options

    default = options.ServerOptions()
    warnings: list[str] = []
    got = options.read_options({"mlirLsp": sent}, default, warnings.append)
    assert got is not None and len(warnings) == 1, warnings
    part, name = field.split(".")
    assert getattr(getattr(got, part), name) == getattr(getattr(default, part), name)  # the default kept
    assert warnings[0].endswith("default kept") and next(iter(sent[part])) in warnings[0], warnings
    assert got.workspace.max_bytes > 0


def test_null_is_a_setting_not_sent():
    """A client that sends null for what it leaves unset gets no warning, and the value stays."""
    from mlir_lsp_asserts.server import options

    warnings: list[str] = []
    current = options.read_options({"mlirLsp": {"dispatch": {"idleMs": 10, "profile": "cpu-host"}}},
                                   options.ServerOptions(), warnings.append)
    unset = ("enabled", "attribution", "trigger", "idleMs", "timeout", "autoMaxMegabytes", "profile", "flags", "whatIf")
    got = options.read_options({"mlirLsp": {"dispatch": dict.fromkeys(unset),
                                            "workspace": {"maxFiles": None, "maxFileMegabytes": None, "watch": None}}},
                               current, warnings.append)
    assert not warnings and got is not None and current is not None
    assert got.dispatch == current.dispatch and got.workspace == current.workspace


def test_numbers_in_range_are_taken_and_numeric_strings_too():
    from mlir_lsp_asserts.server import options

    warnings: list[str] = []
    got = options.read_options({"mlirLsp": {"dispatch": {"idleMs": 0, "timeout": "30", "autoMaxMegabytes": 0},
                                            "workspace": {"maxFiles": 7.0, "maxFileMegabytes": 0.5}}},
                               options.ServerOptions(), warnings.append)
    assert not warnings and got is not None
    assert (got.dispatch.idle_ms, got.dispatch.timeout, got.dispatch.auto_max_mb) == (0, 30.0, 0.0)
    assert (got.workspace.max_files, got.workspace.max_file_megabytes) == (7, 0.5)
    assert type(got.dispatch.idle_ms) is int and type(got.workspace.max_files) is int


def test_one_bad_rule_setting_keeps_its_default_and_no_other():
    """A typo in one severity's code reset every rule setting (select, ignore, profiles) to the
    defaults, though a bad value is to keep what was there."""
    from mlir_lsp_asserts.server import options

    warnings: list[str] = []
    got = options.read_options({"mlirLsp": {"select": ["MLA001"], "ignore": ["MLA002"], "severity": {"MLA01": "hint"},
                                            "profiles": {"mine": {"flags": ["--x"]}}}},
                               options.ServerOptions(), warnings.append)
    assert got is not None and len(warnings) == 1 and "MLA01" in warnings[0] and warnings[0].endswith("default kept")
    assert got.rules.select == frozenset({"MLA001"}) and got.rules.ignore == frozenset({"MLA002"})
    assert got.rules.profiles == (("mine", ("--x",)),) and got.rules.severity == ()


def test_a_compiler_path_with_a_nul_is_refused_not_raised():
    """`realpath` raised ValueError on it, and the whole settings message was lost."""
    from mlir_lsp_asserts.server.guards import compiler_path_problem

    assert "NUL" in (compiler_path_problem(None, "/tmp/a\0b/iree-compile") or "")


def test_extension_commands_do_not_reuse_the_server_command_ids():
    """vscode-languageclient registers the server's executeCommand ids as VS Code commands; an
    extension command with the same id makes the client fail to start."""
    server_ids = set()
    for src in (REPO / "mlir_lsp_asserts" / "server").glob("*.py"):
        server_ids |= set(re.findall(r'_COMMAND = "([\w.]+)"', src.read_text()))
    assert "mlirLsp.dispatchCount" in server_ids
    pkg = json.loads((REPO / "vscode-client" / "package.json").read_text())
    mine = {c["command"] for c in pkg["contributes"]["commands"]}
    assert not mine & server_ids, mine & server_ids


def test_package_json_suggests_every_builtin_profile():
    from mlir_lsp_asserts.iree_flags.flags import BUILTIN_PROFILES

    setting = _declared_settings()["mlirLsp.dispatch.profile"]
    assert setting["examples"] == list(BUILTIN_PROFILES)
    for name in BUILTIN_PROFILES:
        assert f"`{name}`" in setting["markdownDescription"], name

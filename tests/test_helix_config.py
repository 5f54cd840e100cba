"""editors/helix/languages.toml.

Helix is not installable here (Debian 12 has no helix package, nor PyPI/npm a binary), so:
- the file is checked against Helix's own schema, transcribed below from the serde structs of
  helix-core/src/syntax/config.rs (Helix 25.x): `[[language]]` is `deny_unknown_fields` (an
  unknown key stops Helix from loading the languages), `[language-server.*]` keys are its fields;
- the server is started the way Helix starts it: the file's `command` looked up on PATH with its
  `args`, the file's `config` as initializationOptions and as the answer to
  workspace/configuration (Helix answers a section from `config`), languageId the language name
  (the client capabilities are Neovim's: pytest-lsp has no Helix set);
- with `hx` on PATH, `hx --health mlir` with the file as the user's languages.toml must find
  the server (skipped, saying so, when hx is absent).
"""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import tomllib

import jsonschema
import pytest
from lsprotocol import types
from pytest_lsp import client_capabilities, make_test_lsp_client

from conftest import BIN, REPO, REPRO
from test_server_lsp import open_doc

LANGUAGES = REPO / "editors" / "helix" / "languages.toml"
HX = shutil.which("hx")

_STRINGS = {"type": "array", "items": {"type": "string"}}
HELIX_SCHEMA = {
    "type": "object",
    "properties": {
        "language": {"type": "array", "items": {"$ref": "#/$defs/language"}},
        "language-server": {"type": "object", "additionalProperties": {"$ref": "#/$defs/server"}},
        "grammar": {"type": "array"},
        "use-grammars": {"type": "object"},
    },
    "$defs": {
        "language": {  # LanguageConfiguration, deny_unknown_fields
            "type": "object",
            "required": ["name", "scope", "file-types"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string"},
                "language-id": {"type": "string"},
                "scope": {"type": "string"},
                "file-types": {"type": "array", "items": {"anyOf": [
                    {"type": "string"},
                    {"type": "object", "required": ["glob"], "additionalProperties": False,
                     "properties": {"glob": {"type": "string"}}}]}},
                "shebangs": _STRINGS,
                "roots": _STRINGS,
                "comment-tokens": {"anyOf": [{"type": "string"}, _STRINGS]},
                "comment-token": {"anyOf": [{"type": "string"}, _STRINGS]},  # alias of comment-tokens
                "block-comment-tokens": {},
                "text-width": {"type": "integer", "minimum": 0},
                "soft-wrap": {"type": "object"},
                "auto-format": {"type": "boolean"},
                "formatter": {"type": "object", "required": ["command"]},
                "path-completion": {"type": "boolean"},
                "word-completion": {"type": "object"},
                "diagnostic-severity": {"enum": ["Hint", "Info", "Warning", "Error"]},
                "grammar": {"type": "string"},
                "injection-regex": {"type": "string"},
                "language-servers": {"type": "array", "items": {"anyOf": [
                    {"type": "string"},
                    {"type": "object", "required": ["name"], "additionalProperties": False,
                     "properties": {"name": {"type": "string"}, "only-features": _STRINGS,
                                    "except-features": _STRINGS}}]}},
                "indent": {"type": "object", "required": ["tab-width", "unit"], "additionalProperties": False,
                           "properties": {"tab-width": {"type": "integer", "minimum": 1, "maximum": 255},
                                          "unit": {"type": "string"}}},
                "debugger": {"type": "object"},
                "auto-pairs": {},
                "rulers": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                "workspace-lsp-roots": _STRINGS,
                "persistent-diagnostic-sources": _STRINGS,
            },
        },
        "server": {  # LanguageServerConfiguration (Helix ignores unknown keys: a typo would be silent)
            "type": "object",
            "required": ["command"],
            "additionalProperties": False,
            "properties": {
                "command": {"type": "string"},
                "args": _STRINGS,
                "environment": {"type": "object", "additionalProperties": {"type": "string"}},
                "config": {},
                "timeout": {"type": "integer", "minimum": 0},
                "required-root-patterns": _STRINGS,
            },
        },
    },
}


def load() -> dict:
    return tomllib.loads(LANGUAGES.read_text())


def test_languages_toml_follows_helix_schema():
    conf = load()
    jsonschema.validate(conf, HELIX_SCHEMA)
    (mlir,) = [lang for lang in conf["language"] if lang["name"] == "mlir"]
    assert mlir["file-types"] == ["mlir"]
    assert mlir["comment-token"] == "//"
    # every server the language names is defined in the same file
    assert mlir["language-servers"] == ["mlir-lsp"]
    server = conf["language-server"]["mlir-lsp"]
    assert server["command"] == "mlir-lsp" and server["args"] == ["--stdio"]
    assert server["config"] == {"mlirLsp": {}}  # where the settings go, the section the server reads


def test_the_schema_rejects_what_helix_rejects():
    """The transcription is not a blank check: keys and shapes Helix refuses fail it."""
    for broken in (
        lambda c: c["language"][0].update({"filetypes": ["mlir"]}),  # kebab-case: file-types
        lambda c: c["language"][0].pop("scope"),
        lambda c: c["language"][0].update({"language-server": {"command": "mlir-lsp"}}),  # before 23.10
        lambda c: c["language"][0]["indent"].pop("unit"),
        lambda c: c["language-server"]["mlir-lsp"].update({"arguments": ["--stdio"]}),
    ):
        conf = copy.deepcopy(load())
        broken(conf)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(conf, HELIX_SCHEMA)


@pytest.mark.asyncio(loop_scope="function")
async def test_server_started_as_helix_starts_it_publishes_findings_with_the_settings(tmp_path):
    conf = load()
    (mlir,) = conf["language"]
    server = conf["language-server"][mlir["language-servers"][0]]
    # The settings table of the file, with one setting filled in as a user would.
    config = copy.deepcopy(server["config"])
    config["mlirLsp"]["severity"] = {"MLA001": "error"}
    # The command as Helix resolves it: on PATH (here the venv's bin/ comes first, as for a user
    # who activated it or installed the package).
    command = shutil.which(server["command"], path=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
    assert command is not None, f"{server['command']} not on PATH"
    client = make_test_lsp_client()
    client.set_configuration(config["mlirLsp"], section="mlirLsp")
    await client.start_io(command, *server["args"])
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("neovim"), root_uri=tmp_path.as_uri(), initialization_options=config))
    try:
        f = tmp_path / "repro.mlir"
        assert f.suffix.lstrip(".") in mlir["file-types"]
        assert mlir.get("language-id", mlir["name"]) == "mlir"  # the languageId open_doc sends
        diags = await open_doc(client, f.as_uri(), REPRO.read_text())
        assert [d.severity for d in diags if d.code == "MLA001"] == [types.DiagnosticSeverity.Error] * 4
    finally:
        await client.shutdown_session()
        await client.stop()


@pytest.mark.skipif(HX is None, reason="hx (Helix) not installed: Debian 12 has no helix package")
def test_hx_health_finds_the_server(tmp_path):
    conf_dir = tmp_path / "config" / "helix"
    conf_dir.mkdir(parents=True)
    shutil.copyfile(LANGUAGES, conf_dir / "languages.toml")
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"), HOME=str(tmp_path),
               PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
    p = subprocess.run([HX, "--health", "mlir"], capture_output=True, text=True, env=env, timeout=60)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    # found, at the venv's path ("✓ mlir-lsp: /path"; a missing one is "✘ mlir-lsp: ... not found")
    assert str(BIN / "mlir-lsp") in out and "✘ mlir-lsp" not in out, out

"""The VS Code extension's settings (vscode-client/package.json) against the server's own
defaults (`mlir-lsp --show-settings`): one source of truth, no node needed."""

from __future__ import annotations

import json

from conftest import REPO, run_cli

CLIENT_ONLY = ("server.", "trace.", "statusBar.", "bytecode.")
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


def test_package_json_declares_every_server_setting_with_the_server_default():
    shown = _flatten(json.loads(run_cli("--show-settings").stdout))
    props = json.loads((REPO / "vscode-client" / "package.json").read_text())["contributes"]["configuration"]["properties"]
    declared = {k.removeprefix("mlirLsp."): p for k, p in props.items() if not k.removeprefix("mlirLsp.").startswith(CLIENT_ONLY)}
    assert sorted(declared) == sorted(shown)
    for key, value in shown.items():
        assert declared[key]["default"] == value, key
        assert len(declared[key].get("markdownDescription") or declared[key].get("description", "")) > 20, key
        if "enum" in declared[key]:
            assert value in declared[key]["enum"], key
